"""One step as a 16:9 picture for a slide: the text with the step's tokens marked, above q against p with
every decision, in one Plotly figure. The browser saves it with Plotly's own camera button at 1920×1080
(`SLIDE_CONFIG`): the figure is laid out at 960×540 and drawn at scale 2, so the picture is what the page
shows, twice as sharp, and nothing (no Chrome, no kaleido) runs on the server."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.core.trace import StepTrace
from specviz.viz.charts import DECISION_SYMBOLS, WORDY_TAU
from specviz.viz.memo import PlainFigure
from specviz.viz.step_chart import step_chart, title_block

WIDTH, HEIGHT, SCALE = 960, 540, 2  # 16:9, saved at 1920×1080
SLIDE_FONT = 15  # px at 960 wide: 30 px in the saved picture
LINE_CHARS = 78  # characters of the marked text per line at 960 px (monospace at SLIDE_FONT + 2)
CONTEXT_CHARS = 90  # the end of the context shown before the step's tokens
COLORS = {"context": "#555555", "accepted": "#0b5a23", "rejected": "#b2182b", "not reached": "#8a8a8a"}
TARGET = "#1f5fbf"


def slide_config(filename: str) -> dict:
    """Plotly's config for the slide: its camera button saves a 1920×1080 PNG named `filename`."""
    return {
        "toImageButtonOptions": {
            "format": "png",
            "filename": filename,
            "width": WIDTH,
            "height": HEIGHT,
            "scale": SCALE,
        },
        "displaylogo": False,
    }


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _visible(token: str) -> str:
    """A token as the picture writes it: a line break as ↵ and a tab as ⇥ (drawn in the token's colour, where a
    space would show nothing: issue 55), a token of spaces alone as as many ·."""
    shown = token.replace("\n", "↵").replace("\t", "⇥")
    return "·" * len(shown) if shown and not shown.strip(" ") else shown


def _pieces(context: str, step: StepTrace) -> list[tuple[str, str]]:
    """(text, style) in reading order: the end of the context (its line breaks as "↵ "), each draft token by its
    decision, the target's token (only what the step emitted: after an end-of-text the rest is not shown)."""
    tail = context[-CONTEXT_CHARS:].replace("\n", "↵ ")
    pieces = [(("…" if len(context) > CONTEXT_CHARS else "") + tail, "context")]
    pieces += [(_visible(text), decision) for text, decision in zip(step.draft_text, step.decision, strict=True)]
    if len(step.emitted) == step.n_accepted + 1:
        pieces.append((_visible(step.next_text), "target"))
    return pieces


def _styled(text: str, style: str) -> str:
    shown = _escape(text)
    if style == "context":
        return f"<span style='color:{COLORS['context']}'>{shown}</span>"
    if style == "target":
        return f"<span style='color:{TARGET}'><b><u>{shown}</u></b></span>"
    body = f"<s>{shown}</s>" if style == "rejected" else f"<b>{shown}</b>" if style == "accepted" else shown
    return f"<span style='color:{COLORS[style]}'>{body}</span>"


def marked_lines(context: str, step: StepTrace, width: int = LINE_CHARS) -> list[str]:
    """The context's end and the step's tokens as Plotly text lines of at most `width` characters, each piece in
    its decision's colour (accepted bold green, rejected struck red, not reached grey, the target's token blue,
    underlined). Lines break at spaces where they can."""
    lines: list[list[str]] = [[]]
    used = 0
    for text, style in _pieces(context, step):
        rest = text
        while rest:
            room = width - used
            if len(rest) <= room:
                cut = len(rest)
            else:  # break at the last space that fits, else (one long word) where the line ends
                space = rest.rfind(" ", 0, room + 1)
                cut = space if space > 0 else room if used == 0 else 0
            if cut:
                lines[-1].append(_styled(rest[:cut], style))
                used += cut
                rest = rest[cut:]
            if rest:
                lines.append([])
                used = 0
                rest = rest.lstrip(" ") if style == "context" else rest
    return ["".join(line) for line in lines if line]


def colour_key(symbols: bool = False) -> str:
    """The key of the marked text's colours, each name written as its tokens are; with `symbols` (past WORDY_TAU draft
    tokens, where the chart heads each column with ✓, ✗ or – alone) each name after its symbol."""
    names = (("accepted", "accepted"), ("rejected", "rejected (the first)"), ("not reached", "not reached (after it)"))
    sign = lambda style: f"{DECISION_SYMBOLS[style]} " if symbols else ""  # noqa: E731
    return "   ".join(
        [*(_styled(sign(style) + name, style) for style, name in names), _styled("the target's token", "target")]
    )


def slide_figure(
    context: str, step: StepTrace, names: tuple[str, str] = ("", ""), lines: int = 3, own: bool = False
) -> go.Figure:
    """The step as a slide, 960×540 (16:9; saved at 1920×1080 by `slide_config`): the title says what happened, the
    key of the colours and the last `lines` lines of the marked text under it, and below them q against p with
    min(1, p/q), r and each decision in words (the Decode page's chart, laid out for this width; `own`, a typed
    draft: the draft model's own first choice under each token that is not it)."""
    text = marked_lines(context, step)[-lines:]
    chart = step_chart(step, height=HEIGHT, font_size=SLIDE_FONT, names=names, own=own, width=WIDTH).to_dict()
    data, layout = chart["data"], dict(chart["layout"])
    line_px = int(SLIDE_FONT * 1.9)
    title_px = 2 * SLIDE_FONT + 14  # the title's line and its padding
    key_px = int(SLIDE_FONT * 1.6)  # the key of the colours, under the title
    decisions = layout["margin"]["t"] - title_block(SLIDE_FONT)  # what the chart keeps above its plot for them
    top = title_px + key_px + len(text) * line_px + decisions
    ticks = max(t.count("<br>") + 1 for t in data[0]["x"]) * SLIDE_FONT * 1.4 + 10  # the tick labels' lines
    bottom = int(ticks + SLIDE_FONT * 1.6 + 12)  # and the legend's one row under them
    plot = HEIGHT - top - bottom
    above = lambda px: 1 + (top - px) / plot  # noqa: E731  (paper y of a point px below the figure's top)
    marked = {"xref": "paper", "yref": "paper", "x": 0, "xanchor": "left", "yanchor": "top", "showarrow": False}
    annotations = [
        *layout.get("annotations", ()),
        {
            **marked,
            "text": colour_key(symbols=step.tau > WORDY_TAU),
            "y": above(title_px),
            "font": {"size": SLIDE_FONT},
        },
        {  # under the key: paper coordinates above the plot area (1 is its top)
            **marked,
            "text": "<br>".join(text),
            "y": above(title_px + key_px),
            "align": "left",
            "font": {"size": SLIDE_FONT + 2, "family": "DejaVu Sans Mono, Menlo, Consolas, monospace"},
        },
    ]
    layout.update(
        width=WIDTH,
        height=HEIGHT,
        annotations=annotations,
        margin={"t": top, "b": bottom, "l": 70, "r": 20},
        # each entry's symbol at one size in a 40-pixel slot: the r marker's ✕ (20 px, 4-pixel lines on the chart)
        # ran into "chance to accept" before it
        legend={
            **layout.get("legend", {}),
            "y": -ticks / plot,
            "yanchor": "top",
            "itemsizing": "constant",
            "itemwidth": 40,
        },
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    return PlainFigure(data, layout)


def slide_name(step: StepTrace) -> str:
    """The file name of a step's slide: specviz-step-3."""
    return f"specviz-step-{step.index + 1}"


def emitted_text(step: StepTrace) -> str:
    """The text a step added to the run: its accepted draft tokens and the target's token, as far as it emitted them."""
    return "".join([*step.draft_text[: step.n_accepted], step.next_text][: len(step.emitted)])
