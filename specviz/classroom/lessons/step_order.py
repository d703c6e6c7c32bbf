"""Lesson: The order of a step."""

from __future__ import annotations

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair
from specviz.viz import step_chart
from specviz.viz.plain import plain


def step_order(pair: ModelPair, load: Load) -> Evidence:
    step = decode(pair, count=1, tau=4, seed=2).steps[0]
    kept = "".join(step.draft_text[: step.n_accepted])
    return Evidence(
        f"Draft: {step.tau} draft forwards, {step.draft_ms:.0f} ms. Verify: one target pass over {step.tau + 1} "
        f"positions, {step.verify_ms:.0f} ms. Decide: {', '.join(step.decision)}. Append: {plain(repr(kept))} and the "
        f"target's '{plain(step.next_text)}'.",
        (step_chart.step_chart(step),),
    )


LESSON = Lesson(
    key="step-order",
    title="The order of a step",
    question="In what order does one speculative step work?",
    choices=(
        "Verify, then draft, then decide",
        "Draft τ tokens, verify them in one target pass, decide each in order, "
        "append the accepted run and one target token",
        "Draft one token, verify it, repeat τ times",
    ),
    right=1,
    takeaway="Drafting is sequential and cheap; verification is one pass over every draft token at once.\n"
    "The decisions then run left to right and stop at the first rejection.",
    run=step_order,
)
