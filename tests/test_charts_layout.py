"""Charts' layout on a projector: labels that fit side by side, ticks and bar labels that never run into each other
at any τ, the slide's tokens and legend, the marked text's cut, measured in the app's font (Source Sans widths)."""

import re

import pytest

from specviz.viz.render import chart_label, run_html
from specviz.viz.step_chart import step_chart
from tests.helpers import runs_by_mode

SOURCE_SANS = """
!289 #497 %824 &609 (303 )303 ,249 -311 .249 /350 0497 1497 2497 3497 4497 5497 6497 7497 8497 9497 :249 ;249
<497 =497 >497 ?425 A537 B588 C545 D615 E527 F494 G617 H652 I263 J443 K579 L486 M727 N647 O664 P566 Q664 R569
S522 T536 U645 V524 W786 X513 Y476 Z524 [303 ]303 _500 a504 b553 c437 d555 e496 f288 g504 h544 i246 j247 k495
l255 m829 n547 o542 p555 q555 r347 s419 t320 u544 v467 w719 x446 y467 z425 |241 ·249 –480 …948 →619 ↵838 ⇥838
≠497 ≤497 ≥497 ✓612 ✗526
"""
SOURCE_SANS_BOLD = """
!340 #528 %857 &667 (344 )344 ,300 -332 .300 /339 0528 1528 2528 3528 4528 5528 6528 7528 8528 9528 :300 ;300
<528 =528 >528 ?463 A571 B605 C549 D635 E548 F524 G638 H674 I301 J473 K614 L518 M762 N665 O684 P596 Q684 R613
S540 T556 U665 V565 W813 X567 Y525 Z530 [344 ]344 _500 a527 b573 c443 d573 e518 f328 g534 h571 i276 j278 k548
l286 m857 n572 o555 p573 q573 r398 s443 t365 u568 v523 w776 x514 y521 z460 |268 ·300 –480 …978 →617 ↵838 ⇥838
≠528 ≤528 ≥528 ✓647 ✗565
"""


def _widths(table: str, space: float = 0.2) -> dict[str, float]:
    """A table above as a dict: each entry is a character then its width in thousandths of an em; a space, a quote and
    an apostrophe are added (0.2; 0.426 / 0.537; 0.249 / 0.3 measured)."""
    return {entry[0]: int(entry[1:]) / 1000 for entry in table.split()} | {" ": space}


def measured(line: str, size: float) -> float:
    """A chart text's width in px at `size`, from the measured widths (tags dropped, entities read)."""
    import html

    widths = (
        _widths(SOURCE_SANS_BOLD) | {'"': 0.537, "'": 0.3}
        if "<b>" in line
        else _widths(SOURCE_SANS) | {'"': 0.426, "'": 0.249}
    )
    return sum(widths.get(c, 1.0) for c in html.unescape(re.sub(r"<[^>]+>", "", line))) * size


def test_tiny_bars_are_labelled_where_the_labels_fit_side_by_side():
    """Issue 47: "0.297% 0.0375%", two labels of sliver bars run into one at τ = 6 on a projector; issue 55: a
    sliver's label is all the room sees of it ("mat and then slept": q .0007, p .005). A draft token sampled at u =
    0.999 from q = (0.99703, 0.00297): 'b', with q = 0.297% and p = 0.0375%. Two columns in an 800-pixel chart: every
    bar labelled, the slivers too. The same step in a 420-pixel chart at 20 px: a column is 155 px, a bar 62 px; the
    three-digit pair '0.297%' / '0.0375%' is wider than that (about 61 and 71 px), the two-digit one fits; at 300 px
    neither: no labels (the hover and the table keep the values). Widths from Source Sans as Chromium draws it."""
    from specviz.analysis.lossless import LosslessCheck
    from specviz.classroom.sandbox import SandboxCase, sandbox_step
    from specviz.viz.run_charts import lossless_chart

    case = SandboxCase(
        ("a", "b", "c"),
        ((0.99703, 0.00297, 0.0), (0.6, 0.4, 0.0)),
        ((0.999625, 0.000375, 0.0), (0.5, 0.5, 0.0), (0.3, 0.3, 0.4)),
        (0.5, 0.5),
        u=(0.999, 0.1),
    )
    step = sandbox_step(case, "lossless")
    assert step.draft_text[0] == "b" and step.q[0] == pytest.approx(0.00297) and step.p[0] == pytest.approx(0.000375)
    q_bar, p_bar = step_chart(step).data[:2]
    assert list(q_bar.text) == ["0.297%", "60%"] and list(p_bar.text) == ["0.0375%", "50%"]
    q_bar, p_bar = step_chart(step, font_size=20, width=420).data[:2]
    assert list(q_bar.text) == ["0.3%", "60%"] and list(p_bar.text) == ["0.037%", "50%"]
    assert measured("0.297%", 20) + measured("0.0375%", 20) > 2 * 0.4 * (420 - 110) / 2  # three digits: too wide
    for a, b in (("0.3%", "0.037%"), ("60%", "50%")):
        assert (measured(a, 20) + measured(b, 20)) / 2 < 0.4 * (420 - 110) / 2  # two: side by side on their bars
    q_bar, p_bar = step_chart(step, font_size=20, width=300).data[:2]
    assert not q_bar.text and not p_bar.text
    assert list(q_bar.y) == pytest.approx([0.00297, 0.6])  # the bar itself is still drawn, its value in the hover
    check = LosslessCheck("lossless", 8000, (0, 1, 2), (7600, 397, 3), (0.95, 0.04703, 0.00297), 0.1, 2, 0.9, 0)
    target, emitted = lossless_chart(check, str).data[:2]
    assert list(target.text) == ["95%", "4.7%", ""] and list(emitted.text) == ["95%", "4.96%", ""]


def test_token_text_on_a_chart_is_text_never_a_link_or_a_style():
    """Plotly reads <a href>, <span style> and a few other tags in its texts: a token from a replayed file or a model
    is written with entities, so the chart shows its characters and makes no element of them."""

    hostile = '<a href="http://example.invalid/x">click</a> & <span style="color:red">'
    label = chart_label(hostile)
    assert "<" not in label and ">" not in label
    assert label == '&lt;a href="http://example.invalid/x"&gt;click&lt;/a&gt; &amp; &lt;span style="color:red"&gt;'


def test_a_built_chart_resized_has_every_text_at_the_new_size():
    """A lesson's chart on a projector (charts.sized): the global font, the title, each axis's ticks and title, the
    legend, the bar labels and the annotations, all at the new size, whatever they were built with."""
    from specviz.viz.charts import sized

    step = next(s for s in runs_by_mode([3, 9, 4], tau=3, max_new_tokens=8)["textbook"].steps if s.tau)
    layout_of = lambda fig: fig.to_plotly_json()  # noqa: E731
    big = layout_of(sized(step_chart(step, font_size=16), 18))
    layout = big["layout"]
    assert layout["font"]["size"] == layout["legend"]["font"]["size"] == layout["title"]["font"]["size"] == 18
    assert layout["xaxis"]["tickfont"]["size"] == layout["yaxis"]["title"]["font"]["size"] == 18
    assert {a["font"]["size"] for a in layout["annotations"]} == {18}
    assert {t["textfont"]["size"] for t in big["data"] if t["type"] == "bar"} == {18}


def _long_draft(tau: int, kind: str):
    """A step of `tau` draft tokens whose decisions are the longest the chart writes. textbook: 'reversed_list' q .6,
    p .5, r .8301 ≤ p/q = .8333 (four digits to tell them apart), then 'input' q .7 > p .2, r .6 > .29: rejected,
    the rest not reached; accepted: every token kept by r .8301 ≤ .8333; greedy: 'input' is not the target's argmax
    ('reversed_list'); block: position 1 fails its draw and is kept by position 2's pass."""
    from specviz.classroom.sandbox import SandboxCase, sandbox_step

    words = ("reversed_list", "input", "return")
    keep, reject = ((0.6, 0.1, 0.3), (0.5, 0.2, 0.3)), ((0.1, 0.7, 0.2), (0.6, 0.2, 0.2))
    rows = [keep] * tau if kind == "accepted" else [keep, *[reject] * (tau - 1)]
    r = [0.8301] * tau if kind != "block" else [0.95, 0.1, *[0.99] * (tau - 2)][:tau]
    case = SandboxCase(words, tuple(q for q, _ in rows), (*(p for _, p in rows), (0.2, 0.3, 0.5)), tuple(r))
    mode = {"greedy": "greedy", "block": "lossless"}.get(kind, "textbook")
    return sandbox_step(case, mode, "block" if kind == "block" else "token")


@pytest.mark.parametrize(("font_size", "width"), [(20, 800), (16, 800), (16, 620)])
def test_no_decision_tick_or_bar_label_runs_into_another_at_any_tau(font_size, width):
    """Issue 55.2: at τ = 6 "r = 0.36 > p/q = 0.07" ran into "not reached". Every τ Decode allows (1–16), each kind of
    decision, in a chart `width` px wide (800: beside the next token on a 1280-pixel projector; 620: narrower than any
    page draws it): each decision's box, from the figure's layout (its column's centre, its row's shift, its lines at
    their font sizes, widths as Chromium draws Source Sans), keeps clear of every other one and of the chart's edges
    and stays under the title; each tick fits its column; a column's two bar labels fit side by side on their bars."""
    for tau in range(1, 17):
        for kind in ("textbook", "accepted", "greedy", "block"):
            step = _long_draft(tau, kind)
            layout = step_chart(step, font_size=font_size, width=width).to_dict()
            data, layout = layout["data"], layout["layout"]
            left, right, top = layout["margin"]["l"], layout["margin"]["r"], layout["margin"]["t"]
            column = (width - left - right) / tau
            boxes = []
            for t, note in enumerate(layout["annotations"]):
                lines = note["text"].split("<br>")
                sizes = [
                    int(m.group(1)) if (m := re.search(r"font-size:(\d+)px", ln)) else note["font"]["size"]
                    for ln in lines
                ]
                wide = max(measured(line, size) for line, size in zip(lines, sizes, strict=True))
                centre = left + (t + 0.5) * column
                bottom = note.get("yshift", 0)
                boxes.append(
                    (centre - wide / 2, centre + wide / 2, bottom, bottom + sum(1.3 * z for z in sizes), note["text"])
                )
            for i, a in enumerate(boxes):
                assert a[0] >= 0 and a[1] <= width, (tau, kind, a)  # inside the chart
                assert a[3] <= top - (1.3 * font_size + 10), (tau, kind, a)  # under the title
                for b in boxes[i + 1 :]:
                    apart = a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2]
                    assert apart, (tau, kind, a, b)
            for tick in data[0]["x"]:
                assert max(measured(line, font_size) for line in tick.split("<br>")) <= column - 4, (tau, tick)
            for a, b in zip(data[0].get("text") or [], data[1].get("text") or [], strict=True):
                assert (measured(a, font_size) + measured(b, font_size)) / 2 <= 0.4 * column, (tau, a, b)


def test_the_slide_shows_every_token_a_colour_key_and_a_legend_clear_of_its_markers():
    """Issue 55.5. A draft '↵' 'The' '↵' 'sat' on a hand-made table: '↵' q .7 ≤ p .8, kept outright; 'The' r .5 ≤
    .5/.7; '↵' r .9 > .1/.6, rejected; 'sat' not reached; the target's argmax at position 3, 'cat'. The picture writes
    each line break as ↵ in its token's colour (bold green, struck red), not as a space nobody sees; it carries the key
    of the colours; its legend draws every symbol at one size in a 40-pixel slot (the ✕ ran into "chance to accept")."""
    from specviz.classroom.sandbox import SandboxCase, sandbox_step
    from specviz.viz import slide

    case = SandboxCase(
        ("\n", "The", "cat", "sat"),
        q=((0.7, 0.1, 0.1, 0.1), (0.1, 0.7, 0.1, 0.1), (0.6, 0.2, 0.1, 0.1), (0.1, 0.1, 0.1, 0.7)),
        p=((0.8, 0.1, 0.05, 0.05), (0.1, 0.5, 0.3, 0.1), (0.1, 0.2, 0.6, 0.1), (0.1, 0.1, 0.1, 0.7), (0.25,) * 4),
        r=(0.3, 0.5, 0.9, 0.2),
    )
    step = sandbox_step(case)
    assert step.decision == ("accepted", "accepted", "rejected", "not reached") and step.next_text == "cat"
    fig = slide.slide_figure("Once upon a time.\n", step).to_dict()
    layout = fig["layout"]
    (text,) = [a["text"] for a in layout["annotations"] if "Mono" in a["font"].get("family", "")]
    assert text == (
        "<span style='color:#555555'>Once upon a time.↵ </span><span style='color:#0b5a23'><b>↵</b></span>"
        "<span style='color:#0b5a23'><b>The</b></span><span style='color:#b2182b'><s>↵</s></span>"
        "<span style='color:#8a8a8a'>sat</span><span style='color:#1f5fbf'><b><u>cat</u></b></span>"
    )
    key = next(a["text"] for a in layout["annotations"] if "the target's token" in a["text"])
    assert key == (
        "<span style='color:#0b5a23'><b>accepted</b></span>   <span style='color:#b2182b'><s>rejected (the first)</s>"
        "</span>   <span style='color:#8a8a8a'>not reached (after it)</span>   <span style='color:#1f5fbf'><b><u>the "
        "target's token</u></b></span>"
    )
    legend = layout["legend"]
    assert legend["itemsizing"] == "constant" and legend["itemwidth"] == 40  # symbols at 16 px in 40-pixel slots
    # the key and the text lie between the title and the decisions: in px from the top, the text's last line ends
    # above the highest decision (each line of text at most 1.3 × 17 px; a decision's lines 1.3 × 13 px)
    plot = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    px = lambda y: layout["margin"]["t"] + (1 - y) * plot  # noqa: E731
    text_end = (
        px(next(a["y"] for a in layout["annotations"] if a["text"] == text)) + (text.count("<br>") + 1) * 1.3 * 17
    )
    decisions = [a for a in layout["annotations"] if a.get("yref") == "paper" and a.get("y") == 1.0]
    highest = min(px(1) - a.get("yshift", 0) - 1.3 * 13 * (a["text"].count("<br>") + 1) for a in decisions)
    assert text_end <= highest
    assert px(next(a["y"] for a in layout["annotations"] if a["text"] == key)) >= 2 * 15  # under the title


def test_a_projectors_marked_text_keeps_the_prompt_the_newest_text_and_the_step():
    """Issue 55.1: on a projector the marked text scrolled to its newest lines hid the prompt and the step's tokens.
    With `recent` = 10: the prompt whole (up to 30 characters), then of the earlier steps' tokens 'the' 'cat' 'cat'
    'mat' 'and' 'purred' the newest within 10 characters, 'and' 'purred' (9; 'mat' would make 12), "… 4 tokens …"
    for the rest, then the step marked; a longer prompt is cut in its middle; a line break is its mark ↵ alone."""
    from specviz.classroom.sandbox import PRESETS, SandboxCase, sandbox_step

    one, five, _, book = (sandbox_step(case) for case in PRESETS.values())
    assert [five.emitted, book.emitted] == [(0, 1, 1), (0, 1, 4)]  # 'the' 'cat' 'cat', 'mat' 'and' 'purred'
    html = run_html("Once upon a time", [five, book, one], recent=10).split("</style>")[-1]
    body = html.split('<div class="sv-text">')[1]
    assert body.startswith('<span class="sv-prompt">Once upon a time</span><span class="sv-cut"> … 4 tokens … </span>')
    assert re.findall(r'class="sv-(acc-old|tgt-old)"[^>]*>([^<]*)<', body) == [
        ("acc-old", "and"),
        ("tgt-old", "purred"),
    ]
    assert re.findall(r'class="sv-(acc|rej|nr|tgt)"[^>]*>([^<]*)<', body) == [("acc", "cat"), ("tgt", "cat")]
    long = run_html("x" * 40, [one], recent=10)  # over 3 × 10 characters: 30 // 6 = 5 of its start, 30 - 5 - 10 = 15
    assert '<span class="sv-prompt">xxxxx</span><span class="sv-cut"> … 20 characters not shown … </span>' in long
    assert "… tokens" not in long and "token …" not in long  # nothing before the step to leave out
    newline = SandboxCase(("\n", "b"), ((0.9, 0.1),), ((0.9, 0.1), (0.9, 0.1)), (0.5,))
    assert "↵\n" in run_html("a\nb", [sandbox_step(newline)])  # the page's text breaks its lines...
    assert "↵\n" not in run_html("a\nb", [sandbox_step(newline)], recent=10)  # ...a projector's few lines do not


def test_numbers_under_a_long_drafts_tokens_stop_at_the_first_rejection():
    """Past 8 draft tokens a projector's line cannot hold q, p and r under each: the tokens after the first rejection,
    never tested, carry none (their numbers are in the hover). Nine positions, 'a' then 'b' rejected (r .9 > p/q
    .2/.6): numbers under 'a' and 'b' only; the same draft cut to 8: under all 8. Each number one above the other."""
    from specviz.classroom.sandbox import SandboxCase, resize, sandbox_step

    keep, reject = ((0.6, 0.4), (0.6, 0.4)), ((0.4, 0.6), (0.8, 0.2))
    rows = [keep, *[reject] * 8]
    case = SandboxCase(("a", "b"), tuple(q for q, _ in rows), (*(p for _, p in rows), (0.5, 0.5)), (0.5, *[0.9] * 8))
    nine = sandbox_step(case)
    assert nine.n_accepted == 1 and nine.decision[1] == "rejected"
    assert run_html("", [nine], figures=True).count('class="sv-num"') == 2
    eight = run_html("", [sandbox_step(resize(case, 8))], figures=True)
    assert eight.count('class="sv-num"') == 8 and '<span class="sv-num">q .60<br>p .60<br>r .50</span>' in eight
