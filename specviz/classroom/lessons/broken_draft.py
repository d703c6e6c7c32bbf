"""Lesson: What the draft conditions on."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair
from specviz.viz import charts


def broken_draft(pair: ModelPair, load: Load) -> Evidence:
    rates = {}
    for broken in (False, True):
        run = decode(pair, tau=4, mode="greedy", broken_draft=broken).trace()
        rates["broken" if broken else "correct"] = run.metrics.per_position_acceptance_rate
    figure = go.Figure()
    for name, values in rates.items():
        figure.add_bar(name=f"{name} draft", x=list(range(1, 5)), y=list(values), texttemplate="%{y:.2f}")
    axes = {"xaxis": {"title": "draft position", "dtick": 1}, "yaxis": {"title": "acceptance rate", "range": [0, 1.05]}}
    figure.update_layout(barmode="group", font=charts.FONT, **axes)
    c, b = rates["correct"], rates["broken"]
    return Evidence(
        f"Acceptance at positions 2–4: correct draft {', '.join(f'{x:.2f}' for x in c[1:])}; broken draft "
        f"{', '.join(f'{x:.2f}' for x in b[1:])}.",
        (figure,),
    )


LESSON = Lesson(
    key="broken-draft",
    title="What the draft conditions on",
    question="An implementation forgets to feed the step's earlier draft tokens back into the draft. What happens?",
    choices=("Nothing changes", "Later draft positions are accepted far less often", "Every draft token is rejected"),
    right=1,
    takeaway="Draft token t must condition on the prefix and draft tokens 1..t−1.\n"
    "Without them the draft repeats its first guess, and later positions collapse.",
    run=broken_draft,
)
