"""Pairs: a target (specviz.models) and a draft (specviz.drafts, or a second model) that decode together.

Every choice a user can make either works or fails with a typed `ModelError` whose message says what
to do next: the embedded default pair (no network), hub ids and local folders, the drafts made from the
target's own parts, a target behind a serving engine, and the runtime that runs the target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specviz import limits, specs
from specviz.class_policy import ClassPolicy
from specviz.drafts import kinds
from specviz.drafts.kinds import FILE, TARGET, TARGET_WEIGHTS, Beside, GGUFModel
from specviz.drafts.kinds.embedded import EMBEDDED_DRAFT_LAYERS
from specviz.drafts.kinds.embedded_int8 import DEFAULT_ROWS, INT8
from specviz.drafts.kinds.model import VocabularyMismatchError, check_vocabularies, estimated_params
from specviz.errors import ModelError
from specviz.models import embedded, gguf, kernels, llamacpp, quantize, remote
from specviz.models.ggufcodec import LlamaCodec
from specviz.models.hub import (
    EMBEDDED,
    HubUnreachableError,
    ModelTooLargeError,
    load_model,
    resolve_device,
    resolve_dtype,
)
from specviz.models.lm import HFModel, NextTokenModel
from specviz.models.pair import ModelPair
from specviz.models.store import ModelStore, tensor_bytes
from specviz.models.text import HFCodec
from specviz.pair_parts import Keys, Parts, name_of
from specviz.specs import EARLY_EXIT, PROMPT_LOOKUP, QUANTIZED, SELF, ModelSpec

Spec = str | ModelSpec  # what load_pair and its neighbours take: a spec, or the text of one (parsed once, at entry)
AUTO, TORCH, KERNELS = "auto", "torch", "torch-kernels"
# the target's runtime; "auto": llama.cpp where it can run, else torch on per-shape kernels (specviz.models.kernels)
RUNTIMES = (AUTO, llamacpp.RUNTIME, KERNELS, TORCH)
RUNTIME_ENV = "SPECVIZ_RUNTIME"  # what "auto" means on a server (specviz.server.config)

__all__ = [
    "EMBEDDED_DRAFT_LAYERS",
    "HubUnreachableError",
    "ModelTooLargeError",
    "VocabularyMismatchError",
    "check_vocabularies",
]


@dataclass(frozen=True, kw_only=True)
class LoadSettings:
    """What a server hands load_pair besides the pair (specviz.server.config: its environment, read at the top);
    the defaults are the library's own, whatever the environment says."""

    runtime: str = AUTO  # what the runtime "auto" means
    max_params: int = limits.DEFAULT_MAX_PARAMS  # the largest model, in parameters
    places: tuple[gguf.Place, ...] | None = None  # where GGUF files are found; None: the usual places at home
    remote_timeout_s: float = remote.DEFAULT_TIMEOUT_S  # a served target's answer
    llama: llamacpp.LlamaSettings = field(default_factory=llamacpp.LlamaSettings)

    def found_in(self) -> list[gguf.Place]:
        """The places handed in; else the usual places at home, the Hugging Face cache where huggingface_hub keeps
        it (its own setting, as an outside script that downloads with it expects: HF_HOME is huggingface_hub's)."""
        if self.places is not None:
            return list(self.places)
        from huggingface_hub import constants

        hub = gguf.Place(source=gguf.HF_CACHE, path=Path(constants.HF_HUB_CACHE))
        return [hub if place.source == gguf.HF_CACHE else place for place in gguf.default_places({}, Path.home())]


DEFAULTS = LoadSettings()  # load_pair's when none is handed


@dataclass(frozen=True)
class Preset:
    label: str
    target: str
    draft: str
    description: str
    offline: bool  # works with no network


PRESETS: tuple[Preset, ...] = (
    Preset(
        "Embedded pair",
        EMBEDDED,
        EMBEDDED,
        "SmolLM2-135M-Instruct with its distilled draft: one trained layer that reads the target's hidden "
        "states (assets/draft, see its model card); no network",
        True,
    ),
    Preset(
        "Distilled draft in int8",
        EMBEDDED,
        INT8,
        f"the same distilled draft with int8 products and a head over the target's {DEFAULT_ROWS:,} most frequent "
        "tokens: a fraction of its cost per token, an acceptance of its own (assets/draft, see its model card); "
        "no network",
        True,
    ),
    Preset(
        "Untrained draft (first 8 layers)",
        EMBEDDED,
        f"{EARLY_EXIT}:{EMBEDDED_DRAFT_LAYERS}",
        "the embedded target's first 8 layers, untrained: compare with the distilled draft",
        True,
    ),
    Preset("Self-draft (α = 1)", EMBEDDED, SELF, "the target drafts for itself: every token is accepted", True),
    Preset(
        "Prompt lookup",
        EMBEDDED,
        PROMPT_LOOKUP,
        "model-free draft copying text that follows the last n-gram",
        True,
    ),
    *(
        Preset(
            f"Self-draft in {bits} bits ({kind})",
            EMBEDDED,
            QUANTIZED + kind,
            f"the target drafting for itself, quantized to {bits} bits by llama.cpp (made here on first use, "
            "about a second): a real second model whose acceptance falls with its bits; llama.cpp runtime",
            True,
        )
        for kind, bits in (("Q8_0", 8), ("Q4_0", 4), ("Q2_K", 2))
    ),
    Preset("distilgpt2 → gpt2", "gpt2", "distilgpt2", "the classic small pair; needs the hub", False),
    Preset(
        "SmolLM2 135M → 360M",
        "HuggingFaceTB/SmolLM2-360M-Instruct",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "same family, 2.7× larger target; needs the hub",
        False,
    ),
    Preset(
        "SmolLM2 135M → 1.7B",
        "HuggingFaceTB/SmolLM2-1.7B-Instruct",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "a 13× larger target; slow on a CPU; needs the hub",
        False,
    ),
    Preset(
        "Qwen2.5 0.5B → 1.5B",
        "Qwen/Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "a modern instruct pair; needs the hub",
        False,
    ),
)


def load_pair(
    target: Spec = EMBEDDED,
    draft: Spec = EMBEDDED,
    *,
    device: str = "auto",
    dtype: str = "auto",
    max_params: int | None = None,
    progress: embedded.Progress | None = None,
    runtime: str = AUTO,
    store: ModelStore | None = None,
    guard: ClassPolicy | None = None,
    settings: LoadSettings | None = None,
) -> ModelPair:
    """A pair from "embedded", a hub id or a local directory for the target; the draft may also be
    "self", "prompt-lookup", "early-exit:K" or a folder made by scripts/train_draft.py (every kind of draft:
    specviz.drafts.kinds). With the embedded target, the "embedded" draft is the distilled one in assets/draft/. Both
    models end up on the same device. `runtime` runs the target: "torch" (transformers, eager), "llama.cpp" (the
    embedded target and GGUF files, in process; `make llama` installs it) or "auto" (resolve_runtime).
    A GGUF model (a .gguf file, "ollama:NAME:TAG", "hf:ORG/REPO:QUANT") runs on llama.cpp as a target with its own
    tokenizer, drafted by a second GGUF file of its vocabulary (checked from both headers before anything loads),
    itself or prompt lookup; "embedded:Q8_0" (Q4_0, Q3_K_M, Q2_K) drafts for the embedded target with a copy of it
    that llama.cpp's quantizer makes here. `target` and `draft` are texts or parsed specs (specviz.specs.parse: a text
    is parsed once, here).

    `store`: where the pair takes its parts (specviz.models.store): pairs loaded from one store share every part
    they have in common (the target's weights, its llama.cpp model) and `pair.close()` gives them back; without
    one the pair's parts are its own. `guard`: a class server's policy (specviz.class_policy), handed in by
    the app: only allowed models and addresses, the class's size limit and llama.cpp's shared batched context.
    `settings`: the server's (what "auto" means, the largest model when `max_params` is None, where GGUF files are
    found, a served target's timeout, how llama.cpp runs), DEFAULTS without. The library never reads the
    environment."""
    target, draft = specs.parse(target), specs.parse(draft)
    rules = guard or ClassPolicy()
    settings = settings or DEFAULTS
    check_allowed(target, draft, rules)  # class mode: presets and the operator's allowlist only
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype, device)
    runtime = resolve_runtime(target, runtime, dev, torch_dtype, default=settings.runtime)
    limit = rules.model_params(settings.max_params if max_params is None else max_params)
    parts = Parts(store or ModelStore(), Keys(dev, torch_dtype, settings.llama.slots_for(rules.on)))
    try:
        if isinstance(target, specs.Served):
            pair = _remote_pair(target, draft, limit, progress, parts, rules, settings)
        elif target.is_gguf:
            pair = _gguf_pair(target, draft, limit, progress, parts, settings)
        else:
            pair = _local_pair(target, draft, runtime, limit, progress, parts, settings)
    except BaseException:
        parts.give_back()
        raise
    return pair.owning(parts.give_back)


def _beside(
    target: ModelSpec,
    torch_lm: HFModel,
    tokenizer: Any,
    limit: int,
    parts: Parts,
    progress: Any,
    lean: bool,
    settings: LoadSettings,
) -> Beside:
    """What a draft is built beside a torch target (specviz.drafts.kinds)."""
    return Beside(
        spec=target,
        model=torch_lm,
        torch=torch_lm,
        tokenizer=tokenizer,
        limit=limit,
        device=parts.keys.device,
        dtype=parts.keys.dtype,
        progress=progress,
        lean=lean,
        llama=settings.llama,
        open_gguf=lambda spec: open_gguf(spec, progress, settings.found_in()),
        target_gguf=(lambda: gguf.read_info(embedded.ensure_f32_gguf(progress)))
        if isinstance(target, specs.Embedded)
        else None,
    )


def _local_pair(
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
            draft_lm = kind.build(draft, _beside(target, target_lm, tokenizer, limit, parts, progress, True, settings))
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
    beside = _beside(target, target_lm, tokenizer, limit, parts, progress, lean, settings)
    draft_lm = parts.take(
        parts.keys.draft(target, draft, lean),
        lambda: kind.build(draft, beside),
        f"draft {draft.text} for {target_lm.name}" + (" (lean)" if lean else ""),
        lambda lm: lm.nbytes() if FILE in kind.needs else tensor_bytes(lm, target_model) - tensor_bytes(target_model),
    )
    return ModelPair(runner, draft_lm, HFCodec(tokenizer, target_lm.name))


EMBEDDED_PARAMS = 134_515_008  # SmolLM2-135M-Instruct's weights
EMBEDDED_KV_BYTES = 2 * 30 * 3 * 64 * 4  # a token's float32 keys and values: 30 layers, 3 KV heads of 64


def planned_parts(
    target: Spec,
    draft: Spec,
    runtime: str = AUTO,
    *,
    device: str = "auto",
    dtype: str = "auto",
    guard: ClassPolicy | None = None,
    settings: LoadSettings | None = None,
) -> list[tuple[tuple, int]]:
    """The parts `load_pair` would take from a store for this pair (the keys it uses), each with the bytes it is
    estimated to hold, before anything loads: a class server budgets its memory with it (specviz.server.paircache)
    and loads only the parts it does not hold yet. A model whose size cannot be known without loading it counts 0.
    Under a class's rules, a target or draft the class does not allow is refused first (RefusedError, check_allowed):
    nothing it names is resolved, fetched, sized or read."""
    target, draft = specs.parse(target), specs.parse(draft)
    rules = guard or ClassPolicy()
    settings = settings or DEFAULTS
    check_allowed(target, draft, rules)
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype, device)
    runtime = resolve_runtime(target, runtime, dev, torch_dtype, default=settings.runtime)
    width = torch.tensor([], dtype=torch_dtype).element_size()
    keys, places = Keys(dev, torch_dtype, settings.llama.slots_for(rules.on)), settings.found_in()
    if isinstance(target, specs.Served):
        return [(keys.torch(draft), _estimated_params(draft) * width)]
    slots = keys.slots
    pooled = slots * settings.llama.slot_tokens
    if target.is_gguf:
        path = _known_gguf_path(target, places)
        if path is None:  # it would have to be downloaded first: its size is not known here
            return []
        info = gguf.read_info(path)
        planned = [(keys.llama(path, slots), info.file_bytes + pooled * (info.kv_bytes_per_token or 0))]
        if draft.is_gguf and (draft_path := _known_gguf_path(draft, places)) is not None and draft_path != path:
            planned.append((keys.llama(draft_path, 0), _gguf_file_bytes(draft, draft_path)))
        return planned
    kind = kinds.kind_of(draft)
    if runtime == KERNELS:
        size = (_estimated_params(target) + kind.params(draft, target)) * width
        return [(keys.kernels(target, draft), size)]
    planned = [(keys.torch(target), _estimated_params(target) * width)]
    if runtime == llamacpp.RUNTIME:
        planned.append((keys.llama(EMBEDDED, slots), EMBEDDED_PARAMS * 4 + pooled * EMBEDDED_KV_BYTES))
    if not kind.is_target:
        lean = runtime != TORCH
        size = kind.params(draft, target) * width * (2 if lean else 1)  # lean: prepared copies beside
        if FILE in kind.needs:
            path = _known_gguf_path(draft, places)
            size = _gguf_file_bytes(draft, path) if path is not None else 0
        planned.append((keys.draft(target, draft, lean), size))
    return planned


def _known_gguf_path(spec: ModelSpec, places: list[gguf.Place]) -> Path | None:
    """The file a GGUF spec names, where knowing it needs no download and no quantizing."""
    if isinstance(spec, specs.Quantized):
        quantize.grade(spec.quant)
        return Path(f"{embedded.NAME}.{spec.quant}.gguf")  # made on first use; sized by its bits
    if isinstance(spec, specs.GGUFFile) and spec.found is not None:
        return spec.found.path
    if isinstance(spec, specs.GGUFFile) and spec.on_hub:
        return None
    return gguf.resolve(str(spec), places)


def _gguf_file_bytes(spec: ModelSpec, path: Path) -> int:
    if isinstance(spec, specs.Quantized) and not path.is_file():  # not made yet: the target's weights at its bits
        return EMBEDDED_PARAMS * quantize.grade(spec.quant).bits // 8
    return gguf.read_info(path).file_bytes


def _estimated_params(spec: ModelSpec) -> int:
    return EMBEDDED_PARAMS if isinstance(spec, specs.Embedded) else estimated_params(spec)


def offered() -> tuple[str, ...]:
    """Every model spec the app offers by itself: the presets' targets and drafts, and the drafts made from the
    target that the sidebar offers beside any target (self, prompt lookup: specviz.drafts.kinds.offered)."""
    return (EMBEDDED, *(k.offer for k in kinds.offered()), *(p.target for p in PRESETS), *(p.draft for p in PRESETS))


def check_allowed(target: Spec, draft: Spec, rules: ClassPolicy) -> None:
    """Under a class server's rules, refuse (RefusedError) a target or draft that is neither offered nor
    allowlisted, before anything loads or connects: a served target's address, a hub id, a folder or a GGUF file on
    this server. Whether a path outside the allowed folders exists never changes the message: a spec written as a
    path (or a .gguf file) is a path; a bare name is a hub id unless it is a folder under an allowed one."""
    target, draft = specs.parse(target), specs.parse(draft)
    if not rules.on:
        return
    for spec in (target, draft):
        if isinstance(spec, specs.Served):
            rules.check_url(spec.served.url)
        elif isinstance(spec, specs.EarlyExit):
            continue  # the target's own first layers
        else:
            text = spec.text
            written_as_path = text.startswith(("/", ".", "~")) or text.lower().endswith(".gguf")
            if text and not written_as_path and rules.path_allowed(Path(text)) and Path(text).expanduser().exists():
                continue  # a folder under an allowed one, named from where the server runs
            rules.check_model(text, offered(), written_as_path)


def resolve_runtime(
    target: Spec,
    runtime: str = AUTO,
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    *,
    default: str = AUTO,
) -> str:
    """The runtime that will run `target`. "auto" (`default` where a server names one: $SPECVIZ_RUNTIME), for the
    embedded target on a CPU in float32: llama.cpp when llama-cpp-python is installed, else torch on per-shape kernels;
    any other target: torch. Asking for a runtime where it cannot run is a ModelError that says why."""
    target = specs.parse(target)
    if runtime == AUTO and not target.is_gguf:  # the default a GGUF file has no choice in
        runtime = default
    if runtime not in RUNTIMES:
        raise ModelError(f"unknown runtime {runtime!r}: use {', '.join(RUNTIMES)}")
    cpu = device is None or device.type == "cpu"
    served = isinstance(target, specs.Served)
    if target.is_gguf:
        if runtime not in (AUTO, llamacpp.RUNTIME):
            raise ModelError(f"a GGUF file runs on llama.cpp; {target.text!r} cannot run on {runtime}")
        if not llamacpp.available():
            raise ModelError(f"a GGUF target runs on llama.cpp, which is not installed: {llamacpp.INSTALL_HINT}")
        return llamacpp.RUNTIME
    if runtime == AUTO:
        if not isinstance(target, specs.Embedded) or not cpu or dtype != torch.float32:
            return TORCH
        return llamacpp.RUNTIME if llamacpp.available() else KERNELS
    if runtime == KERNELS and (served or not cpu or dtype != torch.float32):
        raise ModelError("the torch-kernels runtime runs a local target on the CPU in float32; use torch")
    if runtime == llamacpp.RUNTIME:
        if not isinstance(target, specs.Embedded):
            raise ModelError(
                f"the llama.cpp runtime runs the embedded target and GGUF files; {target.text!r} runs on torch"
            )
        if not cpu or dtype != torch.float32:
            raise ModelError("the llama.cpp runtime runs on the CPU in float32: use device cpu and dtype float32")
        if not llamacpp.available():
            raise ModelError(f"the llama.cpp runtime is not installed: {llamacpp.INSTALL_HINT}")
    return runtime


def _remote_pair(
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
    if kinds.kind_of(draft).needs & {TARGET, TARGET_WEIGHTS}:
        raise ModelError(
            f"with a remote target the draft must be a standalone local model with its tokenizer: 'embedded' "
            f"(SmolLM2-135M-Instruct), a hub id or a model folder; {draft.text!r} needs the target's weights here"
        )
    say = progress or (lambda _msg: None)
    say(f"Loading draft {draft.text}...")
    model, tokenizer = parts.torch_model(draft, limit, progress)
    draft_lm = HFModel(model, name_of(draft))
    codec = HFCodec(tokenizer, draft_lm.name)
    say(f"Checking {target.served} against the draft's tokenizer...")
    check = rules.check_url if rules.on else None
    timeout = settings.remote_timeout_s
    target_lm = remote.RemoteTarget(target.served, codec, draft_lm.vocab_size, timeout=timeout, check=check)
    target_lm.check_tokenizer(codec)
    return ModelPair(target_lm, draft_lm, codec)


def is_gguf(spec: Spec) -> bool:
    """A GGUF model spec: a .gguf file, "ollama:NAME[:TAG]", "hf:ORG/REPO:FILE_OR_QUANT", or "embedded:KIND" (the
    embedded target quantized here: Q8_0, Q4_0, Q3_K_M, Q2_K)."""
    return specs.parse(spec).is_gguf


def gguf_path(spec: Spec, progress: embedded.Progress | None = None, places: list[gguf.Place] | None = None) -> Path:
    """The file a GGUF spec names: made here for "embedded:KIND", found in `places` (default: the usual places at
    home) or downloaded otherwise (specviz.models.gguf.resolve); a found model's own file."""
    spec = specs.parse(spec)
    if isinstance(spec, specs.Quantized):
        return quantize.embedded_quantized(spec.quant, progress)
    if isinstance(spec, specs.GGUFFile) and spec.found is not None:
        return spec.found.path
    return gguf.resolve(str(spec), DEFAULTS.found_in() if places is None else places, progress)


def gguf_name(info: gguf.GGUFInfo, spec: Spec = "") -> str:
    """How a GGUF model is named on every page: the user's own name for it and its quantization, "my-smol.Q2_K.gguf
    (Q2_K)": the file's name, an Ollama model's NAME:TAG; never the file's general.name, often a training run's
    ("Smollm2 135M 8k Lc100K Mix1 Ep2"). The embedded target's own files (its float32 copy, its quantized drafts) go by
    the embedded model's name, "SmolLM2-135M-Instruct (Q4_0)"."""
    parsed = specs.parse(spec) if spec else None
    ours = isinstance(parsed, specs.Quantized) or Path(info.path).resolve().parent == embedded.cache_root().resolve()
    if ours:
        return f"{embedded.NAME} ({info.quantization})"
    name = Path(info.path).name
    if isinstance(parsed, specs.GGUFFile) and parsed.ref.startswith("ollama:"):  # its blob's name says nothing
        name = parsed.found.name if parsed.found is not None else parsed.ref.removeprefix("ollama:")
    return f"{name} ({info.quantization})"


def open_gguf(
    spec: ModelSpec, progress: embedded.Progress | None = None, places: list[gguf.Place] | None = None
) -> GGUFModel:
    """A GGUF spec's model: its file (found in `places`, downloaded or made here) and its header, read once; a model
    discovery found keeps the header it read."""
    path = gguf_path(spec, progress, places)
    found = spec.found if isinstance(spec, specs.GGUFFile) else None
    info = found.info if found is not None and found.info is not None else gguf.read_info(path)
    return GGUFModel(spec=spec, path=path, info=info, name=gguf_name(info, spec))


def _gguf_pair(
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
    if draft_model is None:
        beside = Beside(
            spec=target,
            model=runner,
            torch=None,
            tokenizer=None,
            limit=limit,
            device=torch.device("cpu"),
            dtype=torch.float32,
            progress=progress,
            lean=True,
            llama=settings.llama,
            open_gguf=lambda spec: open_gguf(spec, progress, places),
            target_gguf=lambda: info,
        )
        return ModelPair(runner, kind.build(draft, beside), codec)
    say(f"Loading draft {draft_model.name} on llama.cpp...")
    draft_lm = parts.take(
        draft_key,
        lambda: llamacpp.from_settings(draft_model.path, draft_model.name, settings.llama),
        f"{draft_model.name} (llama.cpp)",
        lambda lm: lm.nbytes(),
    )
    return ModelPair(runner, draft_lm, codec)
