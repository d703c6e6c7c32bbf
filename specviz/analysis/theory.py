"""Closed forms of Leviathan, Kalman, Matias (2023) to draw over measurements, and the exact
first-token distribution of each acceptance mode (to show which modes are lossless)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from specviz.core.sampling import residual
from specviz.errors import ConfigError


def expected_tokens_per_step(alpha: float, tau: int) -> float:
    """E = (1 − α^{τ+1}) / (1 − α); τ + 1 when α = 1."""
    if alpha >= 1.0:
        return float(tau + 1)
    return (1.0 - alpha ** (tau + 1)) / (1.0 - alpha)


def expected_speedup(alpha: float, tau: int, c: float) -> float:
    """S(τ) = (1 − α^{τ+1}) / ((1 − α)(τ·c + 1))."""
    return expected_tokens_per_step(alpha, tau) / (tau * c + 1.0)


def speedup_with_verify_cost(alpha: float, tau: int, c: float, v: float) -> float:
    """S_v(τ) = E / (τ·c + v) (docs/algorithm.md, "Verify cost"): c is a draft forward over a one-token target pass
    and v = v(τ + 1) what one target pass over τ + 1 tokens costs in one-token passes. S(τ) is v = 1."""
    return expected_tokens_per_step(alpha, tau) / (tau * c + v)


@dataclass(frozen=True, kw_only=True)
class Ceiling:
    """A pair's speedup at τ taken apart in the words of S_v(τ) = E / (τ·c + v(τ + 1)) (docs/algorithm.md, "The
    ceiling and the two levers"): what a perfect draft that costs nothing would give, `ceiling` = (τ + 1) / v(τ + 1);
    with this draft's acceptance, `with_alpha` = E / v(τ + 1); with its cost too, `with_c` = E / (τ·c + v(τ + 1))."""

    tau: int
    v: float  # v(τ + 1): a pass over τ + 1 tokens in one-token passes
    c: float  # a draft forward in one-token passes
    tokens_per_pass: float  # E: tokens a target pass emits, from α's formula or counted

    @property
    def ceiling(self) -> float:
        return (self.tau + 1) / self.v

    @property
    def with_alpha(self) -> float:
        return self.tokens_per_pass / self.v

    @property
    def with_c(self) -> float:
        return self.tokens_per_pass / (self.tau * self.c + self.v)

    @property
    def alpha_share(self) -> float | None:
        """Of what is lost from the ceiling, the share α's rejections lose (the rest is c's); None where nothing is."""
        lost = self.ceiling - self.with_c
        return (self.ceiling - self.with_alpha) / lost if lost > 1e-12 else None

    def words(self, whose: str = "this draft's") -> str:
        """'A perfect draft that costs nothing would give 3.77× here ((τ + 1)/v(τ + 1) = 6/1.59); with this draft's
        acceptance, E = 2.90 tokens a pass, 1.82× (E/v(τ + 1)): α costs 1.95×; with its cost too, τ·c = 2.65 one-token
        passes a step, 0.68× (E/(τ·c + v(τ + 1))): c costs 1.14×. 63% of what is lost is α's, 37% c's.'"""
        share = self.alpha_share
        split = "" if share is None else f" Of what is lost, {share:.0%} is α's and {1 - share:.0%} c's."
        return (
            f"A perfect draft that costs nothing would give {self.ceiling:.2f}× here ((τ + 1)/v(τ + 1) = "
            f"{self.tau + 1}/{self.v:.2f}); with {whose} acceptance, E = {self.tokens_per_pass:.2f} tokens a pass, "
            f"{self.with_alpha:.2f}× (E/v(τ + 1)): α costs {self.ceiling - self.with_alpha:.2f}×; with its cost too, "
            f"τ·c = {self.tau} × {self.c:.2f} = {self.tau * self.c:.2f} one-token passes a step, {self.with_c:.2f}× "
            f"(E/(τ·c + v(τ + 1))): c costs {self.with_alpha - self.with_c:.2f}×.{split}"
        )


CEILING_COLUMNS = ("ceiling (τ + 1)/v", "α costs", "c costs")


def ceiling_columns(split: Ceiling | None) -> dict[str, str]:
    """A table's columns beside a speedup: the ceiling at its τ, (τ + 1)/v(τ + 1), and what α and c cost of it, as
    text; dashes without a Ceiling (no v and c)."""
    if split is None:
        return dict.fromkeys(CEILING_COLUMNS, "–")
    lost = (split.ceiling, split.ceiling - split.with_alpha, split.with_alpha - split.with_c)
    return {column: f"{x:.2f}×" for column, x in zip(CEILING_COLUMNS, lost, strict=True)}


def ceiling(tau: int, v: float, c: float, alpha: float | None = None, tokens_per_pass: float | None = None) -> Ceiling:
    """The ceiling at τ and the pair's speedup split into what α and c cost (Ceiling), E from α's formula or from
    tokens per pass counted in a run (one of the two); ValueError where v is not positive or neither is given."""
    if not v > 0 or not c >= 0:
        raise ValueError(f"a ceiling needs v > 0 and c ≥ 0; got v = {v}, c = {c}")
    if tokens_per_pass is None:
        if alpha is None:
            raise ValueError("a ceiling needs α or tokens per pass")
        tokens_per_pass = expected_tokens_per_step(alpha, tau)
    return Ceiling(tau=tau, v=v, c=c, tokens_per_pass=tokens_per_pass)


def best_tau(alpha: float, c: float, max_tau: int = 16) -> int:
    """The integer τ in 1..max_tau that maximises S(τ)."""
    return max(range(1, max_tau + 1), key=lambda tau: expected_speedup(alpha, tau, c))


def acceptance_length_pmf(alpha: float, tau: int) -> list[float]:
    """P(n = k) = α^k (1 − α) for k < τ and α^τ for k = τ (i.i.d. acceptance)."""
    return [alpha**k * (1.0 - alpha) for k in range(tau)] + [alpha**tau]


def first_token_distribution(p: Sequence[float], q: Sequence[float], mode: str) -> list[float]:
    """Exact distribution of the first emitted token for context-free p and q.

    "textbook" drafts argmax q; "textbook-sampled" is docs/algorithm.md's example with a sampled draft;
    "lossless" is speculative sampling; "greedy" compares argmaxes."""
    pt, qt = torch.as_tensor(p, dtype=torch.float64), torch.as_tensor(q, dtype=torch.float64)
    if mode == "greedy":
        return torch.nn.functional.one_hot(pt.argmax(), len(pt)).double().tolist()
    keep = torch.minimum(pt, qt)  # P(draft y and accept it) = q(y) min(1, p/q)
    if mode == "textbook":
        y = int(qt.argmax())
        keep = torch.zeros_like(pt).index_fill(0, torch.tensor([y]), min(1.0, float(pt[y] / qt[y])))
    rejected = 1.0 - float(keep.sum())
    if mode == "lossless":
        return (keep + rejected * residual(pt, qt)).tolist()
    if mode in ("textbook", "textbook-sampled"):
        return (keep + rejected * torch.nn.functional.one_hot(pt.argmax(), len(pt)).double()).tolist()
    raise ValueError(f"unknown mode {mode!r}")


# The block rule's exact E[n] follows every value the running weight w can take, position by position: the work is
# the weights held at a position times the tokens of the next (a 3-word exercise: a few dozen; a 400-word table at
# τ = 8: up to 400^7 weights). Past this, it is refused before more is done (ConfigError, with the numbers).
BLOCK_WORK = 1_000_000


def expected_accepted(
    q_rows: Sequence[Sequence[float]],
    p_rows: Sequence[Sequence[float]],
    verification: str = "token",
    limit: int = BLOCK_WORK,
) -> float:
    """E[n], the expected accepted draft tokens of one lossless step with a draft sampled from q, computed
    exactly (over every draft and every draw), for tables whose q and p at position t do not depend on
    the draft tokens before it (a sandbox table): q has τ rows, p τ + 1. Token-wise and one-hot: positions
    pass in turn, so P(n ≥ k) = Π_{j≤k} β_j with β_j = Σ min(p_j, q_j) (token) or Σ q_j p_j (one-hot).

    Block: P(n ≥ k) = E[w_k], the running weight's mean over drafts sampled from q (docs/algorithm.md, "Block
    verification"), so E[n] = Σ_k E[w_k], with no threshold h in it. Why: given w_k = w, the chance that no position
    from k on passes is 1 − w. At k = τ, h_τ = w_τ. Before it, 1 − h_k = (1 − w)/(R_k + 1 − w) and the next
    position's E[1 − w_{k+1}] = 1 − Σ min(q, w p) = 1 − w + R_k, whose product is 1 − w. The mean follows every value
    w takes (equal values merged), a position at a time; ConfigError, before the work passes `limit` (weights held ×
    tokens of the next position), when there are too many."""
    if verification in ("token", "one-hot"):
        total, survive = 0.0, 1.0
        for q, p in zip(q_rows, p_rows, strict=False):
            pair = zip(p, q, strict=True)
            survive *= sum(min(a, b) for a, b in pair) if verification == "token" else sum(a * b for a, b in pair)
            total += survive
        return total
    if verification != "block":
        raise ValueError(f"unknown verification rule {verification!r}")
    weights, chance = np.ones(1), np.ones(1)  # the values w_{k−1} takes, and the chance of each (w_0 = 1)
    total, work = 0.0, 0
    for k, (q_row, p_row) in enumerate(zip(q_rows, p_rows, strict=False)):
        q, p = np.asarray(q_row, dtype=np.float64), np.asarray(p_row, dtype=np.float64)
        drafted = q > 0  # a token q never samples is never drafted
        q, p = q[drafted], p[drafted]
        work += weights.size * q.size
        if work > limit:
            raise ConfigError(
                f"the block rule's exact mean would follow at least {work:,} weights × tokens on this table "
                f"({len(q_row)} words, τ = {len(q_rows)}; exact up to {limit:,}): fewer words or a smaller τ"
            )
        nxt = np.minimum(1.0, weights[:, None] * p[None, :] / q[None, :])  # w_k = min(1, w_{k−1} p/q), as the rule
        mass = chance[:, None] * q[None, :]
        total += float((mass * nxt).sum())  # P(n ≥ k + 1) = E[w_{k+1}]
        if k + 1 < len(q_rows):
            weights, where = np.unique(nxt, return_inverse=True)
            chance = np.bincount(where.ravel(), weights=mass.ravel(), minlength=weights.size)
    return total
