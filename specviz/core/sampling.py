"""Tensor functions of one step: warp logits into probabilities, sample, residual, overlap.

All of them work on float64 CPU tensors whose last dimension is the vocabulary, so that
p and q are treated identically and ties break the same way everywhere (first index).
Shapes below: V the vocabulary, `...` any leading dimensions (none, or one row per position).
"""

from __future__ import annotations

import torch

from specviz.models import threads


def total(x: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
    """x: [..., V] → [...] ([..., 1] with `keepdim`). Σ over the last dimension, summed in the same order whatever the
    calling thread's torch count: torch splits a sum of more than 32,768 numbers (a vocabulary's) over the thread's
    threads, and each split rounds otherwise (β and the residual moved in their last bits between one and two threads).
    One thread, as the app sums."""
    with threads.pinned(1):
        return x.sum(-1, keepdim=keepdim)


def logits_to_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """logits: [..., V] any float dtype → probabilities [..., V] float64. Temperature, then top-k, then top-p,
    then softmax; temperature 0 gives a one-hot argmax."""
    logits = logits.to(torch.float64)
    if temperature == 0.0:
        return one_hot(logits.argmax(-1), logits.shape[-1])
    logits = logits / temperature
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        probs = _nucleus(probs, top_p)
    return probs


def _nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:  # probs: [..., V] → [..., V]
    # keep the smallest prefix of the sorted distribution whose mass reaches top_p
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    mass_before = sorted_probs.cumsum(-1) - sorted_probs
    drop_sorted = mass_before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    kept = probs.masked_fill(drop, 0.0)
    return kept / total(kept, keepdim=True)


def one_hot(index: torch.Tensor, size: int) -> torch.Tensor:
    """index: [...] long → [..., size] float64, 1.0 at each index."""
    return torch.nn.functional.one_hot(index, size).to(torch.float64)


def sample(probs: torch.Tensor, generator: torch.Generator) -> int:
    """probs: [V] float64 → a token id. Inverse-CDF draw from a 1-D distribution; a token of probability 0 is never
    drawn."""
    return sample_at(probs, torch.rand((), generator=generator, dtype=torch.float64))


def sample_at(probs: torch.Tensor, u: float | torch.Tensor) -> int:
    """probs: [V] float64; u: a float or a 0-d tensor in [0, 1). The token whose interval of the cumulative
    distribution holds the draw u: token x for u in [Σ_{y<x} p(y), Σ_{y≤x} p(y)). A token of probability 0 is never
    drawn."""
    cdf = probs.cumsum(-1)
    return int(torch.searchsorted(cdf, u * cdf[-1], right=True).clamp(max=probs.numel() - 1))


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """p, q: [..., V] float64 → [..., V]. norm(max(0, p − q)); falls back to p where p == q leaves no mass (then no
    rejection occurs)."""
    diff = (p - q).clamp(min=0.0)
    mass = total(diff, keepdim=True)
    return torch.where(mass > 0, diff / mass.clamp(min=1e-300), p)


def overlap(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """p, q: [..., V] float64 → [...]. β = Σ_y min(p(y), q(y)) = 1 − TV(p, q), per row."""
    return total(torch.minimum(p, q))
