"""What the app offers by itself (the presets, the drafts made from any target) and what a class server allows
(check_allowed: before anything loads or connects)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specviz import specs
from specviz.class_policy import ClassPolicy
from specviz.drafts import kinds
from specviz.drafts.kinds.embedded import EMBEDDED_DRAFT_LAYERS
from specviz.drafts.kinds.embedded_int8 import DEFAULT_ROWS, INT8
from specviz.loading.options import Spec
from specviz.models.hub import EMBEDDED
from specviz.specs import EARLY_EXIT, PROMPT_LOOKUP, QUANTIZED, SELF


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
