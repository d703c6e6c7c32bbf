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

# docs/algorithm.md's worked example, p = (1/3, 2/3) and q = (2/3, 1/3) at every position, with the question's
# 4-token draft: 'b', 'a', 'b', 'a' (u = 0.8 falls in q's [2/3, 1): 'b'; u = 0.3 in [0, 2/3): 'a'). Block's
# weights w = min(1, w·p/q) are 1, 1/2, 1, 1/2 ('b': p/q = 2, 'a': 1/2); its residual masses Σ max(0, w·p − q) are
# 1/3 where w = 1 and 0 where w = 1/2, so its thresholds are h = (1, 0, 1, 1/2) (h_τ = w_τ). The draws
# r = (0.3, 0.6, 0.4, 0.7) then pass at positions 1 and 3 and fail at 2 and 4, under block's thresholds and under
# each token's own test r ≤ p/q (1, 1/2, 1, 1/2) alike: the question's case exactly.
Q, P = ((2 / 3, 1 / 3),) * 4, ((1 / 3, 2 / 3),) * 5
CASE = SandboxCase(("a", "b"), Q, P, (0.3, 0.6, 0.4, 0.7), u=(0.8, 0.3, 0.8, 0.3))


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
    passes = "".join("✓" if ok else "✗" for ok in step.verify.passed)
    h = ", ".join(f"{x:.2f}" for x in step.verify.threshold)
    return Evidence(
        f"On this {step.tau}-token draft ({passes}: position 2 fails, 3 passes, 4 fails) block keeps "
        f"{kept['block']} tokens, everything up to its last pass (r = {', '.join(f'{x:.1f}' for x in step.r)} "
        f"against h = {h}); token-wise keeps {kept['token']}, stopping at its first failure. In expectation over "
        f"every draft and draw (computed exactly): {sampled['E[n] token-wise']:.4f} token-wise against "
        f"{sampled['E[n] block']:.4f} block (130/81 against 166/81); with a greedy draft (q one-hot) "
        f"{greedy['E[n] token-wise']:.4f} against {greedy['E[n] block']:.4f}: no gain.",
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
