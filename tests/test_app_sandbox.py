"""The Sandbox page through Streamlit's AppTest: its exercises give the expected decisions, every cell kept as typed,
and an edited r or a tie said in words. Model loading is patched to a tiny random pair (the `loads` fixture)."""

import pandas as pd
import pytest

from tests.app_helpers import app, figure, step_table


def test_sandbox_presets_give_the_expected_decisions(loads):
    at = app()
    at.switch_page("pages/sandbox.py").run()
    assert not at.exception
    assert "**n = 1** of 1 accepted (none rejected)" in at.success[0].value
    assert at.info[0].value.startswith("q > p at position 1") and not at.warning  # computed from the table
    at.selectbox(key="sandbox_preset").set_value("Five-token draft, the third rejected first").run()
    assert at.info[1].value.startswith("Positions 4 and 5 would pass")  # the new exercise's notes only

    assert "**n = 2** of 5 accepted (position 3 is the first rejected)" in at.success[0].value
    assert "'cat'** by rule **argmax" in at.success[0].value
    decisions = [a["text"] for a in figure(at, 0)["layout"]["annotations"]]
    assert decisions == [  # why in words: q .5 ≤ p .6; r .3 ≤ .45/.6; r .6 > .2/.7; then not reached (short lines:
        "q ≤ p<br><b>→ accepted</b><br><b>outright</b>",  # five columns of an 800-pixel chart)
        "r = 0.30<br>≤ p/q = 0.75<br><b>→ accepted</b>",
        "r = 0.60<br>> p/q = 0.29<br><b>→ rejected</b>",
        "<b>not reached</b><br>(after the<br>rejection)",
        "<b>not reached</b><br>(after the<br>rejection)",
    ]
    numbers = step_table(at, -1)  # r and p/q as numbers beside each decision (after the editor)
    assert numbers["r"].tolist() == [0.9, 0.3, 0.6, 0.1, 0.2]
    assert numbers["p/q"].tolist()[:3] == pytest.approx([0.6 / 0.5, 0.45 / 0.6, 0.2 / 0.7], abs=5e-5)
    assert numbers["decision"].tolist()[2:] == ["rejected", "not reached", "not reached"]
    at.number_input(key="sandbox_r2").set_value(0.25).run()  # typed: r3 ≤ p/q = 0.2/0.7, all five accepted
    assert "**n = 5** of 5 accepted (none rejected)" in at.success[0].value
    bonus = figure(at, 1)["layout"]["title"]["text"]  # all accepted: the bonus token, from p at τ+1
    assert bonus.startswith("p at position 6: the bonus token")
    at.number_input(key="sandbox_r2").set_value(0.6).run()
    at.number_input(key="sandbox_tau").set_value(2).run()  # τ = 2: nothing comes after a rejection, so no such note
    assert "**n = 2** of 2 accepted (none rejected)" in at.success[0].value
    assert not any("would pass" in i.value for i in at.info) and at.info[-2].value.startswith("All 2 draft tokens")
    assert at.info[-1].value == (  # the bonus from p3 = .2 each: argmax breaks the tie by the vocabulary's order
        "p ties at 0.20 at position 3 between 'the', 'cat', 'sat', 'on' and 'mat': argmax takes the first of them in "
        "the vocabulary's order, 'the'."
    )
    at.selectbox(key="sandbox_preset").set_value("The next token after the accepted run").run()
    at.radio(key="sandbox_mode").set_value("lossless").run()
    assert "by rule **residual" in at.success[0].value
    residual = figure(at, 2)["data"][2]
    assert residual["y"][-1].startswith("sat") and residual["x"][-1] == pytest.approx(2 / 3)


def test_the_sandbox_keeps_every_cell_as_typed_and_says_what_it_uses(loads):
    """Issue 55.3: p1 of the five-token exercise typed cell by cell, (.35, .3, .2, .1, .1), a column summing to 1.05
    on the way: the grid keeps each number typed (it showed 0.4667 / 0.1333 ×4 and dropped every second edit), the
    page names the sum, and the step uses p1 / 1.05. By hand: 'the' q .5 > p .35 / 1.05 = 1/3, p/q = 2/3 < r .9:
    rejected at position 1, and textbook's argmax of p1 is 'the' again, which a note explains."""
    at = app()
    at.switch_page("pages/sandbox.py").run()
    at.selectbox(key="sandbox_preset").set_value("Five-token draft, the third rejected first").run()
    key = "sandbox_table_Five-token draft, the third rejected first_5"
    grid = at.data_editor(key=key)
    original, identity = grid.value.copy(), grid.proto.id
    typed = {}
    for row, value in enumerate((0.35, 0.3, 0.2, 0.1, 0.1)):  # the lecturer types p1, one cell at a time (text)
        typed[row] = {"p1": str(value)}
        at.session_state[key] = {"edited_rows": dict(typed), "added_rows": [], "deleted_rows": []}
        at.run()
        assert not at.exception
        grid = at.data_editor(key=key)
        assert grid.proto.id == identity  # the same grid: a new one would have dropped the edits typed so far
        shown = grid.value.copy()  # every cell as the grid shows it: the table it was given, with the edits
        for edited_row, cells in typed.items():
            for column, number in cells.items():
                shown.loc[edited_row, column] = number
        expected = original.copy()
        expected.loc[:row, "p1"] = ["0.35", "0.3", "0.2", "0.1", "0.1"][: row + 1]
        pd.testing.assert_frame_equal(shown, expected)  # every cell of every column, as typed
    assert at.session_state["sandbox_case"].p[0] == (0.35, 0.3, 0.2, 0.1, 0.1)  # kept as typed
    assert [w.value for w in at.warning] == ["Column **p1** sums to 1.05, not 1: it is used divided by 1.05."]
    numbers = step_table(at, -1)
    assert numbers["p"].tolist()[0] == pytest.approx(1 / 3, abs=5e-5) and numbers["p/q"].tolist()[0] == pytest.approx(
        2 / 3, abs=5e-5
    )
    assert "**n = 0** of 5 accepted (position 1 is the first rejected)" in at.success[0].value
    assert "table edited" in at.success[0].value
    assert any(i.value.startswith("The target's token is the rejected draft token itself: 'the'") for i in at.info)


def test_the_sandbox_reads_05_as_people_type_it(loads):
    """Issue 65.2: ".05" typed in q1 gave 5 (the grid showed "005"; "Column q1 sums to 5.975"). The cells are text,
    read as written: ".05", "0,05" and "5%" are 0.05 ('the' of the five-token exercise: q1 sums to .05 + .5 = .55);
    "five" is refused, the cell named and why."""
    at = app()
    at.switch_page("pages/sandbox.py").run()
    at.selectbox(key="sandbox_preset").set_value("Five-token draft, the third rejected first").run()
    key = "sandbox_table_Five-token draft, the third rejected first_5"
    for typed in (".05", "0,05", "5%"):
        at.session_state[key] = {"edited_rows": {0: {"q1": typed}}, "added_rows": [], "deleted_rows": []}
        at.run()
        assert not at.exception and not at.error
        assert at.session_state["sandbox_case"].q[0] == (0.05, 0.2, 0.1, 0.1, 0.1)
        assert [w.value for w in at.warning] == ["Column **q1** sums to 0.55, not 1: it is used divided by 0.55."]
    at.session_state[key] = {"edited_rows": {1: {"q1": "five"}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "**Check the table.** column q1, row 2 ('five') is not a finite number written with the digits 0-9"
    ]


def test_the_sandbox_names_an_edited_r_and_says_why_a_tie_went_one_way(loads):
    """Issue 55.3: r2 of the five-token exercise set to .8 (> p/q = .75): 'cat' is now the first rejected, and the
    verdict says the exercise's r was edited, its name ("the third rejected first") no longer holding. The one-token
    exercise: 'cat' accepted, then the bonus from p2 = (.5, .5), a tie argmax breaks by the vocabulary's order."""
    at = app()
    at.switch_page("pages/sandbox.py").run()
    bonus = [i.value for i in at.info if "ties" in i.value]
    assert bonus == [
        "p ties at 0.50 at position 2 between 'cat' and 'dog': argmax takes the first of them in the "
        "vocabulary's order, 'cat'."
    ]
    at.selectbox(key="sandbox_preset").set_value("Five-token draft, the third rejected first").run()
    assert at.success[0].value.startswith("Exercise 'Five-token draft, the third rejected first': **n = 2**")
    at.number_input(key="sandbox_r1").set_value(0.8).run()
    assert at.success[0].value.startswith(
        "Exercise 'Five-token draft, the third rejected first', r edited: **n = 1** of 5 accepted (position 2 is the "
        "first rejected)"
    )
    assert not any("ties" in i.value for i in at.info)


def test_the_sandbox_offers_the_lossy_rules_with_their_settings_and_says_their_price(loads):
    at = app()
    at.switch_page("pages/sandbox.py").run()
    at.radio(key="sandbox_mode").set_value("lossless").run()
    at.selectbox(key="sandbox_rule").set_value("sglang").run()
    at.number_input(key="sandbox_threshold_acc").set_value(0.5).run()
    assert not at.exception
    assert "LOSSY, SGLang's accept thresholds" in at.caption[0].value or any(
        "LOSSY, SGLang's accept thresholds" in m.value for m in at.markdown
    )
    lossy = [i.value for i in at.info if i.value.startswith("**Lossy.**")]
    assert len(lossy) == 1 and "tokens per pass expected instead of" in lossy[0] and "total-variation" in lossy[0]
