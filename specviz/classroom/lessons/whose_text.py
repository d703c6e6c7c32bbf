"""Lesson: Faster, but whose text? (SGLang's accept thresholds swept; docs/algorithm.md, "Lossy rules")."""

from __future__ import annotations

import pandas as pd
import torch

from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.core import lossy
from specviz.core.config import Knobs
from specviz.models.pair import ModelPair
from specviz.viz.sweep_charts import tradeoff_chart

# docs/algorithm.md's table, p = (.5, .3, .2) and q = (.2, .2, .6) at every position, τ = 4, the draft sampled from q.
# Both SGLang thresholds set to t keep x with min(1, p(x)/t) (p ≥ t is the same as p/t ≥ 1): at t = 1, the one-hot
# rule, β = Σ q·p = .28; at t = .5, a = (1, .6, .4) and β = .2 + .12 + .24 = .56, and the first token follows
# o = (.482143, .255, .262857), TV(o, p) = 11/175 ≈ .0629.
P, Q, TAU = (0.5, 0.3, 0.2), (0.2, 0.2, 0.6), 4
THRESHOLDS = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2)


def whose_text(pair: ModelPair, load: Load) -> Evidence:
    p, q = torch.tensor(P, dtype=torch.float64), torch.tensor(Q, dtype=torch.float64)
    rows = []
    for t in THRESHOLDS:
        knobs = Knobs(threshold_single=t, threshold_acc=t)
        rows.append(
            {
                "t_s = t_a": t,
                "tokens per pass": lossy.tokens_per_pass("sglang", p, q, knobs, TAU),
                "TV from the target": lossy.tv(lossy.emitted("sglang", p, q, knobs), p),
            }
        )
    table = pd.DataFrame(rows)
    lossless, half = table.iloc[0], table[table["t_s = t_a"] == 0.5].iloc[0]
    points = [(f"{r['t_s = t_a']:g}", r["tokens per pass"], r["TV from the target"]) for r in rows]
    return Evidence(
        f"At t = 1 (SGLang's default, the lossless one-hot rule) a pass keeps {lossless['tokens per pass']:.3f} tokens "
        f"and the output is the target's (TV {lossless['TV from the target']:.4f}); at t = 0.5 it keeps "
        f"{half['tokens per pass']:.3f} ({half['tokens per pass'] - lossless['tokens per pass']:+.3f}), and each "
        f"token it emits follows a distribution {half['TV from the target']:.4f} from the target's in total "
        f"variation. Lower thresholds keep more and move further: every point of the curve is a trade, computed "
        "exactly, never sampled.",
        (tradeoff_chart(points),),
        table.round(4),
    )


LESSON = Lesson(
    key="whose-text",
    title="Faster, but whose text?",
    question="A tuner lowers SGLang's two accept thresholds (--speculative-accept-threshold-single and -acc) from 1.0 "
    "to 0.5. Each pass keeps more draft tokens. Whose distribution does the output follow now?",
    choices=(
        "Still the target's: the target verified every token",
        "Neither exactly: a mix that moved from the target's by an amount you can compute",
        "The draft's",
    ),
    right=1,
    takeaway="Below 1.0 the thresholds keep tokens the target would have resampled: faster, and the text drifts.\n"
    "The drift is exact: o = Σ q·(a·δ + (1 − a)·R), its TV from p shown beside the tokens per pass gained.",
    run=whose_text,
)
