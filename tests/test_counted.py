"""Count, then cost (issue 63): a pair's calibration kept on disk per machine and read back by a later book, counted
work at the kept costs, and the ceiling with what α and c cost of it, every number worked out by hand."""

from __future__ import annotations

import json

import pytest

from specviz.analysis.clock import FakeTimer
from specviz.analysis.counted import Costed, Work, costed, uncosted
from specviz.analysis.measure import Spread
from specviz.analysis.pairtimes import FILE, PairTimings, TimingBook, measure_pair, runtime_build
from specviz.analysis.theory import ceiling
from specviz.core.metrics import StepCount
from specviz.models.pair import ModelPair
from tests.helpers import fake_ms, tiny_text_pair


def timings_of(passes: dict[int, float], draft: float, **kw) -> PairTimings:
    """Timings with the given medians (their IQR a point), as a quiet calibration keeps them."""
    point = lambda ms: Spread(ms, ms, ms, 5, "median")  # noqa: E731
    fields = {
        "target": "t",
        "draft": "d",
        "runtime": "torch",
        "threads": 1,
        "context": 40,
        "quiet": True,
        "at": 1_000_000.0,
        "machine": "a CPU, 2 cores",
        "build": runtime_build("torch"),
        **kw,
    }
    return PairTimings(passes_ms={k: point(v) for k, v in passes.items()}, draft_ms=point(draft), **fields)


def test_the_ceiling_and_what_alpha_and_c_cost_of_it_worked_by_hand():
    """docs/algorithm.md's example, α = 0.8, c = 0.05, τ = 4, v(5) = 2.5: E = (1 − 0.8⁵)/0.2 = 0.67232/0.2 = 3.3616.
    Ceiling (τ + 1)/v = 5/2.5 = 2.0; with α: E/v = 1.34464; with c too: E/(4 · 0.05 + 2.5) = 3.3616/2.7 = 1.24504
    (the docs' S_v = 1.25). Lost: 2.0 − 1.24504 = 0.75496, of it α's 0.65536 (86.8%) and c's 0.09960 (13.2%)."""
    split = ceiling(4, 2.5, 0.05, alpha=0.8)
    assert split.tokens_per_pass == pytest.approx(3.3616)
    assert split.ceiling == pytest.approx(2.0)
    assert split.with_alpha == pytest.approx(1.34464)
    assert split.with_c == pytest.approx(1.245037, rel=1e-5)
    assert split.alpha_share == pytest.approx(0.65536 / 0.754963, rel=1e-5)
    words = split.words()
    assert words.startswith("A perfect draft that costs nothing would give 2.00× here ((τ + 1)/v(τ + 1) = 5/2.50)")
    assert "E = 3.36 tokens a pass, 1.34× (E/v(τ + 1)): α costs 0.66×" in words
    assert "τ·c = 4 × 0.05 = 0.20 one-token passes a step, 1.25× (E/(τ·c + v(τ + 1))): c costs 0.10×" in words
    assert words.endswith("Of what is lost, 87% is α's and 13% c's.")
    # the Intel numbers: v(6) = 1.59 at τ = 5, a draft right every time (6 tokens a pass) at c = 0.53:
    # ceiling 6/1.59 = 3.774×, nothing lost to α, 6/(5 · 0.53 + 1.59) = 6/4.24 = 1.415× after c: all of it c's
    q8 = ceiling(5, 1.59, 0.53, tokens_per_pass=6.0)
    assert (q8.ceiling, q8.with_alpha, q8.with_c) == pytest.approx((3.7736, 3.7736, 1.4151), rel=1e-4)
    assert q8.alpha_share == pytest.approx(0.0)
    with pytest.raises(ValueError):
        ceiling(4, 0.0, 0.1, alpha=0.5)


def test_counted_work_at_the_kept_costs_worked_by_hand():
    """T(k) = 10 + 2(k − 1) ms (T(4) = 16: v(4) = 1.6), a draft forward 1 ms (c = 0.1). Three steps at τ = 3
    emitting 4, 2 and 1 tokens: 7 tokens in 3 passes of 4 tokens, 9 draft tokens. Speculation: 3 · 1.6 + 9 · 0.1 =
    5.7 one-token passes against the target alone's 7: 7/5.7 = 1.228×; at T(1) = 10 ms 7/57 ms = 122.8 tokens/s
    against 100."""
    timings = timings_of({k: fake_ms("pass", k) for k in (1, 2, 3, 4, 5)}, fake_ms("draft", 1))
    steps = [StepCount(3, n, (), tuple(range(n + 1)), 0.0, 0.0) for n in (3, 1, 0)]
    result = costed(steps, timings)
    assert result.work == Work(tokens=7, pass_tokens=(4, 4, 4), drafted=9)
    assert (result.verify_units, result.draft_units, result.units) == pytest.approx((4.8, 0.9, 5.7))
    assert result.speedup == pytest.approx(7 / 5.7)
    assert result.tokens_per_second == pytest.approx(7000 / 57) and result.alone_tokens_per_second == 100
    sentence = result.sentence()
    assert sentence.startswith("1.23× the target alone, from counted work at the pair's kept costs: 7 tokens in 3 ")
    assert "the calibration kept" in sentence and "torch (1 thread), a CPU, 2 cores" in sentence
    # the ceiling at τ = 3 from the kept v(4) = 1.6, E the counted 7/3 tokens a pass: 4/1.6 = 2.5×, 2.333/1.6 = 1.458×,
    # 2.333/(0.3 + 1.6) = 1.228× (the counted speedup: every step drafted τ)
    split = result.ceiling(3)
    assert (split.ceiling, split.with_alpha, split.with_c) == pytest.approx((2.5, 7 / 3 / 1.6, 7 / 3 / 1.9))
    assert uncosted(result.work).startswith("Counted: 7 tokens in 3 target passes (2.33 a pass), 9 draft forwards.")
    assert "one quiet minute of calibration" in uncosted(result.work)
    assert Costed(work=Work(tokens=0, pass_tokens=(), drafted=0), timings=timings).speedup == 0.0


def test_a_tree_pays_one_draft_forward_per_level_worked_by_hand():
    """T(k) = 10 + 2(k − 1) ms (T(7) = 22: v(7) = 2.2), a draft forward 1 ms (c = 0.1). Three tree steps of 6 nodes
    grown in 3 levels, emitting 3, 1 and 2 tokens: 6 tokens in 3 passes of 7 tokens. Speculation: 3 · 2.2 + 9 · 0.1
    = 7.5 one-token passes (9 draft forwards, one a level; not 18, one a node): 6/7.5 = 0.8× the target alone."""
    timings = timings_of({k: fake_ms("pass", k) for k in range(1, 8)}, fake_ms("draft", 1))
    steps = [StepCount(3, n - 1, (), tuple(range(n)), 0.0, 0.0, nodes=6, depth=3, draft_passes=3) for n in (3, 1, 2)]
    result = costed(steps, timings)
    assert result.work == Work(tokens=6, pass_tokens=(7, 7, 7), drafted=9)
    assert (result.verify_units, result.draft_units) == pytest.approx((6.6, 0.9))
    assert result.speedup == pytest.approx(0.8)


def test_a_calibration_is_kept_on_disk_and_read_back_by_a_later_book_on_the_same_machine(tmp_path):
    """One book measures the tiny pair quietly (a FakeTimer) and keeps it in its folder; a new book on the same folder
    (a later process) reads it back whole. A measurement made while another process held a core is not kept; another
    machine's or another build's record, or a damaged file, is never read as this machine's."""
    base = tiny_text_pair()
    pair = ModelPair(base.target, base.target, base.codec)
    ids = pair.codec.encode(" ".join(f"w{i}" for i in range(30)))
    first = TimingBook(tmp_path)
    kept = first.measure(pair, ids, ks=(1, 4), repeats=3, timer=FakeTimer(fake_ms))
    assert kept.quiet and first.get(pair) is kept and (tmp_path / FILE).exists()
    later = TimingBook(tmp_path)
    assert later.get(pair) == kept and later.get(pair).v(4) == pytest.approx(1.6)
    assert later.get(pair).label().startswith("the calibration kept just now on torch (1 thread), ")
    busy = measure_pair(pair, ids, ks=(1, 4), repeats=3, timer=FakeTimer(lambda w, k: 3 * fake_ms(w, k), others=1.0))
    assert not busy.quiet and not later.keep(busy) and TimingBook(tmp_path).get(pair) == kept
    slower = FakeTimer(lambda w, k: 2 * fake_ms(w, k))
    again = TimingBook(tmp_path).measure(pair, ids, ks=(1, 4), repeats=3, timer=slower)
    assert TimingBook(tmp_path).get(pair) == again != kept  # "Measure again" replaces it
    assert len(json.loads((tmp_path / FILE).read_text())) == 1
    records = json.loads((tmp_path / FILE).read_text())
    (tmp_path / FILE).write_text(json.dumps([{**records[0], "machine": "another CPU, 64 cores"}]))
    assert TimingBook(tmp_path).get(pair) is None
    (tmp_path / FILE).write_text(json.dumps([{**records[0], "build": "torch 0.1"}]))
    assert TimingBook(tmp_path).get(pair) is None
    (tmp_path / FILE).write_text('[{"target": ')
    assert TimingBook(tmp_path).get(pair) is None
    TimingBook(tmp_path).keep(kept)  # a damaged file is written anew
    assert TimingBook(tmp_path).get(pair) == kept
    (tmp_path / "a file").write_text("")
    unwritable = TimingBook(tmp_path / "a file" / "x")  # a folder that cannot be made: the book keeps in memory
    assert unwritable.keep(kept) and unwritable.get(pair) is kept and TimingBook().get(pair) is None
