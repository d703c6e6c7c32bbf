"""Your draft on the real target (issue 47.3): a typed draft proposed as typed and decided by the mode's own rule on
the table pair, its texts, and on the Decode page through Streamlit's AppTest, with the textbook's exercise one
click away. Model loading is patched to a tiny random pair (the `loads` fixture)."""

import json

import pytest
from streamlit.testing.v1 import AppTest

import specviz
from tests.app_helpers import ROOT, app, decoder


def typed_table_run(mode: str, tokens, seed: int = 0, **config):
    """One step of the table pair p = (.5, .3, .2), q = (.2, .2, .6) over 'a b c' after 'a', the draft typed, and the
    wrapped draft model (to check it is untouched)."""
    from specviz.drafts.typed import TypedDraft

    draft = specviz.TableModel([0.2, 0.2, 0.6], "q")
    typed = TypedDraft(draft)
    pair = specviz.ModelPair(specviz.TableModel([0.5, 0.3, 0.2], "p"), typed, specviz.WordCodec("abc"))
    dec = specviz.Decoder(pair, "a", specviz.SpecConfig(tau=4, mode=mode, seed=seed, **config))
    with typed.proposing(tokens):
        step = dec.step()
    return dec, step, draft


def test_a_typed_draft_is_proposed_as_typed_and_decided_by_the_modes_own_rule_with_the_draft_models_q():
    # seed 0 draws r = .9701, .7078 and then .4594 (torch's generator, float64). Typed 'b c' (ids 1, 2):
    # 'b': q = .2 (the draft model's own first choice is 'c', q = .6), p = .3, p/q = 1.5 ≥ 1: accepted outright;
    # 'c': q = .6, p = .2, p/q = 1/3 < r2 = .7078: rejected, so n = 1
    dec, step, draft = typed_table_run("textbook", [1, 2])
    assert step.draft_text == ("b", "c") and step.tau == 2  # τ = 4, but two tokens were typed
    assert step.q == pytest.approx((0.2, 0.6)) and step.p == pytest.approx((0.3, 0.2))
    assert step.ratio == pytest.approx((1.5, 1 / 3)) and step.r == pytest.approx((0.97005, 0.70782), abs=1e-5)
    assert step.decision == ("accepted", "rejected") and step.n_accepted == 1
    assert (step.next_text, step.next_rule, step.next_prob) == ("a", "argmax", pytest.approx(0.5))  # argmax p there
    assert step.emitted == (1, 0) and [top[0].text for top in step.q_top] == ["c", "c"]
    assert step.beta == pytest.approx((0.6, 0.6))  # Σ min(p, q) = .2 + .2 + .2: the full rows are the model's
    from specviz.viz.render import own_choice, run_html
    from specviz.viz.step_chart import step_chart

    assert own_choice(step, 0).text == "c" and own_choice(step, 1) is None  # marked where it differs
    html = run_html("a", [step], figures=True)
    # q, p and r one above the other under each token (issue 55.1: a long draft's tokens stay on one line)
    assert "q .20<br>p .30<br>r .97" in html and "q .60<br>p .20<br>r .71" in html and "draft's pick: c" in html
    assert html.count("sv-own") == 2  # the style rule and the one token whose pick differs
    ticks = json.loads(json.dumps(step_chart(step, own=True).to_dict()))["data"][0]["x"]
    assert ticks == ["1. b<br>(draft: c)", "2. c"]
    assert draft.table.tolist() == [0.2, 0.2, 0.6]  # the shared model: never changed
    assert dec.step().draft_text == ("c", "c", "c", "c")  # the next step: the draft model's own again

    # lossless, token-wise: the same decisions; the next token is drawn from norm(max(0, p − q)) = (.75, .25, 0)
    # by the third draw, .4594 < .75: 'a', with probability .75. The typed tokens consume no draw.
    _, step, _ = typed_table_run("lossless", [1, 2])
    assert step.decision == ("accepted", "rejected") and step.r == pytest.approx((0.97005, 0.70782), abs=1e-5)
    assert (step.next_text, step.next_rule, step.next_prob) == ("a", "residual", pytest.approx(0.75))
    # greedy: 'b' is not argmax p ('a'): rejected at once, and the target's argmax follows
    _, step, _ = typed_table_run("greedy", [1, 2])
    assert step.decision == ("rejected", "not reached") and step.r == (None, None) and step.next_text == "a"
    # q(ŷ) = 0 (top-k 1 keeps only the draft's 'c'): p/q has no value, so the draft stops before 'b'
    _, step, _ = typed_table_run("textbook", [1, 2], top_k=1)
    assert step.tau == 0 and step.emitted == (0,)


def test_your_drafts_texts_escape_what_was_typed_and_say_how_many_tokens_were_proposed():
    import dataclasses

    from specviz.classroom import typed as texts
    from specviz.classroom.sandbox import PRESETS, sandbox_step

    book = sandbox_step(PRESETS[texts.BOOK])  # the exercise's own numbers: 'mat', 'then' and 'slept' have q > p
    three = dataclasses.replace(book, index=1, tau=3)
    note = texts.step_note("*mat* <b>", 3, three, tau=4)
    assert note.startswith('**Your draft** "\\*mat\\* \\<b\\>" (step 2): q is the draft model')
    assert "Only" not in note  # all three typed tokens were proposed
    cut = texts.step_note("mat and then slept", 5, book, tau=4)
    assert "(step 1)" in cut and " Only 4 of its 5 tokens were proposed: τ = 4," in cut
    # the textbook's own draft (issue 65.6): why this step kept what it kept, from its own q and p; the exercise's
    # made-up numbers named as the Sandbox's, nothing claimed of "the book"; any other words: no such note
    assert "book" not in cut.lower().replace("the+cat", "") and "Where r decided" not in note
    assert (
        " **Where r decided:** only 'mat' (p/q = 0.83, accepted), 'then' (p/q = 0.33, rejected), 'slept' (p/q = 0.86, "
    )
    assert "not reached) had q > p; every other token had q ≤ p, which no r rejects." in cut
    assert cut.endswith(
        "The Sandbox's exercise [The cat sat on the \\| mat and then slept]"
        "(sandbox?sandbox_preset=The+cat+sat+on+the+%7C+mat+and+then+slept) gives these words made-up q and p, under "
        "which 'then' (q .6 > p .2) is rejected when r is above p/q = 1/3."
    )
    # the lecturer's run (issue 65.6): every word had q ≤ p, so each was kept whatever r was
    kept = dataclasses.replace(
        book, ratio=(1.2, 1.0, 3.5, 1.1), decision=("accepted",) * 4, accepted=(True,) * 4, n_accepted=4
    )
    said = texts.step_note("  Mat and  then slept", 4, kept, 4)  # as a person types it
    assert (
        " **Why no rejection?** Every token here had q ≤ p, so each was kept whatever r was: r ≤ min(1, p/q) = 1 "
        in said
    )
    brief = texts.step_note("mat and then slept", 4, kept, 4, brief=True)  # a projector: the why alone
    assert (
        brief.startswith('**Your draft** "mat and then slept" (step 1). **Why no rejection?**')
        and "Not drawn" not in brief
    )
    caption = texts.tokens_caption([" mat", "\n", "*"])
    assert caption.startswith("As tokens after the text on screen: '·mat' · '↵' · '\\*' (3; at most τ are proposed). ")
    assert texts.refusal(True, "x").startswith("a typed draft is a chain of tokens")
    assert texts.refusal(False, "prompt lookup") == (
        "prompt lookup has no q to score typed words with: choose a pair with a draft model"
    )


def test_with_a_typed_draft_lossless_mode_no_longer_emits_the_targets_distribution():
    # typed 'c' alone: kept with probability min(1, p/q) = .2/.6 = 1/3 (not p(c) = .2), else the residual (.75,
    # .25, 0) has no 'c': the first token is 'c' a third of the time. 1,000 seeds: sd 0.015, so 1/3 ± 0.05 holds and
    # p's 0.2 is 9 sd away
    firsts = [typed_table_run("lossless", [2], seed=s)[1].emitted[0] for s in range(1000)]
    assert firsts.count(2) / 1000 == pytest.approx(1 / 3, abs=0.05)


def test_decode_steps_your_typed_draft_on_the_real_pair_and_a_link_reopens_it(loads):
    at = app(panels_open=False)
    at.text_input(key="decode_typed").set_value("w5 w6 w7").run()
    at.button(key="decode_typed_step").click().run()
    assert not at.exception
    dec = decoder(at)
    step = dec.steps[0]
    assert step.draft_tokens == (5, 6, 7)
    # q and p of each typed token are the models' own, from fresh sessions of the same (shared) models
    import torch

    target, draft = dec.pair.target, dec.pair.draft.model
    ids = list(dec.prompt_ids)
    p_rows = torch.softmax(target.new_session().extend([*ids, 5, 6], keep=3), -1)
    q_rows = torch.softmax(draft.new_session().extend([*ids, 5, 6], keep=3), -1)
    assert step.p == pytest.approx([float(p_rows[t, y]) for t, y in enumerate((5, 6, 7))], rel=1e-6)
    assert step.q == pytest.approx([float(q_rows[t, y]) for t, y in enumerate((5, 6, 7))], rel=1e-6)
    assert any(i.value.startswith('**Your draft** "w5 w6 w7" (step 1): q is the draft model') for i in at.info)
    assert any("Not drawn from q: in lossless mode the output is then not the target" in i.value for i in at.info)
    at.run()  # the sidebar (drawn before the step) shows the words as tokens after the text on screen
    shown = "As tokens after the text on screen: 'w5' · 'w6' · 'w7' (3; at most τ are proposed)."
    assert any(c.value.startswith(shown) for c in at.sidebar.caption)
    link = at.code[-1].value
    assert "decode_steps=1" in link and "decode_drafts=%7B%221%22%3A%22w5+w6+w7%22%7D" in link
    at.button(key="decode_step").click().run()  # a plain Step: the draft model's own tokens
    assert decoder(at).steps[1].draft_tokens != (5, 6, 7) and "decode_drafts" in at.code[-1].value

    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    again.query_params.update(decode_steps="1", decode_drafts='{"1":"w5 w6 w7"}')
    again.run()
    assert not again.exception
    (reopened,) = decoder(again).steps
    assert (reopened.draft_tokens, reopened.q, reopened.r) == (step.draft_tokens, step.q, step.r)
    again.toggle(key="decode_tree").set_value(True).run()  # a tree's draft is no chain: said, not a silent own draft
    again.text_input(key="decode_typed").set_value("w5 w6 w7").run()
    again.button(key="decode_typed_step").click().run()
    assert not again.exception and any("a typed draft is a chain of tokens" in e.value for e in again.error)


def test_the_textbook_exercise_is_one_click_and_q_p_r_can_be_written_under_the_tokens(loads):
    at = app(panels_open=False)
    at.button(key="decode_exercise_start").click().run()
    values = {k: at.session_state[k] for k in ("decode_prompt", "decode_chat", "decode_mode", "decode_typed")}
    assert values == {
        "decode_prompt": "The cat sat on the",
        "decode_chat": False,
        "decode_mode": "textbook",
        "decode_typed": "mat and then slept",
    }
    at.button(key="decode_story_start").click().run()
    assert (at.session_state["decode_prompt"], at.session_state["decode_mode"]) == (
        "Continue the story: The cat sat on the",
        "lossless",
    )
    assert at.session_state["decode_temperature"] == 0.7 and at.session_state["decode_chat"]
    at.button(key="decode_step").click().run()
    marked = lambda: next(h.proto.body for h in at.get("html") if "sv-box" in h.proto.body)  # noqa: E731
    assert "sv-num" not in marked().split("</style>")[-1]
    at.toggle(key="decode_present").set_value(True).run()  # a projector's option
    at.toggle(key="decode_figures").set_value(True).run()
    step = decoder(at).steps[0]
    first = f"{step.q[0]:.2f}" if step.q[0] >= 0.005 else f"{step.q[0]:.1g}"
    assert marked().split("</style>")[-1].count('class="sv-num"') == step.tau
    assert f'<span class="sv-num">q {first.removeprefix("0")}<br>p ' in marked()  # one above the other
