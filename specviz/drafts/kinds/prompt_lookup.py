"""Prompt lookup (`prompt-lookup`): model-free, proposes what followed the last n-gram earlier in the context
(specviz.drafts.lookup; one-hot q)."""

from __future__ import annotations

from specviz import specs
from specviz.analysis.engine_flags import Flag
from specviz.drafts.kinds import LOOKUP, TARGET, Beside, DraftKind, EngineTarget, register, served_flags
from specviz.drafts.lookup import PromptLookupDrafter
from specviz.models.lm import NextTokenModel


class PromptLookupKind(DraftKind):
    name = specs.PROMPT_LOOKUP
    rank = 20
    label = "prompt lookup (no model)"
    help = "model-free draft copying text that follows the last n-gram"
    hint = specs.PROMPT_LOOKUP
    offer = specs.PROMPT_LOOKUP
    example = specs.PROMPT_LOOKUP
    needs = frozenset({TARGET})
    across = LOOKUP

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.PromptLookup)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        return PromptLookupDrafter(beside.model.vocab_size)

    def own_label(self, text: str) -> str:
        return "prompt lookup"

    def engine_settings(
        self, target: EngineTarget, *, label: str, spec: str, file: str, name: str, tau: int
    ) -> tuple[tuple[Flag, ...], str]:
        """vLLM's and SGLang's n-gram drafting for a hub target."""
        if target.model_id:
            note = "llama.cpp and LM Studio run GGUF files: convert both models to run them there."
            return served_flags(target, "", tau, "ngram"), note
        return (), (
            "llama-server drafts from the text's own n-grams with an --spec-type ngram-* of its own, whose settings "
            "are not written here; vLLM and SGLang serve hub models, not this file."
        )


register(PromptLookupKind())
