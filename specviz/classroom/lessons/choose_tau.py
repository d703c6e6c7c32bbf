"""Lesson: Choosing τ."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.analysis.counted import QUIET_MINUTE
from specviz.analysis.measure import MeasurementError, Spread, best_of
from specviz.analysis.pairtimes import KS, TEXT
from specviz.analysis.theory import best_tau, ceiling, expected_speedup, speedup_with_verify_cost
from specviz.classroom.lessons.common import Evidence, Lesson, Load, Timings
from specviz.models.pair import ModelPair
from specviz.viz import charts


def choose_tau(pair: ModelPair | None, load: Load, timings: Timings | None = None) -> Evidence:
    """S(τ) for α = 0.8, c = 0.1, from the formula whatever the machine's load; with a pair, S_v(τ) from its kept
    timings (the ones every page reads) at each τ whose pass over τ + 1 tokens they timed, where they can be had (a
    busy machine with none kept: the arithmetic alone, and what a quiet minute would add)."""
    alpha, c = 0.8, 0.1
    taus = list(range(1, 13))
    figure = go.Figure(
        go.Scatter(
            x=taus,
            y=[expected_speedup(alpha, t, c) for t in taus],
            mode="lines+markers",
            name="S(τ): a pass over τ + 1 tokens costs one (v = 1, what a GPU engine sees)",
        )
    )
    best = best_tau(alpha, c)
    finding = f"S(τ) peaks at τ = {best} ({expected_speedup(alpha, best, c):.2f}×) for α = 0.8, c = 0.1."
    if pair is None or timings is None:
        return Evidence(finding, (charts.sized(figure, charts.FONT["size"]),))
    try:  # the same α and c with the verify cost v(τ + 1) of this runtime's target, as the pair's timings hold it
        kept = timings(pair)
    except MeasurementError as exc:  # the question is arithmetic: answered from the formula all the same
        return Evidence(
            f"{finding} The pair's own v(τ + 1) is not kept on this machine yet ({exc}): {QUIET_MINUTE}, and S_v(τ) "
            "would be drawn beside S(τ).",
            (charts.sized(figure, charts.FONT["size"]),),
        )
    times = kept.passes_ms
    one = times[1].value
    timed = [t for t in taus if t + 1 in KS and t + 1 in times]
    s_v = {
        t: Spread(
            *(
                speedup_with_verify_cost(alpha, t, c, x / one)
                for x in (times[t + 1].value, times[t + 1].high, times[t + 1].low)
            ),
            3,
            "S_v over the IQR of T(τ + 1)",
        )
        for t in timed
    }
    figure.add_scatter(
        x=timed + timed[::-1],
        y=[s_v[t].high for t in timed] + [s_v[t].low for t in timed[::-1]],
        fill="toself",
        fillcolor="rgba(142,68,173,0.18)",
        line={"width": 0},
        hoverinfo="skip",
        name="S_v: range of the measured passes",
    )
    figure.add_scatter(
        x=timed, y=[s_v[t].value for t in timed], mode="lines+markers", name="S_v(τ): v(τ + 1) measured on this runtime"
    )
    top, ties = best_of(s_v)
    finding += (
        f" With the verify cost measured here (v({top + 1}) = {times[top + 1].value / one:.2f}), S_v peaks at "
        f"τ = {top} ({s_v[top].value:.2f}×)"
    )
    if len(ties) > 1:  # the curve is flat at its top: say which τ the measurement cannot tell apart
        finding += f"; τ = {', '.join(map(str, ties))} are within the range of the measured passes"
    finding += ". " + ceiling(top, times[top + 1].value / one, c, alpha=alpha).words("α = 0.8's").rstrip(".")
    figure.update_layout(xaxis={"title": "τ", "dtick": 1}, yaxis={"title": "speedup ×"}, legend={"orientation": "h"})
    held = True if max(ties) <= best else False if min(ties) > best else None  # None: the range straddles S's τ
    flat = [t for t in timed if times[t + 1].value <= one]  # a pass over more tokens cost no more than one
    if flat:  # the premise's own condition did not appear: never "it held" beside v ≤ 1
        held = False
    return Evidence(
        finding + ".",
        (charts.sized(figure, charts.FONT["size"]),),
        gates=False,
        prompt=TEXT,  # what the pair's timings ran on
        calibration=kept.label(),
        premise=f"where a pass over more tokens costs more, S_v's best τ is no larger than S's (τ = {best})",
        held=held,
        why_not=(
            f"on {pair.runtime} a pass over {flat[0] + 1} tokens cost v = {times[flat[0] + 1].value / one:.2f} "
            "one-token passes, no more than one: the premise's pass over more tokens did not cost more here"
            if flat
            else f"S_v peaked at τ = {top}, above S's τ = {best}: on {pair.runtime} a pass over more tokens "
            "cost no more than one over fewer at these lengths, so v(τ + 1) did not grow with τ."
        ),
    )


LESSON = Lesson(
    key="choose-tau",
    title="Choosing τ",
    question="α = 0.8 and c = 0.1. Which τ gives the best speedup?",
    choices=("1", "3", "6", "12"),
    right=2,
    takeaway="Longer drafts help until their cost, τc + v(τ+1), outweighs the shrinking chance late tokens survive.\n"
    "S(τ) takes v = 1; where a pass over more tokens costs more (a CPU), S_v's best τ is smaller.",
    run=choose_tau,
    timed=True,
)
