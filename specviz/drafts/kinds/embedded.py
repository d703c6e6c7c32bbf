"""The `embedded` draft: with the embedded target, its distilled draft in assets/draft/ (or, where that folder is
missing, its first 8 layers untrained); with another torch target its first 8 layers; beside a served target,
SmolLM2-135M-Instruct itself, a standalone model with its tokenizer (from loading's store: `Beside.open_model`)."""

from __future__ import annotations

from specviz import specs
from specviz.drafts import DEFAULT_DIR, is_draft_dir, load_trained
from specviz.drafts.kinds import TOKENIZER, TRAINED, Beside, DraftKind, register
from specviz.drafts.kinds.model import standalone
from specviz.drafts.kinds.trained import file_params
from specviz.drafts.subset import early_exit
from specviz.models.lm import HFModel, NextTokenModel

EMBEDDED_DRAFT_LAYERS = 8  # the untrained fallback when assets/draft/ is missing


class EmbeddedDraft(DraftKind):
    name = "embedded"
    rank = 35
    label = "the distilled draft (embedded)"
    help = "with the embedded target: its distilled draft (assets/draft); with another target: its first 8 layers"
    example = "embedded"
    needs = frozenset({TOKENIZER})  # beside a torch target it is built from the target's weights
    across = TRAINED

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.Embedded)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        if beside.torch is None:  # beside a served target: SmolLM2-135M-Instruct itself, with its tokenizer
            return standalone(spec, beside)
        if isinstance(beside.spec, specs.Embedded) and is_draft_dir(DEFAULT_DIR):
            beside.say("Building the distilled draft from assets/draft...")
            name = f"{beside.torch.name} distilled draft (embedded)"
            return load_trained(beside.torch.model, DEFAULT_DIR, name, beside.lean)
        layers = EMBEDDED_DRAFT_LAYERS
        return HFModel(early_exit(beside.torch.model, layers), f"{beside.torch.name} first {layers} layers (untrained)")

    def params(self, spec: specs.ModelSpec, target: specs.ModelSpec) -> int:
        if not isinstance(target, specs.Embedded) or not is_draft_dir(DEFAULT_DIR):
            return 0  # the target's first layers
        return file_params(DEFAULT_DIR)


register(EmbeddedDraft())
