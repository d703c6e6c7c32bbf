"""Lesson: Slower with speculation."""

from __future__ import annotations

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


def slower(pair: ModelPair, load: Load, timings: Timings | None = None) -> Evidence:
    self_pair = load("embedded", "self")
    measured, d = measured_run(self_pair, timings, tau=4, mode="greedy", max_new_tokens=24)
    run, speed = measured.trace, d.run_speedup
    return Evidence(
        f"The target drafting for itself: α = {d.alpha:.2f}, mean acceptance length "
        f"{run.metrics.mean_acceptance_length:.2f} tokens per step, but c = {d.c:.2f} (a draft forward costs a target "
        f"forward) and the verify pass costs v = {d.verify_cost.text(unit='')} one-token passes: a step costs "
        f"τc + v = {4 * d.c + d.verify_cost.value:.2f} one-token passes, so {speed.text()} the target alone.",
        (time_chart(measured, d), run_charts.history_chart(run.steps)),
        premise="a draft that is always right but as slow as the target makes decoding slower",
        held=speed.below(1.0),
        why_not=f"this run measured {speed.text()}, an interval that reaches 1: the load on the machine moved the "
        "timings while it ran; run it again on a quieter machine.",
        calibration=d.calibration,
        ceiling=ceiling_words(d),
    )


LESSON = Lesson(
    key="slower",
    title="Slower with speculation",
    question="A deployment got slower with speculation. Which draft can do that?",
    choices=(
        "One almost always right but as slow as the target",
        "A tiny draft that is often wrong",
        "Neither: speculation never slows decoding",
    ),
    right=0,
    takeaway="Speedup needs E > τc + v: tokens per step above the step's cost in one-token target passes.\n"
    "A perfect but slow draft (c near 1), or a costly verify pass (v > 1), makes each step cost more.",
    run=slower,
    timed=True,
)
