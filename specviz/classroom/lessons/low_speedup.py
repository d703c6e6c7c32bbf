"""Lesson: Parallel, yet slow."""

from __future__ import annotations

from specviz.analysis.measure import check_ideal
from specviz.classroom.lessons.common import (
    Evidence,
    Lesson,
    Load,
    Timings,
    ceiling_words,
    measured_run,
    time_chart,
)
from specviz.models.pair import ModelPair
from specviz.viz import run_charts


def low_speedup(pair: ModelPair, load: Load, timings: Timings | None = None) -> Evidence:
    measured, d = measured_run(pair, timings, tau=4, mode="textbook", seed=0)
    run, speed = measured.trace, d.run_speedup
    if not d.calibration:  # its own clocks: never above its own ideal. Counted work at kept costs is exact arithmetic,
        # and S(τ)'s i.i.d. E is no bound on a run's counted tokens per pass (correlated acceptances keep more)
        check_ideal(speed, max(d.predicted_speedup, d.predicted_speedup_v.high))
    held = speed.below(d.predicted_speedup)  # the question's situation: slower than parallel verification promises
    return Evidence(
        f"The trace says: {d.bottleneck} (α = {d.alpha:.2f}, c = {d.c:.2f}; S_v = {d.predicted_speedup_v.text()}; S(τ) "
        f"with v = 1, what a GPU engine would see: {d.predicted_speedup:.2f}×.)",
        (run_charts.history_chart(run.steps), time_chart(measured, d)),
        premise=f"the speedup stays below what S(τ) promises with v = 1 ({d.predicted_speedup:.2f}×)",
        held=held,
        why_not=f"this run reached {speed.text()}: on {pair.runtime} a pass over 5 tokens cost v = "
        f"{d.verify_cost.text(unit='')} one-token passes and the draft was cheap, so the slowdown the question "
        "describes did not arise here; on a runtime or a load where v is large it does.",
        calibration=d.calibration,
        ceiling=ceiling_words(d),
    )


LESSON = Lesson(
    key="low-speedup",
    title="Parallel, yet slow",
    question="Verification is parallel, yet the speedup stays low. What do you read first?",
    choices=(
        "The trace: how many tokens each step keeps, and α against c",
        "The temperature",
        "Nothing: parallel verification guarantees a speedup",
    ),
    right=0,
    takeaway="Speedup is tokens kept per step over the cost of a step, τc + v(τ+1): read both off the trace.\n"
    "If α ≤ c, steps keep few tokens, or a pass over τ + 1 tokens costs v ≫ 1, no τ will help much.",
    run=low_speedup,
    timed=True,
)
