"""One pair, one set of timings: T(1), v(k) and c of a (target, draft, runtime, threads), measured once on a quiet
check and kept, so that every page that explains a cost (Decode's reading, the Race, the τ sweep, "Would it pay
there?", the lessons) reads the same numbers, each saying when, on which runtime and under what load they were
measured.

`measure_pair` times, in interleaved rounds at one cache length, the target's passes over each k and one draft
forward, each piece with its evidence (specviz.analysis.clock): a round in which any piece waited for a core is
timed again, and a measurement that stays disturbed is withheld (BusyMachine). A `TimingBook` keeps a pair's
timings only where every piece ran while no other process held a core (`quiet`): a measurement made while
another process held one is shown with that said, and never kept as the pair's. "Measure again" replaces it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from specviz.analysis import clock
from specviz.analysis.batchvar import BatchVariance, batch_variance
from specviz.analysis.busy import machine
from specviz.analysis.measure import (
    Spread,
    check_draft_cost,
    check_verify_cost,
    median_iqr,
)
from specviz.analysis.passes import clean_rounds
from specviz.core.pieces import piece as work_piece
from specviz.errors import ConfigError, SpecvizError
from specviz.models.pair import ModelPair
from specviz.models.store import tensor_bytes

KS = (1, 2, 3, 4, 5, 6, 8, 12, 16)  # the pass lengths timed: τ + 1 for τ up to 15 (and the roofline's fit)
VARIANCE_K = 4  # the batch variance kept beside the costs: passes of 4 tokens against one-token passes,
VARIANCE_POSITIONS = 16  # over 16 positions
# the text whose tokens are timed (every page times the same): long enough for a cache before passes of 16 tokens
TEXT = (
    "Write a Python function that reverses a list. The function takes a list and returns a new list with the same "
    "items in the opposite order, without changing the list it was given."
)


@dataclass(frozen=True, kw_only=True)
class PairTimings:
    """A pair's passes timed on one runtime and thread count, at one cache length."""

    target: str
    draft: str
    runtime: str
    threads: int
    passes_ms: dict[int, Spread]  # k → T(k): one target pass over k tokens
    draft_ms: Spread  # one draft forward over one token
    context: int  # tokens in the caches while they were timed
    quiet: bool  # no other process held a core while any piece ran
    at: float  # time.time() when measured
    machine: str  # the CPU, in words
    size_ratio: float | None = None  # the draft's bytes over the target's, same runtime (c's bound), where known
    variance: BatchVariance | None = None  # the target's batch variance on the same tokens (specviz.analysis.batchvar)
    # the fewest threads a target pass over several tokens ran on (a llama.cpp model bends to the cores no other
    # process holds: specviz.models.llamacpp.pass_threads); None where no such pass was timed
    pass_threads: int | None = None

    @property
    def one_token_ms(self) -> Spread:
        return self.passes_ms[1]

    def v(self, k: int) -> float:
        """T(k) / T(1): a pass over k tokens in one-token passes (k timed, or the nearest timed k above it)."""
        timed = [j for j in sorted(self.passes_ms) if j >= k] or [max(self.passes_ms)]
        return self.passes_ms[timed[0]].value / self.one_token_ms.value

    @property
    def c(self) -> float:
        """One draft forward in one-token target passes."""
        return self.draft_ms.value / self.one_token_ms.value

    def where(self, now: float | None = None) -> str:
        """'measured 3 min ago on llama.cpp (2 threads), <CPU>, with no other process on its cores'; where its passes
        ran on fewer threads than its own (another process held a core): '(its passes on 1 of its 2 threads)'."""
        ago = max(0.0, (now if now is not None else time.time()) - self.at)
        when = "just now" if ago < 60 else f"{ago / 60:.0f} min ago" if ago < 3600 else f"{ago / 3600:.1f} h ago"
        load = "with no other process on its cores" if self.quiet else "while another process held a core (not kept)"
        threads = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        if self.pass_threads is not None and self.pass_threads < self.threads:
            threads = f"its passes on {self.pass_threads} of its {threads}"
        return f"measured {when} on {self.runtime} ({threads}), {self.machine}, {load}"

    def sentence(self, tau: int) -> str:
        """'T(1) = 15.0 ms; a pass over τ + 1 = 5 tokens costs v = 1.45 of them, a draft forward c = 0.21 (…)'."""
        return (
            f"T(1) = {self.one_token_ms.value:.1f} ms; a pass over τ + 1 = {tau + 1} tokens costs v = "
            f"{self.v(tau + 1):.2f} of them, a draft forward c = {self.c:.2f} ({self.where()})"
        )


def size_ratio(pair: ModelPair) -> float | None:
    """The draft's bytes over the target's where both are known and run on the same runtime: a llama.cpp model's
    `nbytes`, a torch model's distinct tensors (specviz.models.store.tensor_bytes; a draft sharing the target's
    tensors counts them too, so the ratio errs large and the bound loose). The bound on c
    (specviz.analysis.measure.check_draft_cost); None elsewhere (mixed runtimes, a draft without weights)."""
    target, draft = pair.target, pair.draft
    if draft is target:
        return 1.0
    if target.capabilities.runtime != draft.capabilities.runtime:
        return None
    t, d = (_bytes(m) for m in (target, draft))
    return d / t if t and d else None


def _bytes(model) -> int:
    """A model's weights in bytes, where it says (`nbytes`) or holds them as torch tensors; 0 where neither."""
    said = getattr(model, "nbytes", None)
    if callable(said):
        return int(said())
    return tensor_bytes(model)


def timing_ids(pair: ModelPair) -> list[int]:
    """TEXT's tokens on the pair's codec (no chat template: the same tokens for every page)."""
    ids = list(pair.codec.encode(TEXT))
    while len(ids) < max(KS) + 2:  # a small vocabulary's codec: the text repeated
        ids += ids
    return ids


def key_of(pair: ModelPair) -> tuple[str, str, str, int]:
    """(target, draft, runtime, threads): what a pair's timings are kept under."""
    return pair.target.name, pair.draft.name, pair.runtime, pair.target.capabilities.threads or 1


def measure_pair(
    pair: ModelPair,
    ids: Sequence[int],
    ks: Sequence[int] = KS,
    repeats: int = 5,
    timer: clock.Timer | None = None,
    size_ratio: float | None = None,
) -> PairTimings:
    """Time the target's passes over each k in `ks` and one draft forward, all at one cache length (the prompt's
    `ids` less its last max(ks) tokens), interleaved round by round in a rotating order after a warm-up round. A
    round in which any piece waited for a core is timed again; BusyMachine where `repeats` clean rounds are not had
    in RETRIES × as many. MeasurementError where v(k) or c is outside its bounds (specviz.analysis.measure)."""
    ks = sorted({1, *ks})
    if len(ids) < max(ks) + 1:
        raise ConfigError(f"the prompt needs at least {max(ks) + 1} tokens to time passes of {max(ks)}")
    timer = timer or clock.default()
    head = len(ids) - max(ks)
    target, draft = pair.new_sessions()  # a draft that reads the target's hidden states is given its session
    with work_piece():  # reading the context is model work: a piece of its own (specviz.core.pieces)
        target.extend(list(ids[:head]), keep=1)
        if head > 1:
            draft.extend(list(ids[: head - 1]), keep=1)
    pieces: list[tuple[str, int]] = [("draft", 1), *(("pass", k) for k in ks)]
    ran_on: list[int] = []  # the threads each target pass over several tokens ran on

    def time_piece(piece: tuple[str, int]) -> clock.Timed:
        what, k = piece
        if what == "draft":
            _, timed = timer.time(
                lambda: draft.extend([ids[head - 1]], keep=1), what, 1, clock.threads_of(pair.draft, 1)
            )
            draft.crop(head - 1)
        else:
            _, timed = timer.time(
                lambda: target.extend(list(ids[head : head + k]), keep=k), what, k, clock.threads_of(pair.target, k)
            )
            target.crop(head)
            if k > 1:
                ran_on.append(timed.threads)
        return timed

    times, quiet = clean_rounds(pieces, time_piece, repeats, f"The timing of {pair.target.name}'s passes")
    how = f"median and interquartile range of {repeats} interleaved rounds"
    passes = {k: median_iqr(times[("pass", k)], how) for k in ks}
    one = passes[1].value
    for k, spread in passes.items():
        if k > 1:
            check_verify_cost(spread.value / one, k, one)
    draft_ms = median_iqr(times[("draft", 1)], how)
    check_draft_cost(draft_ms.value / one, size_ratio, one)
    target_name, draft_name, runtime, threads = key_of(pair)
    try:  # beside the costs: how far a pass over several tokens moves p from one-token passes (after the clocks)
        with work_piece():
            variance = batch_variance(pair.target, list(ids[: head + VARIANCE_POSITIONS]), head, VARIANCE_K)
    except SpecvizError:
        variance = None
    return PairTimings(
        target=target_name,
        draft=draft_name,
        runtime=runtime,
        threads=threads,
        passes_ms=passes,
        draft_ms=draft_ms,
        context=head,
        quiet=quiet,
        at=time.time(),
        machine=machine(),
        size_ratio=size_ratio,
        variance=variance,
        pass_threads=min(ran_on, default=None),
    )


class TimingBook:
    """The pairs' timings, one per (target, draft, runtime, threads), kept where measured quietly: shared by every
    page and session that reads them (a page hands one in; nothing here is per run)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, str, int], PairTimings] = {}
        self._lock = threading.Lock()

    def get(self, pair: ModelPair) -> PairTimings | None:
        with self._lock:
            return self._kept.get(key_of(pair))

    def keep(self, timings: PairTimings) -> bool:
        """Keep `timings` as its pair's where it was measured quietly (replacing what was kept); whether it was."""
        if not timings.quiet:
            return False
        with self._lock:
            self._kept[(timings.target, timings.draft, timings.runtime, timings.threads)] = timings
        return True

    def measure(
        self, pair: ModelPair, ids: Sequence[int] | None = None, timer: clock.Timer | None = None, **kw
    ) -> PairTimings:
        """Measure the pair now (measure_pair, on `ids` or TEXT's tokens, c bounded by the pair's `size_ratio`) and
        keep the result where it was quiet; returns it either way."""
        kw.setdefault("size_ratio", size_ratio(pair))
        timings = measure_pair(pair, timing_ids(pair) if ids is None else ids, timer=timer, **kw)
        self.keep(timings)
        return timings
