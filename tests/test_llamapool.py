"""Runs sharing llama.cpp decodes (specviz.models.llamapool): the same numbers bit for bit as the same runs in
contexts of their own, stepped alone, whatever runs beside them; streams leased, given back and reused; a run
that does not fit, or a token tree, gets a context of its own; a class server steps several runs at once so that
their passes meet (specviz.server.turns, `width`)."""

import gc
import threading

import pytest
import torch

import specviz
from specviz import Decoder, SpecConfig
from specviz.errors import ModelError
from specviz.models import llamacpp, llamapool
from specviz.models.llamapool import BATCH, PooledSession, SlotPool, line_up
from specviz.server.config import ServerConfig
from specviz.server.turns import Turns

PROMPTS = (
    "Write a long story about a robot who learns to paint.",
    "List ten facts about the ocean.",
    "Explain how a rainbow forms, step by step.",
    "Hi",
)


def test_several_turns_at_once_keep_their_order(monkeypatch):
    """width 2: two hold at once, a third waits; a waiting Step still goes before a waiting heavy unit."""
    turns, inside, most, order = Turns(width=2), [0], [0], []
    gate = threading.Event()

    def hold(kind, name):
        with turns.take(kind):
            order.append(name)
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            gate.wait(5)
            inside[0] -= 1

    first = [threading.Thread(target=hold, args=("step", f"s{i}")) for i in range(2)]
    for t in first:
        t.start()
    while turns.waiting < 2:
        pass
    later = [threading.Thread(target=hold, args=("heavy", "h")), threading.Thread(target=hold, args=("step", "s2"))]
    later[0].start()
    while turns.waiting < 3:
        pass
    later[1].start()
    while turns.waiting < 4:
        pass
    gate.set()
    for t in first + later:
        t.join(10)
    assert most[0] == 2 and set(order[:2]) == {"s0", "s1"} and order[2:] == ["s2", "h"]


def test_slots_are_read_from_the_environment_and_on_by_default_under_a_class_guard(monkeypatch):
    made = []
    monkeypatch.setattr(
        llamacpp, "SlotPool", lambda owner, slots, tokens, threads: made.append((slots, tokens)) or made
    )

    class Owner:  # the model's pool() without loading a model
        context, threads = 2048, 1
        pool = llamacpp.LlamaCppModel.pool

        def __init__(self, settings: llamacpp.LlamaSettings, class_on: bool):  # as load_pair hands them
            self._pool_lock, self._pool = threading.Lock(), None
            self.slots, self.slot_tokens = settings.slots_for(class_on), settings.slot_tokens

    def server(env: dict[str, str]) -> llamacpp.LlamaSettings:
        return ServerConfig.from_environ(env).llama

    assert Owner(server({}), class_on=False).pool() is None  # one person: no shared context
    Owner(server({}), class_on=True).pool()  # what load_pair asks for under a class's rules (its guard)
    assert made[-1] == (96, 512)  # class mode: 96 runs of 512 tokens
    Owner(server({llamacpp.SLOTS_ENV: "4", llamacpp.SLOT_TOKENS_ENV: "300"}), class_on=True).pool()
    assert made[-1] == (4, 300)
    assert Owner(server({llamacpp.SLOTS_ENV: "0"}), class_on=True).pool() is None  # class mode without it
    Owner(server({llamacpp.SLOTS_ENV: "2"}), class_on=False).pool()  # the operator's count, one person or a class
    assert made[-1] == (2, 512)
    with pytest.raises(ModelError, match="SPECVIZ_LLAMA_SLOTS='many': set it to a whole number of runs, 0 or more"):
        server({llamacpp.SLOTS_ENV: "many"})


def test_streams_side_by_side_need_no_copy():
    assert line_up([4, 3, 5], held=[3, 4, 5, 9], slots=12) == []
    assert line_up([7], held=[7], slots=12) == []


def test_a_member_moves_into_a_free_stream_of_the_cheapest_window():
    # slots 0-3, streams 0 and 2 held by the runs to line up: window 0-1 needs one copy (2 into the free 1)
    assert line_up([2, 0], held=[0, 2], slots=4) == [(2, 1)]
    # stream 1 another run's: 0-1 and 1-2 each need it moved out and a member in (2 copies); 2-3 one copy
    assert line_up([0, 2], held=[0, 1, 2], slots=4) == [(0, 3)]
    # runs in 0, 2, 4 of five, 1 another's, 3 free: 0-2 costs two copies, 1-3 three, 2-4 one (0 into 3)
    assert line_up([0, 2, 4], held=[0, 1, 2, 4], slots=5) == [(0, 3)]


def test_another_runs_stream_in_the_way_moves_out_first():
    # runs in 0 and 2, 1 and 3 others', 4 free: every window of two holds another's stream but 3-4 (another's and a
    # free one: three copies); 0-1 costs two (1 out to 4, then 2 into 1) and is the lowest of the cheapest
    assert line_up([0, 2], held=[0, 1, 2, 3], slots=5) == [(1, 4), (2, 1)]


def test_nothing_moves_when_no_stream_is_free_to_move_another_into():
    assert line_up([0, 2], held=[0, 1, 2], slots=3) == []


# --- the real model ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(embedded_cache):
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    return specviz.load_pair("embedded", "embedded", runtime="llama.cpp")


def _run(pair, i: int, steps: int = 10) -> Decoder:
    config = SpecConfig(max_new_tokens=64, seed=i, tau=3 + i % 3, mode="textbook" if i % 4 else "lossless")
    dec = Decoder(pair, PROMPTS[i % len(PROMPTS)], config, compare_rules=True)
    for _ in range(steps):
        if dec.done:
            break
        dec.step()
    if i % 2:  # Back, then the same Step again
        dec.undo()
        dec.step()
    return dec


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_runs_sharing_decodes_equal_their_runs_alone(pair, monkeypatch):
    """Eight runs stepped at once in eight threads, six in a pool's streams (so that two get contexts of their
    own), twice (the streams given back and reused): every trace equals the same run stepped alone in a context
    of its own, bit for bit; and the pool did batch (fewer decodes than passes)."""
    alone = [_run(pair, i).trace().outcome() for i in range(8)]
    pool = SlotPool(pair.target, 6, 512, pair.target.threads or llamacpp.default_threads())
    monkeypatch.setattr(pair.target, "_pool", pool)
    held: dict[str, list] = {}

    def step(i):
        held["runs"][i] = _run(pair, i)

    for _ in range(2):
        runs = held["runs"] = [None] * 8
        threads = [threading.Thread(target=step, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        kinds = [type(r._target).__name__ for r in runs]
        assert kinds.count("PooledSession") == 6 and kinds.count("LlamaCppSession") == 2
        for i, run in enumerate(runs):
            assert run.trace().outcome() == alone[i], f"run {i} differs from its run alone"
        del runs, threads, run
        held.clear()
        gc.collect()  # the sessions give their streams back
    assert pool.passes > pool.decodes  # passes met in decodes
    assert pool.lease() is not None  # every stream free again


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_streams_leased_given_back_and_what_does_not_fit(pair, monkeypatch):
    pool = SlotPool(pair.target, 2, 256, 1)
    monkeypatch.setattr(pair.target, "_pool", pool)
    a, b = pair.target.new_session(200, linear=True), pair.target.new_session(200, linear=True)
    assert isinstance(a, PooledSession) and isinstance(b, PooledSession) and a.seq != b.seq
    assert not isinstance(pair.target.new_session(200, linear=True), PooledSession)  # every stream taken
    assert not isinstance(pair.target.new_session(300, linear=True), PooledSession)  # more than a stream holds
    assert not isinstance(pair.target.new_session(200), PooledSession)  # a token tree's run
    tree = Decoder(pair, PROMPTS[0], SpecConfig(topk=2, steps=2, num_draft_tokens=4, max_new_tokens=8))
    assert not isinstance(tree._target, PooledSession)
    seq = a.seq
    logits = a.extend([1, 2, 3, 4, 5])
    a.crop(2)
    assert torch.equal(a.extend([3, 4, 5]), logits[2:])  # a crop drops the stream's tail only
    with pytest.raises(ValueError, match="at most 256 tokens"):
        a.extend(list(range(300)))
    with pytest.raises(ValueError, match=f"a pass holds 1 to {BATCH} tokens"):
        pool.decode(a.stream, [], 1)
    del a
    gc.collect()
    c = pair.target.new_session(100, linear=True)
    assert isinstance(c, PooledSession) and c.seq == seq  # the stream given back, emptied, reused
    assert torch.equal(c.extend([1, 2, 3, 4, 5]), logits)  # as fresh as a new context


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_a_prompt_decoded_once_is_copied_for_the_next_run_that_starts_with_it(pair, monkeypatch):
    """A class opens one link: the prompt is decoded for the first run and its stream copied for every next run
    that starts with it (prefix caching, as llama.cpp's server does): those runs equal their runs alone in
    contexts of their own, bit for bit, whatever their seed, τ and mode; another prompt is decoded; and when runs
    need every stream, the kept prompt gives its stream up."""
    alone = [_run(pair, i).trace().outcome() for i in (0, 4, 1)]
    pool = SlotPool(pair.target, 4, 512, pair.target.threads or llamacpp.default_threads())
    monkeypatch.setattr(pair.target, "_pool", pool)
    first = _run(pair, 0)  # decodes PROMPTS[0] and keeps a copy in a second stream
    assert pool.prefix_hits == 0 and len(pool._prefixes) == 1
    second = _run(pair, 4)  # PROMPTS[0] again, another seed, τ and mode: copied, not decoded
    assert pool.prefix_hits == 1
    third = _run(pair, 1)  # another prompt: decoded (no stream left to keep it in)
    assert pool.prefix_hits == 1 and len(pool._prefixes) == 1
    runs = (first, second, third)
    assert all(isinstance(r._target, PooledSession) for r in runs)
    for i, run in enumerate(runs):
        assert run.trace().outcome() == alone[i], f"run {i} differs from its run alone"
    assert pool.lease() is not None and not pool._prefixes  # a run needs the last stream: the copy goes


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_runs_in_scattered_streams_are_lined_up_for_one_decode_and_keep_their_numbers(pair, monkeypatch):
    """Three runs in streams 0, 2 and 4 of six, two other runs in 1 and 3, whose passes wait together: the pool
    moves the run in 1 out to the free 5 and the run in 4 into 1, so that one decode holds streams 0-2; every run's
    logits, the moved ones' later passes included, equal the same tokens in a context of its own, bit for bit."""
    monkeypatch.setattr(llamapool, "PREFIXES", 0)  # no kept prompt takes a stream
    pool = SlotPool(pair.target, 6, 256, 1)
    monkeypatch.setattr(pair.target, "_pool", pool)
    runs = [pair.target.new_session(200, linear=True) for _ in range(5)]  # streams 0-4
    assert [r.seq for r in runs] == [0, 1, 2, 3, 4]
    prompts = [[10 + 7 * i + j for j in range(12 + i)] for i in range(5)]
    alone = [pair.target.new_session(200) for _ in range(5)]
    for run, solo, prompt in zip(runs, alone, prompts, strict=True):
        assert torch.equal(run.extend(prompt), solo.extend(prompt))
    decoded = []
    run_group = pool._run
    monkeypatch.setattr(pool, "_run", lambda group: decoded.append([p.stream.seq for p in group]) or run_group(group))
    lined, out = [runs[0], runs[2], runs[4]], {}
    steps = {id(r): [3 + i, 4, 5, 6, 7] for i, r in enumerate(runs)}
    with pool._cond:
        pool._busy = True  # as if a decode ran: the three passes wait for it together
    threads = [threading.Thread(target=lambda r=r: out.__setitem__(id(r), r.extend(steps[id(r)]))) for r in lined]
    for t in threads:
        t.start()
    while len(pool._waiting) < 3 and all(t.is_alive() for t in threads):
        pass
    with pool._cond:
        pool._busy = False
        pool._cond.notify_all()
    for t in threads:
        t.join(60)
    assert decoded == [[0, 1, 2]] and pool.moves == 2
    assert [r.seq for r in runs] == [0, 5, 2, 3, 1]  # the other run in 1 went to 5, the run in 4 came to 1
    for i in (0, 2, 4):
        assert torch.equal(out[id(runs[i])], alone[i].extend(steps[id(runs[i])])), f"run {i} changed"
    for i, (run, solo) in enumerate(zip(runs, alone, strict=True)):  # every run's next pass, the moved ones' too
        assert torch.equal(run.extend([50 + i, 51]), solo.extend([50 + i, 51])), f"run {i}'s cells changed"
