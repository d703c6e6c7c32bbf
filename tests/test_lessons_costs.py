"""Lessons and the pair's kept costs (issue 63): a quiet lesson run keeps the calibration of the pairs it runs, and a
reading from counted work at kept costs is not held to S(τ)'s i.i.d. ideal. Library-level, on the tiny pair."""

from __future__ import annotations

import pytest

from specviz.classroom.lessons import BY_KEY


def test_a_quiet_lesson_run_keeps_its_own_pairs_calibration_for_a_busy_machine_later(tmp_path):
    """Issue 63's Done-when: a timed lesson that loads a pair of its own (the self-draft, the roles swapped) keeps that
    pair's costs on its first quiet run, so that on a busy machine later it answers from them; a pair already kept
    is not timed again."""
    from specviz.analysis import clock
    from specviz.analysis.pairtimes import TimingBook
    from tests.helpers import fake_ms, tiny_text_pair

    book = TimingBook(tmp_path)
    asked = []

    def timings(pair):
        asked.append(pair.draft.name)
        return book.get(pair) or book.measure(pair, timer=clock.FakeTimer(fake_ms))

    pair = tiny_text_pair(chat=True)
    self_pair = tiny_text_pair(chat=True)  # the pair the lesson loads for itself
    load = lambda *_a, **_k: self_pair  # noqa: E731
    assert book.get(self_pair) is None
    BY_KEY["slower"].run(pair, load, timings)
    kept = book.get(self_pair)
    assert kept is not None and kept.quiet and asked
    BY_KEY["slower"].run(pair, load, timings)
    assert book.get(self_pair) is kept  # not timed again
    clock.set_default(clock.FakeTimer(fake_ms, disturbed=lambda *_: True))
    try:
        evidence = BY_KEY["slower"].run(pair, load, timings)
    finally:
        clock.set_default(clock.FakeTimer(fake_ms))
    assert evidence.calibration == kept.label()


def test_parallel_yet_slow_from_kept_costs_is_not_held_to_the_iid_ideal(monkeypatch):
    """Beside two busy loops (benchmarks.busy_answers, 2026-12-06) "Parallel, yet slow" refused its answer from kept
    costs: 2.92× counted, above S = 2.39× from α's i.i.d. formula. Counted work at kept costs is arithmetic, and
    correlated acceptances keep more tokens a pass than that formula's E: only a reading of the run's own clocks is
    held to its ideal."""
    import dataclasses

    from specviz.analysis.measure import MeasurementError, Spread
    from specviz.classroom.lessons import common, low_speedup
    from tests.helpers import tiny_text_pair

    real = common.measured_run

    def above_ideal(calibration):
        def run(*args, **kwargs):
            measured, d = real(*args, **kwargs)
            high = 3 * max(d.predicted_speedup, d.predicted_speedup_v.high)
            return measured, dataclasses.replace(d, run_speedup=Spread(high, high, high, 9), calibration=calibration)

        return run

    pair = tiny_text_pair(chat=True)
    monkeypatch.setattr(low_speedup, "measured_run", above_ideal("the calibration kept just now on torch"))
    evidence = low_speedup.low_speedup(pair, lambda *_a, **_k: pair)
    assert evidence.calibration == "the calibration kept just now on torch"
    monkeypatch.setattr(low_speedup, "measured_run", above_ideal(""))
    with pytest.raises(MeasurementError, match="above the ideal"):
        low_speedup.low_speedup(pair, lambda *_a, **_k: pair)
