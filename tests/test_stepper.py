"""The Decode page's controls (specviz.server.stepper): every click queued and taken in order, a run
stopped halfway going on where it stopped, stale settings starting a new run, a replay stepped the same way."""

from __future__ import annotations

import pytest

from specviz import Decoder, SpecConfig
from specviz.classroom.replay import Replay
from specviz.server.stepper import LiveRun, Note, ReplayRun, Stepper
from tests.helpers import hf_pair

PAIR = hf_pair()


def starter(settings, started: list):
    def start():
        decoder = Decoder(PAIR, [5, 6, 7], SpecConfig(tau=2, seed=settings, max_new_tokens=12))
        started.append(decoder)
        return decoder

    return start


def step(decoder) -> bool:
    decoder.step()
    return True


class Stopped(BaseException):
    """What Streamlit raises in a script run that a new click stops (its control exceptions are BaseExceptions)."""


def test_twelve_quick_clicks_are_twelve_actions_in_order():
    stepper, started = Stepper(), []
    for _ in range(3):
        stepper.press("step")
    notes = stepper.process(LiveRun(settings=0, start=starter(0, started), step=step))
    assert len(started) == 1 and len(stepper.decoder.steps) == 3 and not stepper.queue
    assert notes == [Note("toast", "3 clicks taken, one after another.")]
    for action in (
        "step",
        "back",
        "back",
        "back",
        "back",
        "back",
    ):  # five Backs from 4 steps: the fifth finds the start
        stepper.press(action)
    notes = stepper.process(LiveRun(settings=0, start=starter(0, started), step=step))
    assert len(stepper.decoder.steps) == 0 and Note("toast", "Already at the start of the run.") in notes
    for _ in range(12):  # more Steps than the run has: it finishes, and says so once
        stepper.press("step")
    notes = stepper.process(LiveRun(settings=0, start=starter(0, started), step=step))
    finished = [n for n in notes if n.kind == "info"]
    assert stepper.decoder.done and len(finished) == 1 and "has finished (max_new_tokens)" in finished[0].text
    assert len(started) == 1  # the same run throughout


def test_a_run_stopped_by_a_new_click_goes_on_where_it_stopped():
    alone = Decoder(PAIR, [5, 6, 7], SpecConfig(tau=2, seed=0, max_new_tokens=12)).run()
    stepper, started, calls = Stepper(), [], []

    def interrupted(decoder) -> bool:  # the second step of this script run is stopped by a click
        calls.append(1)
        if len(calls) == 2:
            raise Stopped
        return step(decoder)

    stepper.press("run")
    with pytest.raises(Stopped):
        stepper.process(LiveRun(settings=0, start=starter(0, started), step=interrupted))
    assert stepper.queue == ["run"] and len(stepper.decoder.steps) == 1  # Run to end still waits, one step done
    stepper.press("back")  # the click that stopped it
    stepper.process(LiveRun(settings=0, start=starter(0, started), step=step))
    assert len(started) == 1 and stepper.queue == []
    made = [(s.draft_tokens, s.r, s.emitted) for s in stepper.decoder.trace().steps]
    assert made == [(s.draft_tokens, s.r, s.emitted) for s in alone.steps[:-1]]  # ran to the end, then one back


def test_changed_settings_start_a_new_run_and_a_failed_step_drops_the_clicks_after_it():
    stepper, started = Stepper(), []
    stepper.press("step")
    stepper.process(LiveRun(settings=0, start=starter(0, started), step=step))
    assert not stepper.stale(0) and stepper.stale(1)
    stepper.press("step")
    stepper.process(LiveRun(settings=1, start=starter(1, started), step=step))
    assert len(started) == 2 and stepper.settings == 1 and len(stepper.decoder.steps) == 1
    for action in ("step", "step", "step"):
        stepper.press(action)
    assert (
        stepper.process(LiveRun(settings=1, start=starter(1, started), step=lambda d: False)) == []
        and stepper.queue == []
    )
    stepper.press("reset")
    stepper.process(LiveRun(settings=1, start=starter(1, started), step=step))
    assert len(started) == 3 and not stepper.decoder.steps
    failed = Stepper()
    failed.press("step")
    failed.process(
        LiveRun(settings=0, start=lambda: None, step=step)
    )  # a run that cannot start: nothing kept, nothing queued
    assert failed.decoder is None and failed.queue == []


def test_a_replay_takes_the_same_clicks():
    saved = Decoder(PAIR, [5, 6, 7], SpecConfig(tau=2, seed=0, max_new_tokens=12)).run()
    replay, stepper = Replay(saved), Stepper()
    for action in ("step", "step", "back", "run"):
        stepper.press(action)
    stepper.process(ReplayRun(trace=replay))
    assert replay.done and replay.trace() == saved
    stepper.press("reset")
    stepper.process(ReplayRun(trace=replay))
    assert replay.cursor == 0
    with pytest.raises(ValueError):
        stepper.press("jump")
