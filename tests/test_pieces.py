"""Pieces of a long computation (specviz.pieces): a lesson's run, a race, a measurement let a server's Steps go
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
from specviz.errors import SessionEndedError
from specviz.pieces import held, in_pieces, piece
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


def test_inside_a_turn_the_caller_took_and_marked_held_a_piece_takes_none():
    """A page that takes a turn itself (a Step, Run to end's steps) and computes pieces inside it: taking the turn
    again would wait for itself where the server serves one turn at a time."""
    taken = Recorder()
    with in_pieces(taken.turn):
        with taken.turn(), held(), piece(), piece():  # the caller's own turn, then two pieces inside it
            pass
        with piece():  # after it: a turn of its own again
            pass
    assert taken.events == ["take", "give", "take", "give"]


def test_a_sweep_and_a_rules_comparison_take_a_turn_a_step():
    """A sweep's runs (each step beside the target alone) and a rules comparison's runs: reading the prompt and each
    step one turn, none inside another, the same runs as without turns."""
    from specviz import HFCodec, HFModel, ModelPair
    from specviz.analysis.rules_compare import compare_rules
    from specviz.analysis.sweep import Sweep, SweepSettings
    from tests.helpers import tiny_llama, word_tokenizer

    pair = ModelPair(HFModel(tiny_llama(0), "t"), HFModel(tiny_llama(1, layers=1), "d"), HFCodec(word_tokenizer(), "w"))
    taken = Recorder()
    settings = SweepSettings(taus=(2, 3), prompts=("w1 w2",), max_new_tokens=10)
    with in_pieces(taken.turn):
        sweep = Sweep(pair, settings)
        assert [done for done, _, _ in sweep.advance()] == [1, 2]
    runs = sweep.result().runs
    assert taken.events == ["take", "give"] * sum(len(r.steps) + 1 for r in runs)
    counts = lambda rs: [[(s.tau, s.n_accepted, s.beta, s.emitted) for s in r.steps] for r in rs]  # noqa: E731
    assert counts(runs) == counts(Sweep(pair, settings).run().runs)  # the same runs as without turns

    taken = Recorder()
    with in_pieces(taken.turn):
        pieced = compare_rules(pair, ["w1"], [2], max_new_tokens=8)
    alone = compare_rules(pair, ["w1"], [2], max_new_tokens=8)
    assert pieced == alone
    assert taken.events.count("take") >= 1 + 2 and "take,take" not in ",".join(taken.events)


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


def test_a_long_prompt_on_llama_cpp_makes_way_between_its_passes_and_reads_the_same(tmp_path):
    """The tiny GGUF reads a prompt of 1,100 tokens in three passes of at most 512: inside `making_way(aside)`,
    `aside` is called between them (twice: never before the first or after the last), and the logits and features
    are the same bits as without; an aside that raises (the session ended) stops the reading there."""
    import torch

    from specviz.models import llamacpp
    from specviz.pieces import making_way
    from tests.helpers import write_tiny_gguf

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    model = llamacpp.LlamaCppModel(write_tiny_gguf(tmp_path / "tiny.gguf", context=2048), "tiny", context=2048)
    prompt = [(7 * i) % 300 + 3 for i in range(1_100)]
    plain = model.new_session(tokens=1_200)
    expected = plain.extend(prompt, keep=3)
    calls = []
    session = model.new_session(tokens=1_200)
    with making_way(lambda: calls.append("aside")):
        got = session.extend(prompt, keep=3)
    assert len(calls) == 2 and torch.equal(got, expected)
    assert torch.equal(session.features(0, 1_100), plain.features(0, 1_100))

    def ended():
        raise SessionEndedError("the tab closed")

    stopped = model.new_session(tokens=1_200)
    with pytest.raises(SessionEndedError), making_way(ended):
        stopped.extend(prompt, keep=3)
    for s in (plain, session, stopped):
        s.close()
    model.close()
