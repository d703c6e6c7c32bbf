"""Pieces of a long computation (specviz.core.pieces): a lesson's run, a race, a measurement let a server's Steps go
between their pieces, never inside a timed one, stop at the next piece once their session has ended, and compute
exactly what they compute without pieces."""

from __future__ import annotations

import contextlib
import threading

import pytest

from specviz.analysis import clock
from specviz.analysis.measure import paired_run
from specviz.analysis.race import Race
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.core.pieces import in_pieces, piece
from specviz.errors import SessionEndedError
from tests.helpers import hf_pair

PROMPT = [1, 2, 3, 4]


class Recorder:
    """A turn that notes when it is taken and given back, and a timer that notes when its clock runs."""

    def __init__(self, refuse_after: int | None = None) -> None:
        self.events: list[str] = []
        self.refuse_after = refuse_after

    @contextlib.contextmanager
    def turn(self):
        if self.refuse_after is not None and self.events.count("take") >= self.refuse_after:
            raise SessionEndedError("the session has ended")
        self.events.append("take")
        try:
            yield
        finally:
            self.events.append("give")

    def timer(self) -> clock.Timer:
        events = self.events

        class Noting(clock.Timer):
            def time(self, work, what="", tokens=1, threads=1):
                events.append("clock")
                try:
                    return super().time(work, what, tokens, threads)
                finally:
                    events.append("stop")

        return Noting(judge=False)


@pytest.fixture(scope="module")
def pair():
    return hf_pair()


def run(pair, steps: int | None = None) -> Decoder:
    dec = Decoder(pair, PROMPT, SpecConfig(tau=3, max_new_tokens=12, seed=5))
    while not dec.done and (steps is None or len(dec.steps) < steps):
        dec.step()
    return dec


def test_outside_in_pieces_a_piece_takes_no_turn_and_inside_only_the_outermost_does():
    taken = Recorder()
    with piece(), piece():
        pass
    assert taken.events == []
    with in_pieces(taken.turn):
        with piece(), piece():  # inside a piece: its parent's turn
            assert taken.events == ["take"]
        with piece():
            pass
    assert taken.events == ["take", "give", "take", "give"]
    with piece():  # after the block: none again
        pass
    assert len(taken.events) == 4


def test_each_step_is_one_turn_and_the_trace_is_the_same_as_without(pair):
    alone = run(pair)
    taken = Recorder()
    with in_pieces(taken.turn):
        pieced = run(pair)
    assert pieced.trace().outcome() == alone.trace().outcome()  # every token, q, p, r and decision
    # reading the prompt, then each step: one turn each, one after another, none inside another
    assert taken.events == ["take", "give"] * (1 + len(alone.steps))
    assert len(alone.steps) >= 3


def test_a_run_whose_session_ended_stops_at_its_next_piece(pair):
    taken = Recorder(refuse_after=3)  # the prompt and two steps, then the session is gone
    dec = None
    with in_pieces(taken.turn), pytest.raises(SessionEndedError):
        dec = Decoder(pair, PROMPT, SpecConfig(tau=3, max_new_tokens=12, seed=5))
        while not dec.done:
            dec.step()
    assert dec is not None and len(dec.steps) == 2
    assert taken.events == ["take", "give"] * 3


def test_no_turn_is_waited_for_while_a_clock_runs(pair):
    """A timed piece (a step and the target alone's same tokens, a race's frame) holds its turn from before its clock
    starts to after it stops: a wait for the class's Steps is never counted as the piece's time."""
    taken = Recorder()
    config = SpecConfig(tau=3, max_new_tokens=12, seed=5)
    with in_pieces(taken.turn):
        paired_run(pair, PROMPT, config, timer=taken.timer())
        race = Race(pair, PROMPT, config, timer=taken.timer())
        race.run()
    held, clocks = False, 0
    for event in taken.events:
        if event == "take":
            held = True
        elif event == "give":
            held = False
        elif event == "clock":
            assert held, taken.events
            clocks += 1
    assert clocks >= 2 * 3 + 2 * 3  # both sides of at least three steps, in both
    timed = "".join({"take": "(", "give": ")", "clock": "<", "stop": ">"}[e] for e in taken.events)
    assert "<(" not in timed and "<)" not in timed  # nothing taken or given back while a clock runs


def test_each_thread_keeps_its_own_choice(pair):
    """Two sessions on one server compute in two threads: one's pieces never take the other's turns."""
    taken = Recorder()
    other: list[int] = []

    def elsewhere() -> None:
        other.append(len(run(pair).steps))

    with in_pieces(taken.turn):
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    assert other and other[0] >= 3
    assert taken.events == []
