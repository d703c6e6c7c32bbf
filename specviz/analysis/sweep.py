"""How the accepted length varies with τ: runs over τ × prompts × seeds, a target-only baseline
per prompt, and per-τ summaries with Leviathan et al.'s theory beside the measurements.

The work is split into units (one baseline, or one speculative run) that a caller advances one
at a time (`Sweep.advance()`), so a UI can show progress and stop at any point with the finished
units kept. Finished units live in a cache dict the caller may keep and pass again: revisiting
the same settings costs nothing.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from specviz.analysis.metrics import Metrics, StepCount, compute_metrics
from specviz.analysis.theory import best_tau, expected_speedup, expected_tokens_per_step, speedup_with_verify_cost
from specviz.core.config import MODES, Mode, SpecConfig, TauPolicy
from specviz.core.engine import Decoder, encode_prompt
from specviz.core.sampling import logits_to_probs, sample
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
    # τ policies run beside fixed τ (SPEC.md, "Variants"), each once per prompt and seed, starting
    # at (heuristic) or capped by (confidence) `policy_tau`
    policies: tuple[TauPolicy, ...] = ()
    policy_tau: int = 4
    confidence: float = SpecConfig.confidence
    chat: bool | None = None  # chat template: None = the model's default

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
            tau=tau, mode=self.mode, temperature=self.temperature, top_k=self.top_k, top_p=self.top_p,
            seed=seed, max_new_tokens=self.max_new_tokens, tau_policy=policy, confidence=self.confidence,
        )  # fmt: skip


@dataclass(frozen=True)
class RunSummary:
    """One speculative run, reduced to what the metrics read of each step."""

    tau: int  # fixed τ; for a policy, the τ it starts at (heuristic) or may not exceed (confidence)
    prompt_index: int
    seed: int
    steps: tuple[StepCount, ...]
    policy: TauPolicy = "fixed"

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
class Baseline:
    """Target-only decoding of one prompt: the reference speed."""

    prompt_index: int
    tokens: int
    decode_ms: float  # wall time of the token loop (prefill excluded, as for the runs)

    @property
    def ms_per_token(self) -> float:
        return self.decode_ms / max(self.tokens, 1)


@dataclass(frozen=True)
class TauSummary:
    tau: int
    runs: int
    steps: int
    drafted: int
    accepted: int
    emitted: int
    mean_acceptance_length: float  # 1 + accepted / steps, pooled over prompts and seeds
    mean_acceptance_length_low: float  # lowest per-seed value (band)
    mean_acceptance_length_high: float  # highest per-seed value (band)
    draft_acceptance_rate: float
    per_position_acceptance_rate: tuple[float, ...]
    conditional_per_position_acceptance_rate: tuple[float | None, ...]
    alpha: float | None
    tokens_per_second: float
    baseline_tokens_per_second: float | None
    speedup: float | None  # measured: tokens/s over target-only tokens/s
    expected_tokens_per_step: float | None  # (1 − α^{τ+1}) / (1 − α) from the sweep's α
    predicted_speedup: float | None  # S(τ) from the sweep's α and c
    expected_tokens_per_step_measured: float | None  # the same formula, from acceptance_probability
    predicted_speedup_measured: float | None  # S(τ) from acceptance_probability and c
    # SPEC.md "Verify cost", measured in these runs: a verify pass (τ + 1 tokens) over a target-only token
    verify_cost: float | None = None  # v(τ + 1)
    predicted_speedup_v: float | None = None  # S_v(τ) = E / (τ·c₁ + v(τ + 1)), E from α, c₁ = c_target_only


@dataclass(frozen=True)
class PolicySummary:
    policy: TauPolicy
    tau: int  # the start (heuristic) or the cap (confidence)
    runs: int
    steps: int
    mean_tau: float  # draft tokens per step, as the policy chose them
    mean_acceptance_length: float
    tokens_per_second: float
    speedup: float | None  # measured, over target-only decoding


@dataclass(frozen=True)
class Unit:
    kind: str  # "baseline" | "run"
    prompt_index: int
    tau: int = 0
    seed: int = 0
    policy: TauPolicy = "fixed"


class Sweep:
    """Runs the units of a sweep on one pair, skipping those already in `cache`."""

    def __init__(self, pair: ModelPair, settings: SweepSettings, cache: dict | None = None) -> None:
        self.pair, self.settings = pair, settings
        self.cache: dict[Hashable, Any] = {} if cache is None else cache
        for prompt in settings.prompts:  # fail early, before any work, on a bad prompt
            encode_prompt(pair, prompt, settings.chat)

    def units(self) -> list[Unit]:
        s = self.settings
        baselines = [Unit("baseline", i) for i in range(len(s.prompts))]
        runs = [Unit("run", i, tau, seed) for tau in s.taus for i in range(len(s.prompts)) for seed in s.seeds]
        policies = [
            Unit("run", i, s.policy_tau, seed, policy)
            for policy in s.policies for i in range(len(s.prompts)) for seed in s.seeds
        ]  # fmt: skip
        return baselines + runs + policies

    def key(self, unit: Unit) -> tuple:
        s = self.settings
        models = (self.pair.target.name, self.pair.draft.name if unit.kind == "run" else "")
        config = s.config(max(unit.tau, 1), unit.seed, unit.policy)
        if unit.kind == "baseline":  # the same baseline serves every τ and seed
            config = dataclasses.replace(config, tau=1, seed=0)
        return (unit.kind, *models, s.prompts[unit.prompt_index], s.chat, config)

    def pending(self) -> list[Unit]:
        return [u for u in self.units() if self.key(u) not in self.cache]

    def advance(self) -> Iterator[tuple[int, int, Unit]]:
        """Run the pending units one by one; yields (done, total, unit) after each."""
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

    def result(self) -> SweepResult:
        """Whatever has finished so far."""
        found = [(u, self.cache.get(self.key(u))) for u in self.units()]
        runs = tuple(r for u, r in found if u.kind == "run" and r is not None)
        baselines = tuple(b for u, b in found if u.kind == "baseline" and b is not None)
        return SweepResult(self.settings, runs, baselines, len(self.pending()))

    def _run_unit(self, unit: Unit) -> RunSummary | Baseline:
        prompt = self.settings.prompts[unit.prompt_index]
        if unit.kind == "baseline":
            return target_only(self.pair, prompt, self.settings.config(1, 0), unit.prompt_index, self.settings.chat)
        config = self.settings.config(unit.tau, unit.seed, unit.policy)
        trace = Decoder(self.pair, prompt, config, chat=self.settings.chat).run()
        steps = tuple(StepCount.of(s) for s in trace.steps)
        return RunSummary(unit.tau, unit.prompt_index, unit.seed, steps, unit.policy)


def target_only(
    pair: ModelPair, prompt: str, config: SpecConfig, prompt_index: int = 0, chat: bool | None = None
) -> Baseline:
    """Decode with the target alone (same warping, argmax in greedy mode), timing the token loop."""
    _, ids, _ = encode_prompt(pair, prompt, chat)
    session, gen, eos = pair.target.new_session(), torch.Generator().manual_seed(config.seed), pair.codec.eos_token_id
    logits = session.extend(ids, keep=1)[-1]
    budget = config.max_new_tokens if pair.target.max_length is None else min(
        config.max_new_tokens, pair.target.max_length - len(ids)
    )  # fmt: skip
    tokens, start = 0, time.perf_counter()
    while tokens < budget:
        probs = logits_to_probs(logits, config.temperature, config.top_k, config.top_p)
        token = int(probs.argmax()) if config.mode == "greedy" else sample(probs, gen)
        tokens += 1
        if token == eos or tokens == budget:
            break
        logits = session.extend([token], keep=1)[-1]
    return Baseline(prompt_index, tokens, (time.perf_counter() - start) * 1000.0)


@dataclass(frozen=True)
class SweepResult:
    settings: SweepSettings
    runs: tuple[RunSummary, ...]
    baselines: tuple[Baseline, ...]
    pending: int  # units not run yet (a stopped or unfinished sweep)

    @property
    def complete(self) -> bool:
        return self.pending == 0

    def pooled(self, tau: int | None = None, policy: TauPolicy = "fixed") -> Metrics:
        """SPEC.md's metrics over every step of every run of `policy` (at `tau`, or at any τ)."""
        steps = [s for r in self.runs if r.policy == policy and (tau is None or r.tau == tau) for s in r.steps]
        return compute_metrics(steps, tau or max((s.tau for s in steps), default=0))

    def by_policy(self) -> list[PolicySummary]:
        """Each τ policy that ran, beside the best fixed τ (by measured speedup)."""
        base, out = self.baseline_tokens_per_second, []
        for policy in self.settings.policies:
            runs = [r for r in self.runs if r.policy == policy]
            if not runs:
                continue
            m = self.pooled(policy=policy)
            tps = m.tokens_per_second or 0.0
            out.append(PolicySummary(
                policy=policy, tau=self.settings.policy_tau, runs=len(runs), steps=m.steps,
                mean_tau=m.drafted_tokens / m.steps if m.steps else 0.0,
                mean_acceptance_length=m.mean_acceptance_length or 1.0, tokens_per_second=tps,
                speedup=tps / base if base else None,
            ))  # fmt: skip
        return out

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
        fixed = [s for r in self.runs if r.policy == "fixed" for s in r.steps]
        decided = pooled.accepted_tokens + sum(s.n_accepted < s.tau for s in fixed)
        return pooled.accepted_tokens / decided if decided else None

    @property
    def c(self) -> float | None:
        """SPEC.md's c: time of one draft forward over time of one target forward of one token, from the
        target-only baseline on the same runtime (c_target_only); without a baseline, over a verify pass."""
        c1 = self.c_target_only
        return c1 if c1 is not None else self.c_verify_pass

    @property
    def c_verify_pass(self) -> float | None:
        """Another timing ratio: a draft forward over a verify pass (τ + 1 tokens), pooled over every run:
        the c a single trace can tell (Metrics.c). It hides the verify cost v inside it."""
        return self.pooled().c

    @property
    def c_target_only(self) -> float | None:
        """Another timing ratio: draft time per forward over target-only decoding's time per token."""
        pooled, tokens = self.pooled(), sum(b.tokens for b in self.baselines)
        if not pooled.drafted_tokens or not tokens:
            return None
        return (pooled.draft_ms / pooled.drafted_tokens) / (sum(b.decode_ms for b in self.baselines) / tokens)

    @property
    def baseline_tokens_per_second(self) -> float | None:
        ms = sum(b.decode_ms for b in self.baselines)
        return 1000.0 * sum(b.tokens for b in self.baselines) / ms if ms else None

    def policy_frame(self) -> pd.DataFrame:
        """The τ policies' rows and, last, the best fixed τ's (by measured speedup) to compare with."""
        rows = [dataclasses.asdict(s) for s in self.by_policy()]
        best = next((s for s in self.by_tau() if s.tau == self.best_tau_measured()), None)
        if best is not None:
            rows.append({
                "policy": f"fixed τ = {best.tau} (best measured)", "tau": best.tau, "runs": best.runs,
                "steps": best.steps, "mean_tau": float(best.tau), "mean_acceptance_length": best.mean_acceptance_length,
                "tokens_per_second": best.tokens_per_second, "speedup": best.speedup,
            })  # fmt: skip
        return pd.DataFrame(rows)

    def by_tau(self) -> list[TauSummary]:
        """One row per fixed τ that ran."""
        fixed = {r.tau for r in self.runs if r.policy == "fixed"}
        return [self._summary(tau) for tau in self.settings.taus if tau in fixed]

    def _summary(self, tau: int) -> TauSummary:
        runs = [r for r in self.runs if r.tau == tau and r.policy == "fixed"]
        m = self.pooled(tau)
        per_seed = [
            compute_metrics([s for r in runs if r.seed == seed for s in r.steps], tau).mean_acceptance_length or 1.0
            for seed in sorted({r.seed for r in runs})
        ]
        alpha, c, base, a = self.alpha, self.c, self.baseline_tokens_per_second, self.acceptance_probability
        tps = m.tokens_per_second or 0.0
        v, c1 = self._verify_cost(m), self.c_target_only
        return TauSummary(
            tau=tau, runs=len(runs), steps=m.steps, drafted=m.drafted_tokens, accepted=m.accepted_tokens,
            emitted=m.emitted_tokens, mean_acceptance_length=m.mean_acceptance_length or 1.0,
            mean_acceptance_length_low=min(per_seed), mean_acceptance_length_high=max(per_seed),
            draft_acceptance_rate=m.draft_acceptance_rate or 0.0,
            per_position_acceptance_rate=m.per_position_acceptance_rate,
            conditional_per_position_acceptance_rate=m.conditional_per_position_acceptance_rate,
            alpha=alpha, tokens_per_second=tps, baseline_tokens_per_second=base, speedup=tps / base if base else None,
            expected_tokens_per_step=None if alpha is None else expected_tokens_per_step(alpha, tau),
            predicted_speedup=None if alpha is None or c is None else expected_speedup(alpha, tau, c),
            expected_tokens_per_step_measured=None if a is None else expected_tokens_per_step(a, tau),
            predicted_speedup_measured=None if a is None or c is None else expected_speedup(a, tau, c),
            verify_cost=v,
            predicted_speedup_v=None if None in (alpha, v, c1) else speedup_with_verify_cost(alpha, tau, c1, v),
        )  # fmt: skip

    def verify_cost(self, tau: int) -> float | None:
        """v(τ + 1) measured in these runs (SPEC.md, "Verify cost"): the mean verify pass at τ, which
        scores τ + 1 tokens, over the target-only baseline's time per token, on the same runtime."""
        return self._verify_cost(self.pooled(tau))

    def _verify_cost(self, m: Metrics) -> float | None:
        tokens = sum(b.tokens for b in self.baselines)
        if not m.steps or not tokens or not m.verify_ms:
            return None
        return (m.verify_ms / m.steps) / (sum(b.decode_ms for b in self.baselines) / tokens)

    def best_tau_measured(self) -> int | None:
        rows = [s for s in self.by_tau() if s.speedup is not None]
        return max(rows, key=lambda s: s.speedup).tau if rows else None

    def best_tau_predicted(self) -> int | None:
        """The best τ by Leviathan's S(τ), which assumes v = 1."""
        if self.alpha is None or self.c is None:
            return None
        return best_tau(self.alpha, self.c, max_tau=max(self.settings.taus))

    def best_tau_predicted_v(self) -> int | None:
        """The best τ of those that ran by S_v(τ), with the verify cost measured at each."""
        rows = [s for s in self.by_tau() if s.predicted_speedup_v is not None]
        return max(rows, key=lambda s: s.predicted_speedup_v).tau if rows else None

    def verdict(self) -> str:
        """One paragraph that agrees with the chart below it: the prediction with the measured verify cost
        beside the measurement, and why Leviathan's S(τ) (v = 1) promises more."""
        alpha, c = self.alpha, self.c
        if alpha is None or c is None:
            return "Not enough finished work for a verdict yet."
        rows = {s.tau: s for s in self.by_tau()}
        measured, with_v, plain = self.best_tau_measured(), self.best_tau_predicted_v(), self.best_tau_predicted()
        if measured is None or with_v is None:  # no baseline: no time to compare
            helps = "so speculation can help" if alpha > c else "so speculation cannot beat the target alone"
            return (
                f"Speculation helps when α > c; here α = {alpha:.2f}, c = {c:.2f}, {helps}. Predicted best τ = {plain}."
            )
        costs = [s.verify_cost for s in rows.values() if s.verify_cost is not None]
        best, predicted = rows[measured], rows[with_v]
        outcome = "faster than" if best.speedup > 1 else "slower than"
        return (
            f"Measured: best τ = {measured}, {best.speedup:.2f}× the target alone ({outcome} it). "
            f"Predicted with the verify cost measured in these runs: best τ = {with_v}, "
            f"S_v = {predicted.predicted_speedup_v:.2f}× (α = {alpha:.2f}; c = {c:.2f}, a draft "
            f"forward over a one-token target pass; one pass over τ + 1 tokens costs v = {_span(costs)} one-token "
            f"passes). Leviathan's S(τ) assumes v = 1 and predicts τ = {plain} "
            f"({expected_speedup(alpha, plain, c):.2f}×): the gap between the two is the cost of verifying in one pass."
        )

    def to_frame(self) -> pd.DataFrame:
        """The results table: one row per τ."""
        return pd.DataFrame([dataclasses.asdict(s) for s in self.by_tau()])

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": dataclasses.asdict(self.settings),
            "alpha": self.alpha,
            "c": self.c,
            "c_target_only": self.c_target_only,
            "c_verify_pass": self.c_verify_pass,
            "acceptance_probability": self.acceptance_probability,
            "baseline_tokens_per_second": self.baseline_tokens_per_second,
            "best_tau_measured": self.best_tau_measured(),
            "best_tau_predicted": self.best_tau_predicted(),
            "best_tau_predicted_v": self.best_tau_predicted_v(),
            "verdict": self.verdict(),
            "complete": self.complete,
            "taus": [dataclasses.asdict(s) for s in self.by_tau()],
            "policies": [dataclasses.asdict(s) for s in self.by_policy()],
            "runs": [dataclasses.asdict(r) for r in self.runs],
            "baselines": [dataclasses.asdict(b) for b in self.baselines],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def _span(values: Sequence[float]) -> str:
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return low if low == high else f"{low}–{high}"


def parse_taus(text: str) -> tuple[int, ...]:
    """'1-8' → 1..8; '1,2,4' → (1, 2, 4); '1-4,8' → (1, 2, 3, 4, 8)."""
    taus: list[int] = []
    try:
        for part in text.replace(" ", "").split(","):
            lo, _, hi = part.partition("-")
            taus.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError as exc:
        raise ConfigError(f"write τ values like 1-8 or 1,2,4; got {text!r}") from exc
    if not taus:
        raise ConfigError(f"no τ values in {text!r}")
    return tuple(sorted(set(taus)))


def histogram(lengths: Sequence[int], tau: int) -> list[int]:
    """How many steps accepted k = 0..τ draft tokens."""
    counts = [0] * (tau + 1)
    for n in lengths:
        counts[n] += 1
    return counts


@dataclass(frozen=True)
class VerifyTiming:
    """One target pass over τ + 1 positions against τ + 1 one-token passes over the same tokens."""

    tokens: int  # τ + 1
    parallel_ms: float  # median of one pass over all of them
    sequential_ms: float  # median of the one-token passes, summed

    @property
    def ratio(self) -> float:
        """How many one-token passes the single pass costs (1.0 would be free parallelism)."""
        return self.parallel_ms / (self.sequential_ms / self.tokens)


def verify_timing(pair: ModelPair, prompt: str, tau: int, chat: bool | None = None, repeats: int = 7) -> VerifyTiming:
    """Time verification both ways on the prompt's own text: the target's cache holds the prompt
    minus its last τ + 1 tokens, which are then scored in one pass, or one at a time (medians of
    `repeats`, the cache cropped back after each)."""
    _, ids, _ = encode_prompt(pair, prompt, chat)
    if len(ids) < tau + 2:
        raise ConfigError(f"the prompt needs at least {tau + 2} tokens to time τ = {tau}; it has {len(ids)}")
    head, tail = ids[: -(tau + 1)], ids[-(tau + 1) :]
    session = pair.target.new_session()
    session.extend(head, keep=1)
    parallel, sequential = [], []
    for _ in range(repeats + 1):  # the first round warms up
        start = time.perf_counter()
        session.extend(tail, keep=len(tail))
        parallel.append(time.perf_counter() - start)
        session.crop(len(head))
        start = time.perf_counter()
        for token in tail:
            session.extend([token], keep=1)
        sequential.append(time.perf_counter() - start)
        session.crop(len(head))
    return VerifyTiming(len(tail), statistics.median(parallel[1:]) * 1000.0, statistics.median(sequential[1:]) * 1000.0)
