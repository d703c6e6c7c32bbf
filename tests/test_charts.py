"""Charts and the marked text, checked on the figure data and the HTML they produce."""

import re

import pytest

from specviz.analysis.theory import expected_tokens_per_step
from specviz.viz.charts import DECISION_COLORS, legend_rows, step_chart, top_chart
from specviz.viz.render import chart_label, run_html, token_label
from specviz.viz.run_charts import history_chart, per_position_chart, theory_chart
from tests.helpers import runs_by_mode


@pytest.fixture(scope="module")
def runs():
    return runs_by_mode([4, 8, 15, 16, 23, 42], tau=4, seed=1, max_new_tokens=30)


# Each character's width in em in the charts' font ("Source Sans", sans-serif) as headless Chromium draws it, regular
# and bold: measured once from an SVG text in the running app (ten of each; a space is Source Sans' 0.2). The tests
# below measure the step chart's texts with it, not with the chart's own estimate.
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


def _trace(fig, name_start):
    return next(t for t in fig.data if t.name.startswith(name_start))


def test_step_chart_shows_q_p_acceptance_chance_and_r_coloured_by_decision(runs):
    step = next(s for s in runs["textbook"].steps if 0 < s.n_accepted < s.tau)
    fig = step_chart(step)
    q, p = _trace(fig, "q"), _trace(fig, "p")
    assert list(q.y) == list(step.q) and list(p.y) == list(step.p)
    assert len(q.x) == step.tau and q.x[0].startswith("1. ")
    chance, r = _trace(fig, "min(1, p/q)"), _trace(fig, "r")
    assert list(chance.y) == pytest.approx([min(1, x) for x in step.ratio])
    assert list(r.y) == list(step.r)
    expected = [DECISION_COLORS[d] for d in step.decision]
    assert list(r.marker.color) == expected and list(chance.marker.color) == expected
    assert "accepted" in step.decision and "rejected" in step.decision
    assert [a.text.rsplit("<b>", 1)[-1].split("</b>")[0].lstrip("→ ") for a in fig.layout.annotations] == [
        d if d != "not reached" else "not reached" for d in step.decision
    ]
    assert fig.layout.xaxis.type == "category"  # labels like "4. ," must not read as numbers
    assert top_chart(step, 0).layout.yaxis.type == "category"


def test_step_chart_in_greedy_mode_has_no_r_and_marks_ps_argmax_not_a_chance(runs):
    step = next(s for s in runs["greedy"].steps if s.n_accepted < s.tau)
    fig = step_chart(step)
    assert not any(t.name.startswith("r ") for t in fig.data)
    assert not any("min(1, p/q)" in t.name or "chance" in t.name for t in fig.data)  # greedy has no chance to accept
    best = _trace(fig, "max p: the target's most likely token")
    assert list(best.y) == [top[0].prob for top in step.p_top]  # p's argmax at each position, its token in the hover
    assert list(best.customdata) == [chart_label(top[0].text) for top in step.p_top]
    assert list(best.marker.color) == [DECISION_COLORS[d] for d in step.decision]
    n = step.n_accepted  # accepted exactly where the draft token is the argmax, up to the first mismatch
    assert all(step.p_top[t][0].token == step.draft_tokens[t] for t in range(n))
    assert step.p_top[n][0].token != step.draft_tokens[n]
    predict = step_chart(step, hide_decisions=True)  # the class predicts: p's argmax would give the answer away
    assert not any(t.name.startswith("max p") for t in predict.data)
    assert any(t.name.startswith("max p") for t in step_chart(step, hide_decisions=True, show_draws=True).data)


def test_per_position_chart_names_depths_and_leaves_undrafted_ones_absent():
    fig = per_position_chart((1.0, 0.5, None), (1.0, 0.5, None), tree=True)
    assert list(fig.data[0].y) == [1.0, 0.5, None] and fig.layout.xaxis.title.text == "draft depth i"
    assert [(a.x, a.text) for a in fig.layout.annotations] == [(3, "not drafted")]
    assert "depth" in fig.data[0].name


def test_top_chart_shows_both_top_tens_and_the_residual_where_resampled(runs):
    step = next(s for s in runs["lossless"].steps if s.next_rule == "residual")
    fig = top_chart(step, step.n_accepted)
    assert len(fig.data) == 3
    q_bars, p_bars, res_bars = fig.data
    assert list(q_bars.x) == [e.prob for e in reversed(step.q_top[step.n_accepted])]
    assert list(p_bars.x) == [e.prob for e in reversed(step.p_top[step.n_accepted])]
    assert list(res_bars.x) == [e.prob for e in reversed(step.residual_top)]
    assert len(top_chart(runs["textbook"].steps[0], 0).data) == 2


def test_history_and_per_position_charts(runs):
    run = runs["textbook"]
    fig = history_chart(run.steps)
    full, stopped, tau = fig.data  # bars by outcome, then τ
    bars = sorted([*zip(full.x, full.y, strict=True), *zip(stopped.x, stopped.y, strict=True)])
    assert bars == [(s.index + 1, s.n_accepted) for s in run.steps]
    assert [x - 1 for x in full.x] == [s.index for s in run.steps if s.n_accepted == s.tau]
    assert full.marker.color == DECISION_COLORS["accepted"] and stopped.marker.color == DECISION_COLORS["rejected"]
    assert full.name == "n: all τ accepted" and stopped.name == "n: stopped at a rejection"  # both in the legend
    assert list(tau.y) == [s.tau for s in run.steps]
    picked = history_chart(run.steps, shown=2)  # the step the page draws is marked
    assert picked.data[2].name == "step shown (3)" and list(picked.data[2].x) == [3]
    assert picked.layout.shapes[0].x0 == 2.5 and picked.layout.shapes[0].x1 == 3.5
    assert not history_chart(run.steps).layout.shapes
    fig = per_position_chart(run.metrics.per_position_acceptance_rate)
    assert list(fig.data[0].y) == list(run.metrics.per_position_acceptance_rate) and len(fig.data) == 1
    both = per_position_chart((0.5, 0.25, 0.0), (0.5, 0.5, None))  # 4 steps: n = 0, 0, 1, 2 of τ = 3
    assert [list(t.y) for t in both.data] == [[0.5, 0.25, 0.0], [0.5, 0.5, None]]
    assert "reached" in both.data[1].name and both.data[0].name == "accepted / all steps"


def test_theory_chart_draws_the_formula():
    fig = theory_chart([0.8], max_tau=6)
    assert list(fig.data[0].y) == [expected_tokens_per_step(0.8, t) for t in range(1, 7)]
    assert fig.data[0].y[4] == pytest.approx(3.69, abs=0.005)


def test_presentation_sizes_reach_every_text_of_the_step_charts(runs):
    """Streamlit's theme sets 12-px ticks and legends unless a figure names its own: in presentation
    view every text a room reads is at the size asked for (the browser test measures the pixels)."""
    from specviz.viz.charts import next_token_chart

    step = next(s for s in runs["textbook"].steps if 0 < s.n_accepted < s.tau)
    for fig in (step_chart(step, font_size=20), next_token_chart(step, font_size=20)):
        layout = fig.layout
        assert layout.font.size == 20 and layout.legend.font.size == 20 and layout.title.font.size == 20
        assert layout.xaxis.tickfont.size == 20 and layout.yaxis.tickfont.size == 20
        assert all(t.textfont.size == 20 for t in fig.data if t.type == "bar")
    assert {a.font.size for a in step_chart(step, font_size=20).layout.annotations} == {18}  # the decisions


def test_token_labels_make_whitespace_visible():
    assert token_label(" cat") == "·cat"
    assert token_label("\n") == "↵"
    assert token_label("a<b") == "a<b"


def test_run_html_marks_the_last_step_and_escapes_text(runs):
    run = runs["textbook"]
    step = next(s for s in run.steps if 0 < s.n_accepted < s.tau)
    steps = run.steps[: step.index + 1]
    html = run_html("<b>prompt</b> & more", steps)
    assert "&lt;b&gt;prompt&lt;/b&gt; &amp; more" in html
    assert html.count('class="sv-acc"') == step.n_accepted
    assert html.count('class="sv-rej"') == 1  # the first rejected token, struck through
    assert html.count('class="sv-nr"') == step.tau - step.n_accepted - 1  # after it: not reached, its own look
    assert html.count('class="sv-tgt"') == 1 and f">{step.next_rule}</span>" in html
    assert html.count('class="sv-tgt-old"') == len(steps) - 1
    t = step.n_accepted  # the rejected token's tooltip gives q, p, p/q and r
    assert f"q = {step.q[t]:.4f}, p = {step.p[t]:.4f}, p/q = {step.ratio[t]:.3f}, r = {step.r[t]:.3f}" in html
    assert "rejected" in html
    assert 'class="sv-text sv-words"' in run_html("", steps, words=True)
    chat = run_html("hi", steps, chat=True)
    assert ">user</span>" in chat and ">assistant</span>" in chat


def test_quiz_hides_r_decisions_and_the_target_token_then_scores(runs):
    from specviz.classroom.quiz import Score, answer, score

    run = runs["textbook"]
    step = next(s for s in run.steps if s.n_accepted < s.tau - 1)  # a rejected token and one not reached
    fig = step_chart(step, hide_decisions=True)
    assert [t.name.split(" ")[0] for t in fig.data] == ["q", "p", "min(1,"]
    assert {a.text for a in fig.layout.annotations} == {"<b>accept or reject?</b>"}
    assert "which will the target accept" in fig.layout.title.text
    rule = step_chart(step, hide_decisions=True, show_draws=True)  # the quiz on the rule: r, neutral
    assert [t.name.split(" ")[0] for t in rule.data] == ["q", "p", "min(1,", "r"]
    assert list(rule.data[3].y) == list(step.r) and set(rule.data[3].marker.color) == {"#777777"}
    html = run_html("prompt", run.steps[: step.index + 1], hide_last=True)
    assert html.count('class="sv-quiz"') == step.tau
    assert 'class="sv-acc"' not in html and 'class="sv-rej"' not in html and 'class="sv-tgt"' not in html
    tips = re.findall(r'class="sv-quiz" title="([^"]*)"', html)
    assert len(tips) == step.tau and not any("r = " in tip or "accepted" in tip for tip in tips)
    with_draws = run_html("prompt", run.steps[: step.index + 1], hide_last=True, show_draws=True)
    draw_tips = re.findall(r'class="sv-quiz" title="([^"]*)"', with_draws)
    assert f"r = {step.r[0]:.3f}" in draw_tips[0] and not any("accepted" in tip or "reject" in tip for tip in draw_tips)
    n, tau = step.n_accepted, step.tau
    answers = [answer(step, t) for t in range(tau)]
    assert answers == ["accept"] * n + ["reject"] + ["not reached"] * (tau - n - 1)
    assert score(step, answers) == Score(right=tau, answered=tau, marks=(True,) * tau)
    assert score(step, ["accept"] * tau).right == n  # "reject" is not "not reached"
    wrong = (False,) * n + (True,) + (False,) * (tau - n - 1)
    assert score(step, ["reject"] * tau) == Score(right=1, answered=tau, marks=wrong)
    assert score(step, [None] * tau) == Score(right=0, answered=0, marks=(None,) * tau)  # blanks are not scored
    blanks = [answers[0]] + [None] * (tau - 1)
    assert score(step, blanks) == Score(right=1, answered=1, marks=(True,) + (None,) * (tau - 1))
    kept = score(step, answers, kept=n)
    assert kept.kept_right and kept.points == (tau + 1, tau + 1)
    assert score(step, answers, kept=n + 1).points == (tau, tau + 1)


def test_not_reached_tokens_have_their_own_look_and_a_legend(runs):
    step = next(s for s in runs["textbook"].steps if s.n_accepted < s.tau - 2)  # two or more not reached
    html = run_html("prompt", [step], legend=True)
    spans = re.findall(r'<span class="(sv-acc|sv-rej|sv-nr)" title="position (\d+):', html)
    n = step.n_accepted
    expected = [("sv-acc", str(t + 1)) for t in range(n)] + [("sv-rej", str(n + 1))]
    assert spans == expected + [("sv-nr", str(t + 1)) for t in range(n + 1, step.tau)]
    nr_style = re.search(r"\.sv-nr, \.sv-key-nr \{([^}]*)\}", html).group(1)
    assert "line-through" not in nr_style and "dashed" in nr_style  # grey and dashed, never struck through
    for label in ("accepted", "rejected (the first)", "not reached (after it)", "the target&#x27;s token"):
        assert label in re.search(r'<div class="sv-legend">(.*?)</div>', html).group(1).replace("'", "&#x27;")
    assert '<div class="sv-legend">' not in run_html("prompt", [step])  # only where asked for


def test_quiz_marks_each_answered_token_right_or_wrong_in_the_text(runs):
    step = next(s for s in runs["textbook"].steps if s.n_accepted < s.tau - 1)
    marks = [True, False] + [None] * (step.tau - 2)  # the class answered the first two tokens
    html = run_html("prompt", [step], marks=marks)
    found = re.findall(r'class="sv-mark (sv-right|sv-wrong)"[^>]*>(✓|✗)</span>', html)
    assert found == [("sv-right", "✓"), ("sv-wrong", "✗")]
    first, right, second = (html.index(s) for s in ('title="position 1:', '"sv-mark sv-right"', '"sv-mark sv-wrong"'))
    assert first < right < html.index('title="position 2:') < second  # each after the token it marks
    assert 'class="sv-mark' not in run_html("prompt", [step])


def test_quiz_hides_the_residual_panel_that_marks_the_rejection(runs):
    step = next(s for s in runs["lossless"].steps if s.residual_top is not None)
    shown = top_chart(step, step.n_accepted)
    assert any("residual" in a.text for a in shown.layout.annotations)
    hidden = top_chart(step, step.n_accepted, hide_decisions=True)
    assert not any("residual" in a.text for a in hidden.layout.annotations) and len(hidden.data) == 2


def test_each_decision_in_words_worked_by_hand():
    """The sandbox's five-token case: 'the' q .5 ≤ p .6; 'cat' r .3 ≤ p/q = .45/.6 = .75; 'sat'
    r .6 > p/q = .2/.7 = .2857; then two tokens not reached. Greedy: 'sat' is not the target's
    argmax at position 3 ('cat', p = .35)."""
    from specviz.classroom.sandbox import PRESETS, sandbox_step
    from specviz.viz.render import decision_reason

    five, one = PRESETS["Five-token draft, the third rejected first"], PRESETS["One token: q = 0.8, p = 0.6, r = 0.7"]
    step = sandbox_step(five, "textbook")
    assert [decision_reason(step, t) for t in range(5)] == [
        "q ≤ p → accepted outright",
        "r = 0.30 ≤ p/q = 0.75 → accepted",
        "r = 0.60 > p/q = 0.29 → rejected",
        "not reached (after the first rejection)",
        "not reached (after the first rejection)",
    ]
    wide = step_chart(step, width=1600)  # room for each sentence in two lines
    assert [a.text for a in wide.layout.annotations][1:4] == [
        "r = 0.30 ≤ p/q = 0.75<br><b>→ accepted</b>",
        "r = 0.60 > p/q = 0.29<br><b>→ rejected</b>",
        "<b>not reached</b><br>(after the first rejection)",
    ]
    narrow = step_chart(step, font_size=20)  # beside the next token on a projector: the same in shorter lines
    assert [a.text for a in narrow.layout.annotations][:4] == [
        "q ≤ p<br><b>→ accepted</b><br><b>outright</b>",
        "r = 0.30<br>≤ p/q = 0.75<br><b>→ accepted</b>",
        "r = 0.60<br>> p/q = 0.29<br><b>→ rejected</b>",
        "<b>not reached</b><br>(after the<br>rejection)",
    ]
    greedy = sandbox_step(five, "greedy")
    assert [decision_reason(greedy, t) for t in range(3)] == [
        "= the target's argmax → accepted",
        "= the target's argmax → accepted",
        "≠ the target's argmax 'cat' → rejected",
    ]
    close = sandbox_step(one.__class__(**{**one.__dict__, "r": (0.7501,)}), "textbook")  # p/q = .6/.8 = .75
    assert decision_reason(close, 0) == "r = 0.7501 > p/q = 0.7500 → rejected"  # digits enough to tell them apart


def test_many_draft_tokens_get_a_symbol_and_the_reason_on_hover():
    from specviz import Decoder, SpecConfig
    from specviz.viz.render import decision_reason
    from tests.helpers import hf_pair

    step = Decoder(hf_pair(), [4, 8, 15], SpecConfig(tau=12, seed=2, max_new_tokens=20)).step()
    fig = step_chart(step)
    symbols = {"accepted": "<b>✓</b>", "rejected": "<b>✗</b>", "not reached": "<b>–</b>"}
    assert [a.text for a in fig.layout.annotations] == [symbols[d] for d in step.decision]
    assert [a.hovertext for a in fig.layout.annotations] == [decision_reason(step, t) for t in range(12)]


def test_where_the_next_token_came_from_worked_by_hand():
    """The sandbox's 'next token' case: 'ran' is rejected at position 2, where p = (sat .5, ran .1,
    slept .3, jumped .1) and q = (.1, .7, .1, .1). Textbook takes argmax p = 'sat'; lossless samples
    norm(max(0, p − q)) = (.4, 0, .2, 0) / .6 = (sat 2/3, slept 1/3)."""
    from specviz.classroom.sandbox import PRESETS, SandboxCase, sandbox_step
    from specviz.viz.charts import TARGET_COLOR, next_token_chart
    from specviz.viz.render import next_token_source

    case = PRESETS["The next token after the accepted run"]
    textbook = sandbox_step(case, "textbook")
    fig = next_token_chart(textbook)
    bars = dict(zip(fig.data[0].y, fig.data[0].x, strict=True))
    assert bars == pytest.approx({"sat #0": 0.5, "slept #2": 0.3, "ran #1": 0.1, "jumped #3": 0.1})
    chosen = [y for y, c in zip(fig.data[0].y, fig.data[0].marker.color, strict=True) if c == TARGET_COLOR]
    assert chosen == ["sat #0"]
    assert fig.layout.title.text == "p at position 2, the first rejected<br>chosen: 'sat' (argmax)"
    assert next_token_source(textbook) == (
        "Rejected at position 2: the target's most likely token there, argmax p (argmax)",
        None,
    )
    lossless = sandbox_step(case, "lossless")  # default draws: the draft samples q's most likely tokens
    fig = next_token_chart(lossless)
    assert dict(zip(fig.data[0].y, fig.data[0].x, strict=True)) == pytest.approx({"sat #0": 2 / 3, "slept #2": 1 / 3})
    assert "norm(max(0, p − q)) at position 2" in fig.layout.title.text
    # q (.9) above p (.6) for 'a', which is still p's mode; r = .8 > p/q = .667: rejected, and
    # textbook's correction, argmax p, is 'a' again
    same = sandbox_step(SandboxCase(("a", "b"), ((0.9, 0.1),), ((0.6, 0.4), (0.5, 0.5)), (0.8,)), "textbook")
    assert same.decision == ("rejected",) and same.next_text == "a"
    _, note = next_token_source(same)
    assert note is not None and "the rejected draft token itself" in note and "q = 0.90 > p = 0.60" in note
    assert "p/q = 0.67" in note and "r = 0.80" in note
    bonus = sandbox_step(PRESETS["One token: q = 0.8, p = 0.6, r = 0.7"], "textbook")
    assert next_token_source(bonus)[0].startswith("All 1 draft tokens accepted: a free token from p at position 2")
    assert "the bonus token" in next_token_chart(bonus).layout.title.text


def test_small_probabilities_stay_readable_as_percentages():
    from specviz.viz.charts import prob_text

    assert [prob_text(x) for x in (0.8, 0.473, 0.0473, 0.000473, 3e-6, 2e-9, 0.0)] == [
        "80%",
        "47.3%",
        "4.73%",
        "0.0473%",
        "0.0003%",
        "<0.0001%",
        "0%",
    ]


def test_step_chart_labels_bars_with_percentages(runs):
    step = next(s for s in runs["lossless"].steps if s.tau)
    fig = step_chart(step)
    q_bar, p_bar = fig.data[0], fig.data[1]
    assert list(q_bar.text) == [f"{v * 100:.3g}%" if v >= 0.01 else "" for v in step.q]  # a sliver: no label
    assert list(p_bar.y) == list(step.p) and all(t.endswith("%") for t in p_bar.text if t)


def test_long_tokens_are_cut_on_axes_and_whole_on_hover():
    from specviz.viz.render import token_label

    assert token_label(" extraordinarily", 12) == "·extraordin…"  # 11 characters and the mark
    assert token_label(" extraordinarily") == "·extraordinarily"
    assert token_label("\n", 12) == "↵" and token_label(" cat", 12) == "·cat"


def test_step_chart_cuts_a_long_draft_token_and_keeps_it_whole_on_hover():
    from specviz.classroom.sandbox import SandboxCase, sandbox_step

    case = SandboxCase(("Supercalifragilistic", "b"), q=((0.9, 0.1),), p=((0.5, 0.5), (0.5, 0.5)), r=(0.3,))
    fig = step_chart(sandbox_step(case))
    assert list(fig.data[0].x) == ["1. Supercalifr…"] and list(fig.data[0].customdata) == ["1. Supercalifragilistic"]


def test_the_figure_memo_builds_once_per_step_and_tells_new_steps_apart(runs):
    from specviz.viz.memo import FigureMemo

    built = []

    def build(step, size=16):
        built.append(step.index)
        return step_chart(step, font_size=size)

    memo, steps = FigureMemo(limit=3), runs["textbook"].steps
    first = memo(build, steps[0])
    assert memo(build, steps[0]) is first and built == [0]  # a rerun: the same figure, not built again
    assert memo(build, steps[0], size=20) is not first and built == [0, 0]  # another setting: built anew
    memo(build, steps[1])
    assert built == [0, 0, 1] and len(memo) == 3
    memo(build, steps[2])  # over the limit: started over
    assert len(memo) == 1


def test_the_rules_chart_and_sentences_show_one_step_under_each_rule():
    """The hand-worked step of tests/test_rules.py: draft ('a', 'b') on p = (1/3, 2/3), q = (2/3, 1/3), r = (0.9,
    0.5). Thresholds: token-wise (1/2, 1), one-hot (1/3, 2/3), block (0, 1); token-wise and one-hot keep nothing
    (0.9 fails at once), block keeps both (its last pass is position 2, position 1 failed its own draw)."""
    import torch

    from specviz import each_rule
    from specviz.classroom.sandbox import SandboxCase, sandbox_step
    from specviz.viz.charts import rules_chart
    from specviz.viz.render import rule_sentence

    q, p = ((2 / 3, 1 / 3),) * 2, ((1 / 3, 2 / 3),) * 3
    step = sandbox_step(SandboxCase(("a", "b"), q, p, (0.9, 0.5), u=(0.3, 0.8)), "lossless")
    assert step.draft_tokens == (0, 1)
    outcomes = each_rule([0, 1], torch.tensor(q, dtype=torch.float64), torch.tensor(p, dtype=torch.float64), step.r)
    fig = rules_chart(step, outcomes).to_plotly_json()
    bars = {t["name"]: t for t in fig["data"] if t["type"] == "bar"}
    assert list(bars) == ["token-wise: keeps 0", "one-hot q: keeps 0", "block: keeps 2"]
    assert list(bars["token-wise: keeps 0"]["y"]) == pytest.approx([0.5, 1.0])
    assert list(bars["one-hot q: keeps 0"]["y"]) == pytest.approx([1 / 3, 2 / 3])
    assert list(bars["block: keeps 2"]["y"]) == pytest.approx([0.0, 1.0])
    assert list(bars["block: keeps 2"]["text"]) == ["✗ 0.00", "✓ 1.00"]  # passes shown, not kept
    assert list(bars["block: keeps 2"]["marker"]["opacity"]) == [1.0, 1.0]  # both kept: solid
    assert list(bars["token-wise: keeps 0"]["marker"]["opacity"]) == [0.3, 0.3]
    (draws,) = [t for t in fig["data"] if t["type"] == "scatter"]
    assert list(draws["y"]) == [0.9, 0.5] and list(draws["x"]) == ["1. a", "2. b"]
    words = [rule_sentence(step, o, ["a", "b"].__getitem__) for o in outcomes]
    assert "keeps none of 2: position 1 fails: r = 0.900 > 0.500" in words[0]
    assert "Next token from norm(max(0, p − q)): 'b' 1" in words[0]
    assert "r = 0.900 > 0.333" in words[1] and "p without the rejected token: 'b' 1" in words[1]
    assert "keeps 2 of 2 ('a', 'b'): the last pass is at position 2; position 1 failed its own draw" in words[2]
    assert "p at position τ + 1 (the bonus token): 'b' 0.667, 'a' 0.333" in words[2]


def test_a_legend_takes_the_rows_its_entries_need():
    """At 20 px an entry of 10 characters takes 0.6·20·10 + 40 = 160 px; a 600 px chart has 520 px for entries:
    three to a row, so seven entries take three rows; hidden or unnamed traces take none."""
    entries = [{"name": "abcdefghij"}] * 7 + [{"name": "hidden", "showlegend": False}, {"type": "scatter"}]
    assert legend_rows(entries, 20, 600) == 3
    assert legend_rows(entries[:3], 20, 600) == 1 and legend_rows(entries[:4], 20, 600) == 2
    assert legend_rows([{"name": "x" * 200}], 20, 600) == 1  # one long entry still takes one row


def _json(value):
    """A figure's JSON as plotly.js reads it: unset (None) values and empty containers dropped."""
    import json

    import plotly.io as pio

    def clean(o):
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items() if v is not None and clean(v) not in ({}, [])}
        return [clean(v) for v in o] if isinstance(o, list) else o

    return clean(json.loads(pio.to_json(value, validate=False)))


def test_a_chart_is_sent_as_its_plain_dicts_and_they_read_as_plotlys_validated_figure(runs):
    """What Streamlit sends of a chart (`to_dict`) is the dicts it was built from, unvalidated (specviz.viz.memo.
    PlainFigure): every chart of a Decode step, in every mode, must read exactly as the figure plotly validates
    from them (the same traces, layout and default template), so that skipping plotly's validation changes
    nothing on the page. A figure whose parts are read becomes plotly's own, and updates to it are sent."""
    import plotly.graph_objects as go
    import torch

    from specviz import each_rule
    from specviz.classroom.sandbox import SandboxCase, sandbox_step
    from specviz.viz.charts import next_token_chart, rules_chart
    from specviz.viz.memo import PlainFigure

    checked = 0
    for run in runs.values():
        step, m = run.steps[1], run.metrics
        figures = [
            step_chart(step),
            step_chart(step, hide_decisions=True),
            top_chart(step, 0),
            top_chart(step, 1, True),
            next_token_chart(step),
            history_chart(run.steps, 1),
            per_position_chart(m.per_position_acceptance_rate, m.conditional_per_position_acceptance_rate, False),
            theory_chart([0.5, 0.7, 0.9], max_tau=8),
        ]
        for fig in figures:
            assert type(fig) is PlainFigure and "_specviz_source" in fig.__dict__  # nothing validated yet
            sent = _json(fig.to_dict())
            plain = fig.to_dict()
            validated = _json(go.Figure(data=plain["data"], layout=plain["layout"]).to_dict())
            assert sent == validated
            assert sent["layout"]["template"] == validated["layout"]["template"] != {}
            checked += 1
    assert checked == 24
    q, p = ((2 / 3, 1 / 3),) * 2, ((1 / 3, 2 / 3),) * 3  # the rules chart: the hand-worked step above
    step = sandbox_step(SandboxCase(("a", "b"), q, p, (0.9, 0.5), u=(0.3, 0.8)), "lossless")
    outcomes = each_rule([0, 1], torch.tensor(q, dtype=torch.float64), torch.tensor(p, dtype=torch.float64), step.r)
    plain = rules_chart(step, outcomes).to_dict()
    assert _json(plain) == _json(go.Figure(data=plain["data"], layout=plain["layout"]).to_dict())
    fig = step_chart(runs["textbook"].steps[1])
    assert fig.layout.xaxis.type == "category"  # read: now plotly's figure
    fig.update_layout(height=123)
    assert fig.to_dict()["layout"]["height"] == 123  # an update after reading is what is sent


def test_q_and_p_are_labelled_with_each_gguf_files_quantization():
    from specviz.viz.charts import roles

    assert roles() == ("q (draft)", "p (target)")
    assert roles("SmolLM2-135M-Instruct (Q4_0)", "SmolLM2-135M-Instruct (F32)") == (
        "q (draft, Q4_0)",
        "p (target, F32)",
    )
    assert roles("Qwen2.5 0.5B Instruct (Q4_K_M)", "SmolLM2-135M-Instruct") == ("q (draft, Q4_K_M)", "p (target)")
    assert roles("distilled draft (embedded)", "gpt2") == ("q (draft)", "p (target)")  # not a quantization


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
