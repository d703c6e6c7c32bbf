"""The decision half of one speculative step: accept or reject each draft token, count the accepted
run and pick the target's next token (docs/algorithm.md, "One speculative step", steps 3–5, and
"Verification as serving engines run it").

Three lossless verification rules decide a `lossless` step, or three lossy ones (below); `textbook` and `greedy` mode
keep their own:
- `token` (Leviathan et al. 2023; Chen et al. 2023): token t is kept while r_t ≤ p/q; on the first
  failure the next token is sampled from norm(max(0, p − q)).
- `one-hot` (vLLM's default for EAGLE, MTP and n-gram drafts; SGLang's target-only sampling; EAGLE's
  reference code): q is taken as one-hot at the drafted token, so token t is kept while r_t ≤ p(ŷ_t);
  on the first failure the next token is sampled from p without ŷ_t.
- `block` (Sun et al., "Block Verification Accelerates Speculative Decoding", ICLR 2025; vLLM's
  rejection_sample_method="block"): thresholds h_i from running weights w_i and residual masses R_i;
  n is the *last* position whose draw passes, so a position may be kept although its own draw failed.

The lossy rules (docs/algorithm.md, "Lossy rules"; their exact cost: specviz.core.lossy), each labelled lossy:
- `typical` (Medusa §3.3.1; vLLM V0's TypicalAcceptanceSampler): ŷ_t is kept while p(ŷ_t) > min(ε, δ·exp(−H_t)),
  no draw deciding it; at the first failure the next token is argmax p_t.
- `sglang` (SGLang's --speculative-accept-threshold-single t_s and -acc t_a; sgl-kernel's
  TreeSpeculativeSamplingTargetOnly): on a chain, ŷ_t is kept while r_t ≤ p(ŷ_t)/t_a or p(ŷ_t) ≥ t_s; at the first
  failure the next token is sampled from p without ŷ_t. t_s = t_a = 1 is the one-hot rule.
- `ensemble` (transformers' assistant_ensemble_weight w): the token-wise rule against m = w·p + (1 − w)·q.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specviz.core import lossy
from specviz.core.config import LOSSY, RULES, VERIFICATIONS, Knobs, Mode, Verification
from specviz.core.sampling import one_hot, residual, sample_at, total
from specviz.core.trace import NextRule

__all__ = [
    "LOSSY",
    "RULES",
    "VERIFICATIONS",
    "Block",
    "Choice",
    "RuleOutcome",
    "Verification",
    "acceptance_length",
    "choose",
    "each_rule",
]


def acceptance_length(r: Sequence[float], ratio: Sequence[float]) -> int:
    """n = min{t − 1 : r_t > p/q at t}, or τ when no draft token is rejected (docs/algorithm.md, step 4)."""
    if len(r) != len(ratio):
        raise ValueError(f"r and ratio differ in length ({len(r)} vs {len(ratio)})")
    for t, (r_t, ratio_t) in enumerate(zip(r, ratio, strict=True)):
        if r_t > ratio_t:
            return t
    return len(r)


def greedy_match_length(draft: Sequence[int], target_argmax: Sequence[int]) -> int:
    """Greedy mode: the run of draft tokens equal to the target's argmax."""
    for t, (y, best) in enumerate(zip(draft, target_argmax, strict=False)):
        if y != best:
            return t
    return len(draft)


@dataclass(frozen=True)
class Block:
    """Block verification's numbers at each draft position i = 1..τ."""

    w: tuple[float, ...]  # w_i = min(1, w_{i−1} p_i(ŷ_i) / q_i(ŷ_i)), w_0 = 1
    residual_mass: tuple[float, ...]  # R_i = Σ_v max(0, w_i p_{i+1}(v) − q_{i+1}(v)); R_τ is unused (0)
    h: tuple[float, ...]  # h_i = R_i / (R_i + (1 − w_i)) for i < τ, h_τ = w_τ: the pass threshold of r_i


def block_numbers(draft: Sequence[int], q: torch.Tensor, p: torch.Tensor) -> Block:
    """w, R and h of block verification for one draft (q: [τ, V] float64; p: [τ + 1, V] float64)."""
    k = len(draft)
    w, masses, h, weight = [], [], [], 1.0
    for i in range(k):
        y = draft[i]
        weight = min(1.0, weight * float(p[i, y]) / float(q[i, y])) if float(q[i, y]) > 0 else 1.0
        w.append(weight)
        if i < k - 1:
            mass = float(total((weight * p[i + 1] - q[i + 1]).clamp(min=0.0)))
            denominator = mass + (1.0 - weight)  # in this order (docs/algorithm.md)
            h.append(mass / denominator if denominator > 0 else 1.0)
        else:
            mass = 0.0
            h.append(weight)
        masses.append(mass)
    return Block(tuple(w), tuple(masses), tuple(h))


@dataclass(frozen=True)
class Choice:
    """What a step decided: the draws, each position's test, the accepted run and the next token."""

    r: tuple[float | None, ...]  # the draw per draft token; None in greedy mode
    ratio: torch.Tensor  # p(ŷ_t) / q(ŷ_t) per draft token
    n: int  # draft tokens accepted
    token: int  # the target's token after them
    rule: NextRule
    dist: torch.Tensor  # the distribution `token` was chosen from
    residual: torch.Tensor | None  # that distribution when it was a residual (lossless after a failure)
    verification: Verification = "token"
    threshold: tuple[float, ...] = ()  # what r_t was compared with: min(1, p/q), p(ŷ_t) or h_t; () in greedy mode
    passed: tuple[bool, ...] = ()  # r_t ≤ threshold_t per position (greedy: ŷ_t = argmax p)
    block: Block | None = None


def choose(
    mode: Mode,
    draft: list[int],
    q: torch.Tensor,
    p: torch.Tensor,
    gen: torch.Generator,
    given_r: Sequence[float] | None = None,
    verification: Verification = "token",
    next_draw: float | None = None,
    knobs: Knobs | None = None,
) -> Choice:
    """Accept/reject (step 3–4) and pick the next token (step 5) for one mode and verification rule (`knobs`: the
    lossy rules' settings, their defaults when None).
    `q`: [τ, V] float64, one row per draft token; `p`: [τ + 1, V] float64, one more (position τ+1). The draws r
    come from `gen` unless `given_r` supplies them, and so does the draw that samples the next token unless
    `next_draw` (in [0, 1)) does: the sandbox and outside scripts set them by hand."""
    k = len(draft)
    ratio = ratio_of(at(p[:k], draft), at(q, draft))
    if mode == "greedy":
        best = p[:k].argmax(-1).tolist()
        n = greedy_match_length(draft, best)
        passed = tuple(y == b for y, b in zip(draft, best, strict=True))
        return Choice(
            (None,) * k, ratio, n, int(p[n].argmax()), "bonus" if n == k else "greedy", p[n], None, passed=passed
        )
    draws = list(given_r) if given_r is not None else torch.rand(k, generator=gen, dtype=torch.float64).tolist()
    if mode == "textbook":
        threshold = ratio.clamp(max=1.0).tolist()
        n = acceptance_length(draws, ratio.tolist())
        passed = tuple(r <= t for r, t in zip(draws, threshold, strict=True))
        token = int(p[n].argmax())
        return Choice(
            tuple(draws),
            ratio,
            n,
            token,
            "bonus" if n == k else "argmax",
            p[n],
            None,
            "token",
            tuple(threshold),
            passed,
        )
    block = None
    if verification == "token":
        threshold = ratio.clamp(max=1.0).tolist()
        rows = q
    elif verification == "one-hot":  # q one-hot at the drafted token: accept with p(ŷ), residual p without ŷ
        threshold = at(p[:k], draft).tolist()
        rows = torch.zeros_like(q).scatter_(-1, torch.tensor(draft, dtype=torch.long).reshape(-1, 1), 1.0)
    elif verification == "block":
        block = block_numbers(draft, q, p)
        threshold = list(block.h)
    elif verification in LOSSY:
        return _lossy(verification, draft, q, p, gen, draws, ratio, next_draw, knobs or Knobs())
    else:
        raise ValueError(f"unknown verification rule {verification!r}")
    passed = tuple(r <= t for r, t in zip(draws, threshold, strict=True))
    if verification == "block":  # the last pass, not the first failure
        n = max((t + 1 for t in range(k) if passed[t]), default=0)
    else:
        n = next((t for t in range(k) if not passed[t]), k)
    draw = torch.rand((), generator=gen, dtype=torch.float64) if next_draw is None else next_draw
    if n == k:  # every draft token accepted: the target's free token from position τ+1
        dist = p[k]
        return Choice(
            tuple(draws),
            ratio,
            n,
            sample_at(dist, draw),
            "bonus",
            dist,
            None,
            verification,
            tuple(threshold),
            passed,
            block,
        )
    if block is not None:  # what w_n p has beyond q at position n + 1 (n = 0: the ordinary residual)
        weight = block.w[n - 1] if n else 1.0
        dist = residual(weight * p[n], q[n])
    else:  # resample from what p has and q lacks: keeps the output ~ p
        dist = residual(p[n], rows[n])
    return Choice(
        tuple(draws),
        ratio,
        n,
        sample_at(dist, draw),
        "residual",
        dist,
        dist,
        verification,
        tuple(threshold),
        passed,
        block,
    )


def _lossy(
    rule: Verification,
    draft: list[int],
    q: torch.Tensor,
    p: torch.Tensor,
    gen: torch.Generator,
    draws: list[float],
    ratio: torch.Tensor,
    next_draw: float | None,
    knobs: Knobs,
) -> Choice:
    """A lossy rule's step (module docstring): the first failure ends the run; typical's next token there is argmax
    p, SGLang's a sample from p without ŷ, the ensemble's a sample from norm(max(0, m − q)); a full run, the bonus."""
    k = len(draft)
    if rule == "typical":  # no draw decides: p(ŷ) against min(ε, δ·exp(−H))
        threshold = [lossy.typical_threshold(p[t], knobs) for t in range(k)]
        passed = tuple(float(p[t, y]) > h for t, (y, h) in enumerate(zip(draft, threshold, strict=True)))
    else:
        index = torch.tensor(draft, dtype=torch.long).reshape(-1, 1)
        threshold = lossy.acceptance(rule, p[:k], q, knobs).gather(-1, index)[:, 0].tolist() if k else []
        passed = tuple(r <= h for r, h in zip(draws, threshold, strict=True))
    n = next((t for t in range(k) if not passed[t]), k)
    draw = torch.rand((), generator=gen, dtype=torch.float64) if next_draw is None else next_draw
    made = dict(r=tuple(draws), ratio=ratio, n=n, verification=rule, threshold=tuple(threshold), passed=passed)
    if n == k:  # every draft token kept: the target's free token from position τ+1, as usual
        return Choice(**made, token=sample_at(p[k], draw), rule="bonus", dist=p[k], residual=None)
    if rule == "typical":
        return Choice(**made, token=int(p[n].argmax()), rule="argmax", dist=p[n], residual=None)
    if rule == "sglang":  # p with the tried child removed, renormalised
        dist = residual(p[n], one_hot(torch.tensor(draft[n]), p.shape[-1]))
    else:
        dist = residual(lossy.mixture(p[n], q[n], knobs), q[n])
    return Choice(**made, token=sample_at(dist, draw), rule="residual", dist=dist, residual=dist)


@dataclass(frozen=True)
class RuleOutcome:
    """What one verification rule makes of a lossless step's draft and draws (the same ŷ, q, p and r for
    every rule): each position's threshold and pass, the accepted length, and the distribution the next
    token would be drawn from (its most likely tokens)."""

    rule: Verification
    threshold: tuple[float, ...]  # min(1, p/q), p(ŷ_t) or h_t
    passed: tuple[bool, ...]  # r_t ≤ threshold_t
    n: int
    next_rule: NextRule  # "bonus" (every position kept) or "residual"
    next_top: tuple[tuple[int, float], ...]  # (token, probability), most likely first
    w: tuple[float, ...] = ()  # block only: the running weights w_t


def each_rule(
    draft: Sequence[int],
    q: torch.Tensor,
    p: torch.Tensor,
    r: Sequence[float],
    top: int = 3,
    knobs: Knobs | None = None,
    rules: Sequence[Verification] = VERIFICATIONS,
) -> tuple[RuleOutcome, ...]:
    """The same lossless-mode step under each of `rules` (the three lossless ones unless told; a lossy one at
    `knobs`): the same draft and the same draws r, decided by `choose` once per rule (never touching a run's
    generator: the next token is not drawn, only its distribution kept)."""
    out = []
    for rule in rules:
        c = choose("lossless", list(draft), q, p, torch.Generator(), r, rule, 0.5, knobs)
        values, tokens = torch.topk(c.dist, min(top, c.dist.numel()))
        best = tuple((int(t), float(v)) for v, t in zip(values, tokens, strict=True) if v > 0)
        out.append(RuleOutcome(rule, c.threshold, c.passed, c.n, c.rule, best, c.block.w if c.block else ()))
    return tuple(out)


def at(dists: torch.Tensor, tokens: Sequence[int]) -> torch.Tensor:
    """dists: [τ, V]; tokens: τ ids → [τ]: row t's probability of tokens[t]."""
    return dists.gather(-1, torch.tensor(list(tokens), dtype=torch.long).reshape(-1, 1))[:, 0]


def ratio_of(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    # q > 0 for any token the draft proposed; the guard only keeps the division defined
    return torch.where(q > 0, p / q.clamp(min=1e-300), torch.full_like(p, float("inf")))
