"""Reading a trace: where the time of a run went, SPEC.md's α and c, the S(τ) they predict, and the
bottleneck named in one sentence (issue: "reading a trace to find the bottleneck")."""

from __future__ import annotations

from dataclasses import dataclass

from specviz.analysis.theory import best_tau, expected_speedup
from specviz.core.trace import RunTrace


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

    @property
    def total_ms(self) -> float:
        return self.draft_ms + self.verify_ms + self.prefill_ms

    def shares(self) -> dict[str, float]:
        """Fraction of the recorded time per phase."""
        total = self.total_ms or 1.0
        return {"draft": self.draft_ms / total, "verify": self.verify_ms / total, "prefill": self.prefill_ms / total}


def diagnose(run: RunTrace) -> Diagnosis:
    m, tau = run.metrics, run.config.tau
    alpha, c, length = m.alpha, m.c, m.mean_acceptance_length
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
    elif best is not None and best != tau:
        sentence = (
            f"τ: with α = {alpha:.2f} and c = {c:.2f}, τ = {best} predicts S = {expected_speedup(alpha, best, c):.2f}× "
            f"against {predicted:.2f}× at τ = {tau}."
        )
    else:
        sentence = (
            f"Verification: the target's passes take {1 - draft_share:.0%} of the decoding time, as they should; "
            f"τ = {tau} is the best τ for α = {alpha:.2f} and c = {c:.2f}."
        )
    return Diagnosis(m.draft_ms, m.verify_ms, run.prefill_ms, alpha, c, tau, length, predicted, best, sentence)
