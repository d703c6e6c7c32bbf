"""Reading a trace: where the time of a run went, α and c (docs/algorithm.md, "Metrics"), the S(τ)
they predict, and the bottleneck named in one sentence.

A trace times its verify passes (τ + 1 tokens each) but not a one-token target pass, so on its own it
cannot tell the verify cost v ("Verify cost"): it names no bottleneck and predicts no S (the v = 1 it would take
is an assumption, not the pair's cost). Given the run timed again beside the target alone on the
same tokens (specviz.analysis.measure.paired_run: the same settings and seed give the same steps), the
reading adds v(τ + 1), c over a one-token pass, S_v(τ) and the run's own measured speedup, each with its
95% interval, and names the verify cost when it is what keeps the run slow. Nothing is compared across
two measurements taken at different times or under different runtimes.

Where the run's clocks waited for a core, `diagnose_counted` reads the same run from its counted work at the pair's
kept calibration (specviz.analysis.counted): v(τ + 1) and c the calibration's, the speedup the counts' at those costs,
each over the kept costs' interquartile ranges, and `calibration` says which calibration it rests on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from specviz.analysis.counted import Costed, costed
from specviz.analysis.measure import PairedRun, Spread, against_one, check_bounds, median_one_token_ms
from specviz.analysis.pairtimes import PairTimings
from specviz.analysis.theory import Ceiling, best_tau, ceiling, expected_speedup, speedup_with_verify_cost
from specviz.core.trace import RunTrace


@dataclass(frozen=True)
class Diagnosis:
    draft_ms: float  # all draft phases
    verify_ms: float  # all target passes that verified
    prefill_ms: float  # reading the prompt into both models
    alpha: float | None
    c: float | None  # a draft forward over a verify pass (the trace alone), or over a one-token pass (measured)
    tau: int  # the run's τ setting
    mean_acceptance_length: float | None
    predicted_speedup: float | None  # S(τ) from α and c
    best_tau: int | None  # the integer argmax of S from α and c
    bottleneck: str  # one sentence
    # with the run timed beside the target alone on the same tokens (docs/algorithm.md "Verify cost"); None without
    verify_cost: Spread | None = None  # v(τ + 1): a verify pass of this run over one token of the target alone
    c_one_token: Spread | None = None  # a draft forward over one token of the target alone
    predicted_speedup_v: Spread | None = None  # S_v(τ) = E / (τ·c + v), E from α; its range from v's
    run_speedup: Spread | None = None  # this run against the target alone, measured step by step
    # where the four above come from the counted work at the pair's kept calibration (diagnose_counted): its label
    calibration: str = ""

    def ceiling(self) -> Ceiling | None:
        """The ceiling at τ from v(τ + 1), and the run's speedup split into what α and c cost (E its mean acceptance
        length); None without a measured or kept v and c."""
        if self.verify_cost is None or self.c_one_token is None or self.mean_acceptance_length is None:
            return None
        return ceiling(
            self.tau, self.verify_cost.value, self.c_one_token.value, tokens_per_pass=self.mean_acceptance_length
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Diagnosis:
        spreads = ("verify_cost", "c_one_token", "predicted_speedup_v", "run_speedup")
        spread = lambda k: None if data[k] is None else Spread.from_dict(data[k])  # noqa: E731
        return cls(**{**data, **{k: spread(k) for k in spreads}, "calibration": str(data.get("calibration", ""))})

    @property
    def total_ms(self) -> float:
        return self.draft_ms + self.verify_ms + self.prefill_ms

    def shares(self) -> dict[str, float]:
        """Fraction of the recorded time per phase."""
        total = self.total_ms or 1.0
        return {"draft": self.draft_ms / total, "verify": self.verify_ms / total, "prefill": self.prefill_ms / total}


def diagnose(run: RunTrace, measured: PairedRun | None = None, size_ratio: float | None = None) -> Diagnosis:
    """The reading of `run`; with `measured` (the same run timed beside the target alone), its verify cost,
    its speedup and S_v as measured, each inside its bounds (check_bounds: v, c against the draft's `size_ratio`
    where known, the speedup against both) or MeasurementError."""
    m, tau = run.metrics, run.config.tau
    alpha, c, length = m.alpha, m.c, m.mean_acceptance_length
    v = c1 = s_v = achieved = None
    if measured is not None and measured.steps:
        v, c1, achieved = measured.verify_cost(), measured.draft_cost(), measured.speedup()
        steps = measured.steps
        per_step = sum(s.tokens for s in steps) / len(steps)
        in_pass = None if run.config.tree else tau + 1
        drafted = sum(s.drafted for s in steps) / len(steps)
        check_bounds(
            achieved.value,
            per_step,
            v.value,
            in_pass,
            median_one_token_ms(steps),
            draft_cost=c1.value,
            drafted_per_step=drafted,
            size_ratio=size_ratio,
        )
        if alpha is not None:
            at = lambda cost: speedup_with_verify_cost(alpha, tau, c1.value, cost)  # noqa: E731
            s_v = Spread(at(v.value), at(v.high), at(v.low), v.n, f"S_v over v's {v.how}")
        c = c1.value  # docs/algorithm.md's c: over a one-token target pass
    costs = v is not None and alpha is not None and c is not None  # the pair's v and c, measured with this run
    predicted = expected_speedup(alpha, tau, c) if costs else None
    best = best_tau(alpha, c, max_tau=16) if costs else None
    sentence = _bottleneck(m, alpha, c, tau, length, predicted, v, s_v, achieved) if costs else _unmeasured(m, alpha, c)
    return Diagnosis(
        m.draft_ms, m.verify_ms, run.prefill_ms, alpha, c, tau, length, predicted, best, sentence, v, c1, s_v, achieved
    )


def diagnose_counted(run: RunTrace, timings: PairTimings) -> Diagnosis:
    """The reading of `run` from its counted work at the pair's kept `timings` (no clock of this run in it): v(τ + 1)
    and c over the kept T's interquartile ranges, the speedup of the counts at those costs with its range, S_v, the
    bottleneck; `calibration` names the calibration. For a run whose own clocks waited for a core."""
    m, tau = run.metrics, run.config.tau
    alpha, length = m.alpha, m.mean_acceptance_length
    one = timings.one_token_ms.value
    k = tau + 1
    at = [j for j in sorted(timings.passes_ms) if j >= k] or [max(timings.passes_ms)]
    pass_ms, draft = timings.passes_ms[at[0]], timings.draft_ms
    how = "the kept calibration's median and interquartile range"
    v = Spread(timings.v(k), pass_ms.low / one, pass_ms.high / one, pass_ms.n, how)
    c1 = Spread(timings.c, draft.low / one, draft.high / one, draft.n, how)
    work: Costed = costed(run.steps, timings)
    achieved = work.spread() if work.work.passes else None
    s_v = None
    if alpha is not None:
        at_v = lambda cost: speedup_with_verify_cost(alpha, tau, c1.value, cost)  # noqa: E731
        s_v = Spread(at_v(v.value), at_v(v.high), at_v(v.low), v.n, f"S_v over v's {how}")
    c = c1.value
    predicted = expected_speedup(alpha, tau, c) if alpha is not None else None
    best = best_tau(alpha, c, max_tau=16) if alpha is not None else None
    sentence = (
        _bottleneck(m, alpha, c, tau, length, predicted, v, s_v, achieved)
        if m.steps and alpha is not None
        else _unmeasured(m, alpha, c)
    )
    return Diagnosis(
        m.draft_ms,
        m.verify_ms,
        run.prefill_ms,
        alpha,
        c,
        tau,
        length,
        predicted,
        best,
        sentence,
        v,
        c1,
        s_v,
        achieved,
        calibration=timings.label(),
    )


UNMEASURED = (
    "Not named: a bottleneck rests on the pair's costs, a verify pass (v) and a draft forward (c) against one token "
    "of the target alone, and this run's are not measured. A trace alone times its verify passes but no one-token "
    "pass, so taking v = 1 would name a bottleneck (and an S) from an assumption: time the run beside the target "
    "alone first (a replayed trace has no model to time)."
)


def _unmeasured(m, alpha, c) -> str:
    """The bottleneck's sentence where there is no α or the pair's costs are not measured: none named, and why."""
    return (
        "Not enough steps with a draft to say: step further first." if not m.steps or None in (alpha, c) else UNMEASURED
    )


def _bottleneck(m, alpha, c, tau, length, predicted, v, s_v, achieved) -> str:
    """The bottleneck from the pair's costs measured with the run (v, c over a one-token pass) and the trace's α."""
    draft_share = m.draft_ms / (m.draft_ms + m.verify_ms) if m.draft_ms + m.verify_ms else 0.0
    if alpha <= c:
        return (
            f"The draft: it is right (α = {alpha:.2f}) no more often than it is cheap (c = {c:.2f}), so speculation "
            "cannot beat the target alone at any τ; a cheaper or better-matched draft is needed."
        )
    if s_v is not None and s_v.high < 1.0 <= predicted:
        return (
            f"Verification cost: one target pass over τ + 1 = {tau + 1} tokens costs v = {v.text(unit='')} one-token "
            f"passes on this runtime, so a step costs τc + v = {tau * c + v.value:.2f} one-token passes for "
            f"{length or 1.0:.2f} tokens: {achieved.text()} the target alone as measured, where S(τ) with v = 1 "
            f"promises {predicted:.2f}×. A smaller τ or a runtime whose multi-token passes cost less would help."
        )
    if length is not None and length < 1.5:
        return (
            f"Acceptance: the target keeps few draft tokens (mean acceptance length {length:.2f}), so each "
            "verification pass yields little; a better-matched draft, or a smaller τ, would help."
        )
    if draft_share > 0.4:
        return (
            f"Drafting: the draft takes {draft_share:.0%} of the decoding time (c = {c:.2f}); a cheaper draft "
            "or a smaller τ would help."
        )
    tail = f"; this run: {achieved.text()} the target alone ({against_one(achieved, 'it')}), v = {v.text(unit='')}."
    return f"Verification: the target's passes take {1 - draft_share:.0%} of the decoding time, as they should" + tail
