"""The class-load benchmark's parts against a real server: students over Streamlit's own websocket protocol (no
browser) step, go Back, Reset, run to the end and visit the lessons, beside the lecturer's session; nothing fails,
and every final trace, downloaded as the page's "Trace as JSON" (a deferred download), equals the same run decoded
alone."""

from __future__ import annotations

import pytest

from benchmarks import class_load


@pytest.mark.slow
def test_a_small_class_steps_with_no_error_and_every_trace_equal_to_its_run_alone(embedded_cache, tmp_path):
    result = class_load.measure(3, seconds=25, think=2.0, env=class_load.class_env(tmp_path), out=tmp_path)
    assert result["errors"] == 0, result["error_samples"]  # the lecturer's link opened the lecturer's session
    assert result["traces"] == 3 and result["traces_equal"] == 3
    assert result["lecturer_steps"] >= 2 and result["lecturer_trace_equal"]  # measured apart from the class
    assert result["steps"] >= 6 and result["actions"]["open"] == 3
    assert 0 < result["step_p50"] <= result["step_p95"] <= result["step_max"]
    assert result["rss_gb"] > 0.3 and result["cpu_per_step"] > 0
    assert class_load.line(result).startswith("students 3: p95 ")


def test_the_summary_line_has_the_issue_s_form():
    result = {
        "students": 80,
        "step_p95": 1.23,
        "step_max": 1.94,
        "errors": 0,
        "traces_equal": 80,
        "rss_gb": 3.14,
        "cpu_per_step": 0.091,
    }
    assert class_load.line(result) == (
        "students 80: p95 1.2 s, max 1.9 s, errors 0, traces equal 80/80, RSS 3.1 GB, server CPU per Step 0.09 s"
    )


def test_quantiles_are_the_nearest_rank():
    """p95 of 1..20 is the 19th value; of 1..100, the 95th; p50 of four values, the second."""
    assert class_load.quantile([float(x) for x in range(20, 0, -1)], 0.95) == 19.0
    assert class_load.quantile([float(x) for x in range(1, 101)], 0.95) == 95.0
    assert class_load.quantile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0


def test_the_verdict_reader_takes_the_best_tau_and_the_words_the_page_shows():
    from benchmarks.verdicts_under_load import taus_named, word

    ties = (
        "Measured: τ = 1, 2, 3 and 4 are within noise of each other here (0.39–0.84× the target alone), so no τ is "
        "best; τ = 1, 2, 3 and 4 are slower than the target alone (the whole intervals below 1). Predicted with the "
        "verify cost measured in these runs: best τ = 2, S_v = 0.9×"
    )
    assert taus_named(ties) == {1, 2, 3, 4} and word(ties) == "slower"  # the prediction's "best τ" is not read
    one = "Measured: best τ = 3, 1.40× (1.20–1.60×) the target alone: faster than the target alone."
    assert taus_named(one) == {3} and word(one) == "faster"
    race = "Speculative decoding was within noise of the target alone (0.99–2.50× its speed): 77.7 against 44.4"
    assert word(race) == "noise"
