"""Lesson: Why does speculation slow a busy server? (the cost model of specviz.analysis.outlook)."""

from __future__ import annotations

import pandas as pd

from specviz.analysis import outlook as ol
from specviz.analysis.costmodel import HARDWARE, MODELS
from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair
from specviz.viz.pay_charts import pay_batch_chart

PAIR = "Llama-3.1-8B + EAGLE-3 head"
DEVICE = "NVIDIA A100 80GB SXM"


def busy_server(pair: ModelPair, load: Load) -> Evidence:
    run = decode(pair, mode="greedy", tau=4).trace()  # the acceptance measured here, carried over
    words = f"the per-position rates of a greedy run of {pair.draft.name} here ({len(run.steps)} steps)"
    accept = ol.Acceptance.from_rates(run.metrics.per_position_acceptance_rate, words)
    target, draft = (MODELS[name] for name in ol.PAIRS[PAIR])
    o = ol.outlook(target, draft, HARDWARE[DEVICE], accept, batch=1)
    rows = []
    for batch in (1, 64, 256, 512):
        at = ol.outlook(target, draft, HARDWARE[DEVICE], accept, batch=batch)
        tau, speed = at.best
        parts = at.bound(tau)  # the verify pass at this batch
        rows.append(
            {
                "batch": batch,
                "best τ": tau,
                "speedup": round(speed, 2),
                "v(τ + 1)": round(at.verify[tau - 1], 2),
                "ceiling (τ + 1)/v": f"{(tau + 1) / at.verify[tau - 1]:.2f}×",
                "reading weights and KV, ms": round(parts["read"] * 1000, 2),
                "arithmetic, ms": round(parts["compute"] * 1000, 2),
                "the verify pass is": "compute-bound" if parts["compute"] > parts["read"] else "memory-bound",
            }
        )
    table = pd.DataFrame(rows)
    ends = o.break_even
    return Evidence(
        f"{DEVICE}, {PAIR}, with {words}: {rows[0]['speedup']:.2f}× at batch 1, "
        f"{rows[1]['speedup']:.2f}× at batch 64, {rows[2]['speedup']:.2f}× at batch 256, {rows[3]['speedup']:.2f}× at "
        "batch 512"
        + (f"; from batch {ends} on, no τ pays." if ends else ".")
        + f" The arithmetic of a verify pass grows with batch × (τ + 1) tokens: {rows[0]['arithmetic, ms']} ms at "
        f"batch 1, {rows[3]['arithmetic, ms']} ms at batch 512, against {rows[0]['reading weights and KV, ms']} "
        "ms to read the weights at batch 1.",
        (pay_batch_chart(o),),
        table,
    )


LESSON = Lesson(
    key="busy-server",
    title="Why does speculation slow a busy server?",
    question="Llama-3.1-8B with an EAGLE-3 draft decodes faster for one user on an A100. With 512 sequences decoded "
    "together, what happens to the speedup?",
    choices=(
        "It stays: acceptance does not depend on the batch",
        "It shrinks and can turn into a slowdown: the verify pass becomes compute-bound",
        "It grows: the draft's cost is shared by the batch",
    ),
    right=1,
    takeaway="Speculation bets that a pass over τ + 1 tokens costs about one token's: true while reading the weights "
    "dominates.\nA large batch already fills the GPU's arithmetic; then every drafted token costs time, kept or not.",
    run=busy_server,
)
