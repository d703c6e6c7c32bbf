"""Lesson: The three knobs of a tree."""

from __future__ import annotations

import pandas as pd

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair


def tree_knobs(pair: ModelPair, load: Load) -> Evidence:
    rows = []
    for topk, steps, num in ((3, 4, 8), (1, 4, 4), (3, 2, 8), (3, 4, 16)):
        run = decode(pair, mode="greedy", max_new_tokens=24, topk=topk, steps=steps, num_draft_tokens=num).trace()
        rows.append(
            {
                "topk": topk,
                "steps": steps,
                "num_draft_tokens": num,
                "nodes verified per pass": sum(s.nodes for s in run.steps) / len(run.steps),
                "draft forwards per pass": sum(s.draft_passes for s in run.steps) / len(run.steps),
                "tokens per pass": run.metrics.mean_acceptance_length,
                "deepest accepted": max(s.n_accepted for s in run.steps),
            }
        )
    table = pd.DataFrame(rows).round(2)
    capped = all(r["deepest accepted"] <= r["steps"] for r in rows)
    levels = all(r["draft forwards per pass"] <= r["steps"] for r in rows)
    return Evidence(
        "Nodes verified per pass: "
        + ", ".join(f"{r['nodes verified per pass']:.1f} at num_draft_tokens = {r['num_draft_tokens']}" for r in rows)
        + f"; the deepest accepted path never exceeded steps: {capped}; the draft paid one forward per level, never "
        f"more than steps a pass, whatever num_draft_tokens: {levels}.",
        (),
        table,
    )


LESSON = Lesson(
    key="tree-knobs",
    title="The three knobs of a tree",
    question="SGLang's --speculative-eagle-topk, --speculative-num-steps and --speculative-num-draft-tokens: which one "
    "sets how many nodes the target verifies per pass?",
    choices=("topk", "steps", "num_draft_tokens"),
    right=2,
    takeaway="topk: alternatives per branch; steps: the deepest path (at most steps + 1 tokens per pass).\n"
    "num_draft_tokens: the nodes verified per pass, the best-scored kept: the verify cost v(num + 1).",
    run=tree_knobs,
)
