"""Lesson: How many bits can a draft lose? The target drafting for itself in 8, 4 and 2 bits (llama.cpp's own
quantizer, specviz.models.quantize), each run timed beside the target alone."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from specviz.analysis.theory import ceiling_columns
from specviz.classroom.lessons.common import Evidence, Lesson, Load, Timings, measured_run
from specviz.models.pair import ModelPair
from specviz.viz import charts

GRADES = (("Q8_0", 8), ("Q4_0", 4), ("Q2_K", 2))


def draft_bits(pair: ModelPair, load: Load, timings: Timings | None = None) -> Evidence:
    rows, costs, alphas, kept = [], {}, {}, []
    for kind, bits in GRADES:
        measured, d = measured_run(
            load("embedded", f"embedded:{kind}"), timings, tau=4, mode="greedy", max_new_tokens=32
        )
        c = d.c_one_token
        kept += [d.calibration] if d.calibration else []
        costs[bits], alphas[bits] = c, d.alpha
        rows.append(
            {
                "draft": f"{bits}-bit ({kind})",
                "α": round(d.alpha, 3),
                "tokens per step": round(measured.trace.metrics.mean_acceptance_length, 2),
                "c (draft / target pass)": c.text(unit=""),
                "speedup": d.run_speedup.text(),
            }
            | ceiling_columns(d.ceiling())
        )
    table = pd.DataFrame(rows)
    figure = go.Figure()
    bits = [b for _, b in GRADES]
    figure.add_scatter(x=bits, y=[alphas[b] for b in bits], name="α (acceptance)", mode="lines+markers")
    figure.add_scatter(
        x=bits, y=[costs[b].value for b in bits], name="c (a draft pass over a target pass)", mode="lines+markers"
    )
    figure.update_layout(
        xaxis={"title": "the draft's bits per weight", "autorange": "reversed", "tickvals": bits},
        yaxis={"title": "α and c", "rangemode": "tozero"},
        legend={"orientation": "h"},
    )
    fell = alphas[2] < alphas[8]
    cheaper = costs[8].value / costs[2].value if costs[2].value > 0 else float("inf")
    return Evidence(
        f"From 8 to 2 bits, α went from {alphas[8]:.2f} to {alphas[2]:.2f} "
        f"({'fell' if fell else 'did not fall'}), while a draft pass went from c = {costs[8].text(unit='')} to "
        f"{costs[2].text(unit='')} of a target pass: {cheaper:.1f}× cheaper for 4× fewer bits.",
        (charts.sized(figure, charts.FONT["size"]),),
        table,
        premise="a quarter of the bits makes the draft much less than four times cheaper",
        held=fell and costs[2].above(costs[8].value / 4),
        why_not=f"this run measured c = {costs[8].text(unit='')} at 8 bits and {costs[2].text(unit='')} at 2: the "
        "load on the machine moved the timings while it ran; run it again on a quieter machine.",
        calibration="; ".join(kept),
    )


LESSON = Lesson(
    key="draft-bits",
    title="How many bits can a draft lose?",
    question="The target drafts for itself from copies of its own weights in 8, 4 and 2 bits. Going from 8 to 2 bits…",
    choices=(
        "acceptance falls, and the draft gets far less than 4× cheaper: fewer bits do not pay more",
        "acceptance stays the same (it is the same model), and the draft gets 4× cheaper",
        "acceptance stays the same, and the draft costs the same",
    ),
    right=0,
    takeaway="Fewer bits trade acceptance for cost, and on a small model the cost falls slowly: a pass is not only\n"
    "reading weights (fixed costs, attention, the float32 KV cache). Good drafts keep α high at a low c.",
    run=draft_bits,
    timed=True,
)
