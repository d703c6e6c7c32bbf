"""Lesson: A fixed verification budget."""

from __future__ import annotations

import pandas as pd

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair


def verify_budget(pair: ModelPair, load: Load) -> Evidence:
    rows = []
    for tau in (1, 2, 4, 6, 8):
        dec = decode(pair, count=4, tau=tau, mode="greedy", max_new_tokens=64)
        rows.append(
            {
                "τ": tau,
                "tokens in 4 target passes": len(dec.new_tokens),
                "draft forwards": sum(s.draft_passes for s in dec.steps),
            }
        )
    return Evidence(
        "Four target passes gave "
        + ", ".join(f"{r['tokens in 4 target passes']} tokens at τ = {r['τ']}" for r in rows)
        + f": {most(rows)}",
        (),
        pd.DataFrame(rows),
    )


def most(rows: list[dict]) -> str:
    """Where the most tokens came, in words: one τ, or every τ that ties for it (the smallest of them then buys them
    with the fewest draft forwards)."""
    top = max(r["tokens in 4 target passes"] for r in rows)
    tied = [r for r in rows if r["tokens in 4 target passes"] == top]
    if len(tied) == 1:
        return f"the most at τ = {tied[0]['τ']}, paid for in draft forwards only."
    taus = [str(r["τ"]) for r in tied]
    cheapest = min(tied, key=lambda r: r["draft forwards"])
    return (
        f"τ = {', '.join(taus[:-1])} and {taus[-1]} tie for the most ({top} tokens): a larger τ drafted more "
        f"({', '.join(str(r['draft forwards']) for r in tied)} draft forwards) for no more tokens, so τ = "
        f"{cheapest['τ']} buys them cheapest."
    )


LESSON = Lesson(
    key="verify-budget",
    title="A fixed verification budget",
    question="Your target can afford only 4 passes for this answer (greedy). Which τ gives the most tokens?",
    choices=("The smallest τ: fewer rejections", "A large τ: a pass keeps up to τ + 1 tokens", "τ does not matter"),
    right=1,
    takeaway="When target passes are the scarce resource, draft more per pass: each can keep up to τ + 1 tokens.\n"
    "The price is draft forwards, which is why c decides how far to go.",
    run=verify_budget,
)
