"""The τ sweep with the draft as a dimension: the same prompts, τ values and seeds for each of several drafts of one
target (the target drafting for itself in 8, 4 and 2 bits, a trained draft, prompt lookup, the GGUF files that pair
with it), run as one interleaved benchmark, each step timed beside the target alone; where each draft pays (its best
τ and speedup, α, tokens per step, and its costs c and v(τ + 1) from the pair's book of timings,
specviz.analysis.pairtimes), and one recommendation: a draft and τ, or why none pays here, in the words of c and v."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from specviz.analysis import clock
from specviz.analysis.measure import MeasurementError, Spread
from specviz.analysis.pairtimes import PairTimings
from specviz.analysis.sweep import Sweep, SweepSettings
from specviz.analysis.sweep_summary import SweepSummary
from specviz.analysis.theory import expected_tokens_per_step
from specviz.models.pair import ModelPair

GRADED = {  # the drafts a sweep across drafts offers for the embedded target: trained, and the target in fewer bits
    "distilled draft (trained)": "embedded",
    "the target in 8 bits (Q8_0)": "embedded:Q8_0",
    "the target in 4 bits (Q4_0)": "embedded:Q4_0",
    "the target in 2 bits (Q2_K)": "embedded:Q2_K",
    "prompt lookup": "prompt-lookup",
}
RETRIES = 1  # times the τ values whose runs were withheld (a busy machine, impossible timings) are run again


@dataclass(frozen=True, kw_only=True)
class DraftRow:
    """One draft at one τ."""

    draft: str
    tau: int
    alpha: float | None  # Σ min(p, q) over the drafted positions (docs/algorithm.md, "Metrics")
    accepted: float | None  # the acceptance the runs had in their own mode: accepted / (accepted + rejections)
    tokens_per_step: float
    c: Spread | None  # measured in the sweep's own runs
    speedup: Spread | None


@dataclass(frozen=True, kw_only=True)
class DraftSweep:
    """Each draft's sweep summary, in the order the drafts were given; the drafts whose measurement was withheld, with
    why (a busy machine, timings that cannot be right: specviz.analysis.measure)."""

    summaries: dict[str, SweepSummary]
    withheld: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[DraftRow]:
        return [
            DraftRow(
                draft=draft,
                tau=row.tau,
                alpha=summary.alpha,
                accepted=summary.acceptance_probability,
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
    timer: clock.Timer | None = None,
    retries: int = RETRIES,
) -> Iterator[tuple[int, int, str]]:
    """Run each draft's sweep (`pairs`: label → a pair of the same target and that draft) as one interleaved benchmark:
    a unit of each draft in turn, the order rotating every round, so a load that comes and goes falls on every draft
    alike. Yields (done, total, label) after each unit. `caches`: label → the sweep cache kept between calls (finished
    units are not run again). Then the τ values whose runs were withheld (Sweep.drop_impossible) are run again, at
    most `retries` times; what stays withheld is said by `summarize`."""
    caches = {} if caches is None else caches
    sweeps = {label: Sweep(pair, settings, caches.setdefault(label, {}), timer) for label, pair in pairs.items()}
    total = sum(len(s.units()) for s in sweeps.values())
    done = total - sum(len(s.pending()) for s in sweeps.values())
    for attempt in range(retries + 1):
        if attempt:  # the τ values withheld, run again
            for sweep in sweeps.values():
                sweep.drop_impossible()
            again = sum(len(s.pending()) for s in sweeps.values())
            if not again:
                return
            total += again
        running = {label: sweep.advance() for label, sweep in sweeps.items()}
        start = 0
        while running:
            labels = list(running)
            for label in labels[start % len(labels) :] + labels[: start % len(labels)]:
                if next(running[label], None) is None:
                    del running[label]
                    continue
                done += 1
                yield done, total, label
            start += 1


def summarize(pairs: Mapping[str, ModelPair], settings: SweepSettings, caches: dict[str, dict]) -> DraftSweep:
    """The finished drafts' summaries (a draft none of whose units ran yet is left out; one whose runs give no result
    that could be right, e.g. measured on a busy machine, is withheld with the reason)."""
    summaries, withheld = {}, {}
    for label, pair in pairs.items():
        result = Sweep(pair, settings, caches.setdefault(label, {})).result()
        if result.runs:
            try:
                summaries[label] = result.summary()
            except MeasurementError as exc:
                withheld[label] = str(exc)
    return DraftSweep(summaries=summaries, withheld=withheld)


# --- the recommendation ------------------------------------------------------------------------------------------


def needed_alpha(tau: int, c: float, v: float) -> float | None:
    """The least per-token acceptance α at which drafting τ tokens pays, given a draft forward c and a verify pass
    v = v(τ + 1) (in one-token target passes): E(α, τ) = (1 − α^{τ+1}) / (1 − α) = τ·c + v (docs/algorithm.md,
    "Verify cost"), E rising from 1 at α = 0 to τ + 1 at α = 1; 0 where any α pays (τ·c + v < 1), None where none
    does (τ·c + v ≥ τ + 1)."""
    cost = tau * c + v
    if cost < 1.0:
        return 0.0
    if cost >= tau + 1:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):  # bisection: E is increasing in α
        mid = (low + high) / 2
        low, high = (mid, high) if expected_tokens_per_step(mid, tau) < cost else (low, mid)
    return (low + high) / 2


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    """One sentence: a draft at a τ with its measured speedup, or why none pays here."""

    draft: str | None  # None: none pays
    tau: int | None
    speedup: Spread | None
    sentence: str


def costs_of(timings: PairTimings | None, tau: int) -> tuple[float, float] | None:
    """(c, v(τ + 1)) from a pair's book of timings; None where it has none."""
    return None if timings is None else (timings.c, timings.v(tau + 1))


def recommend(result: DraftSweep, timings: Mapping[str, PairTimings | None]) -> Recommendation:
    """The draft to use and its τ: of the drafts whose measured speedup's whole interval is above 1 at their best τ,
    the fastest. Where none is, "None pays here, because …" for the closest one (the highest speedup), in the words
    of its c and v(τ + 1) from the pair's timings (`timings`: label → the book's, or None): the α it would need
    (needed_alpha) against the α it accepted."""
    best = result.best()
    if not best:
        why = next(iter(result.withheld.values()), "no draft's runs finished")
        return Recommendation(draft=None, tau=None, speedup=None, sentence=f"Nothing could be measured here: {why}")
    paying = [r for r in best.values() if r.speedup.above(1.0)]
    if paying:
        top = max(paying, key=lambda r: r.speedup.value)
        costs = costs_of(timings.get(top.draft), top.tau)
        spent = "" if costs is None else f"; c = {costs[0]:.2f}, v({top.tau + 1}) = {costs[1]:.2f}"
        ties = [
            f"{r.draft} at τ = {r.tau} ({_measured(r.speedup)})"
            for r in paying
            if r is not top and r.speedup.overlaps(top.speedup)
        ]
        near = f"; {_and(ties)} {'is' if len(ties) == 1 else 'are'} within noise of it" if ties else ""
        return Recommendation(
            draft=top.draft,
            tau=top.tau,
            speedup=top.speedup,
            sentence=(
                f"{top.draft} at τ = {top.tau}: {top.speedup.text()} the target alone's speed here "
                f"(α = {_num(top.accepted)}, {top.tokens_per_step:.2f} tokens a step{spent}){near}."
            ),
        )
    top = max(best.values(), key=lambda r: r.speedup.value)
    return Recommendation(draft=None, tau=top.tau, speedup=top.speedup, sentence=_none_pays(top, timings))


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


def _measured(speedup: Spread) -> str:
    """'measured 0.73×, 0.52–0.83×': no parentheses, for a sentence that has its own."""
    interval = speedup.range_text()
    return f"measured {speedup.value:.2f}×" + ("" if speedup.low == speedup.high else f", {interval}")


def _none_pays(top: DraftRow, timings: Mapping[str, PairTimings | None]) -> str:
    tau, k = top.tau, top.tau + 1
    closest = f"the closest, {top.draft} at τ = {tau}"
    costs = costs_of(timings.get(top.draft), tau)
    if costs is None:
        return (
            f"None pays here: {closest}, {_measured(top.speedup)} the target alone's speed; its c and v could not be "
            "timed (below)."
        )
    c, v = costs
    priced = f"costs c = {c:.2f} of a target pass per draft token and v({k}) = {v:.2f} for the pass that checks them"
    needed = needed_alpha(tau, c, v)
    if needed is None:
        return (
            f"None pays here, because {closest} ({_measured(top.speedup)}), {priced}: even if every draft token were "
            f"accepted, a step would make {k} tokens for τ·c + v({k}) = {tau * c:.2f} + {v:.2f} = {tau * c + v:.2f} "
            "target passes."
        )
    accepted = top.accepted
    if accepted is not None and accepted > needed:
        noise = "slower than" if top.speedup.below(1.0) else "within noise of"
        return (
            f"None pays here for certain, because {closest}, measured {top.speedup.text()}, is {noise} the target "
            f"alone: it {priced}, so it needs α above {needed:.2f}, and it accepts {accepted:.2f}, but the rest of its "
            "steps (their other work, steps that drafted nothing, a last one cut short) left no margin here."
        )
    return (
        f"None pays here, because {closest} ({_measured(top.speedup)}), {priced}: it needs α above {needed:.2f} to "
        f"pay, and accepts α = {_num(accepted)}."
    )
