"""The file format of a trained draft: a folder with `draft.json` (its spec and metadata) and
`draft.safetensors` (only the tensors training changed, fp16). Where the shipped draft lives, and
the checkpoint helpers training uses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from specviz.errors import ModelError

SPEC_FILE = "draft.json"
TENSORS_FILE = "draft.safetensors"
INT8_FILE = "int8.json"  # the int8 draft's calibration (specviz.training.int8), beside a feature draft
FORMAT = 1
_INSTALLED = Path(__file__).resolve().parents[1] / "assets" / "draft"  # a wheel's package data
DEFAULT_DIR = _INSTALLED if _INSTALLED.is_dir() else Path(__file__).resolve().parents[2] / "assets" / "draft"


class DraftFileError(ModelError):
    """A trained-draft folder is missing, incomplete or made for another target."""


@dataclass(frozen=True)
class DraftSpec:
    layers: list[int]  # indices of the target's decoder layers the draft keeps, in order
    rank: int  # LoRA rank on every projection
    vocab_size: int  # size of the draft's restricted LM head
    kind: str = "lora"  # "lora": adapted target layers; "feature": specviz.drafts.feature
    extra: dict = field(default_factory=dict, compare=False)


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters training changes (by name): what checkpoints keep."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(value)


def write_spec(directory: Path, spec: dict) -> None:
    (directory / SPEC_FILE).write_text(json.dumps({"format": FORMAT, **spec}, indent=1) + "\n")


def is_draft_dir(path: str | Path) -> bool:
    return (Path(path) / SPEC_FILE).is_file()


def read_spec(directory: Path) -> DraftSpec:
    try:
        raw = json.loads((directory / SPEC_FILE).read_text())
        if raw.get("format") != FORMAT:
            raise DraftFileError(f"{directory / SPEC_FILE} has format {raw.get('format')}; this specviz reads {FORMAT}")
        kind = raw.get("kind", "lora")
        if kind not in ("lora", "feature"):
            raise DraftFileError(f"{directory / SPEC_FILE}: unknown draft kind {kind!r}")
        return DraftSpec([int(i) for i in raw["layers"]], int(raw["rank"]), int(raw["vocab_size"]), kind, raw)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DraftFileError(f"cannot read the trained draft in {directory}: {exc}") from exc


def read_int8(directory: Path) -> dict:
    """The int8 calibration beside a draft (DraftFileError where it is missing or malformed)."""
    try:
        raw = json.loads((directory / INT8_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise DraftFileError(f"cannot read {directory / INT8_FILE}: {exc}") from exc
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("order"), list)
        or not isinstance(raw.get("input_max"), dict)
    ):
        raise DraftFileError(f"{directory / INT8_FILE} lacks its head's order or its input maxima")
    return raw
