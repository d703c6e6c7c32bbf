"""Lesson: q greater than p."""

from __future__ import annotations

import dataclasses

import torch

from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.classroom.sandbox import PRESETS as EXERCISES
from specviz.classroom.sandbox import sandbox_step
from specviz.models.pair import ModelPair
from specviz.viz import step_chart


def q_above_p(pair: ModelPair, load: Load) -> Evidence:
    case = EXERCISES["One token: q = 0.8, p = 0.6, r = 0.7"]
    draws = torch.rand(1000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    kept = sum(sandbox_step(dataclasses.replace(case, r=(float(r),))).n_accepted for r in draws)
    return Evidence(
        f"With q = 0.8 > p = 0.6 the token was kept in {kept} of 1000 draws ({kept / 1000:.3f}); p/q = 0.75.",
        (step_chart.step_chart(sandbox_step(case)),),
    )


LESSON = Lesson(
    key="q-above-p",
    title="q greater than p",
    question="A draft token has q = 0.8 and p = 0.6. Is it always rejected?",
    choices=("Yes, always", "No: it is kept with probability p/q = 0.75", "No: it is kept with probability p = 0.6"),
    right=1,
    takeaway="q > p means the draft over-proposed the token, not that it is wrong.\n"
    "It is kept with probability p/q; the rejected mass goes to the residual.",
    run=q_above_p,
)
