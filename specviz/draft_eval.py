"""How good is a draft? The numbers of the trained-draft issue, measured with the engine itself.

- α: SPEC's α (mean β = Σ min(p, q) over draft positions) of textbook runs at temperature 1, τ = 4.
- mean acceptance length: of the same runs.
- greedy agreement: the draft acceptance rate of greedy runs at τ = 1, where every draft token
  extends the confirmed (target's own) sequence: how often argmax q = argmax p. At larger τ the
  rate also counts tokens drafted after a miss; τ = 4's is reported beside it.
- c: one draft forward over one target forward, a single token with a warm KV cache (medians).
- speedup: greedy speculative tokens/s over target-only greedy tokens/s, per τ, same process.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specviz.config import SpecConfig
from specviz.engine import Decoder, encode_prompt
from specviz.pair import ModelPair
from specviz.sweep import target_only

Prompt = tuple[str, bool]  # text, wrap in the chat template


@dataclass(frozen=True)
class Pooled:
    steps: int
    drafted: int
    accepted: int
    emitted: int
    beta_sum: float
    betas: int
    ms: float

    @property
    def alpha(self) -> float | None:
        return self.beta_sum / self.betas if self.betas else None

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1 + self.accepted / self.steps if self.steps else None

    @property
    def tokens_per_second(self) -> float:
        return self.emitted * 1000.0 / self.ms if self.ms else 0.0


@dataclass(frozen=True)
class DraftReport:
    draft: str
    prompts: int
    new_tokens: int
    alpha: float | None  # textbook, temperature 1, τ = 4
    mean_acceptance_length: float | None  # textbook, τ = 4
    greedy_agreement: float | None  # greedy draft acceptance rate, τ = 1
    greedy_acceptance_rate_tau4: float | None  # greedy draft acceptance rate, τ = 4
    draft_ms: float  # median single-token forward with cache
    target_ms: float
    c: float
    baseline_tokens_per_second: float
    greedy_tokens_per_second: dict[int, float]  # by τ
    speedup: dict[int, float]  # by τ
    best_tau: int
    best_speedup: float

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def lines(self) -> list[str]:
        def fmt(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        rows = [
            f"draft: {self.draft}  ({self.prompts} held-out prompts × {self.new_tokens} tokens)",
            f"α (textbook, T=1, τ=4):               {fmt(self.alpha)}",
            f"greedy agreement (greedy, τ=1):       {fmt(self.greedy_agreement)}",
            f"greedy acceptance rate at τ=4:         {fmt(self.greedy_acceptance_rate_tau4)}",
            f"mean acceptance length (textbook τ=4): {fmt(self.mean_acceptance_length)}",
            f"c = draft / target forward:            {self.c:.3f}  ({self.draft_ms:.1f} ms / {self.target_ms:.1f} ms)",
            f"target-only greedy:                    {self.baseline_tokens_per_second:.1f} tok/s",
        ]
        rows += [
            f"greedy speculative τ={t}:               {self.greedy_tokens_per_second[t]:.1f} tok/s, "
            f"speedup {self.speedup[t]:.2f}×"
            for t in sorted(self.speedup)
        ]
        rows.append(f"best τ = {self.best_tau}: speedup {self.best_speedup:.2f}×")
        return rows


def pooled_runs(
    pair: ModelPair, prompts: Sequence[Prompt], config: SpecConfig, tick: Callable[[], None] = lambda: None
) -> Pooled:
    steps = drafted = accepted = emitted = betas = 0
    beta_sum = ms = 0.0
    for text, chat in prompts:
        trace = Decoder(pair, text, config, chat=chat).run()
        m = trace.metrics
        steps, drafted, accepted, emitted = (
            steps + m.steps, drafted + m.drafted_tokens, accepted + m.accepted_tokens, emitted + m.emitted_tokens,
        )  # fmt: skip
        beta_sum += sum(b for s in trace.steps for b in s.beta)
        betas += sum(len(s.beta) for s in trace.steps)
        ms += m.draft_ms + m.verify_ms
        tick()
    return Pooled(steps, drafted, accepted, emitted, beta_sum, betas, ms)


def forward_ms(pair: ModelPair, ids: Sequence[int], repeats: int = 20) -> tuple[float, float]:
    """Median times (target, draft) of one single-token forward on top of a cached prefix of `ids`."""
    sessions = pair.new_sessions()
    for session in sessions:
        session.extend(list(ids)[:-1], keep=1)
    medians = []
    for session in sessions:
        times = []
        for _ in range(repeats + 2):
            start = time.perf_counter()
            session.extend([ids[-1]], keep=1)
            times.append((time.perf_counter() - start) * 1000.0)
            session.crop(len(ids) - 1)
        medians.append(statistics.median(times[2:]))
    return medians[0], medians[1]


def baseline_tokens_per_second(pair: ModelPair, prompts: Sequence[Prompt], config: SpecConfig) -> float:
    tokens, ms = 0, 0.0
    for text, chat in prompts:
        b = target_only(pair, text, config, chat=chat)
        tokens, ms = tokens + b.tokens, ms + b.decode_ms
    return tokens * 1000.0 / ms


def evaluate_draft(
    pair: ModelPair,
    prompts: Sequence[Prompt],
    *,
    new_tokens: int = 64,
    taus: Sequence[int] = (1, 2, 3, 4, 5, 6),
    seed: int = 0,
    progress: Callable[[str], None] = lambda _msg: None,
) -> DraftReport:
    base = SpecConfig(tau=4, mode="textbook", temperature=1.0, seed=seed, max_new_tokens=new_tokens)
    greedy = dataclasses.replace(base, mode="greedy")
    progress("timing single-token forwards")
    _, ids, _ = encode_prompt(pair, prompts[0][0], prompts[0][1])
    target_ms, draft_ms = forward_ms(pair, ids)
    progress("textbook runs at τ = 4")
    textbook = pooled_runs(pair, prompts, base)
    progress("target-only greedy baseline")
    pooled_runs(pair, prompts[:1], dataclasses.replace(greedy, max_new_tokens=8))  # warm-up
    before = baseline_tokens_per_second(pair, prompts, greedy)
    by_tau: dict[int, Pooled] = {}
    for tau in sorted(set(taus) | {1, 4}):
        progress(f"greedy runs at τ = {tau}")
        by_tau[tau] = pooled_runs(pair, prompts, dataclasses.replace(greedy, tau=tau))
    progress("target-only greedy baseline, again")
    baseline = (before + baseline_tokens_per_second(pair, prompts, greedy)) / 2
    tps = {t: p.tokens_per_second for t, p in by_tau.items()}
    speedup = {t: v / baseline for t, v in tps.items()}
    best = max(speedup, key=speedup.get)
    return DraftReport(
        draft=pair.draft.name, prompts=len(prompts), new_tokens=new_tokens, alpha=textbook.alpha,
        mean_acceptance_length=textbook.mean_acceptance_length,
        greedy_agreement=by_tau[1].acceptance_rate, greedy_acceptance_rate_tau4=by_tau[4].acceptance_rate,
        draft_ms=draft_ms, target_ms=target_ms, c=draft_ms / target_ms, baseline_tokens_per_second=baseline,
        greedy_tokens_per_second=tps, speedup=speedup, best_tau=best, best_speedup=speedup[best],
    )  # fmt: skip
