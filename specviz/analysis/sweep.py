"""How the accepted length and the speedup vary with τ: runs over τ × prompts × seeds, each timed
against the target alone on the same tokens step by step (specviz.analysis.measure.paired_run), and
per-τ summaries with Leviathan et al.'s theory beside the measurements (docs/algorithm.md, "Theory").

The work is split into units (one speculative run each) that a caller advances one at a time
(`Sweep.advance()`), so a UI can show progress and stop at any point with the finished units kept.
Finished units live in a cache dict the caller may keep and pass again: revisiting the same settings
costs nothing. `SweepResult.summary()` is what the charts draw and a snapshot freezes.

What was counted (acceptance, tokens per pass, per-position rates) is kept whatever the machine's load: only the
clocked numbers of a τ whose steps waited for a core (or whose times cannot be right) are withheld, with why. With the
pair's kept calibration (specviz.analysis.pairtimes) every τ also gets its speed from the counted work at those costs
and its ceiling (specviz.analysis.counted, specviz.analysis.theory.ceiling), clocked or not.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from specviz.analysis import clock
from specviz.analysis.counted import costed
from specviz.analysis.measure import (
    BusyMachine,
    MeasurementError,
    PairedStep,
    Spread,
    check_bounds,
    draft_cost_of,
    median_one_token_ms,
    paired_run,
    speedup_of,
    verify_cost_of,
)
from specviz.analysis.pairtimes import PairTimings
from specviz.analysis.sweep_summary import PolicySummary, SweepSummary, TauSummary
from specviz.analysis.theory import ceiling, expected_speedup, expected_tokens_per_step, speedup_with_verify_cost
from specviz.core.config import MODES, Mode, SpecConfig, TauPolicy
from specviz.core.metrics import Metrics, StepCount, compute_metrics
from specviz.core.prompt import encode_prompt
from specviz.errors import ConfigError
from specviz.models.pair import ModelPair


@dataclass(frozen=True)
class SweepSettings:
    taus: tuple[int, ...]  # the τ values to run
    prompts: tuple[str, ...]  # one run per prompt, τ and seed
    seeds: tuple[int, ...] = (0,)  # repetitions with different random draws
    # the settings every run shares, defaulting to SpecConfig's own (τ and the seed vary per run)
    mode: Mode = SpecConfig.mode
    temperature: float = SpecConfig.temperature
    top_k: int = SpecConfig.top_k
    top_p: float = SpecConfig.top_p
    max_new_tokens: int = 48  # tokens per run (longer than a single run's default: more steps to pool)
    # τ policies run beside fixed τ (docs/algorithm.md, "Variants"), each once per prompt and seed, starting
    # at (heuristic) or capped by (confidence) `policy_tau`
    policies: tuple[TauPolicy, ...] = ()
    policy_tau: int = 4
    confidence: float = SpecConfig.confidence
    chat: bool | None = None  # chat template: None = the model's default
    verification: str = "token"  # lossless mode's verification rule (docs/algorithm.md), a lossy one included
    knobs: tuple[tuple[str, float], ...] = ()  # a lossy rule's settings (SpecConfig's names), as (name, value) pairs

    def __post_init__(self) -> None:
        if not self.taus or not self.prompts or not self.seeds:
            raise ConfigError("a sweep needs at least one τ, one prompt and one seed")
        if any(not p.strip() for p in self.prompts):
            raise ConfigError("every prompt of a sweep needs some text")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        for tau in self.taus:  # SpecConfig validates every setting
            self.config(tau, self.seeds[0])
        for seed in self.seeds:
            self.config(self.taus[0], seed)
        for policy in self.policies:
            self.config(self.policy_tau, self.seeds[0], policy)

    def config(self, tau: int, seed: int, policy: TauPolicy = "fixed") -> SpecConfig:
        return SpecConfig(
            tau=tau,
            mode=self.mode,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            seed=seed,
            max_new_tokens=self.max_new_tokens,
            tau_policy=policy,
            confidence=self.confidence,
            verification=self.verification,
            **dict(self.knobs),
        )


@dataclass(frozen=True)
class RunSummary:
    """One speculative run, reduced to what the metrics read of each step, and each step's timing
    against the target alone on the same tokens."""

    tau: int  # fixed τ; for a policy, the τ it starts at (heuristic) or may not exceed (confidence)
    prompt_index: int
    seed: int
    steps: tuple[StepCount, ...]
    policy: TauPolicy = "fixed"
    paired: tuple[PairedStep, ...] = ()

    @property
    def metrics(self) -> Metrics:
        return compute_metrics(self.steps, self.tau)

    @property
    def accepted_lengths(self) -> tuple[int, ...]:
        """n of every step."""
        return tuple(s.n_accepted for s in self.steps)

    @property
    def step_taus(self) -> tuple[int, ...]:
        """τ of every step (shorter near max_new_tokens)."""
        return tuple(s.tau for s in self.steps)


@dataclass(frozen=True)
class Unit:
    prompt_index: int
    tau: int
    seed: int = 0
    policy: TauPolicy = "fixed"


class Sweep:
    """Runs the units of a sweep on one pair, skipping those already in `cache`."""

    def __init__(
        self,
        pair: ModelPair,
        settings: SweepSettings,
        cache: dict | None = None,
        timer: clock.Timer | None = None,
        timings: PairTimings | None = None,
    ) -> None:
        """`timings`: the pair's kept calibration, which costs each τ's counted work (None: clocked numbers only)."""
        self.pair, self.settings, self.timer, self.timings = pair, settings, timer, timings
        self.cache: dict[Hashable, Any] = {} if cache is None else cache
        for prompt in settings.prompts:  # fail early, before any work, on a bad prompt
            encode_prompt(pair, prompt, settings.chat)

    def units(self) -> list[Unit]:
        s = self.settings
        runs = [Unit(i, tau, seed) for tau in s.taus for i in range(len(s.prompts)) for seed in s.seeds]
        policies = [
            Unit(i, s.policy_tau, seed, policy)
            for policy in s.policies
            for i in range(len(s.prompts))
            for seed in s.seeds
        ]
        return runs + policies

    def key(self, unit: Unit) -> tuple:
        """What a unit measures: the models, their runtime, the prompt and every setting."""
        s = self.settings
        config = s.config(unit.tau, unit.seed, unit.policy)
        return (
            "run",
            self.pair.target.name,
            self.pair.draft.name,
            self.pair.runtime,
            s.prompts[unit.prompt_index],
            s.chat,
            config,
        )

    def pending(self) -> list[Unit]:
        return [u for u in self.units() if self.key(u) not in self.cache]

    def advance(self) -> Iterator[tuple[int, int, Unit]]:
        """Run the pending units one by one; yields (done, total, unit) after each. Each step of a unit with its
        target-alone counterpart is a piece of work (specviz.pieces): run `in_pieces` of a shared server's compute
        turn, the turn is taken and given back every step, so a class's Steps go between them, not after whole runs."""
        total = len(self.units())
        done = total - len(self.pending())
        for unit in self.pending():
            self.cache[self.key(unit)] = self._run_unit(unit)
            done += 1
            yield done, total, unit

    def run(self) -> SweepResult:
        for _ in self.advance():
            pass
        return self.result()

    def drop_impossible(self, busy: bool = True) -> list[tuple[int, str]]:
        """Take out of the cache the runs of every fixed τ whose timings no runtime could give (check_bounds: a
        verify pass cheaper than V_FLOOR one-token passes, or a speedup above tokens per step / v) or, where `busy`,
        whose steps waited for a core too often (BusyMachine), so that the next `advance` times them again; returns
        (τ, why) for each τ taken out. `busy=False`: a τ that only waited keeps its runs (its counts are shown, its
        clocked numbers withheld, its speed from the kept costs)."""
        dropped = []
        for tau in sorted({u.tau for u in self.units() if u.policy == "fixed"}):
            result = self.result()
            if not result._runs(tau):
                continue
            try:
                result._summary(tau)
            except MeasurementError as exc:
                if not busy and isinstance(exc, BusyMachine):
                    continue
                for unit in self.units():
                    if unit.tau == tau and unit.policy == "fixed":
                        self.cache.pop(self.key(unit), None)
                dropped.append((tau, str(exc)))
        return dropped

    def result(self) -> SweepResult:
        """Whatever has finished so far."""
        found = [self.cache.get(self.key(u)) for u in self.units()]
        runs = tuple(r for r in found if r is not None)
        return SweepResult(self.settings, runs, len(found) - len(runs), self.pair.runtime, self.timings)

    def _run_unit(self, unit: Unit) -> RunSummary:
        prompt = self.settings.prompts[unit.prompt_index]
        config = self.settings.config(unit.tau, unit.seed, unit.policy)
        run = paired_run(self.pair, prompt, config, chat=self.settings.chat, timer=self.timer)
        steps = tuple(StepCount.of(s) for s in run.trace.steps)
        return RunSummary(unit.tau, unit.prompt_index, unit.seed, steps, unit.policy, run.steps)


@dataclass(frozen=True)
class SweepResult:
    settings: SweepSettings
    runs: tuple[RunSummary, ...]
    pending: int  # units not run yet (a stopped or unfinished sweep)
    runtime: str = ""  # what ran the target (every time is measured on it)
    timings: PairTimings | None = None  # the pair's kept calibration: each τ's counted work costed with it

    @property
    def complete(self) -> bool:
        return self.pending == 0

    def _runs(self, tau: int | None = None, policy: TauPolicy = "fixed") -> list[RunSummary]:
        return [r for r in self.runs if r.policy == policy and (tau is None or r.tau == tau)]

    def pooled(self, tau: int | None = None, policy: TauPolicy = "fixed") -> Metrics:
        """docs/algorithm.md's metrics over every step of every run of `policy` (at `tau`, or at any τ)."""
        steps = [s for r in self._runs(tau, policy) for s in r.steps]
        return compute_metrics(steps, tau or max((s.tau for s in steps), default=0))

    def paired(self, tau: int | None = None, policy: TauPolicy = "fixed") -> list[PairedStep]:
        return [p for r in self._runs(tau, policy) for p in r.paired]

    @property
    def alpha(self) -> float | None:
        """α pooled over every drafted position of every run."""
        return self.pooled().alpha

    @property
    def acceptance_probability(self) -> float | None:
        """The i.i.d. model's per-token acceptance probability estimated from the runs themselves, in
        their own mode and sampling: accepted draft tokens / draft tokens the verifier decided on
        (each step decides its accepted tokens and, unless all were accepted, one rejected). In
        lossless mode it estimates α; in greedy and textbook modes it is what acceptance really was."""
        pooled = self.pooled()
        fixed = [s for r in self._runs() for s in r.steps]
        decided = pooled.accepted_tokens + sum(s.n_accepted < s.tau for s in fixed)
        return pooled.accepted_tokens / decided if decided else None

    @property
    def c(self) -> Spread | None:
        """docs/algorithm.md's c: one draft forward over one token of the target alone, both measured in
        these runs (pooled over every fixed τ)."""
        steps = [p for p in self.paired() if p.drafted]
        return draft_cost_of(steps) if steps else None

    def clocked_c(self) -> Spread | None:
        """c as `c` measures it, or None where its steps waited for a core or none drafted (counted numbers stand)."""
        try:
            return self.c
        except MeasurementError:
            return None

    def by_tau(self) -> list[TauSummary]:
        """One row per fixed τ that ran: what was counted always, its clocked numbers where they can be shown (else
        withheld, with why)."""
        fixed = {r.tau for r in self._runs()}
        return [self._summary(tau, strict=False) for tau in self.settings.taus if tau in fixed]

    def _summary(self, tau: int, strict: bool = True) -> TauSummary:
        """τ's row; `strict`: MeasurementError where its clocked numbers cannot be shown (a busy machine, impossible
        times), else those are None and `withheld` says why."""
        runs, m, paired = self._runs(tau), self.pooled(tau), self.paired(tau)
        per_seed = [
            compute_metrics([s for r in runs if r.seed == seed for s in r.steps], tau).mean_acceptance_length or 1.0
            for seed in sorted({r.seed for r in runs})
        ]
        alpha, a = self.alpha, self.acceptance_probability
        withheld = ""
        try:
            c = self.c
            speedup = speedup_of(paired) if paired else None
            v = verify_cost_of(paired) if paired else None
            if speedup is not None and v is not None:  # a step costs at least its verify pass
                check_bounds(speedup.value, (m.emitted_tokens / m.steps), v.value, tau + 1, median_one_token_ms(paired))
        except MeasurementError as exc:
            if strict:
                raise
            c, speedup, v, withheld = self.clocked_c(), None, None, str(exc)
        kept = self.timings
        counted = costed([s for r in runs for s in r.steps], kept) if kept is not None and m.steps else None
        split = None
        if kept is not None and m.steps:  # the ceiling from the pair's own v, E the tokens a pass counted here
            split = ceiling(tau, kept.v(tau + 1), kept.c, tokens_per_pass=m.emitted_tokens / m.steps)
        elif v is not None and c is not None and m.steps:
            split = ceiling(tau, v.value, c.value, tokens_per_pass=m.emitted_tokens / m.steps)
        s_v = None
        if None not in (alpha, v, c):
            at = lambda cost: speedup_with_verify_cost(alpha, tau, c.value, cost)  # noqa: E731
            s_v = Spread(at(v.value), at(v.high), at(v.low), v.n, f"S_v over v's {v.how}")
        lengths = [0] * (tau + 1)
        for n in (s.n_accepted for r in runs for s in r.steps):
            lengths[min(n, tau)] += 1
        return TauSummary(
            tau=tau,
            runs=len(runs),
            steps=m.steps,
            drafted=m.drafted_tokens,
            accepted=m.accepted_tokens,
            emitted=m.emitted_tokens,
            mean_acceptance_length=m.mean_acceptance_length or 1.0,
            mean_acceptance_length_low=min(per_seed),
            mean_acceptance_length_high=max(per_seed),
            draft_acceptance_rate=m.draft_acceptance_rate or 0.0,
            per_position_acceptance_rate=m.per_position_acceptance_rate,
            conditional_per_position_acceptance_rate=m.conditional_per_position_acceptance_rate,
            alpha=alpha,
            lengths=tuple(lengths),
            speedup=speedup,
            expected_tokens_per_step=None if alpha is None else expected_tokens_per_step(alpha, tau),
            predicted_speedup=None if alpha is None or c is None else expected_speedup(alpha, tau, c.value),
            expected_tokens_per_step_measured=None if a is None else expected_tokens_per_step(a, tau),
            predicted_speedup_measured=None if a is None or c is None else expected_speedup(a, tau, c.value),
            verify_cost=v,
            predicted_speedup_v=s_v,
            tv_mean=m.tv_mean,
            tv_max=m.tv_max,
            lossy_tokens_per_pass=m.lossy_tokens_per_pass,
            baseline_tokens_per_pass=m.baseline_tokens_per_pass,
            withheld=withheld,
            costed_speedup=None if counted is None else counted.speedup,
            ceiling=None if split is None else split.ceiling,
            ceiling_alpha=None if split is None else split.with_alpha,
            ceiling_c=None if split is None else split.with_c,
        )

    def by_policy(self) -> list[PolicySummary]:
        """Each τ policy that ran."""
        out = []
        for policy in self.settings.policies:
            runs = self._runs(policy=policy)
            if not runs:
                continue
            m, paired = self.pooled(policy=policy), self.paired(policy=policy)
            out.append(
                PolicySummary(
                    policy=policy,
                    tau=self.settings.policy_tau,
                    runs=len(runs),
                    steps=m.steps,
                    mean_tau=m.drafted_tokens / m.steps if m.steps else 0.0,
                    mean_acceptance_length=m.mean_acceptance_length or 1.0,
                    speedup=_clocked(paired),
                )
            )
        return out

    def summary(self) -> SweepSummary:
        """Everything the page draws, as plain data (what a snapshot freezes)."""
        rows, c = self.by_tau(), self.clocked_c()
        return SweepSummary(
            settings=json.loads(json.dumps(dataclasses.asdict(self.settings))),
            runtime=self.runtime,
            rows=tuple(rows),
            policies=tuple(self.by_policy()),
            alpha=self.alpha,
            acceptance_probability=self.acceptance_probability,
            c=c,
            pending=self.pending,
            calibration="" if self.timings is None else self.timings.label(),
        )

    def verdict(self) -> str:
        return self.summary().verdict()

    def to_frame(self) -> pd.DataFrame:
        return self.summary().to_frame()

    def to_dict(self) -> dict[str, Any]:
        summary = self.summary()
        return {
            **summary.to_dict(),
            "best_tau_measured": summary.best_tau_measured(),
            "best_tau_predicted": summary.best_tau_predicted(),
            "verdict": summary.verdict(),
            "complete": self.complete,
            "runs": [dataclasses.asdict(r) for r in self.runs],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def _clocked(paired: Sequence[PairedStep]) -> Spread | None:
    """A policy's measured speedup, or None where its steps waited for a core (its counted numbers stand)."""
    try:
        return speedup_of(paired) if paired else None
    except MeasurementError:
        return None


def histogram(lengths: Sequence[int], tau: int) -> list[int]:
    """How many steps accepted k = 0..τ draft tokens."""
    counts = [0] * (tau + 1)
    for n in lengths:
        counts[n] += 1
    return counts
