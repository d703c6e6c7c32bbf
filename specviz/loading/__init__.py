"""Pairs: a target (specviz.models) and a draft (specviz.drafts, or a second model) that decode together.

Every choice a user can make either works or fails with a typed `ModelError` whose message says what
to do next: the embedded default pair (no network), hub ids and local folders, the drafts made from the
target's own parts, a target behind a serving engine, and the runtime that runs the target.

By concept: options.py (the runtimes, LoadSettings and DEFAULTS), presets.py (what the app offers, what a class
allows), runtime.py (which runtime runs a target), files.py (GGUF models opened once), plan.py (the memory plan
before anything loads), builders.py (the three pair builders); load_pair, here, picks the builder. The names outside
scripts use are importable from here.
"""

from __future__ import annotations

from specviz import specs
from specviz.class_policy import ClassPolicy
from specviz.drafts.kinds.embedded import EMBEDDED_DRAFT_LAYERS
from specviz.drafts.kinds.model import VocabularyMismatchError, check_vocabularies
from specviz.loading import options
from specviz.loading.builders import gguf_pair, local_pair, remote_pair
from specviz.loading.files import gguf_name, gguf_path, is_gguf, open_gguf
from specviz.loading.options import AUTO, KERNELS, RUNTIME_ENV, RUNTIMES, TORCH, LoadSettings, Spec
from specviz.loading.plan import planned_parts
from specviz.loading.presets import PRESETS, Preset, check_allowed, offered
from specviz.loading.runtime import resolve_runtime
from specviz.models import embedded
from specviz.models.hub import EMBEDDED, HubUnreachableError, ModelTooLargeError, resolve_device, resolve_dtype
from specviz.models.pair import ModelPair
from specviz.models.store import ModelStore
from specviz.pair_parts import Keys, Parts
from specviz.specs import EARLY_EXIT, PROMPT_LOOKUP, QUANTIZED, SELF

__all__ = [
    "AUTO",
    "EARLY_EXIT",
    "EMBEDDED",
    "EMBEDDED_DRAFT_LAYERS",
    "KERNELS",
    "PRESETS",
    "PROMPT_LOOKUP",
    "QUANTIZED",
    "RUNTIMES",
    "RUNTIME_ENV",
    "SELF",
    "TORCH",
    "HubUnreachableError",
    "LoadSettings",
    "ModelTooLargeError",
    "Preset",
    "Spec",
    "VocabularyMismatchError",
    "check_allowed",
    "check_vocabularies",
    "gguf_name",
    "gguf_path",
    "is_gguf",
    "load_pair",
    "offered",
    "open_gguf",
    "planned_parts",
    "resolve_runtime",
]


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
    found, a served target's timeout, how llama.cpp runs), options.DEFAULTS without. The library never reads the
    environment."""
    target, draft = specs.parse(target), specs.parse(draft)
    rules = guard or ClassPolicy()
    settings = settings or options.DEFAULTS
    check_allowed(target, draft, rules)  # class mode: presets and the operator's allowlist only
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype, device)
    runtime = resolve_runtime(target, runtime, dev, torch_dtype, default=settings.runtime)
    limit = rules.model_params(settings.max_params if max_params is None else max_params)
    parts = Parts(store or ModelStore(), Keys(dev, torch_dtype, settings.llama.slots_for(rules.on)))
    try:
        if isinstance(target, specs.Served):
            pair = remote_pair(target, draft, limit, progress, parts, rules, settings)
        elif target.is_gguf:
            pair = gguf_pair(target, draft, limit, progress, parts, settings)
        else:
            pair = local_pair(target, draft, runtime, limit, progress, parts, settings)
    except BaseException:
        parts.give_back()
        raise
    return pair.owning(parts.give_back)
