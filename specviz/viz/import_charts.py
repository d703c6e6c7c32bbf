"""The charts of an engine's imported numbers (specviz.analysis.engine_advice): the per-position acceptance as read
(solid) and as extrapolated beyond the τ the engine ran (dashed), beside this app's own run; and the best speedup
against the batch with its interval, beside the app's run's."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.analysis.engine_advice import MAX_TAU, AcceptanceModel, Advice
from specviz.viz.charts import DECISION_COLORS, FONT, P_COLOR, Q_COLOR, built, legend_below, one_line


def rates_chart(
    engine: AcceptanceModel, own: AcceptanceModel | None = None, font_size: int = FONT["size"], height: int = 360
) -> go.Figure:
    """The unconditional per-position rates a_i: the engine's up to the τ it ran (solid; α^i where it gave only a
    mean length), their extrapolation beyond (dashed), and this app's run's where given."""
    m = engine.measured_upto
    read = "fitted α^i" if engine.alpha is not None else "as read"
    data: list[dict] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": f"your engine, {read} (τ ≤ {m})",
            "x": list(range(1, m + 1)),
            "y": list(engine.rates[:m]),
            "line": {"color": P_COLOR},
            "hovertemplate": "position %{x}: %{y:.3f}<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "extrapolated",
            "x": list(range(m, MAX_TAU + 1)),
            "y": [engine.rates[m - 1], *engine.rates[m:]],
            "line": {"color": P_COLOR, "dash": "dash"},
            "hovertemplate": "position %{x}: %{y:.3f} (extrapolated)<extra></extra>",
        },
    ]
    if own is not None:
        shown = own.measured_upto
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "this app's run",
                "x": list(range(1, shown + 1)),
                "y": list(own.rates[:shown]),
                "line": {"color": Q_COLOR},
                "hovertemplate": "position %{x}: %{y:.3f}<extra></extra>",
            }
        )
    layout = {
        "height": height,
        "xaxis": {"title": "draft position i", "dtick": 2},
        "yaxis": {"title": "steps accepting it", "range": [0, 1.05]},
        **legend_below(height, font_size, top=20, rows=2),
    }
    return built(data, layout, font_size)


def advice_chart(
    mine: Advice, theirs: Advice | None = None, font_size: int = FONT["size"], height: int = 360
) -> go.Figure:
    """The best τ's speedup against the batch (log scale) with its 95% interval, open where that τ lies beyond what
    the engine ran; the app's own run's beside it; the target alone at 1×."""
    rows = mine.rows
    low = [r.speedup - r.interval[0] if r.interval else 0.0 for r in rows]
    high = [r.interval[1] - r.speedup if r.interval else 0.0 for r in rows]
    data: list[dict] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "your engine, best τ",
            "x": [r.batch for r in rows],
            "y": [r.speedup for r in rows],
            "customdata": [r.tau for r in rows],
            "error_y": {"type": "data", "symmetric": False, "array": high, "arrayminus": low},
            "marker": {"symbol": ["circle-open" if r.extrapolated else "circle" for r in rows], "size": 10},
            "line": {"color": P_COLOR},
            "hovertemplate": "batch %{x}: %{y:.2f}× at τ = %{customdata}<extra></extra>",
        }
    ]
    if theirs is not None:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "this app's run, best τ",
                "x": [r.batch for r in theirs.rows],
                "y": [r.speedup for r in theirs.rows],
                "customdata": [r.tau for r in theirs.rows],
                "line": {"color": Q_COLOR},
                "hovertemplate": "batch %{x}: %{y:.2f}× at τ = %{customdata}<extra></extra>",
            }
        )
    top = max([r.interval[1] if r.interval else r.speedup for r in rows] + [1.2])
    if theirs is not None:
        top = max(top, *(r.speedup for r in theirs.rows))
    layout = {
        "height": height,
        "xaxis": {"title": "batch (sequences decoded together)", "type": "log", "tickvals": [1, 4, 16, 64, 256]},
        "yaxis": {"title": "best speedup", "range": [0, top * 1.12]},
        "shapes": [one_line(DECISION_COLORS["rejected"])],
        **legend_below(height, font_size, top=20, rows=1),
    }
    return built(data, layout, font_size)
