"""The int8 draft's calibration (`scripts/train_draft.py int8`; specviz.drafts.lean.Int8FeatureDraft): the head's rows
ranked by how often the target generates each token, and the largest input each of the draft's products sees in
each channel (what its smoothing is computed from), the float32 draft run teacher-forced on the target's own
continuations of training prompts (never the held-out ones)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from specviz.drafts.lean import InputMaxima
from specviz.training.data import labelled_tokens, rank_rows

STRENGTH = 0.7  # of x's range moved into the weight (SmoothQuant's α; 0.5 is its default, 0.7 erred least here)


def input_maxima(target: Any, draft: Any, records: Sequence[dict]) -> dict[str, torch.Tensor]:
    """The largest |input| of each product (by name) over every position of `records`: each sequence read once by
    the target (its final hidden states f) and once by the draft on f_(t−1), as the draft's first token reads it."""
    lean = InputMaxima(draft)
    with torch.inference_mode():
        for record in records:
            ids = record["ids"].long()[None]
            f = target.model(ids).last_hidden_state[0].to(lean.dtype)
            prev = torch.cat([f.new_zeros(1, f.shape[1]), f[:-1]])
            lean.record_head(lean.features(ids, prev[None], cache=lean.new_cache())[0])
    return lean.maxima


def calibrate(target: Any, draft: Any, records: Sequence[dict], always: Sequence[int], limit: int = 96) -> dict:
    """int8.json's contents: the head's rows in order of frequency over every record, the products' input maxima
    over `limit` records spread evenly through them."""
    spread = list(records[:: max(1, len(records) // limit)])[:limit]
    maxima = input_maxima(target, draft, spread)
    return {
        "order": rank_rows(records, draft.head.ids, always).tolist(),
        "input_max": {name: [round(float(x), 6) for x in values] for name, values in maxima.items()},
        "strength": STRENGTH,
        "ranked_on": {"sequences": len(records), "tokens": labelled_tokens(records)},
        "calibrated_on": {"sequences": len(spread), "tokens": labelled_tokens(spread)},
    }
