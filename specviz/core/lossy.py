"""The lossy rules' exact cost (docs/algorithm.md, "Lossy rules").

Each rule keeps draft token ŷ at a position with some chance a(ŷ) and otherwise emits a token from its recovery
distribution R_ŷ. Over the draft's own draw (ŷ ~ q, as lossless mode drafts), the token the rule emits at that
position follows

    o(v) = Σ_x q(x) · (a(x)·[v = x] + (1 − a(x))·R_x(v)),

computed here in closed form, in O(V), never sampled; its distance from the target's p is
TV(o, p) = ½ Σ_v |o(v) − p(v)|. For the lossless token-wise and one-hot rules o is exactly p (a test checks both);
for the lossy ones it is not, and TV says by how much. Per rule:

- token-wise: a = min(1, p/q), R = norm(max(0, p − q)) → o = min(p, q) + max(0, p − q) = p;
- one-hot, and SGLang's thresholds on a chain: a = p(x) (one-hot) or a = 1 if p(x) ≥ t_s else min(1, p(x)/t_a)
  (SGLang), R_x = p without x, renormalised; with c(x) = q(x)(1 − a(x))/(1 − p(x)) and C = Σ c,
  o(v) = q(v)a(v) + p(v)(C − c(v));
- typical acceptance: a(x) = [p(x) > min(ε, δ·exp(−H))], R = the point mass at argmax p;
  o(v) = q(v)a(v) + [v = argmax p]·Σ_x q(x)(1 − a(x));
- static ensemble: the token-wise rule against m = w·p + (1 − w)·q (transformers' w) → o = m, and
  TV(m, p) = (1 − w)·TV(q, p).

Block verification is lossless for the whole block (Sun et al.), not position by position in this sense: its o
is not computed here (its TV is 0 by that proof, and the lossless check tests it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from specviz.core.config import Knobs, Verification
from specviz.core.sampling import total
from specviz.core.trace import CostTrace

__all__ = ["BASELINE", "acceptance", "cost_of", "emitted", "mixture", "tokens_per_pass", "tv", "typical_threshold"]

# the lossless rule each lossy rule is set against on the same draft: the rule its engine runs when the knob is off
BASELINE: dict[str, Verification] = {"typical": "one-hot", "sglang": "one-hot", "ensemble": "token"}
ENTROPY_EPSILON = 1e-5  # the engines' own: H = −Σ p·log(p + 1e-5) (vLLM V0 TypicalAcceptanceSampler, Medusa)


def typical_threshold(p: torch.Tensor, knobs: Knobs) -> float:
    """p: [V] → min(ε, δ·exp(−H)), H = −Σ p·log(p + 1e-5): typical acceptance keeps ŷ when p(ŷ) exceeds it."""
    entropy = -float(total(p * torch.log(p + ENTROPY_EPSILON)))
    return min(knobs.posterior_threshold, knobs.posterior_alpha * math.exp(-entropy))


def mixture(p: torch.Tensor, q: torch.Tensor, knobs: Knobs) -> torch.Tensor:
    """The static ensemble's m = w·p + (1 − w)·q, w = transformers' assistant_ensemble_weight (the target's weight)."""
    w = knobs.ensemble_weight
    return w * p + (1.0 - w) * q


def acceptance(rule: str, p: torch.Tensor, q: torch.Tensor, knobs: Knobs) -> torch.Tensor:
    """p, q: [..., V] → [..., V]: the chance that `rule` keeps each token x when x is the draft token there
    (where q(x) = 0, the token-wise rules' a(x) is 1: x is never drafted, so nothing reads it)."""
    if rule == "token":
        return _ratio(p, q).clamp(max=1.0)
    if rule == "ensemble":
        return _ratio(mixture(p, q, knobs), q).clamp(max=1.0)
    if rule == "one-hot":
        return p.clone()
    if rule == "sglang":
        sure = p >= knobs.threshold_single
        return torch.where(sure, torch.ones_like(p), (p / knobs.threshold_acc).clamp(max=1.0))
    if rule == "typical":
        rows = p.reshape(-1, p.shape[-1])
        limit = torch.tensor([typical_threshold(row, knobs) for row in rows], dtype=p.dtype).reshape(*p.shape[:-1], 1)
        return (p > limit).to(p.dtype)
    raise ValueError(f"no acceptance for the {rule!r} rule")


def emitted(rule: str, p: torch.Tensor, q: torch.Tensor, knobs: Knobs) -> torch.Tensor:
    """p, q: [V] (the target's and the draft's rows at one position) → o: [V], the distribution of the token `rule`
    emits there, over the draft's draw ŷ ~ q (module docstring)."""
    a = acceptance(rule, p, q, knobs)
    kept = q * a  # P(ŷ = v and it is kept)
    if rule in ("token", "ensemble"):
        target = p if rule == "token" else mixture(p, q, knobs)
        left = (target - q).clamp(min=0.0)
        mass = float(total(left))
        return kept + (left / mass * float(total(q * (1.0 - a))) if mass > 0 else 0.0)
    if rule in ("one-hot", "sglang"):
        others = 1.0 - p
        c = torch.where(others > 0, q * (1.0 - a) / others.clamp(min=1e-300), torch.zeros_like(p))
        return kept + p * (float(total(c)) - c)
    if rule == "typical":
        out = kept.clone()
        out[int(p.argmax())] += float(total(q * (1.0 - a)))
        return out
    raise ValueError(f"no emitted distribution for the {rule!r} rule")


def tv(a: torch.Tensor, b: torch.Tensor) -> float:
    """Total-variation distance ½ Σ |a − b| of two distributions over the same vocabulary."""
    return 0.5 * float(total((a - b).abs()))


def cost_of(rule: str, draft: Sequence[int], q: torch.Tensor, p: torch.Tensor, knobs: Knobs) -> CostTrace:
    """A lossy step's exact cost: per draft position, the chance the rule keeps ŷ_t and the chance its lossless
    baseline keeps the same ŷ_t, and TV(o_t, p_t). q: [τ, V]; p: [τ + 1, V] (its last row is unread)."""
    k = len(draft)
    base = BASELINE[rule]
    index = torch.tensor(list(draft), dtype=torch.long).reshape(-1, 1)
    accept = acceptance(rule, p[:k], q, knobs).gather(-1, index)[:, 0] if k else torch.empty(0)
    kept = acceptance(base, p[:k], q, knobs).gather(-1, index)[:, 0] if k else torch.empty(0)
    distance = [tv(emitted(rule, p[t], q[t], knobs), p[t]) for t in range(k)]
    return CostTrace(
        rule=rule,
        baseline=base,
        accept=tuple(accept.tolist()),
        baseline_accept=tuple(kept.tolist()),
        tv=tuple(min(1.0, max(0.0, d)) for d in distance),
    )


def _ratio(a: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return torch.where(q > 0, a / q.clamp(min=1e-300), torch.ones_like(a))


def tokens_per_pass(rule: str, p: torch.Tensor, q: torch.Tensor, knobs: Knobs, tau: int) -> float:
    """The expected tokens per pass of `rule` on a context-free table (the same p and q at every position), over
    every draft the draft samples and every draw: 1 + Σ_{k=1..τ} β^k with β = Σ_x q(x)·a(x)."""
    beta = float(total(q * acceptance(rule, p, q, knobs)))
    return 1.0 + sum(beta**k for k in range(1, tau + 1))
