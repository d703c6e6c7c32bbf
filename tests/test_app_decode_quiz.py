"""The Decode page's quiz through Streamlit's AppTest: nothing derived from r or the decisions before Reveal, the
score kept through Back and Step, the rule quiz, and each answer marked. Model loading is patched to a tiny random
pair (the `loads` fixture)."""

import pytest
from streamlit.testing.v1 import AppTest

import specviz
from specviz.classroom import quiz
from tests.app_helpers import app, decoder, figure, history_bars, step_table


def quiz_step(at: AppTest, kind: str = "predict") -> AppTest:
    """Quiz on, a step whose draft has a rejected token and one not reached (seeds tried in turn)."""
    at.toggle(key="decode_quiz").set_value(True).run()
    at.radio(key="decode_quiz_kind").set_value(kind)
    for seed in range(20):
        at.number_input(key="decode_seed").set_value(seed)
        at.button(key="decode_reset").click().run()
        at.button(key="decode_step").click().run()
        if decoder(at).steps[-1].n_accepted < 3:
            return at
    raise AssertionError("no step with a rejection in 20 seeds")


def answer_all(at: AppTest, step: specviz.StepTrace, answers) -> None:
    from pages._decode.quiz import widget_id

    for t, guess in enumerate(answers):
        at.radio(key=f"decode_guess_{widget_id(step)}_{t}").set_value(guess)


def test_quiz_shows_nothing_derived_from_r_or_the_decisions_before_reveal(loads):
    at = quiz_step(app())
    step = decoder(at).steps[-1]
    assert [t["name"].split(" ")[0] for t in figure(at, 0)["data"]] == ["q", "p", "min(1,"]  # no r
    assert "r" not in step_table(at).columns and "decision" not in step_table(at).columns
    assert not any(c.value.startswith("Next token") for c in at.markdown)
    html = next(h.proto.body for h in at.get("html") if "sv-text" in h.proto.body)
    assert 'class="sv-quiz"' in html and 'class="sv-rej"' not in html and 'class="sv-tgt"' not in html
    assert [m.value for m in at.metric][:3] == ["0.00", "0%", "0.000"]  # metrics count no step yet
    assert history_bars(figure(at, 2)) == []  # the history has no bar for this step
    assert figure(at, 3)["data"][0]["y"] == [0.0] * 4  # per-position rates of zero steps
    assert not at.get("download_button")  # a saved trace would hold r and the decisions
    assert "up to the previous step" in at.subheader[0].value
    answers = [quiz.answer(step, t) for t in range(step.tau)]
    answer_all(at, step, answers)
    at.button(key="decode_reveal").click().run()
    assert not at.exception
    assert any(
        c.value == f"#### This step: {step.tau} of {step.tau} answered tokens right. Running score: "
        f"{step.tau} / {step.tau}."
        for c in at.markdown
    )
    assert "decision" in step_table(at).columns  # revealed: r and the decisions are back
    assert any(t["name"].startswith("r ") for t in figure(at, 0)["data"])
    assert history_bars(figure(at, 3)) == [step.n_accepted]  # history, after the next-token chart
    assert [b.label for b in at.get("download_button")] == ["Download as a log", "Trace as JSON", "Steps as CSV"]


def test_quiz_scores_answered_tokens_and_keeps_the_score_through_back_and_step(loads):
    from pages._decode.quiz import BOOK

    at = quiz_step(app())
    step = decoder(at).steps[-1]
    tau = step.tau
    answer_all(at, step, ["reject"] * tau)  # "not reached" is its own answer: only one token is right
    at.button(key="decode_reveal").click().run()
    assert any(c.value.startswith(f"#### This step: 1 of {tau} answered tokens right") for c in at.markdown)
    at.button(key="decode_back").click().run()
    assert quiz.running_total(at.session_state[BOOK]) == (1, tau)  # Back keeps the score
    at.button(key="decode_step").click().run()  # the same step again: already revealed, not counted twice
    assert "decision" in step_table(at).columns
    assert quiz.running_total(at.session_state[BOOK]) == (1, tau)
    at.button(key="decode_step").click().run()  # a new step: hidden again, the score kept
    assert "decision" not in step_table(at).columns
    nxt = decoder(at).steps[-1]
    answer_all(at, nxt, [quiz.answer(nxt, 0)] + [None] * (nxt.tau - 1))  # one answer, the rest blank
    at.button(key="decode_reveal").click().run()
    assert quiz.running_total(at.session_state[BOOK]) == (2, tau + 1)
    assert any(c.value.endswith(f"Running score: 2 / {tau + 1}.") for c in at.markdown)


def test_quiz_on_the_rule_shows_r_and_asks_how_many_are_kept(loads):
    at = quiz_step(app(), kind="rule")
    step = decoder(at).steps[-1]
    from pages._decode.quiz import widget_id

    table = step_table(at)
    assert "r" in table.columns and "p/q" in table.columns and "decision" not in table.columns
    assert list(table["r"]) == pytest.approx(step.r, abs=5e-5)
    assert [t["name"].split(" ")[0] for t in figure(at, 0)["data"]] == ["q", "p", "min(1,", "r"]
    answer_all(at, step, [quiz.answer(step, t) for t in range(step.tau)])
    at.number_input(key=f"decode_kept_{widget_id(step)}").set_value(step.n_accepted)
    at.button(key="decode_reveal").click().run()
    assert any(
        c.value.startswith(f"#### This step: {step.tau} of {step.tau} answered tokens right, tokens kept: right")
        for c in at.markdown
    )


def test_quiz_marks_each_answered_token_right_or_wrong_on_the_chart_and_in_the_text(loads):
    at = quiz_step(app())
    step = decoder(at).steps[-1]
    right = [quiz.answer(step, t) for t in range(step.tau)]
    wrong = {"accept": "reject", "reject": "accept", "not reached": "accept"}[right[1]]
    answer_all(at, step, [right[0], wrong] + [None] * (step.tau - 2))  # one right, one wrong, the rest blank
    at.button(key="decode_reveal").click().run()
    heads = [a["text"] for a in figure(at, 0)["layout"]["annotations"]]
    assert "✓ class right" in heads[0] and "✗ class wrong" in heads[1]
    assert not any("class" in h for h in heads[2:])  # blank answers get no mark
    html = next(h.proto.body for h in at.get("html") if "sv-text" in h.proto.body)
    assert html.count('class="sv-mark sv-right"') == 1 and html.count('class="sv-mark sv-wrong"') == 1
