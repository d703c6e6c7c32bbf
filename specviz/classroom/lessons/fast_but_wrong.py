"""Lesson: Fast but wrong."""

from __future__ import annotations

from specviz.analysis.lossless import check, first_tokens, reference
from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.core.config import SpecConfig
from specviz.models.lm import TableModel
from specviz.models.pair import ModelPair
from specviz.models.text import WordCodec
from specviz.viz import run_charts


def fast_but_wrong(pair: ModelPair, load: Load) -> Evidence:
    words = ("a", "b", "c")
    table = ModelPair(TableModel([0.5, 0.3, 0.2], "p"), TableModel([0.2, 0.2, 0.6], "q"), WordCodec(list(words)))
    checks = []
    for mode in ("textbook", "lossless"):
        config = SpecConfig(tau=2, mode=mode)
        checks.append(check(mode, list(first_tokens(table, "a", config, 3000)), reference(table, "a", config)))
    return Evidence(
        " ".join(c.verdict() for c in checks),
        tuple(run_charts.lossless_chart(c, lambda t: words[t]) for c in checks),
    )


LESSON = Lesson(
    key="fast-but-wrong",
    title="Fast but wrong",
    question="Speculation made a deployment faster, but its answers changed. Which mode was it running?",
    choices=("lossless", "textbook with sampling", "greedy"),
    right=1,
    takeaway="Textbook's correction takes argmax p, which biases sampled output towards the mode.\n"
    "Lossless resamples from norm(max(0, p − q)) and keeps the target's distribution exactly.",
    run=fast_but_wrong,
)
