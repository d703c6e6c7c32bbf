"""Early exit (`early-exit:K`): the target's first K layers, its final norm and LM head, untrained, sharing the
target's tensors (specviz.drafts.subset.early_exit)."""

from __future__ import annotations

from specviz import specs
from specviz.drafts.kinds import EARLY, TARGET_WEIGHTS, Beside, DraftKind, register
from specviz.drafts.subset import early_exit
from specviz.models.lm import HFModel, NextTokenModel


class EarlyExitKind(DraftKind):
    name = specs.EARLY_EXIT
    rank = 30
    label = "the target's first K layers, untrained"
    help = "the target's first K layers + its final norm and LM head, sharing the target's tensors"
    hint = f"{specs.EARLY_EXIT}:K"
    example = f"{specs.EARLY_EXIT}:8"
    needs = frozenset({TARGET_WEIGHTS})
    across = EARLY

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.EarlyExit)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        assert isinstance(spec, specs.EarlyExit) and beside.torch is not None
        return HFModel(early_exit(beside.torch.model, spec.layers), f"{beside.torch.name} first {spec.layers} layers")


register(EarlyExitKind())
