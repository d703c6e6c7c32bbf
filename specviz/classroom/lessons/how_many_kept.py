"""Lesson: How many tokens are kept."""

from __future__ import annotations

from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.classroom.sandbox import PRESETS as EXERCISES
from specviz.classroom.sandbox import sandbox_step
from specviz.models.pair import ModelPair
from specviz.viz import step_chart


def how_many_kept(pair: ModelPair, load: Load) -> Evidence:
    case = EXERCISES["Five-token draft, the third rejected first"]
    step = sandbox_step(case)
    table = step.to_frame()[["position", "draft_text", "q", "p", "ratio", "r", "decision"]]
    first = step.decision.index("rejected") + 1
    return Evidence(
        f"n = {step.n_accepted}: position {first} fails its test (r = {step.r[first - 1]:.2f} > p/q = "
        f"{step.ratio[first - 1]:.2f}); later positions would pass theirs but come after it: discarded.",
        (step_chart.step_chart(step),),
        table.rename(columns={"draft_text": "token", "ratio": "p/q"}),
    )


LESSON = Lesson(
    key="how-many-kept",
    title="How many tokens are kept",
    question="Draws r = 0.9, 0.3, 0.6, 0.1, 0.2 against p/q = 1.2, 0.75, 0.29, 1.0, 1.5: how many draft tokens are "
    "kept?",
    choices=("0", "2", "4", "5"),
    right=1,
    takeaway="Tokens are kept up to the first rejection; later tokens are discarded even if they would pass.\n"
    "A first-token rejection keeps none.",
    run=how_many_kept,
)
