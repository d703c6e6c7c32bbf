"""Closed forms of Leviathan, Kalman, Matias (2023) to draw over measurements, and the exact
first-token distribution of each acceptance mode (to show which modes are lossless)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specviz.core.sampling import residual


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


def expected_accepted(
    q_rows: Sequence[Sequence[float]],
    p_rows: Sequence[Sequence[float]],
    verification: str = "token",
    limit: int = 200_000,
) -> float | None:
    """E[n], the expected accepted draft tokens of one lossless step with a draft sampled from q, computed
    exactly (over every draft and every draw), for tables whose q and p at position t do not depend on
    the draft tokens before it (a sandbox table): q has τ rows, p τ + 1. Token-wise and one-hot: positions
    pass in turn, so P(n ≥ k) = Π_{j≤k} β_j with β_j = Σ min(p_j, q_j) (token) or Σ q_j p_j (one-hot). Block:
    the pass flags are independent given the draft and h_i depends on the draft only through w_i, so a
    recursion over the values w_i takes, E[n] = Σ_m m · P(pass_m and no pass after m). None when block
    would need more than `limit` states."""
    tau = len(q_rows)
    if verification in ("token", "one-hot"):
        total, survive = 0.0, 1.0
        for q, p in zip(q_rows, p_rows, strict=False):
            pair = zip(p, q, strict=True)
            survive *= sum(min(a, b) for a, b in pair) if verification == "token" else sum(a * b for a, b in pair)
            total += survive
        return total
    if verification != "block":
        raise ValueError(f"unknown verification rule {verification!r}")
    memo: dict[tuple[int, float], tuple[float, float]] = {}

    def threshold(i: int, w: float) -> float:  # h_i at weight w (positions 0-based)
        if i == tau - 1:
            return w
        mass = sum(max(0.0, w * a - b) for a, b in zip(p_rows[i + 1], q_rows[i + 1], strict=True))
        return mass / (mass + (1.0 - w)) if mass + (1.0 - w) > 0 else 1.0

    def expected(i: int, w: float) -> tuple[float, float]:
        """(E[Σ_{m≥i} (m+1) h_m Π_{j>m}(1 − h_j)], E[Π_{j≥i}(1 − h_j)]) given w_{i−1} = w."""
        if i == tau:
            return 0.0, 1.0
        if (i, w) not in memo:
            if len(memo) >= limit:
                raise OverflowError
            value = none_pass = 0.0
            for x, qx in enumerate(q_rows[i]):
                if qx <= 0:
                    continue
                weight = min(1.0, w * p_rows[i][x] / qx)
                h = threshold(i, weight)
                later, later_none = expected(i + 1, weight)
                value += qx * ((i + 1) * h * later_none + later)
                none_pass += qx * (1.0 - h) * later_none
            memo[(i, w)] = (value, none_pass)
        return memo[(i, w)]

    try:
        return expected(0, 1.0)[0]
    except OverflowError:
        return None
