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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from specviz.core import lossy
from specviz.core.config import LOSSY, RULES, VERIFICATIONS, Knobs, Mode, Verification
from specviz.core.sampling import one_hot, residual, sample_at, total
from specviz.core.trace import NextRule

__all__ = [
    "BY_RULE",
    "LOSSY",
    "RULES",
    "VERIFICATIONS",
    "Block",
    "Choice",
    "Drafted",
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
    return Block(w=tuple(w), residual_mass=tuple(masses), h=tuple(h))


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True)
class Drafted:
    """What a rule decides on: one step's τ draft tokens, their rows of q ([τ, V]) and p ([τ + 1, V]), float64,
    the draws r_t, p(ŷ_t)/q(ŷ_t), the draw that samples the next token, and the lossy rules' settings."""

    draft: list[int]
    q: torch.Tensor
    p: torch.Tensor
    r: tuple[float, ...]
    ratio: torch.Tensor
    draw: float | torch.Tensor
    knobs: Knobs

    @property
    def tau(self) -> int:
        return len(self.draft)


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
    `next_draw` (in [0, 1)) does: the sandbox and outside scripts set them by hand. The generator gives the τ draws
    first, then the next token's draw (textbook mode takes none: its next token is an argmax)."""
    k = len(draft)
    ratio = ratio_of(at(p[:k], draft), at(q, draft))
    if mode == "greedy":
        return greedy(draft, p, ratio)
    draws = tuple(given_r) if given_r is not None else tuple(torch.rand(k, generator=gen, dtype=torch.float64).tolist())
    if mode == "textbook":
        return textbook(draft, p, draws, ratio)
    decide = BY_RULE.get(verification)
    if decide is None:
        raise ValueError(f"unknown verification rule {verification!r}")
    draw = torch.rand((), generator=gen, dtype=torch.float64) if next_draw is None else next_draw
    return decide(Drafted(draft=list(draft), q=q, p=p, r=draws, ratio=ratio, draw=draw, knobs=knobs or Knobs()))


def greedy(draft: list[int], p: torch.Tensor, ratio: torch.Tensor) -> Choice:
    """Greedy mode: ŷ_t is kept while it is argmax p_t; the next token is argmax p at position n + 1 (the bonus
    after a full run). No draw."""
    k = len(draft)
    best = p[:k].argmax(-1).tolist()
    n = greedy_match_length(draft, best)
    passed = tuple(y == b for y, b in zip(draft, best, strict=True))
    return Choice(
        r=(None,) * k,
        ratio=ratio,
        n=n,
        token=int(p[n].argmax()),
        rule="bonus" if n == k else "greedy",
        dist=p[n],
        residual=None,
        passed=passed,
    )


def textbook(draft: list[int], p: torch.Tensor, draws: tuple[float, ...], ratio: torch.Tensor) -> Choice:
    """Textbook mode (steps 3–5 as written): ŷ_t is kept while r_t ≤ p/q; the next token is argmax p at position
    n + 1."""
    k = len(draft)
    threshold = tuple(ratio.clamp(max=1.0).tolist())
    n = acceptance_length(draws, ratio.tolist())
    return Choice(
        r=draws,
        ratio=ratio,
        n=n,
        token=int(p[n].argmax()),
        rule="bonus" if n == k else "argmax",
        dist=p[n],
        residual=None,
        verification="token",
        threshold=threshold,
        passed=tuple(r <= t for r, t in zip(draws, threshold, strict=True)),
    )


def token(s: Drafted) -> Choice:
    """Token-wise (Leviathan et al.; Chen et al.): ŷ_t is kept while r_t ≤ min(1, p/q); at the first failure the
    next token is sampled from norm(max(0, p − q)), which keeps the output distributed as p."""
    threshold = tuple(s.ratio.clamp(max=1.0).tolist())
    passed = _drawn_under(s, threshold)
    return _first_failure_ends(s, "token", threshold, passed, lambda n: residual(s.p[n], s.q[n]))


def one_hot_q(s: Drafted) -> Choice:
    """One-hot (docs/algorithm.md, "One-hot q"): q taken as one-hot at the drafted token, so ŷ_t is kept while
    r_t ≤ p(ŷ_t); at the first failure the next token is sampled from p without ŷ_t."""
    threshold = tuple(at(s.p[: s.tau], s.draft).tolist())
    return _first_failure_ends(s, "one-hot", threshold, _drawn_under(s, threshold), _without_drafted(s))


def block(s: Drafted) -> Choice:
    """Block verification (docs/algorithm.md, "Block verification"): each draw r_i against h_i, and n is the *last*
    position whose draw passes, so a position may be kept although its own draw failed; short of a full run the
    next token is sampled from norm(max(0, w_n p_{n+1} − q_{n+1})) (n = 0: the ordinary residual)."""
    numbers = block_numbers(s.draft, s.q, s.p)
    threshold = numbers.h
    passed = _drawn_under(s, threshold)
    n = max((t + 1 for t in range(s.tau) if passed[t]), default=0)
    weight = numbers.w[n - 1] if n else 1.0
    return _ended(s, "block", threshold, passed, n, lambda n: residual(weight * s.p[n], s.q[n]), numbers)


def typical(s: Drafted) -> Choice:
    """Typical acceptance (lossy; Medusa §3.3.1): ŷ_t is kept while p(ŷ_t) > min(ε, δ·exp(−H_t)), no draw deciding
    it; at the first failure the next token is argmax p_t."""
    threshold = tuple(lossy.typical_threshold(s.p[t], s.knobs) for t in range(s.tau))
    passed = tuple(float(s.p[t, y]) > h for t, (y, h) in enumerate(zip(s.draft, threshold, strict=True)))
    n = _first_failure(passed)
    if n == s.tau:
        return _ended(s, "typical", threshold, passed, n, None)
    made = _made(s, "typical", threshold, passed, n)
    return Choice(**made, token=int(s.p[n].argmax()), rule="argmax", dist=s.p[n], residual=None)


def sglang(s: Drafted) -> Choice:
    """SGLang's accept thresholds (lossy) on a chain: ŷ_t is kept while r_t ≤ min(1, p(ŷ_t)/t_a) or p(ŷ_t) ≥ t_s; at
    the first failure the next token is sampled from p without ŷ_t."""
    threshold = _lossy_threshold(s, "sglang")
    return _first_failure_ends(s, "sglang", threshold, _drawn_under(s, threshold), _without_drafted(s))


def ensemble(s: Drafted) -> Choice:
    """The static ensemble (lossy; transformers' assistant_ensemble_weight w): the token-wise rule against
    m = w·p + (1 − w)·q; at the first failure the next token is sampled from norm(max(0, m − q))."""
    threshold = _lossy_threshold(s, "ensemble")
    mixed = lambda n: residual(lossy.mixture(s.p[n], s.q[n], s.knobs), s.q[n])  # noqa: E731
    return _first_failure_ends(s, "ensemble", threshold, _drawn_under(s, threshold), mixed)


BY_RULE = {
    "token": token,
    "one-hot": one_hot_q,
    "block": block,
    "typical": typical,
    "sglang": sglang,
    "ensemble": ensemble,
}


def _drawn_under(s: Drafted, threshold: Sequence[float]) -> tuple[bool, ...]:
    return tuple(r <= h for r, h in zip(s.r, threshold, strict=True))


def _without_drafted(s: Drafted) -> Callable[[int], torch.Tensor]:
    """At a failure at position n: p there without the drafted token, renormalised (q taken as one-hot at it)."""
    return lambda n: residual(s.p[n], one_hot(torch.tensor(s.draft[n]), s.p.shape[-1]))


def _first_failure(passed: Sequence[bool]) -> int:
    return next((t for t, ok in enumerate(passed) if not ok), len(passed))


def _lossy_threshold(s: Drafted, rule: Verification) -> tuple[float, ...]:
    """The acceptance probability of each drafted token under a lossy rule with draws (specviz.core.lossy)."""
    if not s.tau:
        return ()
    index = torch.tensor(s.draft, dtype=torch.long).reshape(-1, 1)
    return tuple(lossy.acceptance(rule, s.p[: s.tau], s.q, s.knobs).gather(-1, index)[:, 0].tolist())


def _first_failure_ends(s: Drafted, rule: Verification, threshold, passed, at_failure) -> Choice:
    return _ended(s, rule, threshold, passed, _first_failure(passed), at_failure)


def _made(s: Drafted, rule: Verification, threshold, passed, n: int) -> dict:
    return dict(r=s.r, ratio=s.ratio, n=n, verification=rule, threshold=tuple(threshold), passed=passed)


def _ended(s: Drafted, rule: Verification, threshold, passed, n: int, at_failure, numbers: Block | None = None):
    """The next token: after a full run the target's free token from position τ + 1 (the bonus); short of one, a
    sample of `at_failure(n)`, the rule's residual."""
    made = _made(s, rule, threshold, passed, n)
    if n == s.tau:
        dist = s.p[n]
        return Choice(**made, token=sample_at(dist, s.draw), rule="bonus", dist=dist, residual=None, block=numbers)
    dist = at_failure(n)
    return Choice(**made, token=sample_at(dist, s.draw), rule="residual", dist=dist, residual=dist, block=numbers)


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
        out.append(
            RuleOutcome(
                rule=rule,
                threshold=c.threshold,
                passed=c.passed,
                n=c.n,
                next_rule=c.rule,
                next_top=best,
                w=c.block.w if c.block else (),
            )
        )
    return tuple(out)


def at(dists: torch.Tensor, tokens: Sequence[int]) -> torch.Tensor:
    """dists: [τ, V]; tokens: τ ids → [τ]: row t's probability of tokens[t]."""
    return dists.gather(-1, torch.tensor(list(tokens), dtype=torch.long).reshape(-1, 1))[:, 0]


def ratio_of(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    # q > 0 for any token the draft proposed; the guard only keeps the division defined
    return torch.where(q > 0, p / q.clamp(min=1e-300), torch.full_like(p, float("inf")))
