"""Reading a trace: the time split and the bottleneck sentence, on runs whose numbers are set by
hand (α, c and the accepted lengths below are worked out in the comments)."""

from __future__ import annotations

import dataclasses

import pytest

from specviz import Decoder, SpecConfig
from specviz.analysis.diagnosis import UNMEASURED, Diagnosis, diagnose
from specviz.analysis.measure import MeasurementError
from specviz.core.metrics import compute_metrics
from tests.helpers import table_pair


def run_with(tau: int, accepted: list[int], beta: float, draft_ms: float, verify_ms: float, prefill_ms: float = 5.0):
    real = Decoder(table_pair([0.5, 0.5], [0.5, 0.5]), [0], SpecConfig(tau=tau, max_new_tokens=200)).run()
    template = real.steps[0]
    counts = {"tau": tau, "beta": (beta,) * tau, "draft_ms": draft_ms, "verify_ms": verify_ms}
    steps = tuple(
        dataclasses.replace(template, index=i, n_accepted=n, emitted=(0,) * (n + 1), **counts)
        for i, n in enumerate(accepted)
    )
    return dataclasses.replace(real, steps=steps, metrics=compute_metrics(steps, tau), prefill_ms=prefill_ms)


def test_a_trace_alone_names_no_bottleneck_and_predicts_no_speedup():
    """Issue 65.3: after Run to end the reading showed "S(τ = 4), v = 1: 2.45×" and "Bottleneck. τ … τ = 6 predicts
    S = 2.55×" while v was "–": a verdict from an assumed v = 1. τ = 4, α = 0.8, c = (4 ms / 4) / (10 ms / 1) = 0.1
    would have said τ = 6; without the pair's costs it says none, and predicts no S."""
    d = diagnose(run_with(4, [4, 3, 4], beta=0.8, draft_ms=4.0, verify_ms=10.0))
    assert d.alpha == pytest.approx(0.8) and d.c == pytest.approx(0.1)  # what the trace measures, shown as such
    assert d.predicted_speedup is None and d.best_tau is None and d.verify_cost is None
    assert d.bottleneck == UNMEASURED and "τ = 6" not in d.bottleneck
    assert d.bottleneck.startswith("Not named: a bottleneck rests on the pair's costs")
    d = diagnose(run_with(2, [0, 0, 1], beta=0.2, draft_ms=6.0, verify_ms=4.0))  # α ≤ c: not said either, unmeasured
    assert d.bottleneck == UNMEASURED
    assert d.shares() == pytest.approx({"draft": 18 / 35, "verify": 12 / 35, "prefill": 5 / 35})  # where time went


def test_a_draft_no_better_than_it_is_cheap_is_the_bottleneck():
    # τ = 2, α = 0.2; measured beside the target alone (10 ms a token): each step drafts 2 tokens in 8 ms, so
    # c = 4 / 10 = 0.4 ≥ α; v(3) = 12 / 10 = 1.2
    run = run_with(2, [0, 0, 1], beta=0.2, draft_ms=6.0, verify_ms=4.0)
    d = diagnose(run, paired([1, 1, 2], 2, 21.0, 8.0, 12.0, 10.0))
    assert d.c == pytest.approx(0.4) and d.alpha == pytest.approx(0.2)
    assert d.bottleneck.startswith("The draft: it is right (α = 0.20) no more often than it is cheap (c = 0.40)")


def test_at_its_measured_costs_verification_is_where_the_time_should_go():
    # τ = 6, α = 0.8, the trace's drafting 18 / 48 = 38%; measured (10 ms a token): each step drafts 6 in 6 ms (c =
    # 0.1), verifies in 11 ms (v = 1.1) and takes 18 ms for 7, 6, 7 tokens: 200 ms alone against 54 = 3.70×, every
    # resample the same ratio (each step's own is 70 / 18, 60 / 18: 3.33 to 3.89)
    run = run_with(6, [6, 5, 6], beta=0.8, draft_ms=6.0, verify_ms=10.0)
    d = diagnose(run, paired([7, 6, 7], 6, 18.0, 6.0, 11.0, 10.0))
    assert d.bottleneck.startswith(
        "Verification: the target's passes take 62% of the decoding time, as they should; this run: 3.70×"
    )
    assert d.bottleneck.endswith("v = 1.10.")


def test_few_accepted_tokens_and_slow_drafting_are_named():
    # measured at 10 ms a token: c = 1 / 10 = 0.1, v(5) = 1.1; mean acceptance length 1.25
    few = diagnose(
        run_with(4, [0, 1, 0, 0], beta=0.5, draft_ms=4.0, verify_ms=10.0),
        paired([1, 2, 1, 1], 4, 16.0, 4.0, 11.0, 10.0),
    )
    assert few.bottleneck.startswith("Acceptance: the target keeps few draft tokens (mean acceptance length 1.25)")
    # the trace's drafting 24 / 54 = 44%; c = 2 / 10 = 0.2
    slow = diagnose(
        run_with(4, [4, 3, 4], beta=0.9, draft_ms=8.0, verify_ms=10.0), paired([5, 4, 5], 4, 20.0, 8.0, 11.0, 10.0)
    )
    assert slow.bottleneck.startswith("Drafting: the draft takes 44% of the decoding time (c = 0.20)")


def paired(tokens: list[int], drafted: int, spec_ms: float, draft_ms: float, verify_ms: float, alone_per_token: float):
    from specviz.analysis.measure import PairedRun, PairedStep

    return PairedRun(
        None, tuple(PairedStep(t, drafted, spec_ms, draft_ms, verify_ms, alone_per_token * t) for t in tokens)
    )


def test_measured_beside_the_target_alone_the_verify_cost_is_read_and_named():
    # τ = 4, α = 0.6, three steps keeping 1, 1, 2 draft tokens (2, 2, 3 tokens out); each drafts 4 tokens in 8 ms
    # (2 ms each), verifies 5 in 250 ms and takes 260 ms in all; the target alone takes 100 ms for each of the same
    # tokens. v(5) = 250 / 100 = 2.5; c = 2 / 100 = 0.02; E = (1 − 0.6^5) / 0.4 = 2.3056; S (v = 1) = 2.3056 / 1.08
    # = 2.135; S_v = 2.3056 / (4 × 0.02 + 2.5) = 0.8936; measured: 700 ms alone against 780 ms = 0.897. Its interval
    # resamples the three steps: all three the 2-token ones (8/27 of resamples) give 200 / 260 = 0.769, all three
    # the 3-token one (1/27, more than 2.5%) 300 / 260 = 1.154; v and c are the same in every resample.
    run = run_with(4, [1, 1, 2], beta=0.6, draft_ms=8.0, verify_ms=250.0)
    d = diagnose(run, paired([2, 2, 3], 4, 260.0, 8.0, 250.0, 100.0))
    assert (d.verify_cost.value, d.verify_cost.low, d.verify_cost.high) == pytest.approx((2.5, 2.5, 2.5))
    assert d.c_one_token.value == pytest.approx(0.02) and d.c == pytest.approx(0.02)
    assert d.predicted_speedup == pytest.approx(2.3056 / 1.08, abs=1e-4)
    assert d.predicted_speedup_v.value == pytest.approx(2.3056 / 2.58, abs=1e-4)
    assert (d.run_speedup.value, d.run_speedup.low, d.run_speedup.high) == pytest.approx(
        (700 / 780, 200 / 260, 300 / 260)
    )
    assert d.bottleneck == (
        "Verification cost: one target pass over τ + 1 = 5 tokens costs v = 2.50 one-token passes on this runtime, "
        "so a step costs τc + v = 2.58 one-token passes for 2.33 tokens: 0.90× (0.77–1.15×) the target alone as "
        "measured, where S(τ) with v = 1 promises 2.13×. A smaller τ or a runtime whose multi-token passes cost "
        "less would help."
    )
    assert diagnose(run).verify_cost is None  # a trace alone (a replay) cannot tell v
    assert Diagnosis.from_dict(d.to_dict()) == d  # a snapshot keeps it whole


def test_a_speedup_no_step_could_make_is_refused():
    """Steps recorded as faster (100 ms) than their own verify pass (250 ms): 700 / 300 = 2.33× for 2.33 tokens
    per step at v = 2.5 and 4 draft forwards at c = 24 · 7 / (700 · 12) = 0.02, above the 2.33 / (2.5 + 4 · 0.02)
    = 0.90× a step that costs at least its verify pass and its draft's forwards allows."""
    with pytest.raises(
        MeasurementError,
        match=r"above what 2\.33 tokens per step at v = 2\.50 and 4\.0 draft forwards at c = 0\.02 allow \(0\.90×\)",
    ):
        diagnose(
            run_with(4, [1, 1, 2], beta=0.6, draft_ms=8.0, verify_ms=250.0),
            paired([2, 2, 3], 4, 100.0, 8.0, 250.0, 100.0),
        )


def test_a_verify_pass_cheaper_than_any_runtimes_is_refused_where_passes_read_weights():
    """τ = 4, three steps of 2, 2 and 3 tokens, each verified in 40 ms beside a target alone at 100 ms a token:
    v(5) = Σ verify · Σ tokens / (steps · Σ alone) = 120 · 7 / (3 · 700) = 0.40 one-token passes, under V_FLOOR (0.6).
    At 100 ms a token a pass reads its weights: refused. The same ratio at 1 ms a token (the tests' tiny models, where a
    pass is call overhead and the one-token step also samples) is possible, and read."""
    run = run_with(4, [1, 1, 2], beta=0.6, draft_ms=8.0, verify_ms=40.0)
    with pytest.raises(MeasurementError, match=r"pass over 5 tokens would have cost 0\.40 single-token passes"):
        diagnose(run, paired([2, 2, 3], 4, 50.0, 8.0, 40.0, 100.0))
    quick = diagnose(
        run_with(4, [1, 1, 2], beta=0.6, draft_ms=0.08, verify_ms=0.4), paired([2, 2, 3], 4, 0.5, 0.08, 0.4, 1.0)
    )
    assert quick.verify_cost.value == pytest.approx(0.4)
