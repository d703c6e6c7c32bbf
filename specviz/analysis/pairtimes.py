"""One pair, one set of timings: T(1), v(k) and c of a (target, draft, runtime, threads), measured once on a quiet
check and kept, so that every page that explains a cost (Decode's reading, the Race, the τ sweep, "Would it pay
there?", the lessons) reads the same numbers, each saying when, on which runtime and under what load they were
measured.

`measure_pair` times, in interleaved rounds at one cache length, the target's passes over each k and one draft
forward, each piece with its evidence (specviz.analysis.clock): a round in which any piece waited for a core is
timed again, and a measurement that stays disturbed is withheld (BusyMachine). A `TimingBook` keeps a pair's
timings only where every piece ran while no other process held a core (`quiet`): a measurement made while
another process held one is shown with that said, and never kept as the pair's. "Measure again" replaces it.

A book handed a folder keeps what it keeps there too (one JSON file, `FILE`), per machine (the CPU and its cores) and
runtime build (`runtime_build`): every later process on the same machine and build reads it back, so a busy machine
changes when a calibration can be made, not whether a page can answer (specviz.analysis.counted costs counted work
with it). The folder is handed in (a server's or command line's specviz cache: specviz.server.config.timings_dir).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

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
from specviz.errors import ConfigError, SpecvizError
from specviz.models.pair import ModelPair
from specviz.models.store import tensor_bytes
from specviz.pieces import piece as work_piece

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
    build: str = ""  # the runtime's build (runtime_build): a calibration is reused only on the same one

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

    def when(self, now: float | None = None) -> str:
        """'just now', '3 min ago (5 Dec 17:02 UTC)', '2.5 h ago (…)', '3 days ago (…)'."""
        ago = max(0.0, (now if now is not None else time.time()) - self.at)
        if ago < 60:
            return "just now"
        hours = ago / 3600
        since = f"{ago / 60:.0f} min" if hours < 1 else f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.0f} days"
        at = time.gmtime(self.at)
        return f"{since} ago ({at.tm_mday} {time.strftime('%b %H:%M', at)} UTC)"

    def on(self) -> str:
        """'llama.cpp (2 threads), <CPU>, 2 cores'; where its passes ran on fewer threads than its own (another
        process held a core): '(its passes on 1 of its 2 threads)'."""
        threads = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        if self.pass_threads is not None and self.pass_threads < self.threads:
            threads = f"its passes on {self.pass_threads} of its {threads}"
        return f"{self.runtime} ({threads}), {self.machine}"

    def where(self, now: float | None = None) -> str:
        """'measured 3 min ago (…) on llama.cpp (2 threads), <CPU>, with no other process on its cores'."""
        load = "with no other process on its cores" if self.quiet else "while another process held a core (not kept)"
        return f"measured {self.when(now)} on {self.on()}, {load}"

    def label(self, now: float | None = None) -> str:
        """What a speed costed from these timings says it rests on: 'the calibration kept 3 min ago (5 Dec 17:02 UTC)
        on llama.cpp (2 threads), <CPU>, 2 cores'."""
        return f"the calibration kept {self.when(now)} on {self.on()}"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["passes_ms"] = {str(k): spread.to_dict() for k, spread in self.passes_ms.items()}
        data["draft_ms"] = self.draft_ms.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairTimings:
        """A kept record read back; ValueError, KeyError or TypeError where it is not one (a damaged file)."""
        passes = {int(k): Spread.from_dict(v) for k, v in data["passes_ms"].items()}
        variance = data.get("variance")
        if variance is not None:
            variance = BatchVariance(**{**variance, **{k: tuple(variance.get(k, ())) for k in ("by_position", "gaps")}})
        timings = cls(
            **{
                **{k: data[k] for k in ("target", "draft", "runtime", "machine", "context", "at", "quiet")},
                "threads": int(data["threads"]),
                "passes_ms": passes,
                "draft_ms": Spread.from_dict(data["draft_ms"]),
                "size_ratio": data.get("size_ratio"),
                "variance": variance,
                "pass_threads": data.get("pass_threads"),
                "build": str(data.get("build", "")),
            }
        )
        if 1 not in passes or not all(s.value > 0 for s in passes.values()) or not timings.draft_ms.value >= 0:
            raise ValueError("a kept calibration without a positive one-token pass")
        return timings

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


def runtime_build(runtime: str) -> str:
    """The build a runtime's passes ran on, in words ('llama_cpp_python 0.3.16', 'torch 2.5.1'): a calibration is
    reused only on the same (another build's kernels cost otherwise)."""
    package = "llama_cpp_python" if runtime.startswith("llama") else "torch"
    try:
        return f"{package} {metadata.version(package)}"
    except metadata.PackageNotFoundError:
        return package


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
    with work_piece():  # reading the context is model work: a piece of its own (specviz.pieces)
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
        build=runtime_build(runtime),
    )


FILE = "pair-timings.json"  # a book's file in the folder it is handed


class TimingBook:
    """The pairs' timings, one per (target, draft, runtime, threads), kept where measured quietly: shared by every
    page and session that reads them (a page hands one in; nothing here is per run). Handed a `folder`, the book
    also keeps them there (FILE) and reads back what an earlier process kept on this machine (machine(): the CPU and
    its cores) and runtime build: a calibration outlives the process that made it. A folder that cannot be written
    leaves the book in memory only."""

    def __init__(self, folder: Path | str | None = None) -> None:
        self._kept: dict[tuple[str, str, str, int], PairTimings] = {}
        self._lock = threading.Lock()
        self.folder = None if folder is None else Path(folder)

    @property
    def path(self) -> Path | None:
        return None if self.folder is None else self.folder / FILE

    def get(self, pair: ModelPair) -> PairTimings | None:
        key = key_of(pair)
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        found = self._read().get(key)
        if found is not None and found.build == runtime_build(found.runtime):
            with self._lock:
                self._kept.setdefault(key, found)
            return found
        return None

    def keep(self, timings: PairTimings) -> bool:
        """Keep `timings` as its pair's where it was measured quietly (replacing what was kept, in memory and in the
        folder); whether it was."""
        if not timings.quiet:
            return False
        key = (timings.target, timings.draft, timings.runtime, timings.threads)
        with self._lock:
            self._kept[key] = timings
        self._write(timings)
        return True

    def _records(self) -> list[dict[str, Any]]:
        """Every record in the folder's file (any machine's); [] where there is none or it cannot be read."""
        path = self.path
        try:
            data = json.loads(path.read_text()) if path is not None else []
        except (OSError, ValueError):
            return []
        return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []

    def _read(self) -> dict[tuple[str, str, str, int], PairTimings]:
        """This machine's kept timings in the folder, by key (a damaged record skipped)."""
        here, found = machine(), {}
        for record in self._records():
            try:
                timings = PairTimings.from_dict(record)
            except (ValueError, KeyError, TypeError):
                continue
            if timings.machine == here and timings.quiet:
                found[(timings.target, timings.draft, timings.runtime, timings.threads)] = timings
        return found

    def _write(self, timings: PairTimings) -> None:
        """`timings` into the folder's file in place of its pair's on this machine and build (the file written whole
        and renamed: a reader never sees half of it); nothing where there is no folder or it cannot be written."""
        path = self.path
        if path is None:
            return
        same = lambda r: all(r.get(k) == v for k, v in _identity(timings).items())  # noqa: E731
        with self._lock:
            records = [r for r in self._records() if not same(r)] + [timings.to_dict()]
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                handle, name = tempfile.mkstemp(dir=path.parent, prefix=".pair-timings-", suffix=".json")
                with os.fdopen(handle, "w") as out:
                    json.dump(records, out, indent=1, allow_nan=False)
                os.replace(name, path)
            except (OSError, ValueError):
                return

    def measure(
        self, pair: ModelPair, ids: Sequence[int] | None = None, timer: clock.Timer | None = None, **kw
    ) -> PairTimings:
        """Measure the pair now (measure_pair, on `ids` or TEXT's tokens, c bounded by the pair's `size_ratio`) and
        keep the result where it was quiet; returns it either way."""
        kw.setdefault("size_ratio", size_ratio(pair))
        timings = measure_pair(pair, timing_ids(pair) if ids is None else ids, timer=timer, **kw)
        self.keep(timings)
        return timings


def _identity(timings: PairTimings) -> dict[str, Any]:
    """What a kept record replaces: the same pair, runtime and threads on the same machine and build."""
    return {k: getattr(timings, k) for k in ("target", "draft", "runtime", "threads", "machine", "build")}
