"""The sandbox and the lossless check: textbook exercises decided by the engine's rule, and the
chi-square verdicts on table models."""

import dataclasses
import itertools
import re
from fractions import Fraction

import pytest

from specviz import ConfigError, Decoder, SpecConfig
from specviz.analysis.lossless import check, first_tokens, reference
from specviz.analysis.theory import expected_accepted
from specviz.classroom.sandbox import (
    CUSTOM,
    PRESETS,
    SandboxCase,
    case_frame,
    case_from_frame,
    column_sums,
    draw_r,
    explain,
    middle_of_mode,
    normalised,
    residual_distribution,
    resize,
    sandbox_step,
)
from tests.helpers import hf_pair, table_pair

ONE, FIVE, NEXT, BOOK = PRESETS


def test_notes_are_computed_from_the_table_on_screen():
    # five tokens, worked by hand: 1 q .5 ≤ p .6 outright; 2 r .3 ≤ .45/.6 = .75 (q > p); 3 r .6 > .2/.7 rejected;
    # 4 r .1 ≤ .5/.5 and 5 r .2 ≤ .6/.4 would pass; the target's token: argmax of p3 = (.1 .35 .2 .25 .1), 'cat'
    assert explain(sandbox_step(PRESETS[FIVE], "textbook")) == [
        "q > p at position 2 (q = 0.60, p = 0.45), yet r = 0.30 ≤ p/q = 0.75: accepted. q > p is not an automatic "
        "rejection.",
        "Positions 4 and 5 would pass their own test (r ≤ p/q) but come after the rejection at position 3: "
        "not reached, discarded.",
        "'sat' is rejected at position 3, so the target chooses the next token from its distribution there: textbook "
        "takes p's most likely token: 'cat'.",
    ]
    # the same exercise cut to τ = 2 (the case) or 1: nothing after a rejection, so no such note
    two = explain(sandbox_step(resize(PRESETS[FIVE], 2), "textbook"))
    assert not any("would pass" in note for note in two) and two[-1].startswith("All 2 draft tokens accepted")
    assert explain(sandbox_step(resize(PRESETS[FIVE], 1), "textbook")) == [
        "The draft token accepted: the target adds a bonus token from p at position 2: 'the'."
    ]
    # an edit that makes position 4 fail its own test (r .9 > p/q 1 is impossible: lower p4 of 'on' to .05)
    case = PRESETS[FIVE]
    p4 = (0.1, 0.1, 0.1, 0.05, 0.65)  # 'on': q .5, p .05 → p/q .1 < r4 .5 fails; 'mat': .65/.4 ≥ 1 passes
    edited = case.__class__(case.words, case.q, (*case.p[:3], p4, *case.p[4:]), (0.9, 0.3, 0.6, 0.5, 0.2))
    assert "Position 5 would pass its own test (r ≤ p/q) but comes after" in explain(sandbox_step(edited))[1]
    one = explain(sandbox_step(PRESETS[ONE], "textbook"))  # q .8 > p .6, r .7 ≤ .75
    assert one[0].startswith("q > p at position 1 (q = 0.80, p = 0.60), yet r = 0.70 ≤ p/q = 0.75: accepted.")


def test_one_token_q_above_p_is_accepted_when_r_is_below_p_over_q():
    step = sandbox_step(PRESETS[ONE], "textbook")
    assert step.draft_text == ("cat",) and step.q == pytest.approx((0.8,)) and step.p == pytest.approx((0.6,))
    assert step.ratio == pytest.approx((0.75,)) and step.r == (0.7,)
    assert step.decision == ("accepted",) and step.n_accepted == 1 and step.next_rule == "bonus"
    higher = PRESETS[ONE].__class__(**{**PRESETS[ONE].__dict__, "r": (0.76,)})
    assert sandbox_step(higher, "textbook").decision == ("rejected",)


def test_five_token_draft_third_rejected_and_later_ones_discarded():
    step = sandbox_step(PRESETS[FIVE], "textbook")
    assert step.draft_text == ("the", "cat", "sat", "on", "mat")
    assert step.decision == ("accepted", "accepted", "rejected", "not reached", "not reached")
    assert step.n_accepted == 2
    assert all(step.r[t] <= step.ratio[t] for t in (3, 4))  # they would pass on their own
    assert step.next_text == "cat" and step.next_rule == "argmax"  # the mode of p at position 3
    assert step.emitted == (0, 1, 1)


def test_next_token_after_the_accepted_run_in_each_mode():
    case = PRESETS[NEXT]
    textbook = sandbox_step(case, "textbook")
    assert textbook.n_accepted == 1 and textbook.next_text == "sat" and textbook.next_rule == "argmax"
    lossless = sandbox_step(case, "lossless")  # the default draws u sample q's most likely tokens: 'sat', 'ran'
    assert lossless.draft_text == ("sat", "ran") and lossless.next_rule == "residual"
    assert [(e.text, e.prob) for e in lossless.residual_top] == [
        ("sat", pytest.approx(2 / 3)),
        ("slept", pytest.approx(1 / 3)),
    ]
    assert residual_distribution(case, 1) == pytest.approx([2 / 3, 0.0, 1 / 3, 0.0])
    # the next token's draw s picks from the residual (2/3, 0, 1/3, 0): 'sat' below 2/3, 'slept' above
    picks = {s: sandbox_step(dataclasses.replace(case, s=s), "lossless").next_text for s in (0.0, 0.66, 0.67, 0.999)}
    assert picks == {0.0: "sat", 0.66: "sat", 0.67: "slept", 0.999: "slept"}  # never 'ran' or 'jumped'
    greedy = sandbox_step(case, "greedy")
    assert greedy.n_accepted == 1 and greedy.next_rule == "greedy" and greedy.r == (None, None)


def test_table_round_trip_keeps_what_is_typed_uses_it_normalised_and_checks():
    case = PRESETS[FIVE]
    frame = case_frame(case)
    assert list(frame.columns) == ["token", "q1", "p1", "q2", "p2", "q3", "p3", "q4", "p4", "q5", "p5", "p6"]
    assert case_from_frame(frame, case.r) == case
    frame.loc[0, "q1"] = "1.5"  # column sums to 2: kept as typed, used divided by 2
    typed = case_from_frame(frame, case.r)
    assert typed.q[0] == (1.5, 0.2, 0.1, 0.1, 0.1) and case_frame(typed).equals(frame)  # the grid shows it again
    assert normalised(typed).q[0] == pytest.approx((0.75, 0.1, 0.05, 0.05, 0.05))
    step = sandbox_step(typed)  # 'the': q 1.5 / 2 = .75 > p .6, p/q = .8 ≤ r .9? no: .9 > .8, rejected
    assert step.q[0] == pytest.approx(0.75) and step.ratio[0] == pytest.approx(0.8) and step.n_accepted == 0
    assert normalised(case) == case  # columns that sum to 1 are used as they are
    frame.loc[1, "p2"] = -0.1
    with pytest.raises(ConfigError, match="p2"):
        case_from_frame(frame, case.r)
    with pytest.raises(ConfigError, match="distinct"):
        case_from_frame(case_frame(case).assign(token=["a", "a", "b", "c", "d"]), case.r)
    with pytest.raises(ConfigError, match=r"\[0, 1\)"):
        case_from_frame(case_frame(case), (0.5, 0.5, 1.0, 0.1, 0.1))
    bigger = resize(PRESETS[ONE], 3)
    assert bigger.tau == 3 and len(bigger.p) == 4 and bigger.r == (0.7, 0.5, 0.5)
    assert draw_r(4, seed=3) == draw_r(4, seed=3) != draw_r(4, seed=4)


@pytest.mark.slow  # 4,000 repetitions per mode: in `make test`, not in `make test-fast`
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_lossless_check_verdicts_on_tables():
    pair = table_pair([0.5, 0.3, 0.2], [0.2, 0.2, 0.6])
    verdicts = {}
    for mode in ("lossless", "textbook", "greedy"):
        config = SpecConfig(tau=2, mode=mode)
        result = check(mode, list(first_tokens(pair, "0", config, 4000)), reference(pair, "0", config))
        verdicts[mode] = result.consistent
        assert result.trials == 4000 and sum(result.observed) == 4000
    assert verdicts == {"lossless": True, "textbook": False, "greedy": True}


def test_first_tokens_equal_fresh_first_steps_with_those_seeds():
    pair = hf_pair()
    config = SpecConfig(tau=3, mode="lossless", seed=10)
    samples = list(first_tokens(pair, [5, 6, 7], config, 5))
    fresh = [
        Decoder(pair, [5, 6, 7], SpecConfig(tau=3, mode="lossless", seed=10 + i)).step().emitted[0] for i in range(5)
    ]
    assert samples == fresh
    probs = reference(pair, [5, 6, 7], config)
    assert float(probs.sum()) == pytest.approx(1.0)


def test_columns_that_do_not_sum_to_one_are_named_not_rescaled_silently():
    import pandas as pd

    from specviz.classroom.sandbox import column_sums

    frame = pd.DataFrame({"token": ["a", "b"], "q1": [0.6, 0.3], "p1": [0.5, 0.5], "p2": [2.0, 2.0]})
    assert column_sums(frame) == {"q1": pytest.approx(0.9), "p2": pytest.approx(4.0)}


def test_lossless_samples_the_draft_from_q_by_its_visible_draw():
    one = PRESETS[ONE]  # q = (0.8, 0.2) over ('cat', 'dog'): 'cat' for u in [0, 0.8), 'dog' in [0.8, 1)
    assert one.draft_draws == (0.4,)  # by default the middle of q's most likely token's interval
    for u, word in ((0.0, "cat"), (0.799, "cat"), (0.8, "dog"), (0.95, "dog")):
        assert sandbox_step(dataclasses.replace(one, u=(u,)), "lossless").draft_text == (word,)
        assert sandbox_step(dataclasses.replace(one, u=(u,)), "textbook").draft_text == ("cat",)  # argmax q
    dog = sandbox_step(dataclasses.replace(one, u=(0.9,), r=(0.7,)), "lossless")
    assert dog.q == pytest.approx((0.2,)) and dog.p == pytest.approx((0.4,)) and dog.decision == ("accepted",)
    notes = explain(dog, dataclasses.replace(one, u=(0.9,)), "lossless")
    held = "the token whose interval of q holds u (u1 = 0.900 → 'dog' [0.80, 1.00))"
    assert notes[0] == f"The draft sampled each token from q: {held}."


# The first-token distribution of the sandbox's lossless step, integrated exactly over every draw: u_t over
# the intervals of q, r_t on either side of each position's threshold, s over the intervals of the distribution
# the next token is drawn from. Each region is evaluated once, at its middle; its weight is its length.
TABLE = SandboxCase(
    words=("a", "b", "c"),
    q=((0.6, 0.3, 0.1), (0.2, 0.5, 0.3), (0.1, 0.1, 0.8)),
    p=((0.2, 0.5, 0.3), (0.5, 0.25, 0.25), (0.3, 0.3, 0.4), (0.1, 0.6, 0.3)),
    r=(0.5, 0.5, 0.5),
)


def _middles(dist):
    edges = list(itertools.accumulate(dist, initial=0.0))
    return [((lo + hi) / 2, hi - lo) for lo, hi in itertools.pairwise(edges) if hi > lo]


def first_token_law(case: SandboxCase, rule: str, step=sandbox_step) -> tuple[list[float], float]:
    """(P(first emitted token = v) for each v, E[n]), exactly, for the lossless step of `step`."""
    law, mean = [0.0] * len(case.words), 0.0
    for drafts in itertools.product(*(_middles(q) for q in case.q)):
        u, weights = [m for m, _ in drafts], [w for _, w in drafts]
        probe = step(dataclasses.replace(case, u=tuple(u)), "lossless", rule)
        thresholds = probe.verify.threshold if probe.verify else [min(1.0, x) for x in probe.ratio]
        for sides in itertools.product((0, 1), repeat=case.tau):
            r = [t / 2 if side == 0 else (1 + t) / 2 for t, side in zip(thresholds, sides, strict=True)]
            area = 1.0
            for t, side, w in zip(thresholds, sides, weights, strict=True):
                area *= w * (t if side == 0 else 1 - t)
            if area == 0:
                continue
            run = step(dataclasses.replace(case, u=tuple(u), r=tuple(r)), "lossless", rule)
            mean += area * run.n_accepted
            if run.n_accepted:
                law[run.draft_tokens[0]] += area
                continue
            dist = [0.0] * len(case.words)
            for e in run.residual_top if run.next_rule == "residual" else run.next_top:
                dist[e.token] = e.prob
            for s, width in _middles(dist):
                law[step(dataclasses.replace(case, u=tuple(u), r=tuple(r), s=s), "lossless", rule).next_token] += (
                    area * width
                )
    return law, mean


@pytest.mark.parametrize("rule", ["token", "one-hot", "block"])
def test_the_sandboxs_lossless_step_emits_p_exactly_and_its_expected_length_is_exact(rule):
    law, mean = first_token_law(TABLE, rule)
    assert law == pytest.approx(list(TABLE.p[0]), abs=1e-12)  # p at position 1: (0.2, 0.5, 0.3)
    assert mean == pytest.approx(expected_accepted(TABLE.q, TABLE.p, rule), abs=1e-12)


def test_an_argmax_draft_with_the_residual_is_not_lossless():
    """The sandbox's old lossless step (q's most likely token drafted, then the residual) fails the same check."""

    def argmax_drafted(case, mode, rule):  # whatever u is integrated over, the draft is q's most likely token
        return sandbox_step(dataclasses.replace(case, u=tuple(middle_of_mode(q) for q in case.q)), mode, rule)

    law, _ = first_token_law(TABLE, "token", argmax_drafted)
    assert abs(law[1] - TABLE.p[0][1]) > 0.05


def test_expected_accepted_length_of_the_worked_example():
    """docs/algorithm.md: p = (1/3, 2/3), q = (2/3, 1/3) at every position, τ = 2, a sampled draft: E[n] is 10/9
    token-wise and 11/9 with block verification; one-hot accepts with Σ q p = 4/9 per position: 4/9 + 16/81."""
    q, p = [[2 / 3, 1 / 3]] * 2, [[1 / 3, 2 / 3]] * 3
    assert expected_accepted(q, p, "token") == pytest.approx(float(Fraction(10, 9)), abs=1e-15)
    assert expected_accepted(q, p, "block") == pytest.approx(float(Fraction(11, 9)), abs=1e-15)
    assert expected_accepted(q, p, "one-hot") == pytest.approx(float(Fraction(52, 81)), abs=1e-15)
    assert expected_accepted(q[:1], p[:2], "block") == pytest.approx(2 / 3)  # τ = 1: block is token-wise


# --- the Sandbox on a projector (issue 47.2): the context line, a custom table named as such, presentation view ------


@pytest.fixture
def sandbox_page(monkeypatch):
    """The app on the Sandbox page, models patched to a tiny pair (the sandbox itself uses none)."""
    from pathlib import Path

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import specviz
    from tests.helpers import tiny_text_pair

    monkeypatch.setattr(specviz, "load_pair", lambda t, d, **k: tiny_text_pair(chat=True))
    st.cache_resource.clear()

    def open_page(**query: str) -> AppTest:
        at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
        at.query_params.update(query)
        at.run()
        at.switch_page("pages/sandbox.py").run()
        assert not at.exception
        return at

    yield open_page
    st.cache_resource.clear()


def marked(at) -> str:
    """The marked text's body (after its style sheet)."""
    return next(h.proto.body for h in at.get("html") if "sv-text" in h.proto.body).split("</style>")[-1]


def test_the_textbooks_example_reads_as_the_book_writes_it_with_the_context_before_the_draft(sandbox_page):
    # by hand: 'mat' q .6 > p .5, r .4 ≤ 5/6: kept; 'and' q .7 ≤ p .8: kept outright; 'then' q .6, p .2: r .7 > 1/3,
    # rejected; the target's argmax at position 3 is 'purred' (.55); 'slept' (r .3 ≤ .6/.7) is not reached
    at = sandbox_page()
    at.selectbox(key="sandbox_preset").set_value(BOOK).run()
    assert BOOK == "The cat sat on the | mat and then slept"
    assert at.text_input(key="sandbox_context").value == "The cat sat on the"
    assert at.success[0].value.startswith("Exercise 'The cat sat on the \\| mat and then slept': **n = 2** of 4")
    assert "**'purred'** by rule **argmax**" in at.success[0].value
    body = marked(at)
    assert body.index('<span class="sv-prompt">The cat sat on the |</span>') < body.index(">mat</span>")
    shown = re.findall(r'class="sv-(acc|rej|nr|tgt)"[^>]*>([^<]*)<', body.split('class="sv-text')[1])
    assert shown == [("acc", "mat"), ("acc", "and"), ("rej", "then"), ("nr", "slept"), ("tgt", "purred")]
    step = sandbox_step(PRESETS[BOOK])
    assert step.ratio == pytest.approx((0.5 / 0.6, 0.8 / 0.7, 0.2 / 0.6, 0.6 / 0.7))
    assert step.decision == ("accepted", "accepted", "rejected", "not reached")
    at.text_input(key="sandbox_context").set_value("").run()  # no context: the draft alone, no bar
    assert 'sv-prompt"></span>' in marked(at) and "|" not in marked(at).split(">mat<")[0]


def test_a_custom_table_from_a_link_is_named_as_such_and_an_exercises_own_table_by_its_name(sandbox_page):
    edited = '{"words":["cat","dog"],"q":[[0.9,0.1]],"p":[[0.6,0.4],[0.5,0.5]]}'  # q .8 → .9: no longer the exercise
    at = sandbox_page(sandbox_preset=next(iter(PRESETS)), sandbox_tau="1", sandbox_r0="0.7", sandbox_table=edited)
    assert at.selectbox(key="sandbox_preset").value == CUSTOM
    assert at.success[0].value.startswith("Custom table: **n = 0** of 1")  # .6/.9 = .667 < r .7
    assert not any("Exercise" in s.value for s in at.success)
    own = '{"words":["cat","dog"],"q":[[0.8,0.2]],"p":[[0.6,0.4],[0.5,0.5]]}'  # the exercise's own table
    at = sandbox_page(sandbox_preset=next(iter(PRESETS)), sandbox_tau="1", sandbox_r0="0.7", sandbox_table=own)
    assert at.selectbox(key="sandbox_preset").value == next(iter(PRESETS))
    assert at.success[0].value.startswith("Exercise 'One token: q = 0.8, p = 0.6, r = 0.7': **n = 1** of 1")
    at.selectbox(key="sandbox_preset").set_value(CUSTOM).run()  # chosen from the menu: the table on screen, kept
    assert at.success[0].value.startswith("Custom table: **n = 1** of 1")


def test_presentation_view_puts_the_verdict_and_both_charts_first_without_the_sidebar(sandbox_page):
    at = sandbox_page()
    at.selectbox(key="sandbox_preset").set_value(BOOK).run()
    at.toggle(key="sandbox_present").set_value(True).run()
    assert not at.exception and not at.title  # no title: the room sees the verdict first
    assert any("stSidebar" in h.proto.body and "display: none" in h.proto.body for h in at.get("html"))
    import json

    charts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    assert charts[0]["title"]["text"].startswith("Step 1: 2 of 4 draft tokens accepted")  # q against p
    assert charts[1]["title"]["text"].startswith("p at position 3, the first rejected")  # beside it: the next token
    assert charts[0]["title"]["font"]["size"] >= 18 and charts[1]["title"]["font"]["size"] >= 18
    assert marked(at).count('class="sv-num"') == 4  # q, p and r under each draft token
    assert not at.code  # no share box on the projector


HOSTILE_WORD = "![m](http://127.0.0.1:9/md.png) http://127.0.0.1:9/auto"  # an image and a bare link, as markdown
HOSTILE_TABLES = {  # by hand, r = 0.7 / 0.5:
    # lossless: u = .45 (the middle of q's mode) samples the word (q .9); p/q = .1/.9 < r .7: rejected; the residual
    # max(0, p − q) = (0, .8) gives 'b'. Notes: the draw's pick and the rejection both name the word
    "lossless": ([HOSTILE_WORD, "b"], [[0.9, 0.1]], [[0.1, 0.9], [0.5, 0.5]], 0.7),
    # textbook: 'b' (q .9 = p .9) kept; the bonus token is p's argmax at position 2: the word
    "textbook": (["b", HOSTILE_WORD], [[0.9, 0.1]], [[0.9, 0.1], [0.1, 0.9]], 0.5),
}


def _hostile(mode: str) -> tuple[str, float]:
    import json

    words, q, p, r = HOSTILE_TABLES[mode]
    return json.dumps({"words": words, "q": q, "p": p}), r


@pytest.mark.parametrize("mode", HOSTILE_TABLES)
def test_a_tables_words_are_text_in_every_note_never_markdown(mode):
    """Issue 57.2: the words of a table (a link's) reach the notes as literal text: rendered, no image and no link,
    and the word's own characters on screen (GFM's autolink broken by an invisible joiner)."""
    from specviz.classroom.sandbox import case_from_json
    from specviz.viz.plain import JOINER
    from tests.test_plain import render

    text, r = _hostile(mode)
    case = case_from_json(text, (r,))
    step = sandbox_step(case, mode)
    assert (step.n_accepted, step.next_text) == ((0, "b") if mode == "lossless" else (1, HOSTILE_WORD))
    notes = explain(step, case, mode)
    assert len(notes) == (2 if mode == "lossless" else 1)
    for note in notes:
        tags, shown = render(note)
        assert tags == ["p"] and "http://" not in note, note
        assert HOSTILE_WORD in shown.replace(JOINER, "")


@pytest.mark.parametrize(
    "text, why",
    [
        ("[" * 3000, "it nests deeper than 3 levels"),  # a RecursionError before
        ('{"words": ["a", "b"], "q": [[' + "1" * 400 + ", 1]], " + '"p": [[1, 1], [1, 1]]}', "400 digits"),  # Overflow
        ('{"words": ["a", "b"], "q": [[NaN, 1]], "p": [[1, 1], [1, 1]]}', "it holds NaN, not a finite number"),
        ('{"words": [["a"], "b"], "q": [[1, 1]], "p": [[1, 1], [1, 1]]}', "its words are text"),
        ('{"words": ["a", "b"], "q": [[true, 1]], "p": [[1, 1], [1, 1]]}', "q and p rows of numbers"),
        ('{"words": ["a", "b"], "q": 5, "p": [[1, 1], [1, 1]]}', "cannot be read"),
    ],
)
def test_a_links_sandbox_table_that_cannot_be_read_is_one_config_error_and_the_exercise_stays(text, why):
    from specviz.classroom.sandbox import case_from_json, from_link

    with pytest.raises(ConfigError, match="the link's sandbox table cannot be read") as info:
        case_from_json(text, (0.5,))
    assert why in str(info.value)
    problems = []
    exercise, case, _shown = from_link({"sandbox_table": text, "sandbox_tau": 1}, problems)
    assert len(problems) == 1 and why in problems[0]
    assert exercise == ONE and case.words == PRESETS[ONE].words  # the exercise's own table


def test_a_links_hostile_words_show_as_text_on_the_page(sandbox_page):
    """The link of issue 57.2 on the Sandbox page: the verdict, every note and the step's table hold the word escaped
    (specviz.viz.plain), and rendered they make no image and no link."""
    from specviz.viz.plain import JOINER, plain
    from tests.test_plain import render

    for mode in HOSTILE_TABLES:
        text, r = _hostile(mode)
        at = sandbox_page(sandbox_table=text, sandbox_tau="1", sandbox_r0=str(r), sandbox_mode=mode)
        assert at.selectbox(key="sandbox_preset").value == CUSTOM
        shown = [*(e.value for e in at.success), *(e.value for e in at.info)]
        assert sum(plain(HOSTILE_WORD) in markdown for markdown in shown) == 2  # two notes; the verdict and a note
        for markdown in shown:
            assert not {"img", "a"} & set(render(markdown)[0]), markdown
        assert any(HOSTILE_WORD in render(m)[1].replace(JOINER, "") for m in shown)
        if mode == "lossless":  # the word is the draft token: the step's table (st.table reads markdown) escapes it
            assert plain(HOSTILE_WORD) in at.table[0].value.to_numpy().ravel().tolist()


def test_the_expected_accepted_tokens_on_a_table_in_one_sentence():
    """τ = 1, q = (.2, .2, .6), p = (.5, .3, .2): a drawn token is kept with Σ min(p, q) = .2 + .2 + .2 = 0.6 under
    the token-wise rule."""
    from specviz.classroom.sandbox import expected_lengths

    case = SandboxCase(("a", "b", "c"), ((0.2, 0.2, 0.6),), ((0.5, 0.3, 0.2), (1 / 3, 1 / 3, 1 / 3)), (0.5,))
    said = expected_lengths(case)
    assert said.startswith("**Expected accepted draft tokens on this table** (exact, over every draft and every")
    assert "token 0.600" in said


def test_ties_are_said_and_an_edited_draw_is_named():
    """Issue 55.3. By hand: q1 = (.4, .4, .2) ties 'a' and 'b', so textbook's draft proposes 'a' (the first); p1 =
    (.5, .3, .2): p/q = 1.25, accepted outright; the bonus from p2 = (.25, .25, .5) is 'c', no tie at the top. With
    p2 = (.45, .45, .1) the bonus ties 'a' and 'b': argmax takes 'a'. Lossless samples, so it names no tie."""
    from specviz.classroom.sandbox import table_name
    from specviz.viz.render import argmax_ties

    untied = SandboxCase(("a", "b", "c"), ((0.4, 0.4, 0.2),), ((0.5, 0.3, 0.2), (0.25, 0.25, 0.5)), (0.5,))
    assert argmax_ties(sandbox_step(untied), "textbook") == [
        "q ties at 0.40 at position 1 between 'a' and 'b': the draft proposes the first of them in the vocabulary's "
        "order, 'a'."
    ]
    tied = dataclasses.replace(untied, p=((0.5, 0.3, 0.2), (0.45, 0.45, 0.1)))
    step = sandbox_step(tied)
    assert step.emitted == (0, 0)  # "a a": both ties broken towards 'a'
    assert argmax_ties(step, "textbook")[1] == (
        "p ties at 0.45 at position 2 between 'a' and 'b': argmax takes the first of them in the vocabulary's order, "
        "'a'."
    )
    assert argmax_ties(sandbox_step(tied, "lossless"), "lossless") == []  # sampled, not argmax
    # the name of an exercise whose table or draws were edited says so: its name may no longer hold
    five = PRESETS[FIVE]
    assert table_name(FIVE, five) == f"Exercise '{FIVE}'"
    assert table_name(FIVE, dataclasses.replace(five, r=(0.9, 0.8, 0.6, 0.1, 0.2))) == f"Exercise '{FIVE}', r edited"
    assert table_name(FIVE, dataclasses.replace(five, r=(0.9, 0.8, 0.6, 0.1, 0.2)), "greedy") == f"Exercise '{FIVE}'"
    both = dataclasses.replace(five, q=((0.4, 0.3, 0.1, 0.1, 0.1), *five.q[1:]), u=five.draft_draws, s=0.9)
    assert table_name(FIVE, both, "lossless") == f"Exercise '{FIVE}', table and s edited"
    assert table_name(FIVE, dataclasses.replace(both, r=(0.1,) * 5), "lossless") == (
        f"Exercise '{FIVE}', table, r and s edited"
    )
    assert table_name(CUSTOM, five) == "Custom table"


# --- the block rule's exact mean, priced before it starts (issue 57.4, issue 52.5) ------------------------------------


def test_the_block_mean_is_the_sum_of_the_running_weights_means_by_hand():
    """q = (1/2, 1/2), p = (1/4, 3/4) at both positions, τ = 2; p/q is 1/2 for 'a', 3/2 for 'b'. w_1 is 1/2 or 1, each
    with chance 1/2: E[w_1] = 3/4. w_2 = min(1, w_1 p/q): from 1/2, 1/4 or 3/4; from 1, 1/2 or 1; E[w_2] = (1/4 + 3/4 +
    1/2 + 1) / 4 = 5/8. E[n] = 3/4 + 5/8 = 11/8, above token-wise 3/4 + 9/16 = 21/16."""
    q, p = [[0.5, 0.5]] * 2, [[0.25, 0.75]] * 3
    assert expected_accepted(q, p, "block") == pytest.approx(float(Fraction(11, 8)), abs=1e-15)
    assert expected_accepted(q, p, "token") == pytest.approx(float(Fraction(21, 16)), abs=1e-15)


def test_a_400_word_table_at_tau_8_is_exact_when_its_weights_are_few_and_refused_before_the_work_when_not():
    """q = p = uniform over 400 words: p/q = 1 everywhere, so w stays 1 and every position passes: E[n] = τ = 8 under
    every rule but one-hot (Σ q p = 1/400 a position: Σ_k 400^-k). Then p ∝ 1, 2, …, 40 over 40 words against a uniform
    q, with a limit of 500: position 1 is 1 weight × 40 tokens; w_1 = min(1, (x + 1)/20.5) takes 21 values (x < 20,
    and 1), so position 2 is 21 × 40 = 840 more: 880 passes 500, and it is refused there, before position 2 is
    computed, with the numbers. A 400-word link at τ = 8 whose 400 ratios differ: refused, token-wise exact."""
    from specviz.analysis.theory import BLOCK_WORK
    from specviz.classroom.sandbox import expected_lengths

    flat = [[1 / 400] * 400]
    assert expected_accepted(flat * 8, flat * 9, "block") == pytest.approx(8.0, abs=1e-9)
    assert expected_accepted(flat * 8, flat * 9, "token") == pytest.approx(8.0, abs=1e-9)
    assert expected_accepted(flat * 8, flat * 9, "one-hot") == pytest.approx(sum(400.0**-k for k in range(1, 9)))
    rising = [[(x + 1) / 820 for x in range(40)]]  # 1 + 2 + … + 40 = 820
    uniform = [[1 / 40] * 40]
    with pytest.raises(ConfigError, match=r"at least 880 weights × tokens .*\(40 words, τ = 3; exact up to 500\)"):
        expected_accepted(uniform * 3, rising * 4, "block", limit=500)
    assert expected_accepted(uniform * 1, rising * 2, "block", limit=40) == pytest.approx(
        sum(min(1.0, 40 * (x + 1) / 820) / 40 for x in range(40))  # τ = 1: E[w_1] = Σ q min(1, p/q) = Σ min(p, q)
    )
    words = tuple(f"w{i}" for i in range(400))  # a link's 400-word table at τ = 8, every ratio its own
    q = tuple(tuple(1 / 400 for _ in words) for _ in range(8))
    p = tuple(tuple((i + 1) / 80_200 for i in range(400)) for _ in range(9))  # 1 + … + 400 = 80,200
    said = expected_lengths(SandboxCase(words, q, p, (0.5,) * 8))
    beta = 0.5 + 20_100 / 80_200  # Σ min(p, q): words with p < 1/400 give (1 + … + 200) / 80,200, the 200 others 1/400
    assert f"token {sum(beta**k for k in range(1, 9)):.3f}" in said
    refused = re.search(r"block not computed \(the block rule's exact mean would follow at least ([\d,]+) ", said)
    assert refused and int(refused[1].replace(",", "")) > BLOCK_WORK
    assert f"(400 words, τ = 8; exact up to {BLOCK_WORK:,})" in said


def test_a_narrow_interval_of_q_is_written_with_the_digits_that_tell_its_ends_apart():
    """400 equally likely words: the 201st holds u in [200/400, 201/400) = [0.5, 0.5025): at two decimals both ends
    read 0.50, at three 0.500 and 0.502 (rounded half to even: 0.5025 is stored a hair below), so three."""
    from specviz.classroom.sandbox import interval, interval_text

    assert interval_text(*interval([1.0] * 400, 200)) == "[0.500, 0.502)"
    assert interval_text(0.8, 1.0) == "[0.80, 1.00)"
    assert interval_text(0.5, 0.5 + 1e-9) == "[0.500000, 0.500000)"  # at most six


def test_a_lossy_rule_in_the_sandbox_keeps_more_and_says_its_exact_price():
    """One position, words a b c, q = (.2, .3, .5), p = (.5, .3, .2), u = 0.3 samples b from q (interval [.2, .5)),
    r = 0.55. One-hot keeps b while r ≤ p(b) = .3: rejected. SGLang at t_s = t_a = 0.5 keeps it while
    r ≤ .3/.5 = .6: kept; expected tokens per pass 1 + .6 = 1.6 against 1 + .3 = 1.3; its first token follows
    o = (53/112, .2925, 41/175), TV 6/175 = 0.0343 (tests/test_lossy.py works it by hand)."""
    from specviz.classroom.sandbox import explain, sandbox_step

    case = SandboxCase(("a", "b", "c"), ((0.2, 0.3, 0.5),), ((0.5, 0.3, 0.2), (0.1, 0.1, 0.8)), (0.55,), (0.3,), 0.5)
    assert sandbox_step(case, "lossless", "one-hot").n_accepted == 0
    step = sandbox_step(case, "lossless", "sglang", {"threshold_single": 0.5, "threshold_acc": 0.5})
    assert (step.draft_tokens, step.n_accepted, step.verify.threshold) == ((1,), 1, pytest.approx((0.6,)))
    assert step.cost.tokens_per_pass == pytest.approx(1.6) and step.cost.baseline_tokens_per_pass == pytest.approx(1.3)
    assert step.cost.tv == pytest.approx((6 / 175,))
    note = explain(step, case, "lossless")[-1]
    assert note.startswith("**Lossy.**") and "1.600 tokens per pass expected instead of 1.300" in note
    assert "0.0343" in note
    with pytest.raises(ConfigError, match="threshold_acc"):
        sandbox_step(case, "lossless", "sglang", {"threshold_acc": 0.0})


@pytest.mark.parametrize("typed", [".05", "0,05", "5%", "0.05", " 5 % ", 0.05])
def test_a_cell_reads_a_number_as_people_type_it(typed):
    """Issue 65.2: typing ".05" in the Sandbox gave 5 (the grid's number cell showed "005"; the only hint was "Column
    q1 sums to 5.975"). A cell is text, read as written: ".05", "0,05" and "5%" are 0.05; q1 of the five-token
    exercise with its 'the' (.5) typed so: q1 = (.05, .2, .1, .1, .1), the column sums to 0.55, not 5.5."""
    case = PRESETS[FIVE]
    frame = case_frame(case)
    frame.loc[0, "q1"] = typed
    assert case_from_frame(frame, case.r).q[0] == (0.05, 0.2, 0.1, 0.1, 0.1)
    assert column_sums(frame)["q1"] == pytest.approx(0.55)


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        ("", "column q1, row 1 is empty"),
        ("0,0.5", "column q1, row 1 ('0,0.5') has two decimal marks: write 0.05, .05, 0,05 or 5%"),
        ("five", "column q1, row 1 ('five') is not a finite number written with the digits 0-9"),
        ("-5%", "column q1 needs non-negative numbers that are not all zero"),
    ],
)
def test_a_cell_that_is_not_a_number_is_refused_with_why(typed, why):
    case = PRESETS[FIVE]
    frame = case_frame(case)
    frame.loc[0, "q1"] = typed
    with pytest.raises(ConfigError) as refused:
        case_from_frame(frame, case.r)
    assert str(refused.value) == why
    assert "q1" not in column_sums(frame) or typed == "-5%"  # a sum only of what can be read
