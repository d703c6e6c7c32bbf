"""The three pair builders: a local torch target with its draft (each draft kind builds itself beside it:
specviz.drafts.kinds), a served target with a standalone draft, a GGUF target on llama.cpp with a second GGUF file
or a draft built from the target alone."""

from __future__ import annotations

from typing import Any

import torch

from specviz import limits, specs
from specviz.class_policy import ClassPolicy
from specviz.drafts import kinds
from specviz.drafts.kinds import FILE, TARGET, TARGET_WEIGHTS, Beside
from specviz.errors import ModelError
from specviz.loading.files import open_gguf
from specviz.loading.options import KERNELS, TORCH, LoadSettings
from specviz.models import embedded, gguf, kernels, llamacpp, remote
from specviz.models.ggufcodec import LlamaCodec
from specviz.models.hub import EMBEDDED, ModelTooLargeError, load_model
from specviz.models.lm import HFModel, NextTokenModel
from specviz.models.pair import ModelPair
from specviz.models.store import tensor_bytes
from specviz.models.text import HFCodec
from specviz.pair_parts import Parts, name_of
from specviz.specs import ModelSpec


def beside(target: ModelSpec, limit: int, parts: Parts, progress: Any, settings: LoadSettings, **given: Any) -> Beside:
    """What a draft is built beside (specviz.drafts.kinds): the load's limit, device, dtype, progress, llama.cpp
    settings and GGUF places, and `given`: what the target is (model, torch, tokenizer, its GGUF header, a standalone
    model's loader, lean) and whatever differs from the load's own."""
    made = {
        "spec": target,
        "model": None,
        "torch": None,
        "tokenizer": None,
        "limit": limit,
        "device": parts.keys.device,
        "dtype": parts.keys.dtype,
        "progress": progress,
        "lean": False,
        "llama": settings.llama,
        "open_gguf": lambda spec: open_gguf(spec, progress, settings.found_in()),
    }
    return Beside(**{**made, **given})


def beside_torch(
    target: ModelSpec,
    target_lm: HFModel,
    tokenizer: Any,
    limit: int,
    parts: Parts,
    progress: Any,
    lean: bool,
    settings: LoadSettings,
) -> Beside:
    """Beside a torch target: its transformers model, as it runs and as weights to share; the embedded target's float32
    GGUF header for a GGUF draft beside it."""
    header = (
        (lambda: gguf.read_info(embedded.ensure_f32_gguf(progress))) if isinstance(target, specs.Embedded) else None
    )
    return beside(
        target, limit, parts, progress, settings, model=target_lm, torch=target_lm, tokenizer=tokenizer, lean=lean,
        target_gguf=header,
    )  # fmt: skip


def local_pair(
    target: ModelSpec,
    draft: ModelSpec,
    runtime: str,
    limit: int,
    progress: embedded.Progress | None,
    parts: Parts,
    settings: LoadSettings,
) -> ModelPair:
    say = progress or (lambda _msg: None)
    kind = kinds.kind_of(draft)
    dev, torch_dtype = parts.keys.device, parts.keys.dtype
    if runtime == KERNELS:
        # per-shape kernels replace the target's Linear modules in place, after its drafts copied or shared them:
        # such a target and its draft are one part (a draft sharing a kernel-chosen target's layers computes
        # other numbers)
        def make() -> tuple[NextTokenModel, NextTokenModel, Any]:
            model, tokenizer = load_model(str(target), limit, dev, torch_dtype, progress)
            target_lm = HFModel(model, name_of(target), KERNELS)
            say(f"Preparing draft {draft.text}...")
            draft_lm = kind.build(
                draft, beside_torch(target, target_lm, tokenizer, limit, parts, progress, True, settings)
            )
            say("Timing the product kernels for each weight shape (a few seconds)...")
            kernels.with_chosen_kernels(model)  # after the drafts copied what they copy, before anything runs
            return target_lm, draft_lm, tokenizer

        say(f"Loading target {target.text}...")
        name = f"{name_of(target)} with draft {draft.text} (torch-kernels)"
        made = parts.take(parts.keys.kernels(target, draft), make, name, lambda made: tensor_bytes(*made[:2]))
        target_lm, draft_lm, tokenizer = made
        return ModelPair(target_lm, draft_lm, HFCodec(tokenizer, target_lm.name))
    say(f"Loading target {target.text}...")
    target_model, tokenizer = parts.torch_model(target, limit, progress)
    target_lm = HFModel(target_model, name_of(target), TORCH)
    runner: NextTokenModel = target_lm
    if runtime == llamacpp.RUNTIME:
        say("Loading the target on llama.cpp...")
        slots = parts.keys.slots
        runner = parts.take(
            parts.keys.llama(EMBEDDED, slots),
            lambda: llamacpp.load_embedded(progress, slots=slots, settings=settings.llama),
            f"{embedded.NAME} (llama.cpp, float32)",
            lambda model: model.nbytes(),
        )
    say(f"Preparing draft {draft.text}...")
    # drafts are built from the torch model's weights (embeddings, layers, head); the target runs on `runner`
    if kind.is_target:
        return ModelPair(runner, runner, HFCodec(tokenizer, target_lm.name))
    lean = runtime != TORCH  # the fast runtimes run the draft's lean forward too
    here = beside_torch(target, target_lm, tokenizer, limit, parts, progress, lean, settings)
    draft_lm = parts.take(
        parts.keys.draft(target, draft, lean),
        lambda: kind.build(draft, here),
        f"draft {draft.text} for {target_lm.name}" + (" (lean)" if lean else ""),
        lambda lm: lm.nbytes() if FILE in kind.needs else tensor_bytes(lm, target_model) - tensor_bytes(target_model),
    )
    return ModelPair(runner, draft_lm, HFCodec(tokenizer, target_lm.name))


def remote_pair(
    target: specs.Served,
    draft: ModelSpec,
    limit: int,
    progress: embedded.Progress | None,
    parts: Parts,
    rules: ClassPolicy,
    settings: LoadSettings,
) -> ModelPair:
    """A served target (specviz.models.remote) and a local draft model, whose tokenizer must be the
    server's: checked on probe strings before the first step."""
    kind = kinds.kind_of(draft)
    if kind.needs & {TARGET, TARGET_WEIGHTS}:
        raise ModelError(
            f"with a remote target the draft must be a standalone local model with its tokenizer: 'embedded' "
            f"(SmolLM2-135M-Instruct), a hub id or a model folder; {draft.text!r} needs the target's weights here"
        )
    say = progress or (lambda _msg: None)
    say(f"Loading draft {draft.text}...")
    tokenizers: dict[ModelSpec, Any] = {}

    def open_model(spec: ModelSpec) -> NextTokenModel:  # a standalone model from the store, its tokenizer kept
        model, tokenizers[spec] = parts.torch_model(spec, limit, progress)
        return HFModel(model, name_of(spec))

    draft_lm = kind.build(
        draft, beside(target, limit, parts, progress, settings, open_model=open_model)
    )  # the kind builds it (a hub model, a folder, the embedded model)
    if draft not in tokenizers:
        raise ModelError(f"a draft beside a served target brings its own tokenizer; {draft.text!r} has none here")
    codec = HFCodec(tokenizers[draft], draft_lm.name)
    say(f"Checking {target.served} against the draft's tokenizer...")
    check = rules.check_url if rules.on else None
    timeout = settings.remote_timeout_s
    target_lm = remote.RemoteTarget(target.served, codec, draft_lm.vocab_size, timeout=timeout, check=check)
    target_lm.check_tokenizer(codec)
    return ModelPair(target_lm, draft_lm, codec)


def gguf_pair(
    target: ModelSpec,
    draft: ModelSpec,
    limit: int,
    progress: embedded.Progress | None,
    parts: Parts,
    settings: LoadSettings,
) -> ModelPair:
    """A GGUF target on llama.cpp with its own tokenizer (specviz.models.ggufcodec), drafted by a second GGUF file of
    the same vocabulary, or by a kind built from the target alone (itself, prompt lookup: specviz.drafts.kinds). The
    headers are checked, and the pair's memory set against the machine's free memory, before anything heavy loads."""
    say = progress or (lambda _msg: None)
    say(f"Reading {target.text}...")
    places = settings.found_in()
    model = open_gguf(target, progress, places)
    info = model.info
    if info.parameters > limit:
        raise ModelTooLargeError(
            f"{target.text} has {info.parameters / 1e9:.2f} B parameters, over the limit of {limit / 1e9:.2f} B; "
            f"raise it with {limits.MAX_PARAMS_ENV}={int(info.parameters * 1.1)} if this machine has the memory"
        )
    kind = kinds.kind_of(draft)
    draft_model = None
    if FILE in kind.needs:
        draft_model = open_gguf(draft, progress, places)
        gguf.check_pair(info, draft_model.info)  # before anything heavy loads
    elif not kind.target_only:
        raise ModelError(
            f"a GGUF target drafts with another GGUF file of its vocabulary, with itself (self) or by prompt lookup; "
            f"{draft.text!r} is built from torch weights, which a GGUF target does not have here"
        )
    slots, context = parts.keys.slots, settings.llama.context
    held = {p.key for p in parts.store.parts()}
    target_key = parts.keys.llama(model.path, slots)
    needed = 0 if target_key in held else info.file_bytes + info.kv_bytes_per_token * context
    draft_key = parts.keys.llama(draft_model.path, 0) if draft_model is not None else None
    if draft_model is not None and draft_key not in held and draft_model.path != model.path:
        needed += draft_model.info.file_bytes + draft_model.info.kv_bytes_per_token * context
    gguf.check_fits(needed)
    say(f"Loading {model.name} on llama.cpp...")
    runner = parts.take(
        target_key,
        lambda: llamacpp.from_settings(model.path, model.name, settings.llama, slots),
        f"{model.name} (llama.cpp)",
        lambda lm: lm.nbytes(),
    )
    codec = LlamaCodec(runner, model.name)
    here = beside(
        target, limit, parts, progress, settings, model=runner, device=torch.device("cpu"), dtype=torch.float32,
        lean=True, target_gguf=lambda: info,
        # the draft's file, opened and checked above, is handed to its kind as it is
        open_gguf=lambda spec: draft_model if spec == draft and draft_model else open_gguf(spec, progress, places),
    )  # fmt: skip
    if draft_model is None:
        return ModelPair(runner, kind.build(draft, here), codec)
    say(f"Loading draft {draft_model.name} on llama.cpp...")
    draft_lm = parts.take(draft_key, lambda: kind.build(draft, here), f"{draft_model.name} (llama.cpp)", sized)
    return ModelPair(runner, draft_lm, codec)


def sized(model: NextTokenModel) -> int:
    return model.nbytes()
