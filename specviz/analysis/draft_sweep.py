"""The τ sweep with the draft as a dimension: the same prompts, τ values and seeds for each of several drafts of one
target (the target drafting for itself in 8, 4 and 2 bits, a trained draft, prompt lookup), each draft's own sweep
timed beside the target alone, and where each one pays: its best τ and speedup, α and its cost c."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from specviz.analysis import clock
from specviz.analysis.measure import Spread
from specviz.analysis.sweep import Sweep, SweepSettings
from specviz.analysis.sweep_summary import SweepSummary
from specviz.models.pair import ModelPair

GRADED = {  # the drafts a sweep across drafts offers for the embedded target: trained, and the target in fewer bits
    "distilled draft (trained)": "embedded",
    "the target in 8 bits (Q8_0)": "embedded:Q8_0",
    "the target in 4 bits (Q4_0)": "embedded:Q4_0",
    "the target in 2 bits (Q2_K)": "embedded:Q2_K",
    "prompt lookup": "prompt-lookup",
}


@dataclass(frozen=True, kw_only=True)
class DraftRow:
    """One draft at one τ."""

    draft: str
    tau: int
    alpha: float | None
    tokens_per_step: float
    c: Spread | None
    speedup: Spread | None


@dataclass(frozen=True, kw_only=True)
class DraftSweep:
    """Each draft's sweep summary, in the order the drafts were given."""

    summaries: dict[str, SweepSummary]

    def rows(self) -> list[DraftRow]:
        return [
            DraftRow(
                draft=draft,
                tau=row.tau,
                alpha=summary.alpha,
                tokens_per_step=row.mean_acceptance_length,
                c=summary.c,
                speedup=row.speedup,
            )
            for draft, summary in self.summaries.items()
            for row in summary.rows
        ]

    def best(self) -> dict[str, DraftRow]:
        """Each draft's τ with the highest measured speedup (drafts whose runs were not timed are left out)."""
        out: dict[str, DraftRow] = {}
        for row in self.rows():
            if row.speedup is not None and (row.draft not in out or row.speedup.value > out[row.draft].speedup.value):
                out[row.draft] = row
        return out

    def verdict(self) -> str:
        best = self.best()
        if not best:
            return "No draft's runs were timed."
        top = max(best.values(), key=lambda r: r.speedup.value)
        parts = [
            f"{r.draft}: {r.speedup.text()} at τ = {r.tau} (α = {_num(r.alpha)}, c = {_c(r.c)})" for r in best.values()
        ]
        return f"{top.draft} pays best here. " + "; ".join(parts) + "."


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _c(c: Spread | None) -> str:
    return "–" if c is None else c.text(unit="")


def sweep_drafts(
    pairs: Mapping[str, ModelPair],
    settings: SweepSettings,
    caches: dict[str, dict] | None = None,
    turn: Callable[[], contextlib.AbstractContextManager] | None = None,
    timer: clock.Timer | None = None,
) -> Iterator[tuple[int, int, str]]:
    """Run each draft's sweep (`pairs`: label → a pair of the same target and that draft); yields (done, total, label)
    after each unit. `caches`: label → the sweep cache kept between calls (finished units are not run again)."""
    caches = {} if caches is None else caches
    sweeps = {label: Sweep(pair, settings, caches.setdefault(label, {}), timer) for label, pair in pairs.items()}
    total = sum(len(s.units()) for s in sweeps.values())
    done = total - sum(len(s.pending()) for s in sweeps.values())
    for label, sweep in sweeps.items():
        for _ in sweep.advance(turn=turn):
            done += 1
            yield done, total, label


def summarize(pairs: Mapping[str, ModelPair], settings: SweepSettings, caches: dict[str, dict]) -> DraftSweep:
    """The finished drafts' summaries (a draft none of whose units ran yet is left out)."""
    summaries = {}
    for label, pair in pairs.items():
        result = Sweep(pair, settings, caches.setdefault(label, {})).result()
        if result.runs:
            summaries[label] = result.summary()
    return DraftSweep(summaries=summaries)
