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
    """S_v(τ) = E / (τ·c + v) (SPEC.md, "Verify cost"): c is a draft forward over a one-token target pass
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

    "textbook" drafts argmax q; "textbook-sampled" is SPEC.md's example with a sampled draft;
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
