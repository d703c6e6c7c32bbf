"""A token tree drawn with Plotly (docs/algorithm.md, "Token trees"): the nodes of one tree step by depth,
each with its token, q and p, coloured by the walk's decision; the accepted path and the target's
next token highlighted; hover for the top of q and p at each node and, in lossless mode, p′ and q′
after a rejection. Past `MAX_SHOWN` nodes, subtrees the walk never tested are folded into "+k"."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from specviz.analysis.trees import ChainTreeResult
from specviz.core.trace import StepTrace, TopN, TreeTrace
from specviz.viz.charts import DECISION_COLORS, FONT, TARGET_COLOR, built, one_line, prob_text
from specviz.viz.render import chart_label

MAX_SHOWN = 16
NODE_COLORS = {
    "accepted": DECISION_COLORS["accepted"],
    "rejected": DECISION_COLORS["rejected"],
    "not tested": "#bdbdbd",
}
LABEL = 8  # characters of a token on the chart (the hover shows it whole)


def shown_nodes(tree: TreeTrace) -> tuple[list[int], dict[int, int]]:
    """Nodes drawn, and for each drawn node how many untested descendants were folded into it. Up to
    MAX_SHOWN nodes every node is drawn; beyond, an untested node below an untested node is folded."""
    everything = list(range(len(tree.nodes)))
    if len(tree.nodes) <= MAX_SHOWN:
        return everything, {}
    folded: dict[int, int] = {}
    drawn = []
    for i, node in enumerate(tree.nodes):
        up = node.parent
        if up >= 0 and node.decision == "not tested" and tree.nodes[up].decision == "not tested":
            top = up
            while tree.nodes[top].parent >= 0 and tree.nodes[tree.nodes[top].parent].decision == "not tested":
                top = tree.nodes[top].parent
            folded[top] = folded.get(top, 0) + 1
        else:
            drawn.append(i)
    return drawn, folded


NEXT = -2  # the target's next token: drawn as the last child of the node where the walk stopped


def layout_rows(tree: TreeTrace, drawn: Sequence[int]) -> dict[int, float]:
    """Vertical slot of each drawn node, of −1 (the root) and of NEXT (the next token): leaves one slot
    apart in walk order (the first child tried on top), a parent centred on its children."""
    keep = set(drawn)
    kids = {n: [c for c in tree.children(n) if c in keep] for n in (-1, *drawn)}
    kids[tree.stop] = [*kids[tree.stop], NEXT]
    kids[NEXT] = []
    row: dict[int, float] = {}
    counter = [0]

    def place(node: int) -> float:
        below = kids[node]
        if not below:
            row[node] = float(counter[0])
            counter[0] += 1
        else:
            ys = [place(c) for c in below]
            row[node] = sum(ys) / len(ys)
        return row[node]

    place(-1)
    return row


def _top_text(top: TopN, n: int = 5) -> str:
    return ", ".join(f"{chart_label(t.text, 14)} {prob_text(t.prob)}" for t in top[:n]) or "–"


def tree_chart(step: StepTrace, height: int = 520, font_size: int = 16) -> go.Figure:
    """The tree of one tree step. x: depth (0 = the root, the last confirmed token); y: one slot per
    leaf. Edges of the accepted path are thick and green; the next token hangs below the stop node."""
    tree = step.tree
    if tree is None:
        raise ValueError("this step is a chain: draw it with step_chart")
    drawn, folded = shown_nodes(tree)
    row = layout_rows(tree, drawn)
    on_path = set(tree.path)
    edges: dict[bool, tuple[list, list]] = {True: ([], []), False: ([], [])}
    for i in drawn:
        up = tree.nodes[i].parent
        xs, ys = edges[i in on_path]
        xs += [tree.nodes[up].depth if up >= 0 else 0, tree.nodes[i].depth, None]
        ys += [row[up], row[i], None]
    data: list[dict] = [
        {
            "type": "scatter",
            "mode": "lines",
            "x": xs,
            "y": ys,
            "hoverinfo": "skip",
            "showlegend": False,
            "line": {"color": DECISION_COLORS["accepted"] if path else "#9e9e9e", "width": 6 if path else 2},
        }
        for path, (xs, ys) in edges.items()
        if xs
    ]
    root_hover = (
        f"root (last confirmed token)<br>q next: {_top_text(tree.root_q_top)}<br>p next: {_top_text(tree.root_p_top)}"
    )
    data.append(
        {
            "type": "scatter",
            "mode": "markers+text",
            "x": [0],
            "y": [row[-1]],
            "name": "root",
            "showlegend": False,
            "marker": {"size": 20, "color": "black", "symbol": "square"},
            "text": ["root"],
            "textposition": "middle left",
            "hovertext": [root_hover],
            "hoverinfo": "text",
        }
    )
    for decision, color in NODE_COLORS.items():
        nodes = [i for i in drawn if tree.nodes[i].decision == decision]
        data.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": decision,
                "showlegend": True,
                "x": [tree.nodes[i].depth for i in nodes],
                "y": [row[i] for i in nodes],
                "text": [_label(tree, i, folded.get(i, 0)) for i in nodes],
                "textposition": "top center",
                "hovertext": [_hover(tree, i, step) for i in nodes],
                "hoverinfo": "text",
                "marker": {"size": 18, "color": color, "line": {"width": 3, "color": _rims(nodes, on_path)}},
            }
        )
    stop_depth = tree.nodes[tree.stop].depth if tree.stop >= 0 else 0
    data.append(
        {
            "type": "scatter",
            "mode": "markers+text",
            "name": f"next token ({step.next_rule})",
            "x": [stop_depth + 1],
            "y": [row[NEXT]],
            "text": [f"<b>{chart_label(step.next_text, LABEL)}</b>"],
            "textposition": "middle right",
            "marker": {"size": 24, "symbol": "star", "color": TARGET_COLOR},
            "hovertext": [
                f"the target's token: {chart_label(step.next_text)} ({step.next_rule}, {prob_text(step.next_prob)})"
            ],
            "hoverinfo": "text",
        }
    )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": [stop_depth, stop_depth + 1],
            "y": [row[tree.stop], row[NEXT]],
            "line": {"color": TARGET_COLOR, "width": 4, "dash": "dot"},
            "hoverinfo": "skip",
            "showlegend": False,
        }
    )
    slots = max(row.values()) + 1 if row else 1
    deepest = max([n.depth for n in tree.nodes] + [stop_depth + 1])
    title = (
        f"Step {step.index + 1}: {len(tree.nodes)} nodes verified in one pass; {len(tree.path)} accepted "
        f"(depth {len(tree.path)}), then '{chart_label(step.next_text, LABEL)}' from the target"
    )
    layout = {
        "title": {"text": title, "y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 10}},
        "xaxis": {
            "title": "depth (0 = the last confirmed token)",
            "range": [-0.6, deepest + 0.9],
            "dtick": 1,
            "zeroline": False,
        },
        "yaxis": {"visible": False, "range": [slots - 0.4, -0.9]},
        "legend": {"orientation": "h", "y": -0.14, "yanchor": "top"},
        "height": height,
        "margin": {"t": 60, "b": 110, "l": 70, "r": 20},
    }
    return built(data, layout, font_size)


def _rims(nodes: Sequence[int], path: set[int]) -> list[str]:
    """A black rim on the accepted path's nodes, a grey one elsewhere."""
    return ["black" if i in path else "#616161" for i in nodes]


def _label(tree: TreeTrace, i: int, folded: int) -> str:
    node = tree.nodes[i]
    more = f" +{folded}" if folded else ""
    return f"{chart_label(node.text, LABEL)} q{_short(node.q)} p{_short(node.p)}{more}"


def _short(x: float) -> str:
    """A probability in four characters: ".94", "1.0", "0"."""
    return "1.0" if x >= 0.995 else f"{x:.2f}".lstrip("0").rstrip("0").rstrip(".") or "0"


def _hover(tree: TreeTrace, i: int, step: StepTrace) -> str:
    node = tree.nodes[i]
    lines = [
        f"<b>{chart_label(node.text)}</b> (depth {node.depth}, rank {node.rank}): {node.decision}",
        f"q = {node.q:.4g}, p = {node.p:.4g}, path score {node.score:.3g}",
    ]
    if node.r is not None and node.ratio is not None:
        lines.append(f"r = {node.r:.3f} {'≤' if node.r <= node.ratio else '>'} {node.ratio:.3f}")
    if node.residual_top:
        lines.append(f"after its rejection p′: {_top_text(node.residual_top)}")
        lines.append(f"q′: {_top_text(node.q_residual_top)}")
    if node.q_top:
        lines.append(f"q after it: {_top_text(node.q_top)}")
    lines.append(f"p after it: {_top_text(node.p_top)}")
    return "<br>".join(lines)


def tree_run_chart(steps: Sequence[StepTrace]) -> go.Figure:
    """Per tree step: the accepted depth (bars) and the nodes verified in its one pass (line)."""
    x = [s.index + 1 for s in steps]
    data = [
        {
            "type": "bar",
            "name": "accepted depth",
            "x": x,
            "y": [s.n_accepted for s in steps],
            "marker": {"color": DECISION_COLORS["accepted"]},
        },
        {
            "type": "scatter",
            "name": "nodes verified",
            "x": x,
            "y": [s.nodes for s in steps],
            "mode": "lines+markers",
            "line": {"dash": "dot", "color": "black"},
        },
    ]
    layout = {
        "height": 340,
        "xaxis": {"title": "step", "dtick": 1 if len(steps) <= 30 else None},
        "yaxis": {"title": "tokens", "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.35},
        "margin": {"t": 20, "b": 110},
    }
    return built(data, layout, FONT["size"])


def chain_tree_chart(result: ChainTreeResult, what: str = "tokens per step") -> go.Figure:
    """Chain against tree per budget (nodes verified per pass): grouped bars of `what`, "tokens per
    step" (counted) or "speedup" (over the target alone on the same tokens, with its 95% interval, 1 marked)."""
    data = []
    for shape, color in (("chain", "#9e9e9e"), ("tree", DECISION_COLORS["accepted"])):
        rows = [r for r in result.rows if r.shape == shape]
        spreads = [r.speedup() for r in rows] if what == "speedup" else []
        values = [s.value for s in spreads] if spreads else [r.tokens_per_step for r in rows]
        bar = {
            "type": "bar",
            "name": shape,
            "x": [f"{r.budget} nodes" for r in rows],
            "y": values,
            "marker": {"color": color},
            "text": [f"{v:.2f}" for v in values],
            "textposition": "outside",
            "cliponaxis": False,
        }
        if spreads:  # the interval as an error bar; the label moves inside the bar, clear of it
            error = {
                "type": "data",
                "symmetric": False,
                "array": [s.high - s.value for s in spreads],
                "arrayminus": [s.value - s.low for s in spreads],
            }
            bar |= {"error_y": error, "textposition": "inside"}
        data.append(bar)
    shapes = []
    if what == "speedup":
        shapes.append(one_line("black"))
    layout = {
        "barmode": "group",
        "height": 360,
        "shapes": shapes,
        "xaxis": {"title": "verification budget per pass"},
        "yaxis": {"title": what + (" (× the target alone)" if what == "speedup" else ""), "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.3},
        "margin": {"t": 30, "b": 100},
    }
    return built(data, layout, FONT["size"])
