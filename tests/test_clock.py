"""Timings that know when they were disturbed (specviz.models.cpu, specviz.analysis.clock) and the bounds every cost
and speedup passes (specviz.analysis.measure): pass times injected with a FakeTimer, numbers worked out by hand.
One marked test reads the real evidence beside a real busy process."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from specviz.analysis import clock
from specviz.analysis.measure import (
    BusyMachine,
    MeasurementError,
    Spread,
    check_bounds,
    check_draft_cost,
    check_ideal,
    check_verify_cost,
    paired_run,
)
from specviz.analysis.passes import pass_times, verify_timing
from specviz.core.config import SpecConfig
from specviz.models import cpu
from specviz.models.pair import ModelPair
from tests.helpers import tiny_text_pair

# a target pass over k tokens 10 + 2(k − 1) ms, a draft forward 1 ms
PASS = lambda what, k: 1.0 if what == "draft" else 10.0 + 2.0 * (k - 1)  # noqa: E731


# --- the cores other processes hold ------------------------------------------------------------------------------


class Readings:
    """A scripted machine: each call of `own` and `read` returns the next reading."""

    def __init__(self, own, busy, runnable=(1, 1)):
        self.own, self.busy, self.runnable = list(own), list(busy), runnable

    def usage(self):
        return self.own.pop(0)

    def read(self, cores):
        return self.busy.pop(0)


def test_core_watch_reads_the_other_processes_cores_from_the_cores_busy_time_less_its_own():
    """Two cores. First call (no window yet): the instant count, 3 runnable of which 1 is this process's thread: 2
    others, no core free (free_cores says 1: a pass always has one). Then, 0.5 s later, the cores were busy 0.9 s of
    which this process used 0.25 s: others (0.9 − 0.25) / 0.5 = 1.3 cores, 0.7 free, rounded to 1. Within WINDOW_S of
    that, the same reading without reading /proc/stat again."""
    r = Readings(
        own=[
            cpu.Usage(wall=10.0, cpu=1.0, involuntary=0),
            cpu.Usage(wall=10.5, cpu=1.25, involuntary=3),
            cpu.Usage(wall=10.6, cpu=1.3, involuntary=3),
        ],
        busy=[5.0, 5.9],
        runnable=(3, 1),
    )
    watch = cpu.CoreWatch({0, 1}, read=r.read, own=r.usage, runnable=lambda: r.runnable)
    first = watch.window()
    assert first.others == 2.0 and first.free == 0.0 and watch.cores == {0, 1}
    second = watch.window()
    assert second.others == pytest.approx(1.3) and second.free == pytest.approx(0.7) and second.seconds == 0.5
    assert watch.window() is second and not r.busy  # 0.1 s later: the window still open, nothing read
    assert cpu.CoreWatch({0, 1}, read=lambda c: 0.0, own=cpu.usage, runnable=lambda: (1, 1)).free_cores() == 2


def test_busy_seconds_are_read_for_this_process_cores_only_steal_included(tmp_path):
    """cpu0 and cpu1 lines of /proc/stat (user nice system idle iowait irq softirq steal), this process on core 1
    only: busy = 100 + 0 + 20 + 5 + 5 + 10 = 140 ticks (idle and iowait left out) at 100 ticks a second = 1.4 s."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  999 0 0 0 0 0 0 0\ncpu0 50 0 50 900 0 0 0 0\ncpu1 100 0 20 700 30 5 5 10\nintr 1\n")
    assert cpu.read_busy({1}, stat) == pytest.approx(140 / cpu.os.sysconf("SC_CLK_TCK"))
    assert cpu.read_busy({5}, stat) is None


def test_a_piece_is_disturbed_when_other_processes_held_the_cores_it_needed_or_its_threads_waited():
    """Two threads with one core free: disturbed. One thread with one free: not. A 10 ms piece on one thread with 5 ms
    of CPU ran 50 % of the time: disturbed; the same at 2 ms is not judged (under JUDGED_MS)."""
    assert clock.Timed(ms=10.0, threads=2, free=1.0, cores=2).disturbed().startswith("other processes held 1.0 of 2")
    assert clock.Timed(ms=10.0, threads=1, free=1.0, cores=2).disturbed() is None
    assert not clock.Timed(ms=10.0, threads=1, free=1.0, cores=2).quiet
    assert clock.Timed(ms=10.0, threads=1, cpu_ms=5.0, free=2.0, cores=2).disturbed() == (
        "its threads ran 50% of the time (the rest waiting for a core)"
    )
    assert clock.Timed(ms=2.0, threads=1, cpu_ms=0.5, free=2.0, cores=2).disturbed() is None
    assert clock.Timed(ms=10.0, threads=2, cpu_ms=19.0, free=2.0, cores=2).disturbed() is None


# --- bounds on both sides --------------------------------------------------------------------------------------------


def test_a_pass_over_k_tokens_costs_at_least_v_floor_and_at_most_k_one_token_passes():
    check_verify_cost(5.2, 5, 15.0)  # within k + 0.25
    with pytest.raises(MeasurementError, match="costs more than 5 of them"):
        check_verify_cost(5.3, 5, 15.0)
    with pytest.raises(MeasurementError, match=r"less than 0\.6"):
        check_verify_cost(0.5, 5, 15.0)
    check_verify_cost(0.5, 5, 1.0)  # call overhead, not weights: no bounds
    check_verify_cost(6.0, 5, 1.0)
    with pytest.raises(MeasurementError, match="costs more than 7"):
        check_verify_cost(13.0, 7, 15.0)  # "a pass over 7 tokens costing 13 single-token passes" (the race)


def test_a_drafts_cost_is_bounded_by_its_size_against_the_targets():
    """A draft half the target's size: at most 1.5 target passes; one twice its size: 1.5 · 2 = 3."""
    check_draft_cost(1.5, 0.5, 15.0)
    with pytest.raises(MeasurementError, match=r"at most 1\.50"):
        check_draft_cost(1.6, 0.5, 15.0)
    check_draft_cost(2.9, 2.0, 15.0)
    with pytest.raises(MeasurementError, match=r"at most 3\.00"):
        check_draft_cost(3.1, 2.0, 15.0)
    check_draft_cost(9.0, None, 15.0)  # sizes unknown: no bound
    check_draft_cost(9.0, 0.5, 1.0)  # call overhead


def test_a_torch_pairs_sizes_are_its_tensors_so_its_drafts_cost_is_bounded_too():
    """The tiny float64 Llamas (vocabulary 96, width 32, MLP 64, 4 heads over 2 KV heads): a layer holds 32·32 + 2 ·
    32·16 + 32·32 + 3 · 32·64 + 2 · 32 = 9,280 weights, embeddings, head and final norm 2 · 96·32 + 32 = 6,176, the
    rotary buffers 2 · 4 float64. Target (2 layers) (6,176 + 18,560) · 8 + 64 = 197,952 bytes, draft (1 layer)
    (6,176 + 9,280) · 8 + 64 = 123,712: ratio 0.6250; a 3-layer draft 272,192 / 197,952 = 1.3750. Mixed runtimes
    or a draft without weights: unknown."""
    from specviz.analysis.pairtimes import size_ratio
    from specviz.drafts.lookup import PromptLookupDrafter
    from specviz.models.pair import ModelPair
    from tests.helpers import hf_pair

    assert size_ratio(hf_pair()) == pytest.approx(123_712 / 197_952)
    big = hf_pair(draft_layers=3)
    assert size_ratio(big) == pytest.approx(272_192 / 197_952)
    check_draft_cost(2.0, size_ratio(big), 15.0)  # 1.5 · 1.375 = 2.06 allowed
    with pytest.raises(MeasurementError, match=r"at most 2\.06"):
        check_draft_cost(2.1, size_ratio(big), 15.0)
    pair = hf_pair()
    assert size_ratio(ModelPair(pair.target, PromptLookupDrafter(96), pair.codec)) is None


def test_a_speedup_is_at_most_tokens_per_step_over_the_verify_pass_and_the_drafts():
    """3 tokens a step, v = 1.5, 4 drafts at c = 0.2: a step costs at least 1.5 + 0.8 = 2.3 one-token passes, so the
    speedup is at most 3 / 2.3 = 1.304×."""
    check_bounds(1.30, 3.0, 1.5, 5, 15.0, draft_cost=0.2, drafted_per_step=4.0)
    with pytest.raises(MeasurementError, match=r"allow \(1.30×\)"):
        check_bounds(1.35, 3.0, 1.5, 5, 15.0, draft_cost=0.2, drafted_per_step=4.0)
    check_bounds(1.9, 3.0, 1.5, 5, 15.0)  # without the drafts' cost: 3 / 1.5 = 2


def test_a_speedup_whose_interval_is_above_the_ideal_is_refused():
    check_ideal(Spread(3.03, 2.5, 3.4, 10), 2.56)  # the interval reaches below the ideal: noise, not refused
    with pytest.raises(MeasurementError, match=r"above the ideal S = 2\.56×"):
        check_ideal(Spread(3.03, 2.8, 3.4, 10), 2.56)


# --- timed again, or withheld ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def self_pair():
    base = tiny_text_pair()
    return ModelPair(base.target, base.target, base.codec)


def test_pass_times_come_from_the_injected_timer_and_a_disturbed_round_is_timed_again(self_pair):
    """T(1) = 10, T(3) = 14, T(5) = 18 ms: v(5) = 1.8. The 4th piece timed is disturbed: its round is timed again, so
    3 rounds + the warm-up + one again = 5 rounds; the numbers are the clean rounds'."""
    ids = self_pair.codec.encode("a b c d e f g h i j")
    timer = clock.FakeTimer(PASS, disturbed=lambda what, k, i: i == 3)
    spreads = pass_times(self_pair, ids, (1, 3, 5), repeats=3, timer=timer)
    assert {k: s.value for k, s in spreads.items()} == {1: 10.0, 3: 14.0, 5: 18.0}
    assert spreads[5].value / spreads[1].value == pytest.approx(1.8)
    # rounds: warm-up (3 pieces), round 1 (the first piece disturbed: stops there), three clean rounds
    assert len(timer.pieces) == 3 + 1 + 3 * 3


def test_pass_times_that_stay_disturbed_are_withheld(self_pair):
    ids = self_pair.codec.encode("a b c d e f g h i j")
    timer = clock.FakeTimer(PASS, disturbed=lambda what, k, i: True)
    with pytest.raises(BusyMachine, match=r"measured on a busy machine.*measure again"):
        pass_times(self_pair, ids, (1, 5), repeats=3, timer=timer)


def test_verify_timing_is_one_pass_against_as_many_one_token_passes(self_pair):
    """τ = 4: a pass over 5 tokens 18 ms against 5 one-token passes of 10 ms: 18 / 10 = 1.8 one-token passes."""
    timing = verify_timing(self_pair, "a b c d e f g h", 4, chat=False, repeats=3, timer=clock.FakeTimer(PASS))
    assert timing.parallel_ms.value == 18.0 and timing.sequential_ms.value == 50.0
    assert timing.ratio.value == pytest.approx(1.8)


def test_a_paired_runs_disturbed_steps_are_left_out_or_the_run_withheld(self_pair):
    """The self-draft at τ = 1, greedy, 7 tokens: steps of 1 + 12 = 13 ms emitting 2, 2, 2, 1 against 10 ms a token.
    All clean: speedup 70 / 52. The first step disturbed (1 of 4 steps = 25 %, not above DISTURBED_MAX): left out,
    speedup (20 + 20 + 10) / (3 · 13) = 50 / 39. Two of four disturbed: withheld."""
    config = SpecConfig(tau=1, mode="greedy", max_new_tokens=8)
    run = paired_run(self_pair, "a b c", config, chat=False, timer=clock.FakeTimer(PASS))
    assert [s.tokens for s in run.steps] == [2, 2, 2, 1]
    assert run.speedup().value == pytest.approx(70 / 52)
    assert run.verify_cost().value == pytest.approx(4 * 12 * 7 / (4 * 70))  # Σ verify · Σ tokens / (steps · Σ alone)
    first = clock.FakeTimer(PASS, disturbed=lambda what, k, i: i == 0)
    run = paired_run(self_pair, "a b c", config, chat=False, timer=first)
    assert run.steps[0].disturbed and not run.steps[1].disturbed
    assert run.speedup().value == pytest.approx(50 / 39)
    two = clock.FakeTimer(PASS, disturbed=lambda what, k, i: i in (0, 2))
    run = paired_run(self_pair, "a b c", config, chat=False, timer=two)
    with pytest.raises(BusyMachine, match="2 of its 4 steps waited"):
        run.speedup()


# --- the real evidence -------------------------------------------------------------------------------------------


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _work(n: int) -> int:
    """A fixed amount of pure Python work: its wall time grows as its thread waits for a core."""
    total = 0
    for i in range(n):
        total += i
    return total


@pytest.mark.slow
def test_the_disturbance_signal_fires_beside_a_real_busy_process_and_stays_quiet_without_one():
    """One thread of pure Python work (a fixed count, about 60 ms alone), timed by the real Timer. Alone on the machine
    most pieces are not disturbed; with a busy loop on every core this process may use, its thread gets about two
    thirds of a core and most pieces are (their CPU share under SHARE_MIN, or no core free). A piece the scheduler
    happened to let run is rightly not flagged: every unflagged piece took at most 1 / SHARE_MIN of the quiet time
    (with 25 % slack for the clock's own noise). The quiet half is asserted where nothing else held a core before the
    test began (`make test` run beside a busy loop: only the busy half can be)."""
    watch = cpu.CoreWatch()
    timer = clock.Timer(watch=watch)
    timer.time(lambda: _spin(0.25))  # opens the watch's window
    _spin(0.25)
    start = time.perf_counter()
    _work(200_000)
    n = max(20_000, int(200_000 * 0.06 / (time.perf_counter() - start)))  # about 60 ms of work alone
    before = watch.window()
    quiet = [timer.time(lambda: _work(n))[1] for _ in range(12)]
    alone_ms = sorted(t.ms for t in quiet)[len(quiet) // 2]
    busy_loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(len(cpu.allowed_cores()))]
    try:
        time.sleep(0.5)
        busy = [timer.time(lambda: _work(n))[1] for _ in range(24)]
    finally:
        for p in busy_loops:
            p.kill()
            p.wait()
    flagged = [t for t in busy if t.disturbed()]
    assert len(flagged) >= 12, [(round(t.ms), t.disturbed()) for t in busy]
    missed = [round(t.ms) for t in busy if not t.disturbed()]
    assert all(ms <= 1.25 * alone_ms / clock.SHARE_MIN for ms in missed), (alone_ms, missed)
    if before is not None and before.others < 0.5:
        assert sum(bool(t.disturbed()) for t in quiet) <= 3, [t.disturbed() for t in quiet]


# --- one pair, one set of timings --------------------------------------------------------------------------------


def test_a_pairs_timings_are_measured_once_interleaved_and_kept_only_when_quiet(self_pair):
    """T(k) = 10 + 2(k − 1) ms and a draft forward of 1 ms: v(5) = 18 / 10 = 1.8, v(7) read at the next timed k (8:
    24 / 10 = 2.4), c = 1 / 10. Measured while another process held a core (its work had its own: not disturbed) it
    is shown but not kept; quiet, it is kept, and what every page reads after."""
    from specviz.analysis.pairtimes import TimingBook, measure_pair

    ids = self_pair.codec.encode(" ".join(f"w{i}" for i in range(40)))
    timings = measure_pair(self_pair, ids, ks=(1, 5, 8), repeats=3, timer=clock.FakeTimer(PASS))
    assert timings.v(5) == pytest.approx(1.8) and timings.v(7) == pytest.approx(2.4) and timings.c == pytest.approx(0.1)
    assert timings.quiet and "with no other process on its cores" in timings.where()
    # beside the costs, the batch variance on the same tokens (the 8 after the cache of 40 − 8): float32 on torch, none
    assert timings.variance.k == 4 and timings.variance.positions == 40 - 32 and timings.variance.negligible
    assert "τ + 1 = 5 tokens costs v = 1.80 of them, a draft forward c = 0.10" in timings.sentence(4)
    book = TimingBook()
    busy = book.measure(self_pair, ids, timer=clock.FakeTimer(PASS, cores=4, others=1.0), ks=(1, 5), repeats=3)
    assert not busy.quiet and "not kept" in busy.where() and book.get(self_pair) is None
    kept = book.measure(self_pair, ids, timer=clock.FakeTimer(PASS), ks=(1, 5), repeats=3)
    assert book.get(self_pair) is kept
    again = clock.FakeTimer(lambda what, k: 2.0 if what == "draft" else 10.0 + 2.0 * (k - 1))
    assert book.measure(self_pair, ids, timer=again, ks=(1, 5), repeats=3).c == pytest.approx(0.2)
    assert book.get(self_pair).c == pytest.approx(0.2)  # "measure again" replaces it


def test_a_pairs_timings_say_when_its_passes_ran_on_fewer_threads_than_its_own(self_pair):
    """A target whose passes over several tokens bend to one of its two threads (as a llama.cpp model does where
    another process holds a core): its timings say so beside the numbers it explains; on its own count, nothing."""
    from specviz.analysis.pairtimes import measure_pair
    from specviz.models.lm import HFModel
    from tests.helpers import tiny_llama

    class Bent(HFModel):
        def pass_threads(self, threads: int) -> tuple[int, int]:
            return 1, 1

    target = Bent(tiny_llama(0), "tiny-target", threads=2)
    ids = self_pair.codec.encode(" ".join(f"w{i}" for i in range(20)))
    bent = measure_pair(
        ModelPair(target, target, self_pair.codec), ids, ks=(1, 5), repeats=3, timer=clock.FakeTimer(PASS)
    )
    assert bent.threads == 2 and bent.pass_threads == 1
    assert "on torch (its passes on 1 of its 2 threads)," in bent.where()
    own = measure_pair(self_pair, ids, ks=(1, 5), repeats=3, timer=clock.FakeTimer(PASS))
    assert own.pass_threads == own.threads and "its passes on" not in own.where()


def test_a_pairs_timings_that_stay_disturbed_are_withheld(self_pair):
    from specviz.analysis.pairtimes import measure_pair

    ids = self_pair.codec.encode(" ".join(f"w{i}" for i in range(40)))
    timer = clock.FakeTimer(PASS, disturbed=lambda what, k, i: what == "pass" and k == 5)
    with pytest.raises(BusyMachine, match="busy machine"):
        measure_pair(self_pair, ids, ks=(1, 5), repeats=3, timer=timer)


def test_a_refusal_adds_the_pages_advice_only_where_the_error_gives_none():
    """A busy machine's refusal says to measure again itself (its `advises`); an impossible timing does not, so the
    page's advice follows it; the words "again" in a message no longer decide it."""
    from specviz.analysis.measure import BusyMachine, MeasurementError
    from specviz.viz.render import refusal

    busy = BusyMachine(clock.busy_message("this run", ["a core was taken"]))
    assert refusal(busy, "Run it later.") == sentence_of(busy)
    impossible = MeasurementError("a pass cheaper than one token's: timed again, still wrong")
    assert (
        refusal(impossible, "Run it later.")
        == "A pass cheaper than one token's: timed again, still wrong. Run it later."
    )


def sentence_of(exc: Exception) -> str:
    from specviz.viz.render import sentence

    text = sentence(exc)
    return text[:1].upper() + text[1:]
