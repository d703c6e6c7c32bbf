"""Lesson: A τ policy."""

from __future__ import annotations

from collections.abc import Sequence

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.core.engine import next_plan
from specviz.core.trace import StepTrace
from specviz.models.pair import ModelPair
from specviz.viz import run_charts

BUDGET = 32  # tokens each run writes (common.decode's max_new_tokens)


def schedule(steps: Sequence[StepTrace], tau: int, budget: int = BUDGET) -> str:
    """The heuristic's τ per step in words, by its rule (+2 after a step that accepted all it planned, −1 after any
    other, never below 1), and each step whose τ is less than the rule planned: cut to the tokens left to write less
    the target's own (a step of τ draft tokens writes up to τ + 1)."""
    plan, written, cuts = tau, 0, []
    for i, step in enumerate(steps):
        if step.tau < plan:
            left = budget - written
            cut = step.tau == left - 1  # (else the target's context ended first)
            why = f"{left} tokens were left to write, less the target's own" if cut else "the context's end"
            cuts.append(f"step {i + 1} planned {plan}, drafted {step.tau} ({why})")
        written += len(step.emitted)
        plan = next_plan(plan, step.n_accepted)
    taus = ", ".join(str(s.tau) for s in steps)
    said = f"The heuristic's τ per step: {taus} (+2 after a step that accepted all it planned, −1 after any other)"
    return said + ("; " + "; ".join(cuts) if cuts else "") + "."


def tau_policy(pair: ModelPair, load: Load) -> Evidence:
    fixed = decode(pair, tau=4, mode="greedy").trace()
    heuristic = decode(pair, tau=4, mode="greedy", tau_policy="heuristic").trace()
    n = len(fixed.new_tokens)
    same = (
        f"Both runs wrote the same {n} tokens."
        if fixed.new_tokens == heuristic.new_tokens
        else f"The runs wrote different tokens ({n} and {len(heuristic.new_tokens)}): a bug, greedy output is the "
        "target's own."
    )
    return Evidence(
        f"{same} {schedule(heuristic.steps, 4)} Fixed: 4 every step.",
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
