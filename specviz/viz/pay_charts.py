"""The charts of "Would it pay there?" (specviz.analysis.outlook): S_v against τ for the chain and the trees,
with the speedups measured on this machine where there are some, and the best speedup against the batch."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from specviz.analysis.measure import Spread
from specviz.analysis.outlook import Outlook
from specviz.viz.charts import DECISION_COLORS, FONT, P_COLOR, RESIDUAL_COLOR, built, legend_below, one_line


def pay_tau_chart(
    o: Outlook,
    measured: Sequence[tuple[int, Spread]] = (),
    font_size: int = FONT["size"],
    height: int = 400,
) -> go.Figure:
    """Predicted S_v(τ) of the chain at the chosen batch, the app's trees (4, 8, 16 nodes) where their tokens
    per step were measured, the speedups measured here (with their intervals), and the line at 1×."""
    data: list[dict] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": f"chain, predicted (batch {o.batch})",
            "x": list(o.taus),
            "y": list(o.chain),
            "line": {"color": P_COLOR},
            "hovertemplate": "τ = %{x}: %{y:.2f}×<extra></extra>",
        }
    ]
    if o.trees:
        nodes = sorted(o.trees)
        data.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": "trees of 4, 8, 16 nodes, predicted",
                "x": nodes,
                "y": [o.trees[n] for n in nodes],
                "text": [f"tree {n}" for n in nodes],
                "textposition": "top center",
                "marker": {"symbol": "triangle-up", "size": font_size, "color": RESIDUAL_COLOR},
                "hovertemplate": "a tree of %{x} nodes: %{y:.2f}×<extra></extra>",
            }
        )
    if measured:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "measured here (τ sweep)",
                "x": [t for t, _ in measured],
                "y": [s.value for _, s in measured],
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [s.high - s.value for _, s in measured],
                    "arrayminus": [s.value - s.low for _, s in measured],
                },
                "marker": {"symbol": "diamond", "size": font_size, "color": "black"},
                "hovertemplate": "τ = %{x}: measured %{y:.2f}×<extra></extra>",
            }
        )
    top = max([*o.chain, *o.trees.values(), *(s.high for _, s in measured), 1.2])
    layout = {
        "height": height,
        "xaxis": {"title": "τ (draft tokens per step) or tree nodes", "dtick": 1 if len(o.taus) <= 8 else 2},
        "yaxis": {"title": "speedup over the target alone", "range": [0, top * 1.12]},
        "shapes": [one_line(DECISION_COLORS["rejected"])],
        **legend_below(height, font_size, top=20, rows=2),
    }
    return built(data, layout, font_size)


def pay_batch_chart(o: Outlook, font_size: int = FONT["size"], height: int = 400) -> go.Figure:
    """The best τ's speedup at each batch size (log scale), the chosen batch marked, the break-even batch where
    the line crosses 1×."""
    speeds = [s for _, s in o.best_by_batch]
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "best τ, predicted",
            "x": list(o.batches),
            "y": speeds,
            "customdata": [t for t, _ in o.best_by_batch],
            "line": {"color": P_COLOR},
            "hovertemplate": "batch %{x}: %{y:.2f}× at τ = %{customdata}<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"batch {o.batch}",
            "x": [o.batch],
            "y": [o.at_batch(o.batch)[1]] if o.batch in o.batches else [],
            "marker": {"size": font_size + 6, "color": DECISION_COLORS["accepted"], "symbol": "circle-open"},
        },
    ]
    layout = {
        "height": height,
        "xaxis": {
            "title": "batch (sequences decoded together)",
            "type": "log",
            "tickvals": list(o.batches[::2]),
            "tickangle": 0,
        },
        "yaxis": {"title": "best speedup", "range": [0, max([*speeds, 1.2]) * 1.12]},
        "shapes": [one_line(DECISION_COLORS["rejected"])],
        **legend_below(height, font_size, top=20, rows=1),
    }
    return built(data, layout, font_size)
