"""Lesson: A τ policy."""

from __future__ import annotations

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair
from specviz.viz import run_charts


def tau_policy(pair: ModelPair, load: Load) -> Evidence:
    fixed = decode(pair, tau=4, mode="greedy").trace()
    heuristic = decode(pair, tau=4, mode="greedy", tau_policy="heuristic").trace()
    same = fixed.new_tokens == heuristic.new_tokens
    taus = [s.tau for s in heuristic.steps]
    return Evidence(
        f"The same {len(fixed.new_tokens)} tokens: {same}. The heuristic's τ per step: {taus}; fixed: 4 every step.",
        (run_charts.history_chart(heuristic.steps),),
    )


LESSON = Lesson(
    key="tau-policy",
    title="A τ policy",
    question="A policy grows τ after fully accepted steps and shrinks it after rejections. In greedy mode, "
    "does it change the output?",
    choices=("Yes", "No: greedy output is the target's own, whatever τ"),
    right=1,
    takeaway="A τ policy changes speed, never the output: every mode keeps its guarantee.\n"
    "It may use only the draft's numbers and earlier steps, never the target's for this step.",
    run=tau_policy,
)
