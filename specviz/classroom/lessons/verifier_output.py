"""Lesson: What the verifier returns."""

from __future__ import annotations

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair
from specviz.viz import charts


def verifier_output(pair: ModelPair, load: Load) -> Evidence:
    step = decode(pair, count=1, tau=3, seed=1).steps[0]
    return Evidence(
        f"The target returned its whole distribution p over {pair.target.vocab_size:,} tokens at each of "
        f"{step.tau + 1} positions; the decision at position 1 came from p/q = {step.ratio[0]:.2f} and r.",
        (charts.top_chart(step, 0),),
    )


LESSON = Lesson(
    key="verifier-output",
    title="What the verifier returns",
    question="Does the target answer accept or reject for each draft token?",
    choices=("Yes: a yes/no per token", "No: it returns its distribution p; the rule compares p with q (and r)"),
    right=1,
    takeaway="The target only scores; the acceptance rule decides from p, q and the draw r.\n"
    "That is why the same target pass serves every mode.",
    run=verifier_output,
)
