"""A τ sweep's results as the page shows them: per-τ rows with their intervals, the τ policies, α, the
acceptance probability and c, and the verdict in words that respects the noise (a best τ, "faster" or
"slower", only where the intervals separate them). Plain data: it round-trips through JSON, so a
snapshot for slides redraws exactly what was measured (specviz.analysis.snapshot)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from specviz.analysis.counted import QUIET_MINUTE
from specviz.analysis.measure import Spread, against_one, best_of
from specviz.analysis.theory import best_tau, expected_speedup
from specviz.core.config import TauPolicy


def _spread(data: dict[str, Any] | Spread | None) -> Spread | None:
    return data if data is None or isinstance(data, Spread) else Spread.from_dict(data)


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
    per_position_acceptance_rate: tuple[float | None, ...]
    conditional_per_position_acceptance_rate: tuple[float | None, ...]
    alpha: float | None
    lengths: tuple[int, ...]  # how many steps accepted n = 0, 1, …, τ draft tokens
    speedup: Spread | None  # measured: the target alone's time for the same tokens over speculation's
    expected_tokens_per_step: float | None  # (1 − α^{τ+1}) / (1 − α) from the sweep's α
    predicted_speedup: float | None  # S(τ) from the sweep's α and c (v = 1)
    expected_tokens_per_step_measured: float | None  # the same formula, from acceptance_probability
    predicted_speedup_measured: float | None  # S(τ) from acceptance_probability and c
    # docs/algorithm.md "Verify cost", measured in these runs: a verify pass (τ + 1 tokens) over one token of
    # the target alone, both at the runs' own context lengths
    verify_cost: Spread | None = None  # v(τ + 1)
    predicted_speedup_v: Spread | None = None  # S_v(τ) = E / (τ·c + v(τ + 1)), E from α; its range from v's
    # a lossy rule (docs/algorithm.md, "Lossy rules"): TV(o_t, p_t) over the positions it decided, mean and largest,
    # and the expected tokens per pass of the rule and of its lossless baseline on the same drafts (exact)
    tv_mean: float | None = None
    tv_max: float | None = None
    lossy_tokens_per_pass: float | None = None
    baseline_tokens_per_pass: float | None = None
    withheld: str = ""  # why the clocked numbers above are None (a busy machine, impossible times); "" where shown
    # the counted work at the pair's kept calibration (specviz.analysis.counted): a speed whatever the load
    costed_speedup: float | None = None
    # the ceiling (τ + 1)/v(τ + 1), then E/v(τ + 1) with this acceptance, then E/(τ·c + v(τ + 1)) with c too; v and c
    # the kept calibration's (else these runs' own), E the tokens a pass counted (specviz.analysis.theory.Ceiling)
    ceiling: float | None = None
    ceiling_alpha: float | None = None
    ceiling_c: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TauSummary:
        tuples = ("per_position_acceptance_rate", "conditional_per_position_acceptance_rate", "lengths")
        spreads = ("speedup", "verify_cost", "predicted_speedup_v")
        return cls(**{**data, **{k: tuple(data[k]) for k in tuples}, **{k: _spread(data[k]) for k in spreads}})


@dataclass(frozen=True)
class PolicySummary:
    policy: TauPolicy
    tau: int  # the start (heuristic) or the cap (confidence)
    runs: int
    steps: int
    mean_tau: float  # draft tokens per step, as the policy chose them
    mean_acceptance_length: float
    speedup: Spread | None  # measured, against the target alone on the same tokens

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicySummary:
        return cls(**{**data, "speedup": _spread(data["speedup"])})


@dataclass(frozen=True)
class SweepSummary:
    """A sweep's results as the page shows them: per-τ rows with their spreads, the policies, α, the
    acceptance probability and c. Plain data: it round-trips through JSON (a snapshot for slides)."""

    settings: dict[str, Any]
    runtime: str
    rows: tuple[TauSummary, ...]
    policies: tuple[PolicySummary, ...]
    alpha: float | None
    acceptance_probability: float | None
    c: Spread | None
    pending: int
    calibration: str = ""  # the kept calibration the costed speeds rest on (PairTimings.label); "" where none

    @property
    def complete(self) -> bool:
        return self.pending == 0

    @property
    def taus(self) -> tuple[int, ...]:
        return tuple(self.settings["taus"])

    def row(self, tau: int) -> TauSummary:
        return next(r for r in self.rows if r.tau == tau)

    def best_tau_measured(self) -> int | None:
        spreads = {r.tau: r.speedup for r in self.rows if r.speedup is not None}
        return best_of(spreads)[0] if spreads else None

    def within_noise_of_best(self) -> list[int]:
        """Every τ whose measured interval reaches the best one's: these cannot be told apart here."""
        spreads = {r.tau: r.speedup for r in self.rows if r.speedup is not None}
        return best_of(spreads)[1] if spreads else []

    def best_tau_predicted(self) -> int | None:
        """The best τ by Leviathan's S(τ), which assumes v = 1."""
        if self.alpha is None or self.c is None:
            return None
        return best_tau(self.alpha, self.c.value, max_tau=max(self.taus))

    def best_tau_predicted_v(self) -> tuple[int | None, list[int]]:
        """(the best τ of those that ran by S_v(τ), with the verify cost measured at each; every τ whose
        S_v range reaches it)."""
        spreads = {r.tau: r.predicted_speedup_v for r in self.rows if r.predicted_speedup_v is not None}
        return best_of(spreads) if spreads else (None, [])

    def verdict(self) -> str:
        """One paragraph that agrees with the chart below it and respects the noise: a best τ only where
        no other τ's interval reaches it, "faster" or "slower" only where the whole interval says so. Then the
        counted work at the kept calibration, and where clocked numbers were withheld, why (and, with no
        calibration kept, what one would add)."""
        return " ".join(part for part in (self._clocked_verdict(), self.counted_verdict()) if part)

    def counted_verdict(self) -> str:
        """What the counts say whatever the load: the speed of each τ at the kept costs, labelled, with the ceiling
        of the best; where clocked numbers were withheld, why; with no calibration kept, what one would add."""
        if not self.rows:
            return ""
        withheld = [r for r in self.rows if r.withheld]
        costed = {r.tau: r.costed_speedup for r in self.rows if r.costed_speedup is not None}
        parts = []
        if withheld:
            why = _lower(withheld[0].withheld)
            parts.append(
                f"The clocked numbers of τ = {_list([r.tau for r in withheld])} are withheld ({why}); "
                "what was counted is shown: "
                + ", ".join(f"τ = {r.tau}: mean acceptance length {r.mean_acceptance_length:.2f}" for r in self.rows)
                + "."
            )
        if costed:
            best = max(costed, key=costed.get)
            parts.append(
                f"From counted work at the pair's kept costs ({self.calibration}): "
                + ", ".join(f"τ = {t}: {x:.2f}×" for t, x in costed.items())
                + f"; best τ = {best}."
            )
        elif withheld:
            parts.append(f"No calibration of this pair is kept on this machine yet: {QUIET_MINUTE}.")
        best = max((r for r in self.rows if r.ceiling is not None), key=lambda r: r.ceiling_c, default=None)
        if best is not None:
            parts.append(
                f"At τ = {best.tau} a perfect draft that costs nothing would give {best.ceiling:.2f}× "
                f"((τ + 1)/v(τ + 1)); this draft's acceptance brings it to {best.ceiling_alpha:.2f}× (E/v(τ + 1)) and "
                f"its cost to {best.ceiling_c:.2f}× (E/(τ·c + v(τ + 1)))."
            )
        return " ".join(parts)

    def _clocked_verdict(self) -> str:
        alpha, c = self.alpha, self.c
        if alpha is None or c is None:
            return (
                ""
                if self.rows and any(r.withheld for r in self.rows)
                else "Not enough finished work for a verdict yet."
            )
        measured = self.best_tau_measured()
        if measured is None:
            helps = "so speculation can help" if alpha > c.value else "so speculation cannot beat the target alone"
            return f"Speculation helps when α > c; here α = {alpha:.2f}, c = {c.value:.2f}, {helps}."
        best, ties = self.row(measured), self.within_noise_of_best()
        outcome = against_one(best.speedup)
        if len(ties) > 1:
            low = min(self.row(t).speedup.low for t in ties)
            high = max(self.row(t).speedup.high for t in ties)
            above = [t for t in ties if self.row(t).speedup.above(1.0)]
            below = [t for t in ties if self.row(t).speedup.below(1.0)]
            sides = [
                f"τ = {_list(group)} {'is' if len(group) == 1 else 'are'} {word} than the target alone (the whole "
                f"interval{'' if len(group) == 1 else 's'} {side} 1)"
                for group, word, side in ((above, "faster", "above"), (below, "slower", "below"))
                if group
            ]
            head = (
                f"Measured: τ = {_list(ties)} are within noise of each other here ({low:.2f}–{high:.2f}× the "
                f"target alone), so no τ is best; "
                + ("; ".join(sides) if sides else "each is within noise of the target alone")
                + "."
            )
        else:
            head = f"Measured: best τ = {measured}, {best.speedup.text()} the target alone: {outcome}."
        with_v, v_ties = self.best_tau_predicted_v()
        costs = [r.verify_cost for r in self.rows if r.verify_cost is not None]
        plain = self.best_tau_predicted()
        predicted = ""
        if with_v is not None:
            s_v = self.row(with_v).predicted_speedup_v
            which = f"τ = {with_v}" if len(v_ties) == 1 else f"τ = {_list(v_ties)} (within the range of v)"
            predicted = (
                f" Predicted with the verify cost measured in these runs: best {which}, S_v = {s_v.text()} "
                f"(α = {alpha:.2f}; c = {c.value:.2f}, a draft forward over a one-token target pass; one pass over "
                f"τ + 1 tokens costs v = {min(v.value for v in costs):.2f}–{max(v.value for v in costs):.2f} "
                "one-token passes)."
            )
        s_plain = expected_speedup(alpha, plain, c.value)
        theory = (
            f" Leviathan's S(τ) assumes v = 1 and predicts τ = {plain} ({s_plain:.2f}×): the gap between the two "
            "is the cost of verifying in one pass."
        )
        return f"{head}{predicted}{theory}"

    def to_frame(self) -> pd.DataFrame:
        """The results table: one row per τ, each measured number with its interval."""
        rows = []
        for r in self.rows:
            rows.append(
                {
                    "τ": r.tau,
                    "runs": r.runs,
                    "steps": r.steps,
                    "mean acceptance length": round(r.mean_acceptance_length, 2),
                    "draft acceptance rate": round(r.draft_acceptance_rate, 3),
                    "speedup (95% interval)": r.speedup.text() if r.speedup else "–",
                    "v(τ + 1)": r.verify_cost.text(unit="") if r.verify_cost else "–",
                    "S(τ), v = 1": _times(r.predicted_speedup),
                    "S_v(τ)": r.predicted_speedup_v.text() if r.predicted_speedup_v else "–",
                    "from kept costs": _times(r.costed_speedup),
                    "ceiling (τ + 1)/v": _times(r.ceiling),
                }
                | (  # a lossy rule: its gain on the same drafts beside its exact distance from the target
                    {
                        "tokens per pass, lossy (exact)": round(r.lossy_tokens_per_pass, 3),
                        "tokens per pass, lossless on the same drafts": round(r.baseline_tokens_per_pass, 3),
                        "TV from target, mean": round(r.tv_mean, 4),
                        "TV from target, max": round(r.tv_max, 4),
                    }
                    if r.tv_mean is not None
                    else {}
                )
            )
        return pd.DataFrame(rows)

    def policy_frame(self) -> pd.DataFrame:
        """The τ policies' rows, every number as text."""
        return pd.DataFrame(
            [
                {
                    "policy": p.policy,
                    "τ (start or cap)": p.tau,
                    "runs": p.runs,
                    "steps": p.steps,
                    "mean τ": f"{p.mean_tau:.2f}",
                    "mean acceptance length": f"{p.mean_acceptance_length:.2f}",
                    "speedup (95% interval)": p.speedup.text() if p.speedup else "–",
                }
                for p in self.policies
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "runtime": self.runtime,
            "taus": [r.to_dict() for r in self.rows],
            "policies": [dataclasses.asdict(p) for p in self.policies],
            "alpha": self.alpha,
            "acceptance_probability": self.acceptance_probability,
            "c": None if self.c is None else self.c.to_dict(),
            "pending": self.pending,
            "calibration": self.calibration,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSummary:
        return cls(
            settings=dict(data["settings"]),
            runtime=str(data["runtime"]),
            rows=tuple(TauSummary.from_dict(r) for r in data["taus"]),
            policies=tuple(PolicySummary.from_dict(p) for p in data["policies"]),
            alpha=data["alpha"],
            acceptance_probability=data["acceptance_probability"],
            c=_spread(data["c"]),
            pending=int(data["pending"]),
            calibration=str(data.get("calibration", "")),
        )


def _list(values: Sequence[int]) -> str:
    return ", ".join(map(str, values[:-1])) + f" and {values[-1]}" if len(values) > 1 else str(values[0])


def _times(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}×"


def _lower(sentence: str) -> str:
    """A sentence set inside another, in parentheses: its first letter small ("This run was…" → "this run was…")."""
    return sentence[:1].lower() + sentence[1:]
