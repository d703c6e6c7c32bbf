"""A trained draft's folder (draft.json + draft.safetensors, made by scripts/train_draft.py for this target): the
feature-level or LoRA recipe, built on the target's torch weights (specviz.drafts.load_trained)."""

from __future__ import annotations

import math
from pathlib import Path

from specviz import specs
from specviz.drafts import DEFAULT_DIR, is_draft_dir, load_trained
from specviz.drafts.kinds import TARGET_WEIGHTS, TRAINED, Beside, DraftKind, register
from specviz.models.lm import NextTokenModel


class Trained(DraftKind):
    name = "trained"
    rank = 40
    label = "a trained draft's folder"
    help = "a draft made by scripts/train_draft.py for this target (its --out folder)"
    hint = "a folder made by scripts/train_draft.py"
    example = str(DEFAULT_DIR)
    needs = frozenset({TARGET_WEIGHTS})
    across = TRAINED

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.Named) and bool(spec.name) and is_draft_dir(spec.path)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        assert isinstance(spec, specs.Named) and beside.torch is not None
        return load_trained(beside.torch.model, spec.path, f"distilled draft {spec.text}", beside.lean)

    def params(self, spec: specs.ModelSpec, target: specs.ModelSpec) -> int:
        assert isinstance(spec, specs.Named)
        return file_params(spec.path)


def file_params(folder: Path) -> int:
    """The parameters in a trained draft's safetensors files, read from their headers."""
    from safetensors import safe_open

    count = 0
    for file in folder.glob("*.safetensors"):
        with safe_open(str(file), "pt") as tensors:
            count += sum(math.prod(tensors.get_slice(name).get_shape()) for name in tensors.keys())  # noqa: SIM118
    return count


register(Trained())
