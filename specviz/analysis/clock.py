"""Every timed piece of work with its own evidence of whether it was disturbed.

A wall clock on a shared machine counts the time a thread waited for a core as work (specviz.models.cpu). So a
piece of work timed here carries, beside its milliseconds, what the CPU did meanwhile: this process's CPU time
over it against the cores its threads could use, the times the kernel took a core from it, and the cores other
processes held around it. A piece is *disturbed* when that evidence says it waited for a core; the callers time a
disturbed piece again (interleaved rounds, specviz.analysis.passes) or leave it out (specviz.analysis.measure),
and a measurement that stays disturbed is withheld (measure.BusyMachine), never shown as a result.

The timer is handed in (`timer=`): `Timer` reads the real clock and the CPU, `FakeTimer` gives the times and the
evidence a test decides, and `default()` is what a caller that hands none gets (tests set it to a FakeTimer, so
that what they check does not depend on what else the machine runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from specviz.models import cpu

T = TypeVar("T")

# A piece whose threads ran less than this share of its wall time waited for a core: ggml's threads spin at their
# barriers, so a pass on n threads that each had a core reads about n × its wall time in CPU time, and torch's one
# thread about 1 × (measured on both runtimes: docs/performance.md, "Timings that know they were disturbed").
SHARE_MIN = 0.75
# Shorter pieces are not judged by their CPU share: the accounting's granularity and one context switch are a large
# part of them (and a pass that short is call overhead, not weights: specviz.analysis.measure.WEIGHT_BOUND_MS).
JUDGED_MS = 3.0


@dataclass(frozen=True)
class Timed:
    """One timed piece of work and what the CPU did meanwhile."""

    ms: float  # wall time
    threads: int = 1  # the cores the work could keep busy (a llama.cpp pass's threads; 1 for torch's one)
    cpu_ms: float | None = None  # this process's CPU time over it (None: not read)
    involuntary: int = 0  # times the kernel took a core from one of this process's threads meanwhile
    free: float | None = None  # the cores no other process held around it (None: not read)
    cores: int | None = None  # the cores this process may run on

    @property
    def share(self) -> float | None:
        """CPU time over wall time × threads: about 1 where every thread had a core."""
        if self.cpu_ms is None or self.ms <= 0:
            return None
        return self.cpu_ms / (self.ms * max(self.threads, 1))

    def disturbed(self) -> str | None:
        """Why this piece waited for a core, in words; None where nothing says it did."""
        if self.free is not None and self.free < self.threads - 0.5:
            return (
                f"other processes held {self.cores - self.free:.1f} of {self.cores} cores while it needed "
                f"{self.threads}"
                if self.cores
                else f"only {self.free:.1f} cores were free while it needed {self.threads}"
            )
        share = self.share
        if share is not None and self.ms >= JUDGED_MS and share < SHARE_MIN:
            return f"its threads ran {share:.0%} of the time (the rest waiting for a core)"
        return None

    @property
    def quiet(self) -> bool:
        """No other process held any core this process may run on (a measurement kept as the pair's needs it)."""
        return self.free is None or self.cores is None or self.free >= self.cores - 0.5


class Timer:
    """The real clock, each piece with its evidence: this process's CPU time and involuntary switches
    (specviz.models.cpu.usage) and the cores other processes held (a CoreWatch). `judge=False`: the evidence is not
    read (a piece is never disturbed)."""

    def __init__(self, watch: cpu.CoreWatch | None = None, judge: bool = True) -> None:
        self.watch = watch
        self.judge = judge

    def time(self, work: Callable[[], T], what: str = "", tokens: int = 1, threads: int = 1) -> tuple[T, Timed]:
        """(work's result, its Timed). `what` and `tokens` name the piece (FakeTimer reads them)."""
        if not self.judge:
            start = time.perf_counter()
            result = work()
            return result, Timed(ms=(time.perf_counter() - start) * 1000.0, threads=threads)
        watch = self.watch or cpu.watch()
        before = cpu.usage()
        result = work()
        spent = cpu.usage().since(before)
        window = watch.window()
        return result, Timed(
            ms=spent.wall * 1000.0,
            threads=threads,
            cpu_ms=spent.cpu * 1000.0,
            involuntary=spent.involuntary,
            free=None if window is None else window.free,
            cores=None if window is None else window.cores,
        )

    def step_parts(self, step) -> tuple[float, float]:
        """A speculative step's (drafting, verifying) milliseconds: as the engine timed them."""
        return step.draft_ms, step.verify_ms


class FakeTimer(Timer):
    """Times a test decides, the work itself run: `ms(what, tokens)` for each piece and `disturbed(what, tokens,
    index)` (the index-th piece timed) whether it is reported disturbed. The pieces: "pass" (a target pass over
    `tokens` tokens), "draft" (one draft forward), "alone" (the target alone over `tokens` tokens: that many
    one-token passes); a speculative "step" is its draft forwards and its verify pass (`step_parts`)."""

    def __init__(
        self,
        ms: Callable[[str, int], float],
        disturbed: Callable[[str, int, int], bool] | None = None,
        cores: int = 2,
        others: float = 0.0,
    ) -> None:
        """`others`: the cores other processes hold around every piece that is not disturbed (its work had its own)."""
        super().__init__(judge=False)
        self.ms, self.is_disturbed, self.cores, self.others = ms, disturbed, cores, others
        self.pieces: list[tuple[str, int]] = []

    def time(self, work: Callable[[], T], what: str = "", tokens: int = 1, threads: int = 1) -> tuple[T, Timed]:
        result = work()
        index = len(self.pieces)
        self.pieces.append((what, tokens))
        busy = self.is_disturbed is not None and self.is_disturbed(what, tokens, index)
        cores = max(self.cores, threads)  # a machine with more cores than the test's gives a pass more threads
        free = 0.0 if busy else float(cores) - self.others
        if what == "step":
            ms = sum(self.step_parts(result))
        elif what == "alone":
            ms = tokens * self.ms("pass", 1)
        else:
            ms = self.ms(what, tokens)
        return result, Timed(ms=float(ms), threads=threads, free=free, cores=cores)

    def step_parts(self, step) -> tuple[float, float]:
        """`step.draft_passes` draft forwards and one pass over its nodes and the target's own token."""
        return step.draft_passes * self.ms("draft", 1), self.ms("pass", step.nodes + 1)


def threads_of(model, tokens: int) -> int:
    """The cores a pass of `model` over `tokens` tokens runs on now: a llama.cpp model's own count for a pass now
    (`pass_threads`: at most the cores no other process holds, specviz.models.llamacpp), else its capabilities'
    threads. A piece is disturbed where it had fewer cores than this (Timed.disturbed)."""
    threads = model.capabilities.threads or 1
    now = getattr(model, "pass_threads", None)
    if now is None:
        return threads
    one, many = now(threads)
    return one if tokens == 1 else many


_default: Timer | None = None


def default() -> Timer:
    """The timer a caller that hands none gets: the real clock with its evidence."""
    global _default
    if _default is None:
        _default = Timer()
    return _default


def set_default(timer: Timer | None) -> None:
    """Replace the default timer (None: the real one again). Tests use it."""
    global _default
    _default = timer


def busy_message(what: str, reasons: list[str]) -> str:
    """'measured on a busy machine: its times are withheld, measure again', with what and why, one sentence that
    starts with a capital ("this run" → "This run was measured…") and gives its own advice: a page shows it whole
    (specviz.viz.render.refusal); what it counted is not withheld (specviz.analysis.counted)."""
    why = f" ({reasons[0]})" if reasons else ""
    return (
        f"{what[:1].upper()}{what[1:]} was measured on a busy machine: its work waited for a core{why}, so its times "
        "say more about the other work than about the models. Its times are withheld (not what it counted); measure "
        "again when the machine is quieter."
    )
