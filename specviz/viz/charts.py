"""Charts as pure functions: trace in, plotly Figure out. Pages only call st.plotly_chart."""

from __future__ import annotations

import re
from collections.abc import Sequence

import plotly.graph_objects as go

from specviz.core.rules import RuleOutcome
from specviz.core.trace import StepTrace, TokenProb
from specviz.viz.memo import PlainFigure
from specviz.viz.render import chart_label

DECISION_COLORS = {"accepted": "#1a9850", "rejected": "#d73027", "not reached": "#9e9e9e"}
Q_COLOR, P_COLOR, RESIDUAL_COLOR, TARGET_COLOR = "#f4a261", "#457b9d", "#8e44ad", "#1f5fbf"
FONT = {"size": 16}
WORDY_TAU = 6  # up to this many draft tokens, each decision is written out above its column
DECISION_SYMBOLS = {"accepted": "✓", "rejected": "✗", "not reached": "–"}


LABEL_CHARS = 12  # longer tokens are cut on axes; the full text is in the hover


def built(data: list[dict], layout: dict, size: int) -> go.Figure:
    """A figure from plain trace dicts and a layout dict in one validation pass, every text at `size`
    px: the global font, the title, every axis's ticks and title, the legend and the bar labels.
    Streamlit's chart theme sets tick and legend fonts of its own (12 px), which a global font size
    alone does not override. One pass: charts of a step are rebuilt on every Step, where plotly's
    updates (each one validated again) cost the server more than the model's work. Validated only when read
    (specviz.viz.memo.PlainFigure): what the page sends is these dicts, as plotly.js takes them."""
    font = {"size": size}
    layout = {
        "font": font,
        "hoverlabel": {"font": font},
        **layout,
        "legend": {**layout.get("legend", {}), "font": font},
    }
    title = layout.get("title")
    layout["title"] = {"text": title, "font": font} if isinstance(title, str) else {"font": font, **(title or {})}
    for name in {"xaxis", "yaxis", *(k for k in layout if k.startswith(("xaxis", "yaxis")))}:
        axis = dict(layout.get(name, {}))
        axis_title = axis.get("title")
        axis["title"] = {"text": axis_title, "font": font} if isinstance(axis_title, str) else axis_title
        layout[name] = {**axis, "tickfont": font}
    for trace in data:
        if trace.get("type") == "bar":
            trace.setdefault("textfont", font)
    return PlainFigure(data, layout)


def sized(fig: go.Figure, size: int) -> go.Figure:
    """An already-built figure with every text at `size` px, the way `built` sets them (its own sizes replaced:
    a lesson's chart on a projector)."""
    json = fig.to_plotly_json()
    layout = {k: v for k, v in json["layout"].items() if k not in ("font", "hoverlabel")}
    resized = lambda part: {**part, "font": {**part.get("font", {}), "size": size}} if isinstance(part, dict) else part  # noqa: E731
    layout["title"] = resized(layout.get("title"))
    for name in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        layout[name] = {**layout[name], "title": resized(layout[name].get("title"))}
    if layout.get("annotations"):
        layout["annotations"] = [{**a, "font": {**a.get("font", {}), "size": size}} for a in layout["annotations"]]
    data = [{k: v for k, v in trace.items() if k != "textfont"} for trace in json["data"]]
    return built(data, layout, size)


def legend_below(height: int, font_size: int, top: int = 50, rows: int = 3) -> dict:
    """Layout for a horizontal legend below the x axis, clear of its tick labels and title at any font size:
    the legend starts three text lines below the plot area; the bottom margin holds `rows` legend rows.
    (A vertical legend to the right is drawn horizontal again by Streamlit's chart theme.)"""
    bottom = 3 * font_size + 14 + rows * (font_size + 10)
    plot = max(height - top - bottom, 50)
    return {
        "legend": {"orientation": "h", "yanchor": "top", "y": -(3 * font_size + 14) / plot, "x": 0},
        "margin": {"t": top, "b": bottom, "r": 60},
    }


def one_line(color: str) -> dict:
    """A dotted line at y = 1 across the plot (the target alone: 1×), as a layout shape."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": 1,
        "y1": 1,
        "line": {"dash": "dot", "color": color},
    }


def legend_rows(data: Sequence[dict], font_size: int, width: int) -> int:
    """How many rows a horizontal legend of `data`'s named traces takes in a chart `width` px wide: each
    entry about 0.6 em per character plus 40 px for its symbol, packed left to right (a little generous)."""
    rows, used = 1, 0.0
    for trace in data:
        if trace.get("showlegend") is False or not trace.get("name"):
            continue
        entry = 0.6 * font_size * len(str(trace["name"])) + 40
        if used and used + entry > width - 80:
            rows, used = rows + 1, 0.0
        used += entry
    return rows


def prob_text(x: float, digits: int = 3) -> str:
    """A probability as a bar label a room can read at any size: a percentage with three significant
    digits ("47.3%", "4.73%", "0.0473%"; `digits` others), "<0.0001%" below that, "0%" for an exact zero."""
    if x <= 0:
        return "0%"
    if x < 1e-6:
        return "<0.0001%"
    return f"{x * 100:.{digits}g}%"


def percent_of(label: str) -> float:
    """The probability a bar label reads as ("47.3%" → 0.473; "<0.0001%" as its bound)."""
    return float(label.lstrip("<").rstrip("%")) / 100


def prob_short(x: float) -> str:
    """A probability in at most five characters: two significant digits ("4.7%", "0.07%"), whole percents from 10%
    ("47%", "100%" for 99.8%); prob_text's "<0.0001%" and "0%" alike."""
    if x <= 0 or x < 1e-6:
        return prob_text(x)
    return f"{x * 100:.0f}%" if x >= 0.095 else f"{x * 100:.2g}%"


# A bar under 1% is a sliver, and its label is the longest prob_text writes ("0.297%", "0.0375%": wider than a
# grouped pair's bar at τ = 6 on a projector), at the height of its neighbour's label: the two ran into one
# ("0.297% 0.0375%", issue 47). Such a bar's label is left out; its value is in the hover and the step's table.
TINY_BAR = 0.01


def bar_texts(values: Sequence[float]) -> list[str]:
    """Labels of grouped vertical bars: prob_text, empty under TINY_BAR."""
    return [prob_text(v) if v >= TINY_BAR else "" for v in values]


QUANTIZATION = re.compile(r"\((F32|F16|BF16|I?Q\d[\w]*|TQ\d\w*)\)$")  # a GGUF model's name ends "(Q4_K_M)"


def roles(draft_name: str = "", target_name: str = "") -> tuple[str, str]:
    """How q and p are labelled: "q (draft)" and "p (target)", with each model's quantization where its name gives
    one (a GGUF file: "q (draft, Q4_0)", "p (target, F32)")."""

    def label(letter: str, role: str, name: str) -> str:
        found = QUANTIZATION.search(name.strip())
        return f"{letter} ({role}, {found.group(1)})" if found else f"{letter} ({role})"

    return label("q", "draft", draft_name), label("p", "target", target_name)


def top_chart(
    step: StepTrace, position: int, hide_decisions: bool = False, names: tuple[str, str] = ("", "")
) -> go.Figure:
    """Top-n of q and of p at one draft position (0-based), side by side; the residual
    distribution too when lossless mode resampled at this position (not with `hide_decisions`:
    where it appears tells where the first rejection was)."""
    q_name, p_name = roles(*names)
    panels: list[tuple[str, Sequence[TokenProb], str]] = [
        (f"{q_name} at position {position + 1}", step.q_top[position], Q_COLOR),
        (f"{p_name} at position {position + 1}", step.p_top[position], P_COLOR),
    ]
    if step.residual_top is not None and position == step.n_accepted and not hide_decisions:
        panels.append(("residual norm(max(0, p − q))", step.residual_top, RESIDUAL_COLOR))
    chosen, gap = step.draft_tokens[position], 0.24  # the gap holds the next panel's token labels
    width = (1 - gap * (len(panels) - 1)) / len(panels)
    data, layout = [], {"height": 420, "margin": {"t": 50, "l": 10, "r": 10}, "annotations": []}
    for col, (title, top, color) in enumerate(panels, start=1):
        entries = list(reversed(top))  # most likely at the top
        left, suffix = (col - 1) * (width + gap), "" if col == 1 else str(col)
        data.append(
            {
                "type": "bar",
                "x": [e.prob for e in entries],
                "orientation": "h",
                "name": title,
                "showlegend": False,
                "y": [f"{chart_label(e.text, LABEL_CHARS)} #{e.token}" for e in entries],
                "text": [prob_text(e.prob) for e in entries],
                "customdata": [chart_label(e.text) for e in entries],
                "hovertemplate": "%{customdata}: %{x:.4g}<extra></extra>",
                "xaxis": f"x{suffix}",
                "yaxis": f"y{suffix}",
                "marker": {"color": [TARGET_COLOR if e.token == chosen else color for e in entries]},
                "textposition": "outside",
                "cliponaxis": False,
                "constraintext": "none",
            }
        )
        layout[f"xaxis{suffix}"] = {
            "domain": [left, left + width],
            "anchor": f"y{suffix}",
            "range": [0, 1.45],
            "tickvals": [0, 0.5, 1],
        }  # room right of a bar at 1 for its label
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "type": "category"}
        layout["annotations"].append(
            {
                "text": title,
                "x": left + width / 2,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": FONT["size"]},
            }
        )
    return built(data, layout, FONT["size"])


def next_token_chart(step: StepTrace, height: int = 360, font_size: int = 16, rows: int = 10) -> go.Figure:
    """Where the next token came from (docs/algorithm.md, step 5): the top `rows` of the distribution it was
    chosen from (p at position n+1, the residual norm(max(0, p − q)) there, or p at τ+1 when all were
    accepted; the chosen token always among them), the chosen token highlighted, the rule in the title."""
    residual = step.next_rule == "residual"
    top = list(step.residual_top if residual and step.residual_top is not None else step.next_top)
    chosen = [e for e in top[rows:] if e.token == step.next_token]
    entries = list(reversed(top[: rows - len(chosen)] + chosen))  # most likely at the top
    base = RESIDUAL_COLOR if residual else P_COLOR
    where = step.n_accepted + 1
    title = {
        "residual": f"norm(max(0, p − q)) at position {where}",
        "bonus": f"p at position {where}: the bonus token",
    }.get(step.next_rule, f"p at position {where}, the first rejected")
    bar = {
        "type": "bar",
        "x": [e.prob for e in entries],
        "orientation": "h",
        "y": [f"{chart_label(e.text, LABEL_CHARS)} #{e.token}" for e in entries],
        "customdata": [chart_label(e.text) for e in entries],
        "text": [prob_text(e.prob) for e in entries],
        "marker": {"color": [TARGET_COLOR if e.token == step.next_token else base for e in entries]},
        "hovertemplate": "%{customdata}: %{x:.4g}<extra></extra>",
        "textposition": "outside",
        "cliponaxis": False,
        "constraintext": "none",  # beside the bar, never shrunk
    }
    layout = {
        "height": height,
        "margin": {"t": 2 * font_size + 40, "l": 10, "r": 10, "b": 10},
        "title": f"{title}<br>chosen: '{chart_label(step.next_text)}' ({step.next_rule})",
        "xaxis": {"range": [0, 1.3], "visible": False},
        "yaxis": {"type": "category"},  # each bar carries its p
    }
    return built([bar], layout, font_size)


LOSSY_COLOR = "#c0392b"  # a lossy rule (docs/algorithm.md, "Lossy rules"), red wherever it is drawn
RULE_COLORS = {
    "token": P_COLOR,
    "one-hot": Q_COLOR,
    "block": RESIDUAL_COLOR,
    "typical": LOSSY_COLOR,
    "sglang": LOSSY_COLOR,
    "ensemble": LOSSY_COLOR,
}
RULE_SHORT = {
    "token": "token-wise",
    "one-hot": "one-hot q",
    "block": "block",
    "typical": "typical (lossy)",
    "sglang": "SGLang thresholds (lossy)",
    "ensemble": "ensemble (lossy)",
}


def rules_chart(step: StepTrace, outcomes: Sequence[RuleOutcome], height: int = 380, font_size: int = 16) -> go.Figure:
    """The same draws r against each rule's threshold at every draft position (docs/algorithm.md,
    "Verification as serving engines run it"): one bar per rule and position, its height the threshold
    (min(1, p/q), p(ŷ), h; a lossy rule's own: min(1, p/t_a) or 1, min(1, m/q)), solid where the rule keeps the token
    and pale where it does not; r as a black diamond. A bar above r passed; block keeps every position up to its last
    pass, passed or not. Typical acceptance makes no draw: its bar is 1 where p(ŷ) passed its threshold, else 0."""
    labels = [f"{t + 1}. {chart_label(s, LABEL_CHARS)}" for t, s in enumerate(step.draft_text)]
    data: list[dict] = []
    for o in outcomes:
        typical = o.rule == "typical"
        data.append(
            {
                "type": "bar",
                "name": f"{RULE_SHORT[o.rule]}: keeps {o.n}",
                "x": labels,
                "y": [float(ok) for ok in o.passed] if typical else list(o.threshold),
                "marker": {
                    "color": RULE_COLORS[o.rule],
                    "opacity": [1.0 if t < o.n else 0.3 for t in range(step.tau)],
                },
                "text": [
                    ("✓ " if ok else "✗ ") + (f"p {'>' if ok else '≤'} " if typical else "") + f"{h:.2f}"
                    for ok, h in zip(o.passed, o.threshold, strict=True)
                ],
                "textposition": "outside",
                "cliponaxis": False,
                "hovertemplate": f"{RULE_SHORT[o.rule]}<br>threshold %{{y:.4f}}<extra></extra>",
            }
        )
    data.append(
        {
            "type": "scatter",
            "name": "r (the same draw for every rule)",
            "x": labels,
            "y": list(step.r),
            "mode": "markers",
            "marker": {"symbol": "diamond", "size": font_size, "color": "black"},
            "hovertemplate": "r = %{y:.4f}<extra></extra>",
        }
    )
    layout = {
        "height": height,
        "barmode": "group",
        "yaxis": {"title": "threshold, r", "range": [0, 1.22], "tickvals": [0, 0.5, 1]},
        "xaxis": {"type": "category"},
        **legend_below(height, font_size, top=20, rows=2),
    }
    return built(data, layout, font_size)
