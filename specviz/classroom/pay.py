"""Which pair "Would it pay there?" reads, from the pair the Decode page runs (pages/_pay_parts.py draws it): the pair
this machine is timed on, and the Decode page's GGUF pair as the cost model sees it from the headers alone."""

from __future__ import annotations

from specviz.analysis import outlook
from specviz.analysis.costmodel import Model
from specviz.errors import SpecvizError
from specviz.loading import PROMPT_LOOKUP, gguf_path, is_gguf
from specviz.models.gguf import read_info
from specviz.models.hub import EMBEDDED

EMBEDDED_WORDS = "the embedded pair (SmolLM2-135M + its draft)"


def timed_specs(chosen: tuple[str, str] | None) -> tuple[str, str, str | None]:
    """(target, draft) this machine is timed on for the Decode page's `chosen` specs (None: no run yet): those where
    the target's sizes are known (the embedded target or a GGUF file), else the embedded pair; and the Decode
    page's target when it was passed over."""
    if chosen is None:
        return EMBEDDED, EMBEDDED, None
    target, draft = chosen
    if target == EMBEDDED or is_gguf(target):
        return target, draft, None
    return EMBEDDED, EMBEDDED, target


def header_models(target: str, draft: str, names: tuple[str, str]) -> tuple[Model, Model] | None:
    """A GGUF target's pair as the cost model sees it from the headers of the files its run already opened (nothing
    loads, nothing downloads); None for another target, or where a header cannot be read."""
    if not is_gguf(target):
        return None
    try:
        files = read_info(gguf_path(target)), read_info(gguf_path(draft)) if is_gguf(draft) else None
        return outlook.header_pair(*files, names, lookup=draft == PROMPT_LOOKUP)
    except (SpecvizError, OSError):
        return None
