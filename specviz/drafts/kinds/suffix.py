"""Suffix decoding (`suffix`, `suffix:min_token_prob=0.2,max_spec_factor=2`): model-free, proposes the most frequent
continuation of the context's last tokens in suffix trees of the prompt and of earlier answers, as many tokens as
its counts allow (specviz.drafts.suffix; one-hot q). Its parameters are the engines' (vLLM's `suffix_decoding_*`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from specviz import specs
from specviz.analysis import engine_flags
from specviz.analysis.engine_flags import Flag
from specviz.bounded import decimal, whole_number
from specviz.drafts.kinds import TARGET, Beside, DraftKind, EngineTarget, register
from specviz.drafts.suffix import DEFAULTS, SuffixDrafter, SuffixSettings
from specviz.errors import ModelError
from specviz.models.lm import NextTokenModel

SUFFIX = "suffix"
_WHOLE = ("max_tree_depth", "max_cached_requests")
NAMES = tuple(f.name for f in dataclasses.fields(SuffixSettings))


@dataclass(frozen=True, kw_only=True)
class Suffix(specs.ModelSpec):
    """Suffix decoding with the engines' settings; its text names only those that differ from vLLM's defaults."""

    kind: ClassVar[str] = SUFFIX
    settings: SuffixSettings = DEFAULTS

    def __str__(self) -> str:
        changed = [
            f"{name}={_number(getattr(self.settings, name))}"
            for name in NAMES
            if getattr(self.settings, name) != getattr(DEFAULTS, name)
        ]
        return SUFFIX + (":" + ",".join(changed) if changed else "")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def parse_suffix(text: str) -> Suffix | None:
    """`suffix` or `suffix:NAME=VALUE,…` (NAME one of the engines' parameters); None for any other text."""
    head, colon, rest = text.partition(":")
    if head != SUFFIX:
        return None
    how = f"write suffix decoding as {SUFFIX} or {SUFFIX}:NAME=VALUE,… with NAME one of {', '.join(NAMES)}"
    given: dict[str, float] = {}
    for part in rest.split(",") if colon else ():
        name, equals, value = (s.strip() for s in part.partition("="))
        if name not in NAMES or not equals or name in given:
            raise ModelError(f"{how}; got {text[:80]!r}")
        read = whole_number if name in _WHOLE else decimal
        given[name] = read(value, error=ModelError, what=f"{SUFFIX}'s {name}")
    try:
        settings = SuffixSettings(**given)
    except ValueError as exc:
        raise ModelError(f"{SUFFIX}: {exc}") from None
    return Suffix(text=text, settings=settings)


class SuffixKind(DraftKind):
    name = SUFFIX
    rank = 25
    label = "suffix decoding (no model)"
    help = "model-free draft proposing the most frequent continuation in the prompt and earlier answers"
    hint = "suffix[:min_token_prob=P,max_spec_factor=F,…]"
    offer = SUFFIX
    example = "suffix:min_token_prob=0.2"
    needs = frozenset({TARGET})
    across = SUFFIX

    def parse(self, text: str) -> specs.ModelSpec | None:
        return parse_suffix(text)

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, Suffix)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        assert isinstance(spec, Suffix)
        return SuffixDrafter(beside.model.vocab_size, spec.settings)

    def own_label(self, text: str) -> str:
        return f"suffix decoding ({text})"

    def engine_settings(
        self, target: EngineTarget, *, label: str, spec: str, file: str, name: str, tau: int
    ) -> tuple[tuple[Flag, ...], str]:
        """vLLM's `method: "suffix"` (the settings that differ from its defaults as suffix_decoding_*) and SGLang's
        SUFFIX algorithm, for a hub target."""
        if not target.model_id:
            return (), "vLLM and SGLang run suffix decoding for a hub target; llama.cpp has no suffix decoding."
        settings = parse_suffix(spec).settings if parse_suffix(spec) else DEFAULTS
        changed = {
            f"suffix_decoding_{n}": getattr(settings, n) for n in NAMES if getattr(settings, n) != getattr(DEFAULTS, n)
        }
        vllm = engine_flags.vllm(target.model_id, "", tau, "suffix", extra=changed)
        sglang = engine_flags.sglang(target.model_id, "", tau, "suffix")
        note = "llama.cpp and LM Studio have no suffix decoding."
        if changed:
            note += " SGLang names these settings speculative_suffix_*: they are written here for vLLM only."
        return (vllm, sglang), note


register(SuffixKind())
