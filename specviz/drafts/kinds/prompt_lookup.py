"""Prompt lookup (`prompt-lookup`): model-free, proposes what followed the last n-gram earlier in the context
(specviz.drafts.lookup; one-hot q)."""

from __future__ import annotations

from specviz import specs
from specviz.drafts.kinds import TARGET, Beside, DraftKind, register
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

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.PromptLookup)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        return PromptLookupDrafter(beside.model.vocab_size)


register(PromptLookupKind())
