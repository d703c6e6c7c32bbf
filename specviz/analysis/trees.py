"""Chain against tree at the same verification budget (docs/algorithm.md, "Token trees"): for each budget B
(nodes the target verifies per pass), a chain of τ = B and a tree of num_draft_tokens = B, on the
same prompts, seeds and settings, with the target alone as the reference on the same runtime.
Reports tokens per step (counted), the measured speedup and the verify cost v(B + 1) of each (timed
beside the target alone on the same tokens, with their 95% intervals)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from specviz.analysis.measure import PairedStep, Spread, paired_run, speedup_of, verify_cost_of
from specviz.core.config import Mode, SpecConfig
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
    paired: tuple[PairedStep, ...]  # every step of its runs, each timed beside the target alone on the same tokens

    @property
    def target_passes(self) -> int:
        return len(self.paired)

    @property
    def emitted(self) -> int:
        return sum(p.tokens for p in self.paired)

    @property
    def tokens_per_step(self) -> float:
        return self.emitted / self.target_passes if self.target_passes else 0.0

    def speedup(self) -> Spread | None:
        """The target alone's time for the same tokens over speculation's, with its 95% interval."""
        return speedup_of(self.paired) if self.paired else None

    def verify_cost(self) -> Spread | None:
        """v(B + 1): a verify pass over one token of the target alone, both measured here."""
        return verify_cost_of(self.paired) if self.paired else None


@dataclass(frozen=True)
class ChainTreeResult:
    rows: tuple[ShapeResult, ...]

    def to_frame(self) -> pd.DataFrame:
        """The table as a room reads it: every number as text, with its interval."""
        return pd.DataFrame(
            [
                {
                    "budget (nodes per pass)": r.budget,
                    "shape": r.shape if r.shape == "chain" else f"tree: topk {r.topk}, steps {r.steps}",
                    "tokens per step": f"{r.tokens_per_step:.2f}",
                    "speedup (95% interval)": _text(r.speedup()),
                    "v(budget + 1)": _text(r.verify_cost(), unit=""),
                }
                for r in self.rows
            ]
        )

    def verdict(self) -> str:
        """What the comparison shows, in words: tokens per step are counted (exact); speedups are
        compared only where their intervals separate."""
        parts = []
        for budget in sorted({r.budget for r in self.rows}):
            pair = {r.shape: r for r in self.rows if r.budget == budget}
            if set(pair) != {"chain", "tree"}:
                continue
            chain, tree = pair["chain"], pair["tree"]
            fast_chain, fast_tree = chain.speedup(), tree.speedup()
            if fast_chain.overlaps(fast_tree):
                speed = f"speedups within noise of each other ({_text(fast_tree)} against {_text(fast_chain)})"
            else:
                faster = "the tree" if fast_tree.value > fast_chain.value else "the chain"
                speed = f"{faster} faster ({_text(fast_tree)} against {_text(fast_chain)})"
            parts.append(
                f"at {budget} nodes per pass the tree emits {tree.tokens_per_step:.2f} tokens per step against the "
                f"chain's {chain.tokens_per_step:.2f}, {speed}"
            )
        return "; ".join(parts).capitalize() + "." if parts else "No budget has both a chain and a tree run yet."


def _text(x: Spread | None, unit: str = "×") -> str:
    return "–" if x is None else x.text(unit=unit)


def compare(
    pair: ModelPair,
    prompts: Sequence[str],
    budgets: Sequence[int] = BUDGETS,
    mode: Mode = "greedy",
    max_new_tokens: int = 48,
    seeds: Sequence[int] = (0,),
    chat: bool | None = None,
    temperature: float = 1.0,
    progress: Callable[[int, int, str], None] | None = None,
) -> ChainTreeResult:
    """Chain (τ = B) and tree (TREE_SHAPES[B], num_draft_tokens = B) for every budget B, pooled over
    prompts and seeds, each run timed step by step beside the target alone on the same tokens (each step a piece of
    work: specviz.pieces)."""
    unknown = [b for b in budgets if b not in TREE_SHAPES]
    if unknown or not prompts:
        raise ConfigError(f"budgets must be among {BUDGETS} and at least one prompt given; got {list(budgets)}")
    base = SpecConfig(mode=mode, temperature=temperature, max_new_tokens=max_new_tokens)
    total = len(prompts) * 2 * len(budgets) * len(seeds)
    done, rows = 0, []
    for budget in budgets:
        topk, steps = TREE_SHAPES[budget]
        for shape, config in (
            ("chain", dataclasses.replace(base, tau=budget)),
            ("tree", dataclasses.replace(base, topk=topk, steps=steps, num_draft_tokens=budget)),
        ):
            paired: list[PairedStep] = []
            for i, prompt in enumerate(prompts):
                for seed in seeds:
                    run_config = dataclasses.replace(config, seed=seed)
                    paired += paired_run(pair, prompt, run_config, chat=chat).steps
                    done += 1
                    if progress:
                        progress(done, total, f"{shape} at {budget} nodes, prompt {i + 1}, seed {seed}")
            rows.append(
                ShapeResult(
                    budget, shape, topk if shape == "tree" else 1, steps if shape == "tree" else budget, tuple(paired)
                )
            )
    return ChainTreeResult(tuple(rows))
