"""Lesson: Where the next token comes from."""

from __future__ import annotations

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair
from specviz.viz import charts, step_chart
from specviz.viz.plain import plain


def next_token(pair: ModelPair, load: Load) -> Evidence:
    dec = decode(pair, count=1, tau=4, seed=3)
    step = dec.steps[0]
    return Evidence(
        f"{step.n_accepted} of {step.tau} draft tokens were accepted; the next token '{plain(step.next_text)}' came "
        f"from the target's p at position {step.n_accepted + 1}, by rule {step.next_rule}.",
        (step_chart.step_chart(step), charts.next_token_chart(step)),
    )


LESSON = Lesson(
    key="next-token",
    title="Where the next token comes from",
    question="After n draft tokens are accepted, where does the next token come from?",
    choices=(
        "From the draft: q's next guess",
        "From the target: its p at position n + 1 (argmax p in textbook mode)",
        "From the target's p at position 1, whatever n is",
    ),
    right=1,
    takeaway="Every step ends with one token from the target, at the first rejected position (or after the last).\n"
    "So a step always makes progress, even when every draft token is rejected.",
    run=next_token,
)
