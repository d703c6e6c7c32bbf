"""The target drafts for itself (`self`): every token is accepted (α = 1, for teaching); no part of its own."""

from __future__ import annotations

from specviz import specs
from specviz.drafts.kinds import TARGET, Beside, DraftKind, register
from specviz.models.lm import NextTokenModel


class Itself(DraftKind):
    name = specs.SELF
    rank = 10
    label = "the target itself (self)"
    help = "the target drafts for itself: every token is accepted"
    hint = specs.SELF
    offer = specs.SELF
    example = specs.SELF
    needs = frozenset({TARGET})

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.SelfDraft)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        return beside.model

    @property
    def is_target(self) -> bool:
        return True


register(Itself())
