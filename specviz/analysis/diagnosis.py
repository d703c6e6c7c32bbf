"""Reading a trace: where the time of a run went, SPEC.md's α and c, the S(τ) they predict, and the
bottleneck named in one sentence (issue: "reading a trace to find the bottleneck").

A trace times its verify passes (τ + 1 tokens each) but not a one-token target pass, so on its own it
cannot tell the verify cost v of SPEC.md ("Verify cost"). Given the target's time for one token on the
same runtime (`one_token_time`), the reading adds v(τ + 1), S_v(τ) and the run's own speedup over
the target alone, and names the verify cost when it is what keeps the run slow."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from specviz.analysis.theory import best_tau, expected_speedup, speedup_with_verify_cost
from specviz.core.trace import RunTrace
from specviz.errors import ConfigError
from specviz.models.pair import ModelPair


@dataclass(frozen=True)
class Diagnosis:
    draft_ms: float  # all draft phases
    verify_ms: float  # all target passes that verified
    prefill_ms: float  # reading the prompt into both models
    alpha: float | None
    c: float | None
    tau: int  # the run's τ setting
    mean_acceptance_length: float | None
    predicted_speedup: float | None  # S(τ) from α and c
    best_tau: int | None  # the integer argmax of S from α and c
    bottleneck: str  # one sentence
    # with the target's one-token time on the same runtime (SPEC.md "Verify cost"); None without it
    verify_cost: float | None = None  # v(τ + 1): a verify pass of this run over one one-token pass
    c_one_token: float | None = None  # a draft forward over a one-token target pass
    predicted_speedup_v: float | None = None  # S_v(τ) = E / (τ·c + v), E from α
    run_speedup: float | None = None  # this run against the target alone: its tokens per step / (τ·c + v)

    @property
    def total_ms(self) -> float:
        return self.draft_ms + self.verify_ms + self.prefill_ms

    def shares(self) -> dict[str, float]:
        """Fraction of the recorded time per phase."""
        total = self.total_ms or 1.0
        return {"draft": self.draft_ms / total, "verify": self.verify_ms / total, "prefill": self.prefill_ms / total}


def pass_times(pair: ModelPair, ids: Sequence[int], ks: Sequence[int], repeats: int = 5) -> dict[int, float]:
    """The target's time (ms, median of `repeats` after a warm-up) for one pass over k tokens, for each
    k in `ks`, all at the same cache length: the prompt's `ids` less its last max(ks) tokens, the
    passes scoring those. v(k) of SPEC.md is T(k) / T(1)."""
    if len(ids) < max(ks) + 1:
        raise ConfigError(f"the prompt needs at least {max(ks) + 1} tokens to time passes of {max(ks)}")
    head = len(ids) - max(ks)
    session = pair.target.new_session()
    session.extend(list(ids[:head]), keep=1)
    out = {}
    for k in ks:
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            session.extend(list(ids[head : head + k]), keep=k)
            times.append(time.perf_counter() - start)
            session.crop(head)
        out[k] = statistics.median(times[1:]) * 1000.0
    return out


def one_token_time(pair: ModelPair, ids: Sequence[int], repeats: int = 5) -> float:
    """The target's time for one token after `ids` less its last (ms): the target-alone decoding step
    that a verify pass is compared with."""
    return pass_times(pair, ids, [1], repeats)[1]


def diagnose(run: RunTrace, one_token_ms: float | None = None) -> Diagnosis:
    m, tau = run.metrics, run.config.tau
    alpha, c, length = m.alpha, m.c, m.mean_acceptance_length
    v = c1 = s_v = achieved = None
    if one_token_ms and m.steps and m.drafted_tokens and m.verify_ms:
        v = (m.verify_ms / m.steps) / one_token_ms
        c1 = (m.draft_ms / m.drafted_tokens) / one_token_ms
        s_v = None if alpha is None else speedup_with_verify_cost(alpha, tau, c1, v)
        achieved = (length or 1.0) / ((m.drafted_tokens / m.steps) * c1 + v)
        c = c1  # SPEC's c: over a one-token target pass
    predicted = expected_speedup(alpha, tau, c) if alpha is not None and c is not None else None
    best = best_tau(alpha, c, max_tau=16) if alpha is not None and c is not None else None
    draft_share = m.draft_ms / (m.draft_ms + m.verify_ms) if m.draft_ms + m.verify_ms else 0.0
    if not m.steps or alpha is None or c is None:
        sentence = "Not enough steps with a draft to say: step further first."
    elif alpha <= c:
        sentence = (
            f"The draft: it is right (α = {alpha:.2f}) no more often than it is cheap (c = {c:.2f}), so speculation "
            "cannot beat the target alone at any τ; a cheaper or better-matched draft is needed."
        )
    elif v is not None and s_v is not None and predicted is not None and s_v < 1.0 <= predicted:
        sentence = (
            f"Verification cost: one target pass over τ + 1 = {tau + 1} tokens costs v = {v:.2f} one-token passes on "
            f"this runtime, so a step costs τc + v = {tau * c + v:.2f} one-token passes for "
            f"{length or 1.0:.2f} tokens: {achieved:.2f}× the target alone, where S(τ) with v = 1 promises "
            f"{predicted:.2f}×. A smaller τ or a runtime whose multi-token passes cost less would help."
        )
    elif length is not None and length < 1.5:
        sentence = (
            f"Acceptance: the target keeps few draft tokens (mean acceptance length {length:.2f}), so each "
            "verification pass yields little; a better-matched draft, or a smaller τ, would help."
        )
    elif draft_share > 0.4:
        sentence = (
            f"Drafting: the draft takes {draft_share:.0%} of the decoding time (c = {c:.2f}); a cheaper draft "
            "or a smaller τ would help."
        )
    elif best is not None and best != tau and v is None:
        sentence = (
            f"τ: with α = {alpha:.2f} and c = {c:.2f}, τ = {best} predicts S = {expected_speedup(alpha, best, c):.2f}× "
            f"against {predicted:.2f}× at τ = {tau}."
        )
    else:
        sentence = (
            f"Verification: the target's passes take {1 - draft_share:.0%} of the decoding time, as they should"
            + (f"; τ = {tau} is the best τ for α = {alpha:.2f} and c = {c:.2f}." if v is None else
               f"; this run: {achieved:.2f}× the target alone (v = {v:.2f}).")
        )  # fmt: skip
    return Diagnosis(
        m.draft_ms, m.verify_ms, run.prefill_ms, alpha, c, tau, length, predicted, best, sentence, v, c1, s_v, achieved
    )
