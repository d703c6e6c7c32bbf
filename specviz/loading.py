"""Pairs: a target (specviz.models) and a draft (specviz.drafts, or a second model) that decode together.

Every choice a user can make either works or fails with a typed `ModelError` whose message says what
to do next: the embedded default pair (no network), hub ids and local folders, the drafts made from the
target's own parts, a target behind a serving engine, and the runtime that runs the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specviz import drafts, limits
from specviz.bounded import whole_number
from specviz.drafts.lookup import PromptLookupDrafter
from specviz.drafts.subset import early_exit
from specviz.errors import IncompatibleModelsError, ModelError
from specviz.models import embedded, gguf, kernels, llamacpp, quantize, remote
from specviz.models.ggufcodec import LlamaCodec
from specviz.models.hub import (
    EMBEDDED,
    HubUnreachableError,
    ModelTooLargeError,
    estimate_parameters,
    load_config,
    load_model,
    resolve_device,
    resolve_dtype,
)
from specviz.models.lm import HFModel, NextTokenModel
from specviz.models.pair import ModelPair
from specviz.models.store import ModelStore, tensor_bytes
from specviz.models.text import HFCodec
from specviz.server.class_policy import ClassPolicy

SELF = "self"
PROMPT_LOOKUP = "prompt-lookup"
EARLY_EXIT = "early-exit"  # "early-exit:K": the target's first K layers, its final norm and head
QUANTIZED = EMBEDDED + ":"  # "embedded:Q4_0": the embedded target quantized by llama.cpp, a draft of graded bits
EMBEDDED_DRAFT_LAYERS = 8  # the untrained fallback when assets/draft/ is missing
AUTO, TORCH, KERNELS = "auto", "torch", "torch-kernels"
# the target's runtime; "auto": llama.cpp where it can run, else torch on per-shape kernels (specviz.models.kernels)
RUNTIMES = (AUTO, llamacpp.RUNTIME, KERNELS, TORCH)
RUNTIME_ENV = "SPECVIZ_RUNTIME"  # what "auto" means on a server (specviz.server.config)

__all__ = ["HubUnreachableError", "ModelTooLargeError", "VocabularyMismatchError"]


class VocabularyMismatchError(IncompatibleModelsError):
    """Draft and target tokenizers differ in size or in their token ↔ id mapping."""


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
        return list(self.places) if self.places is not None else gguf.default_places({}, Path.home())


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
    target: str = EMBEDDED,
    draft: str = EMBEDDED,
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
    "self", "prompt-lookup", "early-exit:K" or a folder made by scripts/train_draft.py. With the
    embedded target, the "embedded" draft is the distilled one in assets/draft/. Both models end up
    on the same device. `runtime` runs the target: "torch" (transformers, eager), "llama.cpp" (the
    embedded target and GGUF files, in process; `make llama` installs it) or "auto" (resolve_runtime).
    A GGUF model (a .gguf file, "ollama:NAME:TAG", "hf:ORG/REPO:QUANT") runs on llama.cpp as a target with its own
    tokenizer, drafted by a second GGUF file of its vocabulary (checked from both headers before anything loads),
    itself or prompt lookup; "embedded:Q8_0" (Q4_0, Q3_K_M, Q2_K) drafts for the embedded target with a copy of it
    that llama.cpp's quantizer makes here.

    `store`: where the pair takes its parts (specviz.models.store): pairs loaded from one store share every part
    they have in common (the target's weights, its llama.cpp model) and `pair.close()` gives them back; without
    one the pair's parts are its own. `guard`: a class server's policy (specviz.server.class_policy), handed in by
    the app: only allowed models and addresses, the class's size limit and llama.cpp's shared batched context.
    `settings`: the server's (what "auto" means, the largest model when `max_params` is None, where GGUF files are
    found, a served target's timeout, how llama.cpp runs), DEFAULTS without. The library never reads the
    environment."""
    rules = guard or ClassPolicy()
    settings = settings or DEFAULTS
    check_allowed(target, draft, rules)  # class mode: presets and the operator's allowlist only
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype, device)
    runtime = resolve_runtime(target, runtime, dev, torch_dtype, default=settings.runtime)
    limit = rules.model_params(settings.max_params if max_params is None else max_params)
    parts = _Parts(store or ModelStore())
    try:
        if remote.is_remote(target):
            pair = _remote_pair(target, draft, limit, dev, torch_dtype, progress, parts, rules, settings)
        elif is_gguf(target):
            pair = _gguf_pair(target, draft, limit, progress, parts, rules, settings)
        else:
            pair = _local_pair(target, draft, runtime, limit, dev, torch_dtype, progress, parts, rules, settings)
    except BaseException:
        parts.give_back()
        raise
    return pair.owning(parts.give_back)


class _Parts:
    """The parts one pair took from a store, given back together when the pair closes."""

    def __init__(self, store: ModelStore) -> None:
        self.store, self.keys = store, []

    def take(self, key: tuple, make: Any, name: str, size: Any) -> Any:
        value = self.store.take(key, make, name=name, size=size)
        self.keys.append(key)
        return value

    def give_back(self) -> None:
        keys, self.keys = self.keys, []
        for key in reversed(keys):
            self.store.give(key)

    def torch_model(
        self, spec: str, limit: int, dev: torch.device, torch_dtype: torch.dtype, progress: Any, kind: str = "eager"
    ) -> tuple[Any, Any]:
        """(model, tokenizer) of a transformers model, one copy for every pair that runs it the same way."""
        key = ("torch", spec, str(dev), str(torch_dtype), kind)
        name = f"{embedded.NAME if spec == EMBEDDED else spec} (torch, {str(torch_dtype).removeprefix('torch.')})"
        return self.take(key, lambda: load_model(spec, limit, dev, torch_dtype, progress), name, _model_bytes)


def _model_bytes(loaded: tuple[Any, Any]) -> int:
    return tensor_bytes(loaded[0])


def _local_pair(
    target: str,
    draft: str,
    runtime: str,
    limit: int,
    dev: torch.device,
    torch_dtype: torch.dtype,
    progress: embedded.Progress | None,
    parts: _Parts,
    rules: ClassPolicy,
    settings: LoadSettings,
) -> ModelPair:
    say = progress or (lambda _msg: None)
    if runtime == KERNELS:
        # per-shape kernels replace the target's Linear modules in place, after its drafts copied or shared them:
        # such a target and its draft are one part (a draft sharing a kernel-chosen target's layers computes
        # other numbers)
        def make() -> tuple[NextTokenModel, NextTokenModel, Any]:
            model, tokenizer = load_model(target, limit, dev, torch_dtype, progress)
            target_lm = HFModel(model, embedded.NAME if target == EMBEDDED else target, KERNELS)
            say(f"Preparing draft {draft}...")
            draft_lm = _draft(draft, target, target_lm, tokenizer, limit, dev, torch_dtype, progress, True, settings)
            say("Timing the product kernels for each weight shape (a few seconds)...")
            kernels.with_chosen_kernels(model)  # after the drafts copied what they copy, before anything runs
            return target_lm, draft_lm, tokenizer

        say(f"Loading target {target}...")
        key = ("torch-kernels", target, draft, str(dev), str(torch_dtype))
        name = f"{embedded.NAME if target == EMBEDDED else target} with draft {draft} (torch-kernels)"
        target_lm, draft_lm, tokenizer = parts.take(key, make, name, lambda made: tensor_bytes(*made[:2]))
        return ModelPair(target_lm, draft_lm, HFCodec(tokenizer, target_lm.name))
    say(f"Loading target {target}...")
    target_model, tokenizer = parts.torch_model(target, limit, dev, torch_dtype, progress)
    target_lm = HFModel(target_model, embedded.NAME if target == EMBEDDED else target, TORCH)
    runner: NextTokenModel = target_lm
    if runtime == llamacpp.RUNTIME:
        say("Loading the target on llama.cpp...")
        slots = settings.llama.slots_for(rules.on)  # a class server's runs share decodes
        runner = parts.take(
            ("llama.cpp", EMBEDDED, slots),
            lambda: llamacpp.load_embedded(progress, slots=slots, settings=settings.llama),
            f"{embedded.NAME} (llama.cpp, float32)",
            lambda model: model.nbytes(),
        )
    say(f"Preparing draft {draft}...")
    # drafts are built from the torch model's weights (embeddings, layers, head); the target runs on `runner`
    if draft == SELF:
        return ModelPair(runner, runner, HFCodec(tokenizer, target_lm.name))
    lean = runtime != TORCH  # the fast runtimes run the draft's lean forward too
    draft_lm = parts.take(
        ("draft", target, draft, str(dev), str(torch_dtype), lean),
        lambda: _draft(draft, target, target_lm, tokenizer, limit, dev, torch_dtype, progress, lean, settings),
        f"draft {draft} for {target_lm.name}" + (" (lean)" if lean else ""),
        lambda lm: lm.nbytes() if is_gguf(draft) else tensor_bytes(lm, target_model) - tensor_bytes(target_model),
    )
    return ModelPair(runner, draft_lm, HFCodec(tokenizer, target_lm.name))


EMBEDDED_PARAMS = 134_515_008  # SmolLM2-135M-Instruct's weights
EMBEDDED_KV_BYTES = 2 * 30 * 3 * 64 * 4  # a token's float32 keys and values: 30 layers, 3 KV heads of 64


def planned_parts(
    target: str,
    draft: str,
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
    rules = guard or ClassPolicy()
    settings = settings or DEFAULTS
    check_allowed(target, draft, rules)
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype, device)
    runtime = resolve_runtime(target, runtime, dev, torch_dtype, default=settings.runtime)
    places = settings.found_in()
    width = torch.tensor([], dtype=torch_dtype).element_size()
    at = (str(dev), str(torch_dtype))
    if remote.is_remote(target):
        return [(("torch", draft, *at, "eager"), _estimated_params(draft) * width)]
    slots = settings.llama.slots_for(rules.on)
    pooled = slots * settings.llama.slot_tokens
    if is_gguf(target):
        path = _known_gguf_path(target, places)
        if path is None:  # it would have to be downloaded first: its size is not known here
            return []
        info = gguf.read_info(path)
        planned = [(("llama.cpp", str(path), slots), info.file_bytes + pooled * (info.kv_bytes_per_token or 0))]
        if is_gguf(draft) and (draft_path := _known_gguf_path(draft, places)) is not None and draft_path != path:
            planned.append((("llama.cpp", str(draft_path), 0), _gguf_file_bytes(draft, draft_path)))
        return planned
    if runtime == KERNELS:
        size = (_estimated_params(target) + _estimated_draft_params(draft, target)) * width
        return [(("torch-kernels", target, draft, *at), size)]
    planned = [(("torch", target, *at, "eager"), _estimated_params(target) * width)]
    if runtime == llamacpp.RUNTIME:
        planned.append((("llama.cpp", EMBEDDED, slots), EMBEDDED_PARAMS * 4 + pooled * EMBEDDED_KV_BYTES))
    if draft != SELF:
        lean = runtime != TORCH
        size = _estimated_draft_params(draft, target) * width * (2 if lean else 1)  # lean: prepared copies beside
        if is_gguf(draft):
            path = _known_gguf_path(draft, places)
            size = _gguf_file_bytes(draft, path) if path is not None else 0
        planned.append((("draft", target, draft, *at, lean), size))
    return planned


def _known_gguf_path(spec: str, places: list[gguf.Place]) -> Path | None:
    """The file a GGUF spec names, where knowing it needs no download and no quantizing."""
    spec = spec.strip()
    if spec.startswith(QUANTIZED):
        quantize.grade(spec.removeprefix(QUANTIZED))
        return Path(f"{embedded.NAME}.{spec.removeprefix(QUANTIZED)}.gguf")  # made on first use; sized by its bits
    if spec.startswith("hf:"):
        return None
    return gguf.resolve(spec, places)


def _gguf_file_bytes(spec: str, path: Path) -> int:
    if spec.strip().startswith(QUANTIZED) and not path.is_file():  # not made yet: the target's weights at its bits
        return EMBEDDED_PARAMS * quantize.grade(spec.strip().removeprefix(QUANTIZED)).bits // 8
    return gguf.read_info(path).file_bytes


def _estimated_params(spec: str) -> int:
    if spec == EMBEDDED:
        return EMBEDDED_PARAMS
    try:
        return estimate_parameters(load_config(spec))
    except (ModelError, OSError, ValueError):
        return 0


def _estimated_draft_params(spec: str, target: str) -> int:
    """A draft's own weights: none for the target's own layers or prompt lookup, a trained draft's file, a model's."""
    if spec in (SELF, PROMPT_LOOKUP) or spec.startswith(EARLY_EXIT) or (spec == EMBEDDED and target != EMBEDDED):
        return 0
    folder = drafts.DEFAULT_DIR if spec == EMBEDDED else Path(spec.strip()).expanduser()
    if drafts.is_draft_dir(folder):
        from safetensors import safe_open

        count = 0
        for file in folder.glob("*.safetensors"):
            with safe_open(str(file), "pt") as tensors:
                count += sum(math.prod(tensors.get_slice(name).get_shape()) for name in tensors.keys())  # noqa: SIM118
        return count
    if spec == EMBEDDED:
        return 0  # the untrained fallback: the target's first layers
    return _estimated_params(spec)


def offered() -> tuple[str, ...]:
    """Every model spec the app offers by itself: the presets' targets and drafts, and the drafts made from the
    target (self, prompt lookup)."""
    return (EMBEDDED, SELF, PROMPT_LOOKUP, *(p.target for p in PRESETS), *(p.draft for p in PRESETS))


def check_allowed(target: str, draft: str, rules: ClassPolicy) -> None:
    """Under a class server's rules, refuse (RefusedError) a target or draft that is neither offered nor
    allowlisted, before anything loads or connects: a served target's address, a hub id, a folder or a GGUF file on
    this server. Whether a path outside the allowed folders exists never changes the message: a spec written as a
    path (or a .gguf file) is a path; a bare name is a hub id unless it is a folder under an allowed one."""
    if not rules.on:
        return
    for spec in (target, draft):
        spec = spec.strip()
        if remote.is_remote(spec):
            rules.check_url(remote.parse_spec(spec).url)
        elif spec.startswith(EARLY_EXIT + ":"):
            continue  # the target's own first layers
        else:
            written_as_path = spec.startswith(("/", ".", "~")) or spec.lower().endswith(".gguf")
            if spec and not written_as_path and rules.path_allowed(Path(spec)) and Path(spec).expanduser().exists():
                continue  # a folder under an allowed one, named from where the server runs
            rules.check_model(spec, offered(), written_as_path)


def resolve_runtime(
    target: str,
    runtime: str = AUTO,
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    *,
    default: str = AUTO,
) -> str:
    """The runtime that will run `target`. "auto" (`default` where a server names one: $SPECVIZ_RUNTIME), for the
    embedded target
    on a CPU in float32: llama.cpp when llama-cpp-python is installed, else torch on per-shape kernels;
    any other target: torch. Asking for a runtime where it cannot run is a ModelError that says why."""
    if runtime == AUTO and not is_gguf(target):  # the default a GGUF file has no choice in
        runtime = default
    if runtime not in RUNTIMES:
        raise ModelError(f"unknown runtime {runtime!r}: use {', '.join(RUNTIMES)}")
    cpu = device is None or device.type == "cpu"
    if is_gguf(target):
        if runtime not in (AUTO, llamacpp.RUNTIME):
            raise ModelError(f"a GGUF file runs on llama.cpp; {target!r} cannot run on {runtime}")
        if not llamacpp.available():
            raise ModelError(f"a GGUF target runs on llama.cpp, which is not installed: {llamacpp.INSTALL_HINT}")
        return llamacpp.RUNTIME
    if runtime == AUTO:
        if target != EMBEDDED or not cpu or dtype != torch.float32:
            return TORCH
        return llamacpp.RUNTIME if llamacpp.available() else KERNELS
    if runtime == KERNELS and (remote.is_remote(target) or not cpu or dtype != torch.float32):
        raise ModelError("the torch-kernels runtime runs a local target on the CPU in float32; use torch")
    if runtime == llamacpp.RUNTIME:
        if remote.is_remote(target) or target != EMBEDDED:
            raise ModelError(f"the llama.cpp runtime runs the embedded target and GGUF files; {target!r} runs on torch")
        if not cpu or dtype != torch.float32:
            raise ModelError("the llama.cpp runtime runs on the CPU in float32: use device cpu and dtype float32")
        if not llamacpp.available():
            raise ModelError(f"the llama.cpp runtime is not installed: {llamacpp.INSTALL_HINT}")
    return runtime


def _remote_pair(
    target: str,
    draft: str,
    limit: int,
    dev: torch.device,
    torch_dtype: torch.dtype,
    progress: embedded.Progress | None,
    parts: _Parts,
    rules: ClassPolicy,
    settings: LoadSettings,
) -> ModelPair:
    """A served target (specviz.models.remote) and a local draft model, whose tokenizer must be the
    server's: checked on probe strings before the first step."""
    spec = remote.parse_spec(target)
    if draft in (SELF, PROMPT_LOOKUP) or draft.startswith(EARLY_EXIT) or drafts.is_draft_dir(Path(draft).expanduser()):
        raise ModelError(
            f"with a remote target the draft must be a standalone local model with its tokenizer: 'embedded' "
            f"(SmolLM2-135M-Instruct), a hub id or a model folder; {draft!r} needs the target's weights here"
        )
    say = progress or (lambda _msg: None)
    say(f"Loading draft {draft}...")
    model, tokenizer = parts.torch_model(draft, limit, dev, torch_dtype, progress)
    draft_lm = HFModel(model, embedded.NAME if draft == EMBEDDED else draft)
    codec = HFCodec(tokenizer, draft_lm.name)
    say(f"Checking {spec} against the draft's tokenizer...")
    check = rules.check_url if rules.on else None
    timeout = settings.remote_timeout_s
    target_lm = remote.RemoteTarget(spec, codec, draft_lm.vocab_size, timeout=timeout, check=check)
    target_lm.check_tokenizer(codec)
    return ModelPair(target_lm, draft_lm, codec)


def _draft(
    spec: str,
    target_spec: str,
    target: HFModel,
    tokenizer: Any,
    limit: int,
    dev: torch.device,
    torch_dtype: torch.dtype,
    progress: embedded.Progress | None,
    lean: bool,
    settings: LoadSettings,
) -> NextTokenModel:
    if spec == SELF or (spec == target_spec and spec != EMBEDDED):
        return target
    if spec == PROMPT_LOOKUP:
        return PromptLookupDrafter(target.vocab_size)
    if is_gguf(spec):  # a GGUF draft beside the embedded target: checked against its GGUF, run on llama.cpp
        if target_spec != EMBEDDED:
            raise ModelError(
                f"a GGUF draft ({spec!r}) pairs with the embedded target or a GGUF target; {target_spec!r} is neither"
            )
        target_info = gguf.read_info(embedded.ensure_f32_gguf(progress))
        return _gguf_model(spec, target_info, progress, settings)
    if spec == EMBEDDED and target_spec == EMBEDDED and drafts.is_draft_dir(drafts.DEFAULT_DIR):
        say = progress or (lambda _msg: None)
        say("Building the distilled draft from assets/draft...")
        name = f"{target.name} distilled draft (embedded)"
        return drafts.load_trained(target.model, drafts.DEFAULT_DIR, name, lean)
    if spec.strip() and drafts.is_draft_dir(Path(spec.strip()).expanduser()):
        return drafts.load_trained(target.model, Path(spec.strip()).expanduser(), f"distilled draft {spec}", lean)
    if spec == EMBEDDED or spec.startswith(EARLY_EXIT):
        layers = EMBEDDED_DRAFT_LAYERS if spec == EMBEDDED else _layer_count(spec)
        name = f"{target.name} first {layers} layers" + (" (untrained)" if spec == EMBEDDED else "")
        return HFModel(early_exit(target.model, layers), name)
    model, draft_tokenizer = load_model(spec, limit, dev, torch_dtype, progress)
    check_vocabularies(tokenizer, draft_tokenizer, target.name, spec)
    return HFModel(model, spec)


def is_gguf(spec: str) -> bool:
    """A GGUF model spec: a .gguf file, "ollama:NAME[:TAG]", "hf:ORG/REPO:FILE_OR_QUANT", or "embedded:KIND" (the
    embedded target quantized here: Q8_0, Q4_0, Q3_K_M, Q2_K)."""
    spec = spec.strip()
    return spec.startswith(QUANTIZED) or gguf.parse_spec(spec) is not None


def gguf_path(spec: str, progress: embedded.Progress | None = None, places: list[gguf.Place] | None = None) -> Path:
    """The file a GGUF spec names: made here for "embedded:KIND", found in `places` (default: the usual places at
    home) or downloaded otherwise (specviz.models.gguf.resolve)."""
    spec = spec.strip()
    if spec.startswith(QUANTIZED):
        return quantize.embedded_quantized(spec.removeprefix(QUANTIZED), progress)
    return gguf.resolve(spec, DEFAULTS.found_in() if places is None else places, progress)


def gguf_name(info: gguf.GGUFInfo, spec: str = "") -> str:
    """How a GGUF model is named on every page: its name and quantization, "SmolLM2-135M-Instruct (Q4_0)". The
    embedded target's own files (its float32 copy, its quantized drafts) go by the embedded model's name."""
    ours = spec.strip().startswith(QUANTIZED) or Path(info.path).resolve().parent == embedded.cache_root().resolve()
    return f"{embedded.NAME if ours else info.name} ({info.quantization})"


def _gguf_model(
    spec: str, target: gguf.GGUFInfo | None, progress: embedded.Progress | None, settings: LoadSettings
) -> NextTokenModel:
    """A GGUF draft on llama.cpp, after its header was checked against the target's (vocabulary, special tokens,
    chat template: IncompatibleModelsError naming the first differences)."""
    path = gguf_path(spec, progress, settings.found_in())
    info = gguf.read_info(path)
    if target is not None:
        gguf.check_pair(target, info)
    return llamacpp.from_settings(path, gguf_name(info, spec), settings.llama)


def _gguf_pair(
    target: str,
    draft: str,
    limit: int,
    progress: embedded.Progress | None,
    parts: _Parts,
    rules: ClassPolicy,
    settings: LoadSettings,
) -> ModelPair:
    """A GGUF target on llama.cpp with its own tokenizer (specviz.models.ggufcodec), drafted by a second GGUF file of
    the same vocabulary, by itself or by prompt lookup. The headers are checked, and the pair's memory set against the
    machine's free memory, before anything heavy loads."""
    say = progress or (lambda _msg: None)
    say(f"Reading {target}...")
    places = settings.found_in()
    path = gguf_path(target, progress, places)
    info = gguf.read_info(path)
    if info.parameters > limit:
        raise ModelTooLargeError(
            f"{target} has {info.parameters / 1e9:.2f} B parameters, over the limit of {limit / 1e9:.2f} B; raise it "
            f"with {limits.MAX_PARAMS_ENV}={int(info.parameters * 1.1)} if this machine has the memory"
        )
    draft_info = None
    if is_gguf(draft):
        draft_path = gguf_path(draft, progress, places)
        draft_info = gguf.read_info(draft_path)
        gguf.check_pair(info, draft_info)  # before anything heavy loads
    elif draft not in (SELF, PROMPT_LOOKUP):
        raise ModelError(
            f"a GGUF target drafts with another GGUF file of its vocabulary, with itself (self) or by prompt lookup; "
            f"{draft!r} is built from torch weights, which a GGUF target does not have here"
        )
    slots = settings.llama.slots_for(rules.on)  # a class server's runs share decodes
    context = settings.llama.context
    held = {p.key for p in parts.store.parts()}
    target_key = ("llama.cpp", str(path), slots)
    needed = 0 if target_key in held else info.file_bytes + info.kv_bytes_per_token * context
    if draft_info is not None and ("llama.cpp", str(draft_path), 0) not in held and draft_path != path:
        needed += draft_info.file_bytes + draft_info.kv_bytes_per_token * context
    gguf.check_fits(needed)
    name = gguf_name(info, target)
    say(f"Loading {name} on llama.cpp...")
    runner = parts.take(
        target_key,
        lambda: llamacpp.from_settings(path, name, settings.llama, slots),
        f"{name} (llama.cpp)",
        lambda model: model.nbytes(),
    )
    codec = LlamaCodec(runner, name)
    if draft == SELF:
        return ModelPair(runner, runner, codec)
    if draft == PROMPT_LOOKUP:
        return ModelPair(runner, PromptLookupDrafter(runner.vocab_size), codec)
    draft_name = gguf_name(draft_info, draft)
    say(f"Loading draft {draft_name} on llama.cpp...")
    draft_lm = parts.take(
        ("llama.cpp", str(draft_path), 0),
        lambda: llamacpp.from_settings(draft_path, draft_name, settings.llama),
        f"{draft_name} (llama.cpp)",
        lambda model: model.nbytes(),
    )
    return ModelPair(runner, draft_lm, codec)


def _layer_count(spec: str) -> int:
    _, _, k = spec.partition(":")
    try:
        layers = whole_number(k, error=ValueError, what="K")  # digits 0-9 only: not "²" or "٣"
    except ValueError:
        layers = 0
    if layers < 1:
        raise ModelError(f"write the early-exit draft as {EARLY_EXIT}:K with K ≥ 1 layers; got {spec!r}")
    return layers


def check_vocabularies(target_tok: Any, draft_tok: Any, target_name: str, draft_name: str) -> None:
    """Same size and the same token ↔ id mapping, or a VocabularyMismatchError naming the first
    differing entry."""
    t_vocab, d_vocab = target_tok.get_vocab(), draft_tok.get_vocab()
    if t_vocab == d_vocab:
        return
    t_by_id = {i: tok for tok, i in t_vocab.items()}
    d_by_id = {i: tok for tok, i in d_vocab.items()}
    first = next(i for i in sorted(set(t_by_id) | set(d_by_id)) if t_by_id.get(i) != d_by_id.get(i))
    raise VocabularyMismatchError(
        f"the draft {draft_name!r} ({type(draft_tok).__name__}, {len(d_vocab)} tokens) and the target "
        f"{target_name!r} ({type(target_tok).__name__}, {len(t_vocab)} tokens) use different vocabularies: "
        f"id {first} is {d_by_id.get(first)!r} in the draft but {t_by_id.get(first)!r} in the target. "
        f"Pick two models from one family."
    )
