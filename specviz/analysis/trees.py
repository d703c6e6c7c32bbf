"""Chain against tree at the same verification budget (SPEC.md, "Token trees"): for each budget B
(nodes the target verifies per pass), a chain of τ = B and a tree of num_draft_tokens = B, on the
same prompts, seeds and settings, with the target alone as the reference on the same runtime.
Reports tokens per step, tokens/s, the measured speedup and the verify cost v(B + 1) of each."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from specviz.analysis.sweep import Baseline, target_only
from specviz.core.config import Mode, SpecConfig
from specviz.core.engine import Decoder
from specviz.errors import ConfigError
from specviz.models.pair import ModelPair

# budget → (topk, steps) of the tree run at that budget: wider as the budget grows, never deeper than it
TREE_SHAPES: dict[int, tuple[int, int]] = {4: (2, 3), 8: (3, 4), 16: (4, 5)}
BUDGETS = tuple(TREE_SHAPES)


@dataclass(frozen=True)
class ShapeResult:
    budget: int  # nodes verified per pass
    shape: str  # "chain" | "tree"
    topk: int
    steps: int
    target_passes: int
    emitted: int
    draft_ms: float
    verify_ms: float

    @property
    def tokens_per_step(self) -> float:
        return self.emitted / self.target_passes if self.target_passes else 0.0

    @property
    def tokens_per_second(self) -> float:
        ms = self.draft_ms + self.verify_ms
        return 1000.0 * self.emitted / ms if ms else 0.0


@dataclass(frozen=True)
class ChainTreeResult:
    rows: tuple[ShapeResult, ...]
    baselines: tuple[Baseline, ...]

    @property
    def baseline_tokens_per_second(self) -> float | None:
        ms = sum(b.decode_ms for b in self.baselines)
        return 1000.0 * sum(b.tokens for b in self.baselines) / ms if ms else None

    def speedup(self, row: ShapeResult) -> float | None:
        base = self.baseline_tokens_per_second
        return row.tokens_per_second / base if base else None

    def verify_cost(self, row: ShapeResult) -> float | None:
        """v(B + 1): one verify pass of this shape over one target-only token, both measured here."""
        tokens = sum(b.tokens for b in self.baselines)
        one = sum(b.decode_ms for b in self.baselines) / tokens if tokens else 0.0
        return (row.verify_ms / row.target_passes) / one if one and row.target_passes else None

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([
            {"budget (nodes per pass)": r.budget, "shape": r.shape if r.shape == "chain" else
             f"tree: topk {r.topk}, steps {r.steps}", "tokens per step": round(r.tokens_per_step, 2),
             "tokens/s": round(r.tokens_per_second, 1), "speedup": _round(self.speedup(r)),
             "v(budget + 1)": _round(self.verify_cost(r))}
            for r in self.rows
        ])  # fmt: skip

    def verdict(self) -> str:
        """What the comparison shows, in words."""
        parts = []
        for budget in sorted({r.budget for r in self.rows}):
            pair = {r.shape: r for r in self.rows if r.budget == budget}
            if set(pair) != {"chain", "tree"}:
                continue
            chain, tree = pair["chain"], pair["tree"]
            parts.append(
                f"at {budget} nodes per pass the tree emits {tree.tokens_per_step:.2f} tokens per step against the "
                f"chain's {chain.tokens_per_step:.2f} (speedup {_times(self.speedup(tree))} against "
                f"{_times(self.speedup(chain))})"
            )
        return "; ".join(parts).capitalize() + "." if parts else "No budget has both a chain and a tree run yet."


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _times(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}×"


def compare(
    pair: ModelPair, prompts: Sequence[str], budgets: Sequence[int] = BUDGETS, mode: Mode = "greedy",
    max_new_tokens: int = 48, seeds: Sequence[int] = (0,), chat: bool | None = None, temperature: float = 1.0,
    progress: Callable[[int, int, str], None] | None = None,
) -> ChainTreeResult:  # fmt: skip
    """Chain (τ = B) and tree (TREE_SHAPES[B], num_draft_tokens = B) for every budget B, pooled over
    prompts and seeds; one target-only baseline per prompt."""
    unknown = [b for b in budgets if b not in TREE_SHAPES]
    if unknown or not prompts:
        raise ConfigError(f"budgets must be among {BUDGETS} and at least one prompt given; got {list(budgets)}")
    base = SpecConfig(mode=mode, temperature=temperature, max_new_tokens=max_new_tokens)
    total = len(prompts) * (1 + 2 * len(budgets) * len(seeds))
    done = 0

    def tick(what: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total, what)

    baselines = []
    for i, prompt in enumerate(prompts):
        baselines.append(target_only(pair, prompt, dataclasses.replace(base, tau=1), i, chat))
        tick(f"target alone, prompt {i + 1}")
    rows = []
    for budget in budgets:
        topk, steps = TREE_SHAPES[budget]
        for shape, config in (
            ("chain", dataclasses.replace(base, tau=budget)),
            ("tree", dataclasses.replace(base, topk=topk, steps=steps, num_draft_tokens=budget)),
        ):
            passes = emitted = 0
            draft_ms = verify_ms = 0.0
            for i, prompt in enumerate(prompts):
                for seed in seeds:
                    run = Decoder(pair, prompt, dataclasses.replace(config, seed=seed), chat=chat).run()
                    passes += run.metrics.steps
                    emitted += run.metrics.emitted_tokens
                    draft_ms += run.metrics.draft_ms
                    verify_ms += run.metrics.verify_ms
                    tick(f"{shape} at {budget} nodes, prompt {i + 1}, seed {seed}")
            rows.append(ShapeResult(budget, shape, topk if shape == "tree" else 1, steps if shape == "tree" else budget,
                                    passes, emitted, draft_ms, verify_ms))  # fmt: skip
    return ChainTreeResult(tuple(rows), tuple(baselines))
