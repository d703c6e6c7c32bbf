"""The metrics of docs/algorithm.md, computed from step traces (names as serving engines report them).

`compute_metrics` is the one place they are computed: for one run, or pooled over many runs (the
sweep per τ, a draft's evaluation) by passing all their steps. `StepCount` keeps just what it reads
of a step, for callers that hold many runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class StepCounts(Protocol):
    """What the metrics read of a step (specviz.core.trace.StepTrace has it all)."""

    tau: int
    n_accepted: int
    beta: tuple[float, ...]
    emitted: tuple[int, ...]
    draft_ms: float
    verify_ms: float
    nodes: int  # draft tokens the target verified: τ for a chain, every node of a tree
    depth: int  # the deepest draft position: τ for a chain, the deepest node of a tree
    draft_passes: int  # the draft's forwards: τ for a chain, one per level of a tree


@dataclass(frozen=True)
class StepCount:
    """What the metrics read of a step, and nothing else (a StepTrace has far more)."""

    tau: int
    n_accepted: int
    beta: tuple[float, ...]
    emitted: tuple[int, ...]
    draft_ms: float
    verify_ms: float
    nodes: int = -1  # −1: a chain, τ nodes
    depth: int = -1  # −1: a chain, τ deep
    cost: Any = None  # a lossy rule's step: its CostTrace (specviz.core.trace), read for tv_mean and the like
    draft_passes: int = -1  # −1: a chain, τ forwards

    def __post_init__(self) -> None:
        if self.nodes < 0:
            object.__setattr__(self, "nodes", self.tau)
        if self.depth < 0:
            object.__setattr__(self, "depth", self.tau)
        if self.draft_passes < 0:
            object.__setattr__(self, "draft_passes", self.tau)

    @classmethod
    def of(cls, step: StepCounts) -> StepCount:
        return cls(
            step.tau,
            step.n_accepted,
            tuple(step.beta),
            tuple(step.emitted),
            step.draft_ms,
            step.verify_ms,
            step.nodes,
            step.depth,
            getattr(step, "cost", None),
            step.draft_passes,
        )


@dataclass(frozen=True)
class Metrics:
    steps: int  # speculative steps = target verification passes
    drafted_tokens: int  # draft tokens proposed (and verified: for a tree, every node)
    accepted_tokens: int  # draft tokens accepted
    emitted_tokens: int  # tokens appended to the output (accepted + one target token per step)
    draft_acceptance_rate: float | None  # accepted / drafted
    mean_acceptance_length: float | None  # 1 + accepted / steps (includes the target's token)
    # steps with draft token i accepted / steps (a tree: the accepted path reached depth i); None where no step
    # drafted a position i (a depth the tree never had, a position a τ policy never reached)
    per_position_acceptance_rate: tuple[float | None, ...]
    alpha: float | None  # mean over draft positions of β = Σ min(p, q)
    c: float | None  # time of one draft forward / time of one target forward, measured
    target_forward_passes: int  # one per step (the prompt's prefill is not counted)
    draft_ms: float  # total draft-phase time
    verify_ms: float  # total verification-phase time
    tokens_per_second: float | None  # emitted tokens / (draft + verify time)
    # steps with draft token i accepted / steps that reached position i (tokens 1..i−1 accepted and
    # a token i drafted), as serving engines log it; None where no step reached i
    conditional_per_position_acceptance_rate: tuple[float | None, ...] = ()
    mean_accepted_draft_tokens: float | None = None  # accepted / steps (without the target's token)
    # a lossy rule's run (docs/algorithm.md, "Lossy rules"; None for a lossless rule): TV(o_t, p_t) over every position
    # whose token the rule decided (1..min(n + 1, τ) of each step), its mean and its largest; the rule's expected
    # tokens per pass on the run's own drafts, and its lossless baseline's on the same drafts (means over steps)
    tv_mean: float | None = None
    tv_max: float | None = None
    lossy_tokens_per_pass: float | None = None
    baseline_tokens_per_pass: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Metrics:
        tuples = ("per_position_acceptance_rate", "conditional_per_position_acceptance_rate")
        return cls(**{**data, **{k: tuple(data[k]) for k in tuples if k in data}})


def compute_metrics(steps: Sequence[StepCounts], tau: int) -> Metrics:
    n_steps = len(steps)
    drafted = sum(s.nodes for s in steps)
    accepted = sum(s.n_accepted for s in steps)
    betas = [b for s in steps for b in s.beta]
    draft_ms = sum(s.draft_ms for s in steps)
    verify_ms = sum(s.verify_ms for s in steps)
    emitted = sum(len(s.emitted) for s in steps)
    reached = [any(s.depth >= i for s in steps) for i in range(1, tau + 1)]
    per_position = tuple(
        (sum(s.n_accepted >= i for s in steps) / n_steps if reached[i - 1] else None) if n_steps else 0.0
        for i in range(1, tau + 1)
    )
    conditional = tuple(
        _ratio(sum(s.n_accepted >= i for s in steps), sum(s.n_accepted >= i - 1 and s.depth >= i for s in steps))
        for i in range(1, tau + 1)
    )
    costs = [(s.cost, s.n_accepted) for s in steps if getattr(s, "cost", None) is not None]
    distances = [d for cost, n in costs for d in cost.decided(n)]
    c = None
    if drafted and n_steps and verify_ms > 0:
        c = (draft_ms / drafted) / (verify_ms / n_steps)
    return Metrics(
        steps=n_steps,
        drafted_tokens=drafted,
        accepted_tokens=accepted,
        emitted_tokens=emitted,
        draft_acceptance_rate=_ratio(accepted, drafted),
        mean_acceptance_length=1 + accepted / n_steps if n_steps else None,
        per_position_acceptance_rate=per_position,
        alpha=_ratio(sum(betas), len(betas)),
        c=c,
        target_forward_passes=n_steps,
        draft_ms=draft_ms,
        verify_ms=verify_ms,
        tokens_per_second=_ratio(emitted * 1000.0, draft_ms + verify_ms),
        conditional_per_position_acceptance_rate=conditional,
        mean_accepted_draft_tokens=_ratio(accepted, n_steps),
        tv_mean=_ratio(sum(distances), len(distances)),
        tv_max=max(distances, default=None),
        lossy_tokens_per_pass=_ratio(sum(cost.tokens_per_pass for cost, _ in costs), len(costs)),
        baseline_tokens_per_pass=_ratio(sum(cost.baseline_tokens_per_pass for cost, _ in costs), len(costs)),
    )


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None
