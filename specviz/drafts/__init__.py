"""Drafts: what proposes the tokens the target verifies.

- `files`: the on-disk format of a trained draft (draft.json + draft.safetensors) and where the
  shipped one lives.
- `subset`: drafts made of the target's own parts (a layer subset, a vocabulary-subset head).
- `lora`: the LoRA-copy recipe (copied target layers, low-rank adapted).
- `feature`: the feature-level recipe (EAGLE-style: one layer reading the target's hidden states).
- `lookup`: prompt lookup, a model-free drafter.
Distilling a draft and judging it (prompts, data, train, pipeline, card, evaluate) is specviz.training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specviz.drafts.feature import FeatureDraftModel, load_feature_draft
from specviz.drafts.files import (
    DEFAULT_DIR,
    SPEC_FILE,
    TENSORS_FILE,
    DraftFileError,
    DraftSpec,
    is_draft_dir,
    read_spec,
)
from specviz.drafts.lora import Student, load_lora, save_draft
from specviz.drafts.subset import SubsetHead, layer_subset
from specviz.models.lm import HFModel


def load_trained(target: Any, directory: str | Path = DEFAULT_DIR, name: str = "", lean: bool = False) -> Any:
    """The runtime model of a trained draft folder, for `target` (a transformers causal LM): a
    FeatureDraftModel for the feature-level kind (`lean`: its lean forward), an HFModel for the LoRA copy."""
    directory = Path(directory)
    spec = read_spec(directory)
    name = name or f"trained draft ({directory.name})"
    if spec.kind == "feature":
        return FeatureDraftModel(
            load_feature_draft(target, directory, spec), name, target.config.max_position_embeddings, lean
        )
    return HFModel(load_lora(target, directory, spec), name)


__all__ = [
    "DEFAULT_DIR",
    "SPEC_FILE",
    "TENSORS_FILE",
    "DraftFileError",
    "DraftSpec",
    "Student",
    "SubsetHead",
    "is_draft_dir",
    "layer_subset",
    "load_trained",
    "read_spec",
    "save_draft",
]
