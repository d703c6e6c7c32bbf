"""The step chart, the centrepiece: per draft position q against p, what each draw is tested against, the draws, and
every decision written above its column, laid out to fit the narrowest chart a page draws. Its parts: the ticks, the
bars with their labels, the rule's marker, the decisions above the columns, the layout (specviz.viz.charts holds the
colours and helpers every chart shares)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import plotly.graph_objects as go

from specviz.core.trace import StepTrace, TokenProb
from specviz.viz.charts import (
    DECISION_COLORS,
    DECISION_SYMBOLS,
    LABEL_CHARS,
    P_COLOR,
    Q_COLOR,
    WORDY_TAU,
    built,
    percent_of,
    prob_short,
    prob_text,
    roles,
)
from specviz.viz.render import chart_label, decision_parts, decision_reason, own_choice

MANY_TAU, SHORT_CHARS = 8, 5  # past 8 draft tokens the step chart's ticks are "9<br>token" cut to 5 characters


# The decisions above the step chart's columns are laid out to fit the narrowest chart a page draws: NARROWEST px
# wide (the step chart beside the next token's on a 1280-pixel projector, or under a 1280-pixel screen's sidebar);
# wider charts only have more room. Each decision takes the first of these that fits, least height first: its
# sentence in two lines, the same in shorter lines, either staggered on two or three rows (issue 55: at τ = 6 "r =
# 0.36 > p/q = 0.07" ran into "not reached").
NARROWEST = 800
MARGIN_L, MARGIN_R = 80, 30
LINE_SPACING = 1.3  # an annotation's line height, in its font size (plotly's)
LABEL_GAP = 10  # px between two decisions on one row


def _char_em(c: str) -> float:
    """A character's width in em in the charts' Source Sans, rounded up (measured in Chromium: digits 0.50, "." 0.25,
    a space 0.20, "m" 0.83, "%" 0.82, "→" 0.62, "↵" 0.84; a glyph not measured counts as wide)."""
    if c in " .,:;'!|il·ijf":
        return 0.27
    if c in '()[]/-rt"':
        return 0.36
    if c in "mwMW%↵⇥…@" or (not c.isascii() and c not in "→≤≥≠✓✗–"):
        return 0.86
    return 0.62 if c.isupper() or c in "→≤≥≠✓✗–" else 0.56


def text_width(line: str, size: float) -> float:
    """The estimated width in px of one line of a label (its tags dropped, entities read; bold a little wider)."""
    shown = html.unescape(re.sub(r"<[^>]+>", "", line))
    return sum(map(_char_em, shown)) * size * (1.06 if "<b>" in line else 1.0)


def _split_why(why: str) -> list[str]:
    """A decision's reason in short lines: "r = 0.30 ≤ p/q = 0.75" → "r = 0.30", "≤ p/q = 0.75"; "≠ the target's
    argmax 'x'" → "≠ the target's", "argmax 'x'"."""
    found = re.search(r" (?=[≤>] \S+ = )", why)
    if found:
        return [why[: found.start()], why[found.end() :]]
    if "argmax" in why and not why.endswith("argmax"):
        head, tail = why.split(" argmax", 1)
        return [head, "argmax" + tail]
    return [why.replace(" argmax", "")] if why.endswith("argmax") else [why]


def _outcome_lines(outcome: str, short: bool) -> list[str]:
    if outcome.startswith("not reached"):
        after = ["(after the", "rejection)"] if short else ["(after the first rejection)"]
        return ["<b>not reached</b>", *after]
    if not short:
        return [f"<b>→ {outcome}</b>"]
    head, _, tail = outcome.partition(" ")
    return [f"<b>→ {head}</b>", *([f"<b>{tail}</b>"] if tail else [])]


def decision_forms(step: StepTrace, t: int, hidden: bool) -> tuple[list[str], list[str]]:
    """The decision above column t as (lines, shorter lines), HTML: its reason and outcome, or the question before a
    quiz's Reveal; beyond WORDY_TAU draft tokens a symbol (its sentence is the hover)."""
    if step.tau > WORDY_TAU:
        return (["<b>?</b>"],) * 2 if hidden else ([f"<b>{DECISION_SYMBOLS[step.decision[t]]}</b>"],) * 2
    if hidden:
        return ["<b>accept or reject?</b>"], ["<b>accept or</b>", "<b>reject?</b>"]
    why, outcome = decision_parts(step, t)
    wide = [why, *_outcome_lines(outcome, False)] if why else _outcome_lines(outcome, False)
    return wide, [*(_split_why(why) if why else []), *_outcome_lines(outcome, True)]


def _fits(widths: Sequence[float], column: float, rows: int, right: float) -> bool:
    """Whether labels of these widths, centred on columns `column` px apart and staggered on `rows` rows (label t on
    row t mod rows), keep LABEL_GAP between neighbours on a row and stay inside the chart (`right`: the margin)."""
    apart = all((widths[t] + widths[t + rows]) / 2 + LABEL_GAP <= rows * column for t in range(len(widths) - rows))
    edges = all(w / 2 <= (t + 0.5) * column + MARGIN_L - 4 for t, w in enumerate(widths))
    ends = all(w / 2 <= (len(widths) - t - 0.5) * column + right - 4 for t, w in enumerate(widths))
    return apart and edges and ends


def decision_layout(
    labels: Sequence[tuple[list[tuple[str, int]], list[tuple[str, int]]]], width: int
) -> tuple[list[list[tuple[str, int]]], int, float]:
    """(each label's lines, rows, the height of a row in px): the first layout, least height first, whose labels fit
    a chart `width` px wide. `labels`: per column, its two forms as (line, font size) lists."""
    column = (width - MARGIN_L - MARGIN_R) / max(len(labels), 1)
    height = lambda form: max(sum(size * LINE_SPACING for _, size in label) for label in form)  # noqa: E731
    tries = sorted(
        (
            (rows * height(form), rows, form)
            for form in ([w for w, _ in labels], [n for _, n in labels])
            for rows in (1, 2, 3)
        ),
        key=lambda x: (x[0], x[1]),
    )
    for _, rows, form in tries:
        widths = [max(text_width(line, size) for line, size in label) for label in form]
        if _fits(widths, column, rows, MARGIN_R):
            return form, rows, height(form)
    _, rows, form = tries[-1]
    return form, rows, height(form)


def title_block(font_size: int) -> int:
    """The px above the decisions: the step chart's one-line title and its padding."""
    return int(font_size * LINE_SPACING) + 24


def step_chart(
    step: StepTrace,
    hide_decisions: bool = False,
    show_draws: bool = False,
    height: int = 460,
    font_size: int = 16,
    marks: Sequence[bool | None] = (),
    names: tuple[str, str] = ("", ""),
    own: bool = False,
    width: int = NARROWEST,
) -> go.Figure:
    """The centrepiece: per draft position, bars of q and p for the draft token, a marker for the
    acceptance probability min(1, p/q) and one for the draw r, coloured by the decision. With
    `hide_decisions` (quiz mode) only q, p and min(1, p/q) are drawn, in a neutral colour, and r
    too (neutral) with `show_draws` (the quiz on the rule itself). `marks` (quiz, after Reveal: per
    draft token, the class right, wrong, or None where it gave no answer) heads each column with
    ✓ or ✗ in large type. `names`: the draft's and the target's model names (their quantization labels q and p).
    `own` (a typed draft): under a token that is not the draft model's own first choice, that choice. `width`: the
    narrowest the page draws it (px): ticks, bar labels and decisions are laid out so that none runs into another
    there (`decision_layout`). Its parts: the ticks, the bars of q and p with their labels, the rule's marker, the
    draws, the decisions above the columns, the layout."""
    column = (width - MARGIN_L - MARGIN_R) / max(step.tau, 1)
    x = step_ticks(step, column, font_size, own)
    colors = ["#777777"] * step.tau if hide_decisions else [DECISION_COLORS[d] for d in step.decision]
    data = step_bars(step, x, column, font_size, names)
    data += rule_marker(step, x, colors, hide_decisions, show_draws)
    if any(r is not None for r in step.r) and (show_draws or not hide_decisions):
        data.append(
            {
                "type": "scatter",
                "name": "r (uniform draw)",
                "x": x,
                "y": list(step.r),
                "mode": "markers",
                "marker": {"symbol": "x-thin", "size": 20, "color": colors, "line": {"width": 4, "color": colors}},
                "hovertemplate": "r = %{y:.3f}<extra></extra>",
            }
        )
    annotations, rows, row_px = decisions_above(step, x, colors, hide_decisions, marks, font_size, width)
    layout = step_layout(step, data, x, annotations, hide_decisions, rows * row_px, height, font_size, width)
    return built(data, layout, font_size)


def step_ticks(step: StepTrace, column: float, font_size: int, own: bool) -> list[str]:
    """Each column's tick: "3. token" (a typed draft's: the draft's own pick under it), or two short lines where the
    draft is long or a column too narrow for a tick's line."""
    picks = [own_choice(step, t) for t in range(step.tau)] if own else [None] * step.tau

    def ticks(short: bool) -> list[str]:
        cut = max(2, min(SHORT_CHARS, int((column - 8) / (0.62 * font_size)))) if short else LABEL_CHARS
        head = [f"{t + 1}<br>" if short else f"{t + 1}. " for t in range(step.tau)]
        return [
            f"{h}{chart_label(s, cut)}" + (f"<br>(draft: {chart_label(o.text, cut)})" if o else "")
            for h, s, o in zip(head, step.draft_text, picks, strict=True)
        ]

    x = ticks(short=False)
    many = step.tau > MANY_TAU or any(
        text_width(line, font_size) > column - 8 for tick in x for line in tick.split("<br>")
    )
    return ticks(short=True) if many else x


def bar_labels(step: StepTrace, column: float, font_size: int) -> list[list[str]]:
    """Every bar's label, the smallest too (a sliver's value is all the room sees of it: issue 55), where every column
    has room for both of its bars' labels side by side (a bar is 0.4 of a column; issue 47's "0.297% 0.0375%" ran
    into one): three significant digits, else two; else none ([[], []]), the numbers in the hover and the step's
    table. q above p is never written as q ≤ p: the room would read "kept outright" a token that was tested (and
    perhaps rejected); more digits where rounding met them."""
    labels, room = [[], []], 0.4 * column - 4
    for form in (prob_text, prob_short):
        labels = [[form(v) for v in values] for values in (step.q, step.p)]
        if all((text_width(a, font_size) + text_width(b, font_size)) / 2 <= room for a, b in zip(*labels, strict=True)):
            break
    else:
        return [[], []]
    for t in range(step.tau):
        digits = 3
        while step.q[t] > step.p[t] and percent_of(labels[0][t]) <= percent_of(labels[1][t]) and digits < 10:
            labels[0][t], labels[1][t] = prob_text(step.q[t], digits), prob_text(step.p[t], digits)
            digits += 1
    return labels


def step_bars(step: StepTrace, x: list[str], column: float, font_size: int, names: tuple[str, str]) -> list[dict]:
    """The bars of q and p for each draft token, labelled (bar_labels), the whole token in the hover."""
    q_name, p_name = roles(*names)
    labels = bar_labels(step, column, font_size)
    whole = [f"{t + 1}. {chart_label(s)}" for t, s in enumerate(step.draft_text)]
    return [
        {
            "type": "bar",
            "name": name,
            "x": x,
            "y": list(values),
            "marker": {"color": color},
            "text": texts,
            "textposition": "outside",
            "cliponaxis": False,
            "customdata": whole,
            "hovertemplate": f"%{{customdata}}: {name[0]} = %{{y:.4g}}<extra></extra>",
        }
        for name, values, color, texts in ((q_name, step.q, Q_COLOR, labels[0]), (p_name, step.p, P_COLOR, labels[1]))
    ]


def rule_marker(step: StepTrace, x: list[str], colors: list[str], hidden: bool, show_draws: bool) -> list[dict]:
    """What each draw is tested against, by the step's rule: greedy's argmax of p (kept iff ŷ is it; none while the
    decisions are hidden, unless the draws are shown), the engines' rules' own threshold (one-hot's p(ŷ), block's h),
    or the textbook's min(1, p/q)."""
    greedy = bool(step.r) and all(r is None for r in step.r)
    if greedy:  # kept iff it is p's most likely token: p's argmax marked, no chance that does not apply
        if not (show_draws or not hidden):
            return []
        best = [top[0] if top else TokenProb(-1, "?", 0.0) for top in step.p_top]
        return [
            {
                "type": "scatter",
                "name": "max p: the target's most likely token (greedy keeps ŷ only if ŷ is it)",
                "x": x,
                "y": [b.prob for b in best],
                "mode": "markers",
                "customdata": [chart_label(b.text) for b in best],
                "marker": {"symbol": "star", "size": 22, "color": colors, "line": {"width": 2, "color": "black"}},
                "hovertemplate": "argmax p: %{customdata} (p = %{y:.3f})<extra></extra>",
            }
        ]
    if step.verify is not None:  # the engines' rules: r against the rule's own threshold
        one_hot = step.verify.rule == "one-hot"
        name = (
            "p(ŷ): kept while r ≤ p(ŷ) (q taken as one-hot)"
            if one_hot
            else ("h: pass while r ≤ h (not the chance to keep: n is the last pass)")
        )
        return [
            {
                "type": "scatter",
                "name": name,
                "x": x,
                "y": list(step.verify.threshold),
                "mode": "markers",
                "marker": {
                    "symbol": "line-ew-open" if one_hot else "triangle-down",
                    "size": 26,
                    "color": colors,
                    "line": {"width": 4, "color": colors},
                },
                "hovertemplate": ("p(ŷ)" if one_hot else "h") + " = %{y:.3f}<extra></extra>",
            }
        ]
    return [
        {
            "type": "scatter",
            "name": "min(1, p/q): chance to accept",
            "x": x,
            "y": [min(1.0, ratio) for ratio in step.ratio],
            "mode": "markers",
            "marker": {"symbol": "diamond-wide", "size": 22, "color": colors, "line": {"width": 2, "color": "black"}},
            "hovertemplate": "min(1, p/q) = %{y:.3f}<extra></extra>",
        }
    ]


def decisions_above(
    step: StepTrace,
    x: list[str],
    colors: list[str],
    hidden: bool,
    marks: Sequence[bool | None],
    font_size: int,
    width: int,
) -> tuple[list[dict], int, float]:
    """Each column's decision written above the plot area, clear of the markers at 1.0 (the class's answer, right or
    wrong, above it), in staggered rows where one row has no room (decision_layout): (the annotations, their rows,
    a row's height in px)."""
    size, mark_size = font_size - 2, font_size + 4
    forms = []
    for t in range(step.tau):
        wide, short = decision_forms(step, t, hidden)
        mark = marks[t] if t < len(marks) else None
        if mark is not None:  # the class's answer, right or wrong, above the decision
            colour = DECISION_COLORS["accepted" if mark else "rejected"]
            signs = ("✓ class right", "✓ right") if mark else ("✗ class wrong", "✗ wrong")
            head = [f"<span style='font-size:{mark_size}px;color:{colour}'><b>{sign}</b></span>" for sign in signs]
            wide, short = [head[0], *wide], [head[1], *short]
        forms.append(
            tuple([(line, mark_size if line.startswith("<span") else size) for line in f] for f in (wide, short))
        )
    chosen, rows, row_px = decision_layout(forms, width)
    annotations = [
        {
            "x": label,
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            "yshift": (t % rows) * row_px,
            "text": "<br>".join(line for line, _ in chosen[t]),
            "hovertext": None if hidden else decision_reason(step, t),
            "showarrow": False,
            "font": {"color": color, "size": size},
        }
        for t, (label, color) in enumerate(zip(x, colors, strict=True))
    ]
    return annotations, rows, row_px


def step_layout(
    step: StepTrace,
    data: list[dict],
    x: list[str],
    annotations: list[dict],
    hidden: bool,
    decisions_px: float,
    height: int,
    font_size: int,
    width: int,
) -> dict:
    """The title (the question while the decisions are hidden, else what the step kept), the margins that hold the
    decisions above and the ticks and the legend's rows below, the axes."""
    title = (
        f"Step {step.index + 1}: {step.tau} draft tokens: which will the target accept?"
        if hidden
        else f"Step {step.index + 1}: {step.n_accepted} of {step.tau} draft tokens accepted, then "
        f"'{chart_label(step.next_text)}' from the target ({step.next_rule})"
    )
    top = title_block(font_size) + int(decisions_px) + 8
    tick_px = max(tick.count("<br>") + 1 for tick in x) * font_size * LINE_SPACING + 12
    rows_of_legend, used = 1, 0.0
    for entry in (text_width(t["name"], font_size) + 44 for t in data):  # an entry: its symbol, its name, a gap
        rows_of_legend, used = (
            (rows_of_legend + 1, entry) if used and used + entry > width - 20 else (rows_of_legend, used + entry)
        )
    bottom = int(tick_px + rows_of_legend * (font_size + 12) + 8)
    return {
        "barmode": "group",
        "annotations": annotations,
        "title": {"text": title, "y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 10}},  # above all
        "yaxis": {"range": [0, 1.22], "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1], "title": "probability"},
        "xaxis": {"type": "category", "tickangle": 0},  # labels such as "4. ," would otherwise read as numbers
        "legend": {"orientation": "h", "y": -tick_px / max(height - top - bottom, 50), "yanchor": "top", "x": 0},
        "margin": {"t": top, "b": bottom, "l": MARGIN_L, "r": MARGIN_R},
        "height": height,
    }
