"""Lesson: Why one verification pass."""

from __future__ import annotations

import pandas as pd

from specviz.analysis.pairtimes import TEXT
from specviz.classroom.lessons.common import Evidence, Lesson, Load, Timings
from specviz.models.pair import ModelPair

TOKENS = 5  # τ + 1 at the app's τ = 4


def one_pass(pair: ModelPair, load: Load, timings: Timings) -> Evidence:
    """The pair's kept timings (the ones every page reads): one pass over 5 tokens against 5 one-token passes."""
    kept = timings(pair)
    one, many = kept.one_token_ms, kept.passes_ms[TOKENS]
    separate = one.scaled(TOKENS)
    table = pd.DataFrame(
        {
            "how": [f"one pass over {TOKENS} tokens", f"{TOKENS} one-token passes"],
            "ms (median, interquartile range)": [many.text(1, " ms"), separate.text(1, " ms")],
        }
    )
    return Evidence(
        f"Scoring {TOKENS} tokens in one pass takes {many.text(1, ' ms')} against {separate.text(1, ' ms')} one at a "
        f"time: the pass costs v({TOKENS}) = {kept.v(TOKENS):.2f} one-token passes (the pair's timings, "
        f"{kept.where()}; every page reads the same).",
        (),
        table,
        premise=f"one pass over {TOKENS} tokens costs less than {TOKENS} one-token passes",
        held=many.high < separate.low,
        prompt=TEXT,  # what the pair's timings ran on (specviz.analysis.pairtimes)
        calibration=kept.label(),
        why_not=f"the pass over {TOKENS} tokens and {TOKENS} one-token passes overlapped in their ranges: the "
        "machine was busy while they were timed; measure the pair again.",
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
    timed=True,
)
