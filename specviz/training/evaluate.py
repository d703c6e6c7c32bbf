"""How good is a draft? The numbers of the trained-draft issue, measured with the engine itself.

- α: the algorithm's α (mean β = Σ min(p, q) over draft positions) of textbook runs at temperature 1, τ = 4.
- mean acceptance length: of greedy runs at τ = 4 (and of the textbook runs).
- greedy agreement: the draft acceptance rate of greedy runs at τ = 1, where every draft token
  extends the confirmed (target's own) sequence: how often argmax q = argmax p. At larger τ the
  rate also counts tokens drafted after a miss; τ = 4's is reported beside it.
- c: docs/algorithm.md's, one draft forward over one target forward (a verify pass), pooled over the greedy
  runs at τ = 4; beside it, single-token forwards with a warm KV cache (medians).
- speedup: greedy speculative tokens/s over target-only greedy tokens/s, per τ, same process.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specviz.analysis.measure import PairedStep, paired_run, speedup_of
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.core.metrics import Metrics, StepCount, compute_metrics
from specviz.core.prompt import encode_prompt
from specviz.loading import load_pair
from specviz.models.pair import ModelPair
from specviz.training.prompts import eval_prompts

Prompt = tuple[str, bool]  # text, wrap in the chat template


@dataclass(frozen=True)
class DraftReport:
    draft: str
    prompts: int
    new_tokens: int
    alpha: float | None  # textbook, temperature 1, τ = 4
    mean_acceptance_length: float | None  # greedy, τ = 4
    mean_acceptance_length_textbook: float | None  # textbook, temperature 1, τ = 4
    greedy_agreement: float | None  # greedy draft acceptance rate, τ = 1
    greedy_acceptance_rate_tau4: float | None  # greedy draft acceptance rate, τ = 4
    c: float | None  # docs/algorithm.md's c, pooled over the greedy runs at τ = 4: draft forward / verify pass
    draft_ms: float  # median single-token forward with a warm cache
    target_ms: float
    c_single_token: float  # draft_ms / target_ms
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
            f"mean acceptance length (greedy τ=4):   {fmt(self.mean_acceptance_length)}",
            f"mean acceptance length (textbook τ=4): {fmt(self.mean_acceptance_length_textbook)}",
            f"c = draft forward / target forward:    {fmt(self.c)}  (in the greedy runs at τ=4)",
            f"single-token forwards, draft / target: {self.c_single_token:.3f}  "
            f"({self.draft_ms:.1f} ms / {self.target_ms:.1f} ms)",
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
) -> Metrics:
    """docs/algorithm.md's metrics pooled over one run per prompt."""
    steps: list[StepCount] = []
    for text, chat in prompts:
        steps += [StepCount.of(s) for s in Decoder(pair, text, config, chat=chat).run().steps]
        tick()
    return compute_metrics(steps, config.tau)


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


def paired_runs(pair: ModelPair, prompts: Sequence[Prompt], config: SpecConfig) -> tuple[Metrics, list[PairedStep]]:
    """The metrics pooled over one run per prompt, and every step timed beside the target alone on its tokens."""
    steps: list[StepCount] = []
    paired: list[PairedStep] = []
    for text, chat in prompts:
        run = paired_run(pair, text, config, chat=chat)
        steps += [StepCount.of(s) for s in run.trace.steps]
        paired += run.steps
    return compute_metrics(steps, config.tau), paired


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
    pooled_runs(pair, prompts[:1], dataclasses.replace(greedy, max_new_tokens=8))  # warm-up
    by_tau: dict[int, Metrics] = {}
    speedup: dict[int, float] = {}
    alone: list[PairedStep] = []
    for tau in sorted(set(taus) | {1, 4}):  # each step timed beside the target alone decoding the same tokens
        progress(f"greedy runs at τ = {tau}, beside the target alone")
        by_tau[tau], paired = paired_runs(pair, prompts, dataclasses.replace(greedy, tau=tau))
        speedup[tau] = speedup_of(paired).value
        alone += paired
    baseline = 1000.0 * sum(p.tokens for p in alone) / sum(p.alone_ms for p in alone)
    tps = {t: p.tokens_per_second or 0.0 for t, p in by_tau.items()}
    best = max(speedup, key=speedup.get)
    return DraftReport(
        draft=pair.draft.name,
        prompts=len(prompts),
        new_tokens=new_tokens,
        alpha=textbook.alpha,
        mean_acceptance_length=by_tau[4].mean_acceptance_length,
        mean_acceptance_length_textbook=textbook.mean_acceptance_length,
        greedy_agreement=by_tau[1].draft_acceptance_rate,
        greedy_acceptance_rate_tau4=by_tau[4].draft_acceptance_rate,
        c=by_tau[4].c,
        draft_ms=draft_ms,
        target_ms=target_ms,
        c_single_token=draft_ms / target_ms,
        baseline_tokens_per_second=baseline,
        greedy_tokens_per_second=tps,
        speedup=speedup,
        best_tau=best,
        best_speedup=speedup[best],
    )


USAGE = """Evaluate drafts of the embedded target on held-out prompts (never used in training).

    python scripts/eval_draft.py                                  # the default (trained) embedded draft
    python scripts/eval_draft.py --draft embedded --draft early-exit:8 --json runs/eval.json

Reports α at temperature 1, greedy agreement, mean acceptance length at τ = 4 (textbook), c and the
measured speedup of greedy speculative decoding over target-only greedy decoding at each τ, all in
one process. Timings are from one run on this machine: run it alone, nothing else on the CPU.
"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draft", action="append", help="draft spec (repeatable): embedded, early-exit:K or a folder")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--taus", default="1,2,3,4,5,6")
    ap.add_argument("--prompts", type=int, default=None, help="use only the first N held-out prompts")
    ap.add_argument("--json", help="also write the reports here")
    args = ap.parse_args(argv)
    prompts = eval_prompts()[: args.prompts]
    taus = [int(t) for t in args.taus.split(",")]
    reports = []
    for spec in args.draft or ["embedded"]:
        pair = load_pair("embedded", spec, device="cpu", dtype="float32")
        report = evaluate_draft(
            pair, prompts, new_tokens=args.new_tokens, taus=taus, progress=lambda m: print("  ..", m, flush=True)
        )
        print("\n".join(report.lines()), flush=True)
        when = {
            "date": datetime.date.today().isoformat(),
            "hardware": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}",
        }
        reports.append({"spec": spec, **when, **report.to_dict()})
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1) + "\n")
