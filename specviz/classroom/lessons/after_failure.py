"""Lesson: Accepting after a failure (block verification, Sun et al. 2025; vLLM's block method)."""

from __future__ import annotations

import pandas as pd
import torch

from specviz.analysis.theory import expected_accepted
from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.classroom.sandbox import SandboxCase, sandbox_step
from specviz.core.rules import each_rule
from specviz.models.pair import ModelPair
from specviz.viz import charts

# docs/algorithm.md's worked example: p = (1/3, 2/3) and q = (2/3, 1/3) at every position, τ = 2
Q, P = ((2 / 3, 1 / 3),) * 2, ((1 / 3, 2 / 3),) * 3
# draft ("a", "b") (u = 0.3 falls in q's [0, 2/3): 'a'; u = 0.8 in [2/3, 1): 'b') and draws r = (0.9, 0.5)
CASE = SandboxCase(("a", "b"), Q, P, (0.9, 0.5), u=(0.3, 0.8))


def after_failure(pair: ModelPair, load: Load) -> Evidence:
    step = sandbox_step(CASE, "lossless", "block")
    q, p = torch.tensor(Q, dtype=torch.float64), torch.tensor(P, dtype=torch.float64)
    outcomes = each_rule(list(step.draft_tokens), q, p, step.r)
    one_hot_q = [[float(x == max(range(2), key=row.__getitem__)) for x in range(2)] for row in Q]  # argmax q
    table = pd.DataFrame(
        [
            {
                "draft": draft,
                "E[n] token-wise": expected_accepted(q, P, "token"),
                "E[n] block": expected_accepted(q, P, "block"),
            }
            for draft, q in (("sampled from q", Q), ("greedy (one-hot q)", one_hot_q))
        ]
    )
    sampled, greedy = table.iloc[0], table.iloc[1]
    kept = {o.rule: o.n for o in outcomes}
    return Evidence(
        f"On this step block keeps {kept['block']} tokens although position 1 failed its own draw (r = 0.90 > h = "
        f"{step.verify.threshold[0]:.2f}); token-wise keeps {kept['token']}. In expectation over every draft and draw "
        f"(computed exactly): {sampled['E[n] token-wise']:.4f} token-wise against {sampled['E[n] block']:.4f} block "
        f"(10/9 against 11/9); with a greedy draft (q one-hot) {greedy['E[n] token-wise']:.4f} against "
        f"{greedy['E[n] block']:.4f}: no gain.",
        (charts.rules_chart(step, outcomes),),
        table.round(4),
    )


LESSON = Lesson(
    key="after-failure",
    title="Accepting after a failure",
    question="Block verification (vLLM's block method) judges a 4-token draft: position 2's draw fails its test, "
    "position 3's passes, position 4's fails. How many draft tokens does it keep?",
    choices=("1: it stops at the first failure", "3: everything up to the last pass", "2: the ones that passed"),
    right=1,
    takeaway="Block keeps everything up to the last pass: lossless, never fewer tokens in expectation, no extra pass.\n"
    "With a greedy draft (q one-hot, as EAGLE and MTP verify) its thresholds are token-wise ones: it gains nothing.",
    run=after_failure,
)
