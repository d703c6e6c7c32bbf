"""Lesson: A race on a CPU."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.analysis.race import PRESETS as RACES
from specviz.analysis.race import Race
from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.core.config import SpecConfig
from specviz.models.pair import ModelPair
from specviz.viz import charts


def race(pair: ModelPair, load: Load) -> Evidence:
    preset = RACES[0]  # prompt lookup on "repeat the text below"
    lookup = load("embedded", preset.draft)
    result = Race(lookup, preset.prompt, SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=48)).run()
    figure = go.Figure(
        go.Bar(
            x=["target alone", f"speculative, τ = {preset.tau}"],
            marker_color=[charts.P_COLOR, charts.DECISION_COLORS["accepted"]],
            y=[result.alone.tokens_per_second, result.speculative.tokens_per_second],
            texttemplate="%{y:.1f} tokens/s",
            textposition="outside",
            cliponaxis=False,
        )
    )
    figure.update_layout(yaxis={"title": "tokens per second", "rangemode": "tozero"})
    same = "the same text, token for token" if result.same_text else "DIFFERENT texts (a bug)"
    speed = result.speedup_spread()
    return Evidence(
        f"{result.summary()} Both wrote {same}.",
        (charts.sized(figure, charts.FONT["size"]),),
        premise="the copying draft is faster than the target alone",
        held=speed.above(1.0),
        why_not=f"its speedup, {speed.text()}, {'reaches' if not speed.below(1.0) else 'is below'} 1: each target pass "
        f"cost {result.verify_cost:.1f} single-token passes on {lookup.runtime} with the "
        "load of the moment; run it again on a quieter machine.",
        prompt=preset.prompt,
        ceiling=result.ceiling(),
    )


LESSON = Lesson(
    key="race",
    title="A race on a CPU",
    question='A draft that only copies runs of the prompt (prompt lookup) races the target alone on "repeat the text '
    'below", greedy. What happens?',
    choices=(
        "Slower: the draft is not even a model",
        "Faster: the answer repeats the prompt, so a target pass keeps several copied tokens",
        "The same speed: greedy output cannot change",
    ),
    right=1,
    takeaway="Speedup is tokens per step over the cost of a step, τc + v(τ+1), in one-token target passes.\n"
    "A free draft (c ≈ 0) right for runs of tokens wins, and greedy output stays the target's own.",
    run=race,
)
