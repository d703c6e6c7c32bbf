"""Charts of a whole run, pure functions like specviz.viz.charts: the accepted length per step, the rate
per draft position, the textbook's expectation E[n] against τ, and the lossless check's bars."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import plotly.graph_objects as go

from specviz.analysis.lossless import LosslessCheck
from specviz.analysis.theory import expected_tokens_per_step
from specviz.core.trace import StepTrace
from specviz.viz.charts import (
    DECISION_COLORS,
    FONT,
    LABEL_CHARS,
    P_COLOR,
    bar_texts,
    built,
)
from specviz.viz.render import chart_label


def history_chart(steps: Sequence[StepTrace], shown: int | None = None) -> go.Figure:
    """Accepted length per step over the whole run, with τ of each step for reference: green where
    every draft token was accepted, red where the step stopped at a rejection. `shown` (a step
    index) marks the step the page draws."""
    x = [s.index + 1 for s in steps]
    data: list[dict] = []
    for name, full, color in (
        ("n: all τ accepted", True, DECISION_COLORS["accepted"]),
        ("n: stopped at a rejection", False, DECISION_COLORS["rejected"]),
    ):
        part = [s for s in steps if (s.n_accepted == s.tau) == full]
        data.append(
            {
                "type": "bar",
                "name": name,
                "x": [s.index + 1 for s in part],
                "y": [s.n_accepted for s in part],
                "marker": {"color": color},
                "hovertemplate": "step %{x}: n = %{y}<extra></extra>",
                "showlegend": bool(part),
            }
        )
    shapes = []
    picked = next((s for s in steps if s.index == shown), None)
    if picked is not None:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": picked.index + 0.5,
                "x1": picked.index + 1.5,
                "y0": 0,
                "y1": 1,
                "fillcolor": "#ffd54f",
                "opacity": 0.35,
                "line": {"width": 0},
            }
        )
        data.append(
            {
                "type": "scatter",
                "name": f"step shown ({picked.index + 1})",
                "x": [picked.index + 1],
                "y": [picked.tau + 0.6],
                "mode": "markers",
                "hoverinfo": "skip",
                "marker": {"symbol": "triangle-down", "size": 16, "color": "#f9a825"},
            }
        )
    data.append(
        {
            "type": "scatter",
            "name": "τ (drafted)",
            "x": x,
            "y": [s.tau for s in steps],
            "mode": "lines+markers",
            "line": {"dash": "dot", "color": "black"},
        }
    )
    layout = {
        "height": 370,
        "xaxis": {"title": "step", "dtick": 1 if len(steps) <= 30 else None},
        "barmode": "overlay",
        "yaxis": {"title": "accepted", "rangemode": "tozero"},
        "shapes": shapes,
        "legend": {"orientation": "h", "y": -0.45, "yanchor": "top"},
        "margin": {"t": 30, "b": 130},
    }
    return built(data, layout, FONT["size"])


def per_position_chart(
    rates: Sequence[float | None], conditional: Sequence[float | None] = (), tree: bool = False
) -> go.Figure:
    """Per-position acceptance rate, two kinds side by side, each defined in its legend: of all
    steps (docs/algorithm.md: never increases with i) and, if given, of the steps that reached position i
    (tokens 1..i−1 accepted), as serving engines log it. For a token tree (`tree`) the positions are
    depths. A position no step drafted has no bar, and says so."""
    x = list(range(1, len(rates) + 1))
    where = "depth" if tree else "position"
    shared = {
        "type": "bar",
        "x": x,
        "texttemplate": "%{y:.2f}",
        "textposition": "outside",
        "constraintext": "none",
        "cliponaxis": False,
    }
    data = [
        {
            **shared,
            "y": list(rates),
            "marker": {"color": DECISION_COLORS["accepted"]},
            "name": "accepted / all steps" if not tree else "accepted path reached depth i / all steps",
        }
    ]
    if conditional:
        data.append(
            {
                **shared,
                "y": list(conditional),
                "marker": {"color": "#9ecae1"},
                "name": f"accepted / steps that reached {where} i (engines' rate)",
            }
        )
    absent = [
        {
            "x": i,
            "y": 0.04,
            "text": "not drafted",
            "showarrow": False,
            "yanchor": "bottom",
            "textangle": -90,
            "font": {"color": DECISION_COLORS["not reached"], "size": FONT["size"]},
        }
        for i, rate in zip(x, rates, strict=True)
        if rate is None
    ]
    layout = {
        "height": 360,
        "xaxis": {"title": f"draft {where} i", "dtick": 1},
        "barmode": "group",
        "yaxis": {"title": "acceptance rate", "range": [0, 1.18]},
        "margin": {"t": 30, "b": 110},
        "legend": {"orientation": "h", "y": -0.3, "x": 0},
        "showlegend": bool(conditional),
        "annotations": absent,
    }
    return built(data, layout, FONT["size"])


def theory_chart(alphas: Sequence[float], max_tau: int = 12) -> go.Figure:
    """Expected tokens per step (1 − α^{τ+1}) / (1 − α) against τ, one curve per α."""
    taus = list(range(1, max_tau + 1))
    data = [
        {
            "type": "scatter",
            "x": taus,
            "y": [expected_tokens_per_step(alpha, t) for t in taus],
            "mode": "lines+markers",
            "name": f"α = {alpha}",
        }
        for alpha in alphas
    ]
    layout = {
        "height": 380,
        "xaxis": {"title": "τ (draft tokens per step)", "dtick": 1},
        "yaxis": {"title": "expected tokens per step"},
        "margin": {"t": 30},
    }
    return built(data, layout, FONT["size"])


def lossless_chart(
    check: LosslessCheck, text: Callable[[int], str], font_size: int = 16, height: int = 340
) -> go.Figure:
    """Empirical frequency of the first emitted token beside the target's probability. With more than a
    few tokens each bar is narrow, so its label stands upright beside it (never over its neighbour's)."""
    labels = [chart_label(text(t), LABEL_CHARS) for t in check.tokens]
    observed = [o / check.trials for o in check.observed]
    upright = len(labels) > 4
    bar = {
        "type": "bar",
        "x": labels,
        "textposition": "outside",
        "constraintext": "none",
        "cliponaxis": False,
        "textangle": -90 if upright else 0,
    }
    data = [
        {
            **bar,
            "name": "target",
            "y": list(check.expected),
            "marker": {"color": P_COLOR},
            "text": bar_texts(check.expected),
        },
        {
            **bar,
            "name": f"emitted ({check.mode})",
            "y": observed,
            "text": bar_texts(observed),
            "marker": {"color": DECISION_COLORS["accepted" if check.consistent else "rejected"]},
        },
    ]
    top = max([*check.expected, *observed, 0.01])
    layout = {
        "barmode": "group",
        "height": height,
        "xaxis": {"type": "category"},
        "yaxis": {"title": "probability", "range": [0, top * (1.45 if upright else 1.2)]},
        "title": f"{check.mode}: chi-square p-value {check.p_value_text}",
        "margin": {"t": 2 * font_size + 30},
        "legend": {"orientation": "h", "y": -0.25},
    }
    return built(data, layout, font_size)
