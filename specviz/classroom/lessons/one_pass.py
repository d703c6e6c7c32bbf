"""Lesson: Why one verification pass."""

from __future__ import annotations

import pandas as pd

from specviz.analysis.passes import verify_timing
from specviz.classroom.lessons.common import PROMPT, Evidence, Lesson, Load
from specviz.models.pair import ModelPair


def one_pass(pair: ModelPair, load: Load) -> Evidence:
    timing = verify_timing(pair, PROMPT, 4, repeats=5)
    table = pd.DataFrame(
        {
            "how": [f"one pass over {timing.tokens} tokens", f"{timing.tokens} one-token passes"],
            "ms (median, interquartile range)": [
                timing.parallel_ms.text(0, " ms"),
                timing.sequential_ms.text(0, " ms"),
            ],
        }
    )
    return Evidence(
        f"Scoring {timing.tokens} tokens in one pass took {timing.parallel_ms.text(0, ' ms')} against "
        f"{timing.sequential_ms.text(0, ' ms')} one at a time (the two alternating, {timing.ratio.n} rounds): the pass "
        f"costs {timing.ratio.text(2, '')} one-token passes.",
        (),
        table,
        premise=f"one pass over {timing.tokens} tokens costs less than {timing.tokens} one-token passes",
        held=timing.ratio.below(timing.tokens),
        why_not="the one pass cost as much as the separate passes in some "
        "rounds: the machine was busy while they were timed; run it again.",
    )


LESSON = Lesson(
    key="one-pass",
    title="Why one verification pass",
    question="Why does the target score all τ draft tokens in one pass?",
    choices=(
        "It reads its weights once instead of τ + 1 times",
        "It changes which tokens are accepted",
        "The draft cannot work otherwise",
    ),
    right=0,
    takeaway="One pass over τ + 1 positions costs far less than τ + 1 passes: that is where speedup comes from.\n"
    "Its cost depends on hardware and runtime: about one token on a GPU (here: torch-kernels), more "
    "where the cores run out of compute past one token (here: llama.cpp).",
    run=one_pass,
)
