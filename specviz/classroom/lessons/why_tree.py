"""Lesson: Why a tree?."""

from __future__ import annotations

from specviz.classroom.lessons.common import STORY, Evidence, Lesson, Load
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.models.pair import ModelPair
from specviz.viz.tree_chart import tree_chart, tree_run_chart


def why_tree(pair: ModelPair, load: Load) -> Evidence:
    chain = Decoder(pair, STORY, SpecConfig(tau=8, mode="greedy", max_new_tokens=32)).run()
    tree = Decoder(pair, STORY, SpecConfig(mode="greedy", max_new_tokens=32, topk=3, steps=4, num_draft_tokens=8)).run()
    per_step = [r.metrics.mean_acceptance_length or 0.0 for r in (chain, tree)]
    seconds = [s for s in tree.steps if any(tree_node.rank > 1 for tree_node in _accepted(s))]
    shown = max(seconds or tree.steps, key=lambda s: s.n_accepted)
    more = "more" if per_step[1] > per_step[0] else "fewer" if per_step[1] < per_step[0] else "as many"
    return Evidence(
        f"8 nodes per target pass: the chain kept {per_step[0]:.2f} tokens per pass, the tree {per_step[1]:.2f} "
        f"({more}); in {len(seconds)} of {len(tree.steps)} tree steps the walk took a second or third guess. Same "
        f"text: {chain.new_tokens == tree.new_tokens}.",
        (tree_chart(shown), tree_run_chart(tree.steps)),
    )


def _accepted(step):
    return [step.tree.nodes[i] for i in step.tree.path] if step.tree else []


LESSON = Lesson(
    key="why-tree",
    title="Why a tree?",
    question="A story, greedy; the target verifies 8 draft tokens per pass. A chain of 8, or a tree of 8 nodes (3 "
    "children per node, 4 levels): which keeps more tokens per pass?",
    choices=(
        "The chain: it reaches deeper",
        "The tree: where the draft's first guess is wrong, its second or third may be right",
        "The same: the budget is the same",
    ),
    right=1,
    takeaway="At the same budget a tree spends nodes on alternatives where the draft is unsure, not on deep guesses.\n"
    "Greedy output is the target's own either way: the shape changes speed, never the answer.",
    run=why_tree,
)
