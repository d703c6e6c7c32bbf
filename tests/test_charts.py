"""Charts and the marked text, checked on the figure data and the HTML they produce."""

import functools
import re

import pytest

from specviz.analysis.theory import expected_tokens_per_step
from specviz.viz.charts import DECISION_COLORS, legend_rows, top_chart
from specviz.viz.render import chart_label, run_html, token_label
from specviz.viz.run_charts import history_chart, per_position_chart, theory_chart
from specviz.viz.step_chart import step_chart
from tests.helpers import runs_by_mode


@pytest.fixture(scope="module")
def runs():
    return runs_by_mode([4, 8, 15, 16, 23, 42], tau=4, seed=1, max_new_tokens=30)


# Each character's width in em in the charts' font ("Source Sans", sans-serif) as headless Chromium draws it, regular
# and bold: measured once from an SVG text in the running app (ten of each; a space is Source Sans' 0.2). The tests
# below measure the step chart's texts with it, not with the chart's own estimate.
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


# --- issue 65.1: the figures printed under a token decide as the exact ones do ----------------------------------------


@functools.cache
def _template(tau: int):
    from specviz.classroom.sandbox import SandboxCase, sandbox_step

    return sandbox_step(SandboxCase(("a", "b"), q=((0.5, 0.5),) * tau, p=((0.5, 0.5),) * (tau + 1), r=(0.1,) * tau))


def _one_token(q: float, p: float, r: float | None, tau: int = 1):
    """A step of `tau` draft tokens, each with this q, p and r, decided token-wise (r ≤ p/q) from the exact numbers;
    the rest of the step (text, tops) from a sandbox table."""
    import dataclasses

    step = _template(tau)
    kept = r is None or r <= p / q  # (r None: greedy's argmax decides; its figures only say whether q ≤ p)
    n = tau if kept else 0
    decision = ("accepted",) * tau if kept else ("rejected", *("not reached",) * (tau - 1))
    return dataclasses.replace(
        step,
        q=(q,) * tau,
        p=(p,) * tau,
        ratio=(p / q,) * tau,
        r=(r,) * tau,
        decision=decision,
        accepted=tuple(d == "accepted" for d in decision),
        n_accepted=n,
        emitted=step.emitted[:1] * (n + 1),
    )


def _samples(seed: int, count: int):
    """(q, p, r) at random, most of them near a tie (r within a rounding of p/q, q within one of p, tiny values):
    where two-decimal figures can tell the room the wrong decision."""
    import random

    rng = random.Random(seed)
    for _ in range(count):
        q = rng.choice([rng.uniform(0.005, 1), rng.uniform(1e-5, 0.005), round(rng.uniform(0.01, 1), 2)])
        p = rng.choice([rng.uniform(0, 1), q * rng.uniform(0.9, 1.1), q + rng.uniform(-0.006, 0.006)])
        p = min(max(p, 1e-6), 1.0)
        ratio = p / q
        r = rng.choice([rng.random(), min(ratio * rng.uniform(0.97, 1.03), 0.999999), rng.uniform(0.9, 0.9999)])
        yield q, p, r


def test_the_figures_under_a_token_decide_as_the_exact_values_do():
    """Issue 65.1. At τ = 8 '```' showed "q .50 p .48 r .97 ✓": from those figures .48 / .50 = .96 < .97, so the room
    said rejected a token kept with p/q = .485 / .498 = .974 ≥ r. Now the figures carry as many digits as it takes
    (q .498 p .485 r .970: .974 ≥ .970, kept), or p/q itself beside r; and for 3,000 random q, p, r (most near a
    tie) the figures as printed, read the way a room reads them, give the exact decision."""
    from specviz.viz.render import figure_texts

    book = _one_token(0.498, 0.485, 0.9703, tau=8)
    assert book.decision[0] == "accepted"
    assert figure_texts(book, 0) == (".498", ".485", ".970", None)
    html = run_html("x", [book], figures=True)
    assert '<span class="sv-num">q .498<br>p .485<br>r .970</span>' in html
    assert figure_texts(_one_token(0.42, 0.3, 0.1), 0) == (".42", ".30", ".10", None)  # two decimals where they do
    for q, p, r in _samples(65, 3000):
        step = _one_token(q, p, r)
        qs, ps, rs, ratio = figure_texts(step, 0)
        kept = step.decision[0] == "accepted"
        if ratio is not None:  # p/q written beside r: the room compares those two
            assert (float(rs) <= float(ratio)) == kept, (q, p, r, rs, ratio)
        else:
            read = float(qs) <= float(ps) or float(rs) <= float(ps) / float(qs)
            assert read == kept, (q, p, r, qs, ps, rs)
        if q < 0.01:  # and under the token as written (a few of them: the page draws what figure_texts gives)
            assert f'<span class="sv-num">q {qs}<br>p {ps}<br>r {rs}' in run_html("x", [step], figures=True)


def _slide_key(step) -> str:
    from specviz.viz import slide

    annotations = slide.slide_figure("x", step).to_dict()["layout"]["annotations"]
    return next(a["text"] for a in annotations if "target" in a["text"])


def test_the_step_charts_printed_figures_decide_as_the_exact_values_do():
    """Issue 65.1, the step chart (Decode's, the presentation view's and the 16:9 slide's): a bar label never writes q
    above p as q ≤ p (the room would read "kept outright" a token that was tested): q .4801 against p .4799 is
    "48.01%" and "47.99%", not "48%" twice. Where the chart writes r and p/q (up to τ = 6), they decide as the exact
    values do; past τ 6 each column's ✓ ✗ – is explained on the slide's key as on the page's."""
    from specviz.viz.charts import percent_of

    step = _one_token(0.4801, 0.4799, 0.9999, tau=7)
    labels = [t["text"] for t in step_chart(step, width=1280).to_dict()["data"][:2]]
    assert labels[0][0] == "48.01%" and labels[1][0] == "47.99%"
    for q, p, r in _samples(66, 200):
        step = _one_token(q, p, r)
        data = step_chart(step).to_dict()
        qs, ps = data["data"][0]["text"][0], data["data"][1]["text"][0]
        assert q <= p or percent_of(qs) > percent_of(ps), (q, p, qs, ps)
        said = re.search(r"r = ([\d.]+) ([≤>]) p/q = ([\d.]+)", data["layout"]["annotations"][0]["text"])
        if said:  # "q ≤ p → accepted outright" otherwise
            assert (float(said.group(1)) <= float(said.group(3))) == (step.decision[0] == "accepted")
            assert (said.group(2) == "≤") == (step.decision[0] == "accepted")
    key = _slide_key(step)
    assert "✓" not in key  # up to τ = 6 each column says its decision in words
    long = _one_token(0.4, 0.3, 0.9, tau=8)
    key = _slide_key(long)
    assert "<b>✓ accepted</b>" in key and "<s>✗ rejected (the first)</s>" in key and "– not reached (after it)" in key
    assert "✓ accepted" in run_html("x", [long], legend=True)  # the page's key, above the marked text
