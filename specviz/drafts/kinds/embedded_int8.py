"""The distilled draft in int8 (`embedded-int8`, `embedded-int8:ROWS`): the embedded target's distilled draft
(assets/draft) with every product in int8 and its head over the ROWS tokens the target generates most often
and each product smoothed by the inputs the float32 draft saw (assets/draft/int8.json, made by
`scripts/train_draft.py int8`; specviz.drafts.lean.Int8FeatureDraft). It reads about an eighth of the float32 draft's
bytes per token, so its c is a fraction of the float32 draft's; its q is not the float32 draft's, so its α is its
own (both measured in assets/draft/README.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from specviz import specs
from specviz.bounded import whole_number
from specviz.drafts import DEFAULT_DIR, is_draft_dir, read_spec
from specviz.drafts.feature import FeatureDraftModel, load_feature_draft
from specviz.drafts.files import read_int8
from specviz.drafts.kinds import TARGET_WEIGHTS, TRAINED, Beside, DraftKind, register
from specviz.drafts.kinds.trained import file_params
from specviz.drafts.lean import Int8FeatureDraft, int8_available
from specviz.errors import ModelError
from specviz.models.lm import NextTokenModel

INT8 = "embedded-int8"
DEFAULT_ROWS = 4096  # the head's rows when the text names none (assets/draft/README.md: α and c at each count)


@dataclass(frozen=True, kw_only=True)
class EmbeddedInt8(specs.ModelSpec):
    kind: ClassVar[str] = INT8
    rows: int = DEFAULT_ROWS

    def __str__(self) -> str:
        return INT8 if self.rows == DEFAULT_ROWS else f"{INT8}:{self.rows}"


def parse_int8(text: str) -> EmbeddedInt8 | None:
    """`embedded-int8` or `embedded-int8:ROWS` (1 ≤ ROWS, at most the head's rows); None for any other text."""
    head, colon, rest = text.partition(":")
    if head != INT8:
        return None
    rows = whole_number(rest, error=ModelError, what=f"{INT8}'s head rows") if colon else DEFAULT_ROWS
    if rows < 1:
        raise ModelError(f"{INT8}:ROWS keeps ROWS ≥ 1 of the draft head's most frequent tokens; got {rows}")
    return EmbeddedInt8(text=text, rows=rows)


def calibration(rows: int) -> tuple[torch.Tensor, dict[str, torch.Tensor], float]:
    """The `rows` most frequent of the shipped draft's head rows (indices into its head), the products' input maxima
    and the smoothing strength, from int8.json beside it."""
    try:
        made = read_int8(DEFAULT_DIR)
        order = [int(i) for i in made["order"]]
        maxima = {name: torch.tensor(values, dtype=torch.float32) for name, values in made["input_max"].items()}
        strength = float(made["strength"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"cannot read the int8 draft's calibration in {DEFAULT_DIR}: {exc}") from exc
    if rows > len(order):
        raise ModelError(f"{INT8}:{rows} asks for more rows than the draft's head has ({len(order)})")
    return torch.tensor(order[:rows], dtype=torch.long), maxima, strength


class EmbeddedInt8Kind(DraftKind):
    name = INT8
    rank = 36
    label = "the distilled draft in int8 (embedded)"
    help = "the embedded target's distilled draft with int8 products and a head over its most frequent tokens"
    hint = f"{INT8}[:ROWS]"
    example = f"{INT8}:8192"
    needs = frozenset({TARGET_WEIGHTS})
    across = TRAINED

    def parse(self, text: str) -> specs.ModelSpec | None:
        return parse_int8(text)

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, EmbeddedInt8)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        assert isinstance(spec, EmbeddedInt8) and beside.torch is not None
        if not isinstance(beside.spec, specs.Embedded) or not is_draft_dir(DEFAULT_DIR):
            raise ModelError(f"{INT8} drafts for the embedded target only (it is its distilled draft, in int8)")
        if not int8_available():
            raise ModelError(f"{INT8} needs torch's int8 kernels (fbgemm or qnnpack), which this torch lacks")
        rows, maxima, strength = calibration(spec.rows)
        beside.say(f"Building the distilled draft in int8 ({spec.rows:,} head rows)...")
        target = beside.torch.model
        draft = load_feature_draft(target, DEFAULT_DIR, read_spec(DEFAULT_DIR))
        name = f"{beside.torch.name} distilled draft, int8, {spec.rows:,} head rows (embedded)"
        forward = Int8FeatureDraft(draft, rows, maxima, strength)
        return FeatureDraftModel(draft, name, target.config.max_position_embeddings, forward=forward)

    def params(self, spec: specs.ModelSpec, target: specs.ModelSpec) -> int:
        if not isinstance(target, specs.Embedded) or not is_draft_dir(DEFAULT_DIR):
            return 0
        return file_params(DEFAULT_DIR)


register(EmbeddedInt8Kind())
