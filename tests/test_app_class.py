"""Class mode through Streamlit's AppTest, across pages: what a link or a widget starts is bounded like a click (issue
57.4, issue 52.5): a link's Steps paced as heavy jobs on Decode, a large Sandbox link priced and taken in turn.
Model loading is patched to a tiny random pair (the `loads` fixture)."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from specviz.server import config
from tests.app_helpers import ROOT, decoder


@pytest.fixture
def queues(monkeypatch, tmp_path):
    """Class mode (2 Steps a second, one heavy job at a time), its Steps paced on a fake clock (no wall time), and the
    server's turns and heavy-job slots recorded: (kind of each turn taken, owner of each slot held, the sleeps)."""
    from pages._decode import step as _decode_step
    from pages._serving import compute as _compute
    from pages._serving import config as _server
    from specviz.server import config
    from specviz.server.turns import Pacer, Slots, Turns

    path = tmp_path / "class.toml"
    path.write_text("[class]\nsteps_per_second = 2.0\nheavy_jobs = 1\n")
    monkeypatch.setenv(config.CLASS_MODE_ENV, "1")
    monkeypatch.setenv(config.CLASS_SETTINGS_ENV, str(path))
    _server.forget()
    now, seen = [0.0], {"turns": [], "slots": [], "slept": []}

    class Recorded(Turns):
        def take(self, kind="step", waiting=None, alive=None):
            seen["turns"].append(kind)
            return super().take(kind, waiting, alive)

    class Held(Slots):
        def hold(self, waiting=None, owner=None, alive=None, owners=None):
            seen["slots"].append(owners or owner)
            return super().hold(waiting, owner, alive, owners)

    turns, slots = Recorded(), Held(1, per_owner=2, waiting_most=40)
    monkeypatch.setattr(_compute, "_turns", lambda: turns)
    monkeypatch.setattr(_compute, "_slots", lambda: slots)
    sleep = lambda s: (seen["slept"].append(s), now.__setitem__(0, now[0] + s))  # noqa: E731
    monkeypatch.setattr(_decode_step, "pacer", lambda: Pacer(2.0, clock=lambda: now[0], sleep=sleep))
    yield seen
    _server.forget()


def test_a_links_steps_are_a_paced_heavy_job_and_stop_when_its_session_ends(loads, queues, monkeypatch):
    """?decode_steps=3 in class mode: the tab's opening and the prompt read in a Step's turn each, then three steps,
    each a heavy turn inside one heavy-job slot (the server's, the student's and the address's share), 0.5 s apart on
    the clicks' own pacer (two waits, on a fake clock). The same link with 5 steps whose tab closes after the second
    step's turn: no third step, no traceback, and the slot given back."""
    from pages._serving import compute as _compute

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(decode_steps="3")
    at.run()
    assert not at.exception and len(decoder(at).steps) == 3
    assert queues["turns"] == ["step", "step", "heavy", "heavy", "heavy"] and len(queues["slots"]) == 1  # the opening
    assert queues["slept"] == pytest.approx([0.5, 0.5])
    queues["turns"].clear()
    monkeypatch.setattr(_compute, "alive", lambda: lambda: queues["turns"].count("heavy") < 3)
    closed = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    closed.query_params.update(decode_steps="5")
    closed.run()
    assert not closed.exception and len(decoder(closed).steps) == 2  # the third heavy turn was refused

    def busy(ahead: int) -> None:
        raise AssertionError(f"{ahead} heavy job(s) still hold the server's one slot")

    with _compute._slots().hold(busy, owners=queues["slots"][-1]):  # given back: taken at once, nobody ahead
        pass


def test_opening_a_tab_takes_a_steps_turn_once_the_lecturers_first(loads, queues, tmp_path, monkeypatch):
    """Issue 68.2: a tab's first run is queued like a Step (a burst of tab loads waits behind the lecturer's Steps, not
    beside them); its later runs take no turn of their own; the lecturer's tab opens in the lecturer's turn. Its slot
    in the heavy-job queue counts against the student's browser and their address, the lecturer's against nobody."""
    from pages._serving import config as _server

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception and queues["turns"] == ["step"]
    at.run()
    assert queues["turns"] == ["step"]  # a rerun: no opening
    path = tmp_path / "lecturer.toml"
    path.write_text('[class]\nlecturer_key = "k"\n')
    monkeypatch.setenv(config.CLASS_SETTINGS_ENV, str(path))
    _server.forget()
    queues["turns"].clear()
    lecturer = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    lecturer.query_params.update(lecturer="k")
    lecturer.run()
    assert not lecturer.exception and queues["turns"] == ["lecturer"]


def test_the_lecturers_steps_are_not_paced_and_a_students_are(queues, monkeypatch):
    """The lecturer is exempt from every per-student bound, the class's Steps a second included: a lecturer clicking
    Step every 0.2 s waited 0.3 s for the pacer each time (issue 68's probe had read that as the server's delay)."""
    import streamlit as st

    from pages._serving import compute

    monkeypatch.setattr(st, "session_state", {})
    assert compute.pacer().rate == 2.0
    monkeypatch.setattr(st, "session_state", {"specviz_lecturer": True})
    assert compute.pacer().rate is None


def test_a_400_word_sandbox_link_at_tau_8_is_priced_before_it_starts_and_taken_in_turn(loads, queues):
    """Issue 57.4's link: 400 words, τ = 8, lossless. q uniform, p ∝ 1 … 400 at every position, so each of the 400
    ratios differs and the block rule's weights multiply past its cap: said, not computed; token-wise exact by hand:
    β = Σ min(p, q) = (1 + … + 200)/80,200 + 200/400 a position, E[n] = β + … + β⁸. In a Step's turn, like a click."""
    table = {"words": [f"w{i}" for i in range(400)], "q": [[1] * 400] * 8, "p": [list(range(1, 401))] * 9}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(sandbox_table=json.dumps(table), sandbox_tau="8", sandbox_mode="lossless")
    at.run()
    queues["turns"].clear()
    at.switch_page("pages/sandbox.py").run()
    assert not at.exception
    said = next(m.value for m in at.markdown if m.value.startswith("**Expected accepted draft tokens"))
    beta = 20_100 / 80_200 + 0.5
    assert f"token {sum(beta**k for k in range(1, 9)):.3f}" in said
    assert "block not computed (the block rule's exact mean would follow at least" in said
    assert "(400 words, τ = 8; exact up to 1,000,000): fewer words or a smaller τ)" in said
    assert queues["turns"] == ["step"]


def test_a_race_is_one_heavy_job_each_piece_in_a_turn_of_its_own_and_stops_with_its_tab(loads, queues, monkeypatch):
    """Class mode: the Race takes one heavy-job slot, its set-up one heavy turn, every piece of work (a speculative
    step or a token of the target alone) a heavy turn of its own, so the class's Steps go between; the pair's costs
    one more. Its tab closed as the fourth heavy turn is asked for: that turn refused, nothing after it, no traceback,
    the slot given back."""
    from pages._serving import compute as _compute

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/race.py").run()
    at.number_input(key="race_max_new").set_value(6)
    queues["turns"].clear()
    queues["slots"].clear()
    at.button(key="race_start").click().run()
    assert not at.exception and len(queues["slots"]) == 1
    heavy = queues["turns"].count("heavy")
    assert heavy >= 2 + 6 + 1  # set-up, at least one piece per token of the target alone, the pair's costs
    queues["turns"].clear()
    monkeypatch.setattr(_compute, "alive", lambda: lambda: queues["turns"].count("heavy") < 4)
    at.button(key="race_start").click().run()
    assert not at.exception and queues["turns"].count("heavy") == 4  # the fourth refused: the race stopped there

    def busy(ahead: int) -> None:
        raise AssertionError(f"{ahead} heavy job(s) still hold the server's one slot")

    with _compute._slots().hold(busy, owners=queues["slots"][-1]):  # given back: taken at once, nobody ahead
        pass


@pytest.fixture
def class_share(tmp_path, monkeypatch):
    """Class mode with two tabs and one run a student (the AppTests send no cookie: each is counted by its address,
    the same for all of them, as one student), and a lecturer's key. AppTest gives every app the same session id: each
    AppTest here is a tab of its own by an id kept in its session state."""
    import uuid

    import streamlit as st

    from pages._serving import config as _server
    from pages._serving import share as _share

    monkeypatch.setattr(_share, "session_id", lambda: st.session_state.setdefault("test_tab", uuid.uuid4().hex))
    path = tmp_path / "class.toml"
    path.write_text('[class]\ntabs_per_student = 2\nruns_per_student = 1\nlecturer_key = "k"\n')
    monkeypatch.setenv(config.CLASS_MODE_ENV, "1")
    monkeypatch.setenv(config.CLASS_SETTINGS_ENV, str(path))
    _server.forget()
    st.cache_resource.clear()
    yield
    _server.forget()


def test_a_students_tabs_and_runs_are_bounded_and_the_lecturer_is_not(loads, class_share):
    """Issue 68.1: one student's second tab may not open a second run (refused in the student's own words, the run on
    screen kept), their third tab is refused outright; the lecturer's tabs and runs are not counted."""
    tabs = [AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run() for _ in range(2)]
    tabs[0].button(key="decode_step").click().run()
    assert not tabs[0].exception and len(decoder(tabs[0]).steps) == 1
    tabs[1].button(key="decode_step").click().run()
    (said,) = [e.value for e in tabs[1].error if e.value.startswith("**Cannot start a new run.**")]
    assert "you have 1 runs open in your other tabs, the most one student may have (1)" in said
    assert tabs[1].session_state["decode_stepper"].decoder is None
    third = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    (refused,) = [w.value for w in third.warning]
    assert refused.startswith("class mode: you have 2 tabs of this app open already") and not third.button
    lecturer = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    lecturer.query_params.update(lecturer="k")
    lecturer.run().button(key="decode_step").click().run()
    assert not lecturer.exception and len(decoder(lecturer).steps) == 1


def test_a_browser_is_its_xsrf_cookies_token_whatever_its_mask():
    """Tornado writes its XSRF cookie as "2|mask|token XOR mask|time": the student key is the token, the same for two
    masks of it; a cookie in another form is itself."""
    from specviz.server.quotas import browser_token

    token = bytes.fromhex("00112233445566778899aabbccddeeff")

    def written(mask: bytes) -> str:
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
        return f"2|{mask.hex()}|{masked.hex()}|1764000000"

    assert browser_token(written(b"\x01\x02\x03\x04")) == browser_token(written(b"\xff\x00\xaa\x55")) == token.hex()
    assert browser_token("plain-cookie") == "plain-cookie" and browser_token("2|zz|yy|1") == "2|zz|yy|1"


def test_the_lecturers_run_takes_a_students_run_memory_and_the_student_is_told(loads, class_share, monkeypatch):
    """Issue 68.1: a budget that holds one run and a half of the tiny pair: a student's run holds it; the lecturer's run
    is not refused but takes that run's memory (the student's run given back); the student's tab says so once, and
    their next Step starts a new run. (The tiny pair is loaded by the `loads` fixture, outside the store: its planned
    parts are none, so the budget counts the runs alone.)"""
    from pages._serving import pairs as _pairs
    from pages._serving import share as _share

    monkeypatch.setattr(_pairs, "planned_parts", lambda *args, **kwargs: [])
    student_tab = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    student_tab.button(key="decode_step").click().run()
    assert not student_tab.exception and len(decoder(student_tab).steps) == 1
    one_run = _share.quotas().runs_bytes()
    assert one_run > 0
    _share.quotas().budget_bytes = int(1.5 * one_run)
    lecturer = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    lecturer.query_params.update(lecturer="k")
    lecturer.run().button(key="decode_step").click().run()
    assert not lecturer.exception and not lecturer.error and len(decoder(lecturer).steps) == 1
    assert student_tab.session_state["decode_stepper"].decoder is None  # given back
    assert _share.quotas().runs_bytes() == one_run  # the lecturer's alone
    student_tab.run()
    assert any(i.value.startswith("Your run was given back to make room on the server") for i in student_tab.info)
    student_tab.run()
    assert not any(i.value.startswith("Your run was given back") for i in student_tab.info)  # said once
