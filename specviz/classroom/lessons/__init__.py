"""Lessons: a question a class can predict, answered live by the app's own engine and charts.

Each lesson is a module of this package: its question, a few choices (one right), a two-line takeaway
and a `run` that reproduces the situation (on the embedded pair, or on hand-made tables where exact
numbers matter) and returns the evidence: figures, a table, a finding in one sentence computed from what
just ran, and, where the lesson rests on a measurement, its premise checked on that run. The right
choice and the takeaway are shown only after the run. No Streamlit here: pages/lessons.py draws them.
To add a lesson: a module with its LESSON here, and its name in the list below (the order on screen).
"""

from __future__ import annotations

from specviz.classroom.lessons import (
    after_failure,
    broken_draft,
    busy_server,
    choose_tau,
    draft_bits,
    engine_log,
    fast_but_wrong,
    greedy_text,
    how_many_kept,
    laptop_h100,
    laptop_slowdown,
    low_speedup,
    next_token,
    one_pass,
    q_above_p,
    race,
    slower,
    step_order,
    suffix_pays,
    swapped_roles,
    tau_policy,
    tree_knobs,
    verifier_output,
    verify_budget,
    whose_text,
    why_tree,
    your_engine,
)
from specviz.classroom.lessons.common import Evidence, Lesson

LESSONS: tuple[Lesson, ...] = tuple(
    module.LESSON
    for module in (
        race,
        next_token,
        step_order,
        how_many_kept,
        q_above_p,
        broken_draft,
        one_pass,
        verifier_output,
        slower,
        swapped_roles,
        verify_budget,
        low_speedup,
        fast_but_wrong,
        choose_tau,
        why_tree,
        tree_knobs,
        tau_policy,
        your_engine,
        engine_log,
        after_failure,
        whose_text,
        laptop_h100,
        busy_server,
        draft_bits,
        greedy_text,
        laptop_slowdown,
        suffix_pays,
    )
)
BY_KEY = {lesson.key: lesson for lesson in LESSONS}

__all__ = ["BY_KEY", "LESSONS", "Evidence", "Lesson"]
