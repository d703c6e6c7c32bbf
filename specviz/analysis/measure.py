"""Measuring like a benchmark, everywhere a time becomes a number on screen.

A shared 2-core server with a class on it is noisy: one timing taken once, under whatever load there
was, gave the same trace 0.08× on one visit and 5.11× on the next. So every speedup, verify cost v and
cost ratio c the app shows comes from here:

- **Interleaved.** `paired_run` decodes speculatively and, after each step, lets the target alone
  decode the very tokens that step emitted, at the same context lengths (teacher-forced): the two
  alternate a step at a time. Both sides see the same load at the same moment, so a load that comes and goes
  cancels in their ratio, and v is timed at the run's own context lengths.
- **With its spread.** A number is a `Spread`: the estimate, and a 95% bootstrap interval over the
  steps it pools (or the interquartile range of repeated passes). Verdicts read the interval: "faster"
  only when all of it is above 1, a best τ only when no other τ's interval reaches it.
- **Possible, or refused.** A pass over k tokens cannot cost much less than one over a single token (v is at
  least V_FLOOR), and a measured speedup cannot exceed tokens per step / v (a step costs at least its verify
  pass). `check_bounds` is the one check: the race, the trace reading, the sweep and the lessons call it, and it
  raises a MeasurementError instead of letting an impossible number be shown as a result.

References for the quantities: docs/algorithm.md, "Metrics" and "Verify cost".
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from specviz.analysis import clock
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.core.prompt import encode_prompt
from specviz.core.sampling import logits_to_probs, sample
from specviz.core.trace import RunTrace
from specviz.errors import ConfigError, SpecvizError
from specviz.limits import token_budget
from specviz.models import threads as torch_threads
from specviz.models.pair import ModelPair
from specviz.pieces import piece as work_piece

LEVEL = 0.95  # the bootstrap interval's coverage
RESAMPLES = 1000


class MeasurementError(SpecvizError):
    """A measurement that cannot be physically right (e.g. a speedup above tokens per step / v): a bug
    or a stale timing, never shown as a result."""

    advises = False  # its message says what to do next itself (a page adds no advice of its own)


class BusyMachine(MeasurementError):
    """A measurement whose work waited for a core (specviz.analysis.clock: its own evidence, not the load average)
    and stayed so after it was timed again: withheld with "measured on a busy machine: measure again"."""

    advises = True  # clock.busy_message: "… measure again when the machine is quieter"


@dataclass(frozen=True)
class Spread:
    """A measured quantity: its estimate and an interval around it (`how` says which)."""

    value: float
    low: float
    high: float
    n: int  # what the interval was computed over (steps, repeats)
    how: str = "bootstrap 95% interval over steps"

    def text(self, digits: int = 2, unit: str = "×") -> str:
        """'0.91× (0.86–0.97×)'; '0.91×' when the interval is a point."""
        value, low, high = (f"{x:.{digits}f}" for x in (self.value, self.low, self.high))
        return f"{value}{unit}" if low == high else f"{value}{unit} ({low}–{high}{unit})"

    def range_text(self, digits: int = 2, unit: str = "×") -> str:
        low, high = f"{self.low:.{digits}f}", f"{self.high:.{digits}f}"
        return f"{low}{unit}" if low == high else f"{low}–{high}{unit}"

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high

    def above(self, x: float) -> bool:
        return self.low > x

    def below(self, x: float) -> bool:
        return self.high < x

    def scaled(self, factor: float) -> Spread:
        lo, hi = sorted((self.low * factor, self.high * factor))
        return Spread(self.value * factor, lo, hi, self.n, self.how)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n, "how": self.how}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Spread:
        return cls(float(data["value"]), float(data["low"]), float(data["high"]), int(data["n"]), str(data["how"]))


def rate_ratio(
    fast: Sequence[tuple[float, int]], slow: Sequence[tuple[float, int]], resamples: int = RESAMPLES, seed: int = 0
) -> Spread:
    """(tokens / seconds of `fast`) over (tokens / seconds of `slow`), each a list of (seconds, tokens)
    pieces: a race's two lanes, timed piece by piece in turn. The interval resamples each lane's pieces."""
    if not fast or not slow:
        raise ConfigError("nothing to compare: a lane has no pieces")
    f, s = np.asarray(fast, dtype=np.float64), np.asarray(slow, dtype=np.float64)
    rate = lambda a: a[..., 1].sum(-1) / a[..., 0].sum(-1)  # noqa: E731
    value = float(rate(f) / rate(s))
    rng = np.random.default_rng(seed)
    values = rate(f[rng.integers(0, len(f), (resamples, len(f)))]) / rate(
        s[rng.integers(0, len(s), (resamples, len(s)))]
    )
    low, high = np.quantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Spread(
        value,
        min(float(low), value),
        max(float(high), value),
        len(f) + len(s),
        "bootstrap 95% interval over each lane's pieces",
    )


def point(value: float, n: int = 1, how: str = "one number") -> Spread:
    return Spread(value, value, value, n, how)


def bootstrap(
    columns: Mapping[str, Sequence[float]],
    statistic: Callable[[Mapping[str, np.ndarray]], np.ndarray],
    resamples: int = RESAMPLES,
    seed: int = 0,
    how: str = "bootstrap 95% interval over steps",
) -> Spread:
    """`statistic` of the column sums, with a 95% percentile-bootstrap interval: the items (rows, e.g.
    steps) resampled with replacement `resamples` times, the statistic recomputed from each resample's
    sums. Deterministic for a seed."""
    data = {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}
    n = len(next(iter(data.values())))
    if n == 0:
        raise ConfigError("nothing to measure: no steps")
    value = float(statistic({k: v.sum(keepdims=True) for k, v in data.items()})[0])
    index = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    values = statistic({k: v[index].sum(axis=1) for k, v in data.items()})
    values = values[np.isfinite(values)]
    if not len(values):
        return point(value, n, how)
    low, high = np.quantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Spread(value, min(float(low), value), max(float(high), value), n, how)


def median_iqr(values: Sequence[float], how: str = "") -> Spread:
    """The median of repeated measurements and their interquartile range."""
    if not values:
        raise ConfigError("nothing to measure")
    q1, q3 = (float(x) for x in np.quantile(np.asarray(values, dtype=np.float64), [0.25, 0.75]))
    how = how or f"median and interquartile range of {len(values)}"
    return Spread(statistics.median(values), q1, q3, len(values), how)


def against_one(speedup: Spread, what: str = "the target alone") -> str:
    """'faster than', 'slower than' or 'within noise of' `what`: faster only when the whole interval is
    above 1, slower only when it is below."""
    if speedup.above(1.0):
        return f"faster than {what}"
    if speedup.below(1.0):
        return f"slower than {what}"
    return f"within noise of {what}"


def best_of(spreads: Mapping[Any, Spread]) -> tuple[Any, list[Any]]:
    """(the key with the highest estimate, every key whose interval reaches the best's): a best is
    stated alone only when that list holds it alone."""
    best = max(spreads, key=lambda k: spreads[k].value)
    ties = [k for k in spreads if spreads[k].overlaps(spreads[best])]
    return best, ties


# The least a target pass over k ≥ 1 tokens can cost, in one-token passes of the same target timed beside it. A
# pass over k tokens reads every weight once, as a one-token pass does, and computes more, so v(k) < 1 only where a
# runtime's one-row products are its slow kernels: torch-kernels' v(5) = 0.90 is the lowest this project has
# measured (docs/performance.md), llama.cpp and eager torch sit at 1.6-1.8. 0.6 leaves a third below that for a
# short run's noise; the busy server of issue 47 gave 0.3 (its one-token passes were slowed, not its verify pass).
V_FLOOR = 0.6
# That reasoning holds for a pass bound by reading its weights: the smallest model the app runs for real
# (SmolLM2-135M) takes 13-18 ms a token on llama.cpp and ~50 ms on torch. Under WEIGHT_BOUND_MS (the typical, median
# one-token step) a pass is call overhead, as for the tests' tiny models (~0.5 ms), and there a verify pass and a
# one-token step run different code (the step also samples): v below V_FLOOR is possible and is not refused.
WEIGHT_BOUND_MS = 5.0


# The most a target pass over k tokens can cost, in one-token passes: k of them (a pass over k tokens reads every
# weight once, where k passes read them k times, and computes what they compute). V_SLACK one-token passes more is
# left for a short run's noise; beyond it the pass was slowed while it ran (a busy machine), and is refused.
V_SLACK = 0.25
# The most a draft's forward can cost, in one-token passes of a target on the same runtime that is at least as
# large: C_CEIL × max(1, the draft's bytes over the target's). A smaller model's pass reads fewer weights and does
# less arithmetic; the slack is a short run's noise and the draft's own sampling between its passes.
C_CEIL = 1.5


def check_verify_cost(verify_cost: float, tokens_in_pass: int | None = None, one_token_ms: float | None = None) -> None:
    """Refuse a verify cost v outside [V_FLOOR, k + V_SLACK]: a pass over k tokens that cost less than a fraction
    of one over a single token was not timed beside the passes it is compared with under the same conditions, and
    one that cost more than k of them was slowed while it ran. With `one_token_ms` (the median one-token step)
    under WEIGHT_BOUND_MS neither applies (a pass that short is call overhead, and its noise a large part of it)."""
    if not verify_cost > 0 or verify_cost != verify_cost or verify_cost == float("inf"):
        raise MeasurementError(f"impossible timing: a pass cost v = {verify_cost} one-token passes")
    over = f"over {tokens_in_pass} tokens " if tokens_in_pass else ""
    if one_token_ms is not None and one_token_ms < WEIGHT_BOUND_MS:
        return
    if tokens_in_pass and verify_cost > tokens_in_pass + V_SLACK:
        raise MeasurementError(
            f"a target pass {over}would have cost {verify_cost:.2f} single-token passes, and no pass over "
            f"{tokens_in_pass} tokens costs more than {tokens_in_pass} of them (it reads every weight once, where "
            f"{tokens_in_pass} passes read them {tokens_in_pass} times): the pass was slowed while it ran, most "
            "likely by a busy machine"
        )
    if verify_cost < V_FLOOR:
        raise MeasurementError(
            f"a target pass {over}would have cost {verify_cost:.2f} single-token passes, and no pass over several "
            f"tokens costs less than {V_FLOOR} of one (a pass reads every weight, as a one-token pass does; the "
            "cheapest measured here is 0.90): the one-token timings were slowed while they ran, most likely by a "
            "busy machine"
        )


def check_draft_cost(draft_cost: float, size_ratio: float | None, one_token_ms: float | None = None) -> None:
    """Refuse a draft cost c above C_CEIL × max(1, `size_ratio`) (the draft's bytes over the target's, where both
    are known and run on the same runtime; None: no bound): a draft's forward that cost more than its size allows
    was slowed while it ran. Not applied under WEIGHT_BOUND_MS one-token passes (call overhead, not weights)."""
    if not draft_cost >= 0 or draft_cost == float("inf"):
        raise MeasurementError(f"impossible timing: a draft forward cost c = {draft_cost} one-token passes")
    if size_ratio is None or (one_token_ms is not None and one_token_ms < WEIGHT_BOUND_MS):
        return
    ceiling = C_CEIL * max(1.0, size_ratio)
    if draft_cost > ceiling:
        raise MeasurementError(
            f"a draft forward would have cost c = {draft_cost:.2f} of the target's one-token passes, and a draft "
            f"{size_ratio:.2f}× the target's size on the same runtime costs at most {ceiling:.2f} (it reads fewer "
            "weights and computes less): its passes were slowed while they ran, most likely by a busy machine"
        )


def check_bounds(
    speedup: float,
    tokens_per_step: float,
    verify_cost: float,
    tokens_in_pass: int | None = None,
    one_token_ms: float | None = None,
    draft_cost: float | None = None,
    drafted_per_step: float | None = None,
    size_ratio: float | None = None,
) -> None:
    """The one check every measured speedup passes before it is shown: v inside [V_FLOOR, k + V_SLACK]
    (check_verify_cost, with its `tokens_in_pass` and the median `one_token_ms`), c under its ceiling
    (check_draft_cost, where `draft_cost` and the draft's `size_ratio` are given), and a speedup at most
    tokens_per_step / (v + c × drafted_per_step): a step costs at least its verify pass and its draft's forwards,
    and emits tokens_per_step tokens. Raises MeasurementError naming what is impossible."""
    check_verify_cost(verify_cost, tokens_in_pass, one_token_ms)
    if draft_cost is not None:
        check_draft_cost(draft_cost, size_ratio, one_token_ms)
    if not speedup >= 0 or speedup == float("inf"):
        raise MeasurementError(f"impossible timing: v = {verify_cost}, speedup = {speedup}")
    drafting = (draft_cost or 0.0) * (drafted_per_step or 0.0)
    ceiling = tokens_per_step / (verify_cost + drafting)
    if speedup > ceiling * (1 + 1e-9):
        with_draft = f" and {drafted_per_step:.1f} draft forwards at c = {draft_cost:.2f}" if drafting else ""
        raise MeasurementError(
            f"a speedup of {speedup:.2f}× is above what {tokens_per_step:.2f} tokens per step at v = "
            f"{verify_cost:.2f}{with_draft} allow ({ceiling:.2f}×): the timings do not belong together"
        )


def check_ideal(speedup: Spread, ideal: float) -> None:
    """Refuse a measured speedup whose whole interval lies above `ideal`, the S(τ) its own α and c give with a free
    verify pass (v = 1): no run beats the ideal it is measured against, beyond its noise."""
    if speedup.above(ideal * (1 + 1e-9)):
        raise MeasurementError(
            f"a measured speedup of {speedup.text()} is above the ideal S = {ideal:.2f}× its own acceptance and draft "
            "cost allow with a free verify pass: the timings do not belong together (the machine was most likely "
            "busy while part of them ran)"
        )


# --- the target alone ------------------------------------------------------------------------------


class TargetAlone:
    """Plain decoding with the target, one token per call, each timed (same sampling as the engine): the
    reference every speedup is measured against, on the same runtime. `feed` instead decodes given
    tokens (teacher-forced): the target alone's cost for the same tokens at the same context lengths. Each piece is
    timed by `timer` (specviz.analysis.clock), its evidence kept in `last`."""

    def __init__(
        self,
        pair: ModelPair,
        prompt: str | Sequence[int],
        config: SpecConfig,
        chat: bool | None = None,
        timer: clock.Timer | None = None,
    ) -> None:
        _, ids, _ = encode_prompt(pair, prompt, chat)
        self.config, self.eos = config, pair.codec.eos_token_id
        self.timer, self.target = timer or clock.default(), pair.target
        self.session, self.gen = pair.target.new_session(), torch.Generator().manual_seed(config.seed)
        with work_piece():  # reading the prompt: a piece of work of its own (specviz.pieces)
            self.logits = torch_threads.on_one_thread(self.session.extend)(ids, keep=1)[-1]
        self.budget = token_budget(config.max_new_tokens, pair.target.max_length, len(ids))
        self.tokens: list[int] = []
        self.seconds = 0.0
        self.times: list[float] = []  # seconds of each token, in order
        self.disturbed: list[str] = []  # why each token's piece waited for a core ("" where nothing says so)
        self.last: clock.Timed | None = None
        self.done = self.budget <= 0

    def _choose(self) -> int:
        probs = logits_to_probs(self.logits, self.config.temperature, self.config.top_k, self.config.top_p)
        return int(probs.argmax()) if self.config.mode == "greedy" else sample(probs, self.gen)

    def _next(self) -> None:
        token = self._choose()
        self.tokens.append(token)
        self.done = token == self.eos or len(self.tokens) >= self.budget
        if not self.done:
            self.logits = self.session.extend([token], keep=1)[-1]

    @torch_threads.on_one_thread  # its own tensor work on one thread, as the engine's (Decoder.step)
    def step(self) -> None:
        """Its next token, chosen and fed."""
        threads = clock.threads_of(self.target, 1)
        with work_piece():  # the turn, where a server hands them, is waited for before the clock starts
            _, self.last = self.timer.time(self._next, what="alone", tokens=1, threads=threads)
        self.times.append(self.last.ms / 1000.0)
        self.disturbed.append(self.last.disturbed() or "")
        self.seconds += self.times[-1]

    def _feed(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self._choose()
            self.tokens.append(int(token))
            self.logits = self.session.extend([int(token)], keep=1)[-1]

    @torch_threads.on_one_thread
    def feed(self, tokens: Sequence[int]) -> float:
        """Decode `tokens` as if chosen (each one chosen from the distribution, then the given one fed);
        returns the seconds it took (its evidence in `last`)."""
        threads = clock.threads_of(self.target, 1)
        _, self.last = self.timer.time(lambda: self._feed(tokens), what="alone", tokens=len(tokens), threads=threads)
        self.seconds += self.last.ms / 1000.0
        return self.last.ms / 1000.0


# --- a speculative run timed against the target alone, step by step ---------------------------------


@dataclass(frozen=True)
class PairedStep:
    tokens: int  # emitted by the speculative step
    drafted: int  # the draft's forwards: its draft tokens (a tree: one per level)
    spec_ms: float  # the speculative step's wall time (draft, verify, decide, record)
    draft_ms: float
    verify_ms: float
    alone_ms: float  # the target alone's time for the same tokens at the same context lengths
    disturbed: str = ""  # why either side waited for a core (specviz.analysis.clock), "" where nothing says so
    quiet: bool = True  # no other process held a core around either side


@dataclass(frozen=True)
class PairedRun:
    """A speculative run and, interleaved with it step by step, the target alone on the same tokens."""

    trace: RunTrace
    steps: tuple[PairedStep, ...]

    def columns(self) -> dict[str, list[float]]:
        return columns_of(self.steps)

    def speedup(self, seed: int = 0) -> Spread:
        return speedup_of(self.steps, seed)

    def verify_cost(self, seed: int = 0) -> Spread:
        return verify_cost_of(self.steps, seed)

    def draft_cost(self, seed: int = 0) -> Spread:
        return draft_cost_of(self.steps, seed)

    @property
    def one_token_ms(self) -> float:
        tokens = sum(s.tokens for s in self.steps)
        return sum(s.alone_ms for s in self.steps) / tokens if tokens else 0.0


def median_one_token_ms(steps: Sequence[PairedStep]) -> float | None:
    """The target alone's typical time for one token: the median over the steps of its time per token (a step
    slowed by a busy moment moves the mean, not this)."""
    per_token = [s.alone_ms / s.tokens for s in steps if s.tokens]
    return statistics.median(per_token) if per_token else None


# A run whose disturbed steps are more than this share of its steps is withheld; below it they are left out (a step
# and its counterpart together: the ratio of the rest is what a quiet machine gives).
DISTURBED_MAX = 0.25


def undisturbed(steps: Sequence[PairedStep], what: str = "this run") -> list[PairedStep]:
    """The steps whose two sides ran with the cores they needed (PairedStep.disturbed empty). BusyMachine where the
    others are more than DISTURBED_MAX of them: the measurement is withheld, not shown."""
    kept = [s for s in steps if not s.disturbed]
    if steps and len(steps) - len(kept) > DISTURBED_MAX * len(steps):
        first = next(s.disturbed for s in steps if s.disturbed)
        why = f"{len(steps) - len(kept)} of its {len(steps)} steps waited: {first}"
        raise BusyMachine(clock.busy_message(what, [why]))
    return kept


def columns_of(steps: Sequence[PairedStep]) -> dict[str, list[float]]:
    """Per step: each field, and `steps` (1 each: its sum over a resample counts the steps in it)."""
    fields = ("tokens", "drafted", "spec_ms", "draft_ms", "verify_ms", "alone_ms")
    return {"steps": [1.0] * len(steps), **{name: [float(getattr(s, name)) for s in steps] for name in fields}}


def speedup_of(steps: Sequence[PairedStep], seed: int = 0) -> Spread:
    """The target alone's time over speculation's for the same tokens: Σ alone / Σ spec over the undisturbed
    steps (BusyMachine where too many were disturbed)."""
    return bootstrap(columns_of(undisturbed(steps)), lambda s: s["alone_ms"] / s["spec_ms"], seed=seed)


def verify_cost_of(steps: Sequence[PairedStep], seed: int = 0) -> Spread:
    """v(k): the mean verify pass (Σ verify / steps) over the target alone's mean one-token time
    (Σ alone / Σ tokens), both at the run's own context lengths, over the undisturbed steps."""
    return bootstrap(
        columns_of(undisturbed(steps)),
        lambda s: (s["verify_ms"] * s["tokens"]) / (s["steps"] * s["alone_ms"]),
        seed=seed,
    )


def draft_cost_of(steps: Sequence[PairedStep], seed: int = 0) -> Spread:
    """c: one draft forward over one target-alone token, both measured here, over the undisturbed steps."""
    return bootstrap(
        columns_of(undisturbed(steps)),
        lambda s: (s["draft_ms"] * s["tokens"]) / (s["alone_ms"] * s["drafted"]),
        seed=seed,
    )


def paired_run(
    pair: ModelPair,
    prompt: str | Sequence[int],
    config: SpecConfig,
    chat: bool | None = None,
    max_steps: int | None = None,
    timer: clock.Timer | None = None,
) -> PairedRun:
    """Decode speculatively, and right after each step let the target alone decode the tokens that step
    emitted, at the same context lengths: the two alternate a step at a time (tens of milliseconds
    apart), so a load that comes and goes falls on both. Each step and its counterpart is one piece of work
    (specviz.pieces: a server's compute turn where the caller runs it `in_pieces`): both are timed in the same
    turn, and no wait for it is timed. `max_steps`: stop there (a run
    timed again up to the step it had reached: same settings and seed, same steps). `timer`: each side timed with
    its evidence (specviz.analysis.clock; default: the real clock): a step either side of which waited for a core is
    marked, and left out of the ratios (`undisturbed`)."""
    timer = timer or clock.default()
    with work_piece():  # reading the prompt into both is model work too
        decoder = Decoder(pair, prompt, config, chat=chat)
        alone = TargetAlone(pair, list(decoder.prompt_ids), config, timer=timer)
    steps = []
    while not decoder.done and (max_steps is None or len(steps) < max_steps):
        with work_piece():  # a step and its counterpart: one piece, one turn
            threads = clock.threads_of(pair.target, config.tau + 1)  # its verify pass's
            step, spec = timer.time(decoder.step, what="step", tokens=config.tau, threads=threads)
            alone.feed(step.emitted)
            alone_t = alone.last
        draft_ms, verify_ms = timer.step_parts(step)
        why = spec.disturbed() or alone_t.disturbed() or ""
        steps.append(
            PairedStep(
                tokens=len(step.emitted),
                drafted=step.draft_passes,
                spec_ms=spec.ms,
                draft_ms=draft_ms,
                verify_ms=verify_ms,
                alone_ms=alone_t.ms,
                disturbed=why,
                quiet=spec.quiet and alone_t.quiet,
            )
        )
    return PairedRun(decoder.trace(), tuple(steps))
