"""Lesson: Roles swapped."""

from __future__ import annotations

import pandas as pd

from specviz.analysis.measure import against_one
from specviz.analysis.theory import ceiling_columns
from specviz.classroom.lessons.common import Evidence, Lesson, Load, Timings, measured_run
from specviz.models.pair import ModelPair


def swapped_roles(pair: ModelPair, load: Load, timings: Timings | None = None) -> Evidence:
    # target: the 30-layer model; draft: its first 8 layers. Both on torch: the early exit runs there only,
    # and the sizes compare (c) only when both models run on the same runtime
    small = load("embedded", "early-exit:8", runtime="torch")
    rows, speeds, kept = [], {}, []
    for name, roles in (("8 layers draft for 30", small), ("30 layers draft for 8", small.swapped())):
        measured, d = measured_run(roles, timings, tau=4, mode="greedy", max_new_tokens=24)
        speeds[name] = d.run_speedup
        kept += [d.calibration] if d.calibration else []
        rows.append(
            {
                "roles": name,
                "α": d.alpha,
                "c": d.c,
                "v(5)": d.verify_cost.value,
                "mean acceptance length": measured.trace.metrics.mean_acceptance_length,
                "speedup (95% interval)": d.run_speedup.text(),
            }
            | ceiling_columns(d.ceiling())
        )
    table = pd.DataFrame(rows)
    usual, big = rows
    big_speed = speeds["30 layers draft for 8"]
    return Evidence(
        f"With the 30-layer model drafting for its own first 8 layers: α = {big['α']:.2f} against c = {big['c']:.2f}, "
        f"mean acceptance length {big['mean acceptance length']:.2f}, {big_speed.text()} the small model alone. "
        f"The usual direction, its first 8 layers drafting for it, untrained: α = {usual['α']:.2f}, c = "
        f"{usual['c']:.2f}, {speeds['8 layers draft for 30'].text()} the big model alone: "
        f"{against_one(speeds['8 layers draft for 30'])}, because an untrained early exit is rarely right "
        f"(α well below what its cost c = {usual['c']:.2f} needs)."
        + (
            ""
            if pair.runtime == "torch"
            else " (Both models on torch here: the early exit runs only there, and the "
            "costs of two sizes compare only on one runtime.)"
        ),
        (),
        table,
        premise="the big model drafting for the small one is slower than the small one alone",
        held=big_speed.below(1.0),
        why_not=f"its speedup, {big_speed.text()}, reaches 1: the timings moved with the "
        "load while it ran; run it again on a quieter machine.",
        calibration="; ".join(kept),
    )


LESSON = Lesson(
    key="swapped-roles",
    title="Roles swapped",
    question="The big model drafts for the small one. What happens?",
    choices=(
        "It is faster: the big model is right more often",
        "It is slower: a big draft is too dear for a small target, and they often disagree",
        "Nothing changes",
    ),
    right=1,
    takeaway="The draft must be much cheaper than the target (c well below 1) and agree with it (α well above c).\n"
    "A big model drafting for a small one fails both.",
    run=swapped_roles,
    timed=True,
)
