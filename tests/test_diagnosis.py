"""Reading a trace: the time split and the bottleneck sentence, on runs whose numbers are set by
hand (α, c and the accepted lengths below are worked out in the comments)."""

from __future__ import annotations

import dataclasses

import pytest

from specviz import Decoder, SpecConfig
from specviz.analysis.diagnosis import Diagnosis, diagnose
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


def test_a_draft_no_better_than_it_is_cheap_is_the_bottleneck():
    # τ = 2, 3 steps: c = (18 ms / 6 drafts) / (12 ms / 3 passes) = 3 / 4 = 0.75 ≥ α = 0.2
    d = diagnose(run_with(2, [0, 0, 1], beta=0.2, draft_ms=6.0, verify_ms=4.0))
    assert d.c == pytest.approx(0.75) and d.alpha == pytest.approx(0.2)
    assert d.bottleneck.startswith("The draft: it is right (α = 0.20) no more often than it is cheap (c = 0.75)")
    assert d.shares() == pytest.approx({"draft": 18 / 35, "verify": 12 / 35, "prefill": 5 / 35})


def test_a_too_small_tau_is_named_with_the_better_one():
    # τ = 4, α = 0.8, c = (4 ms / 4) / (10 ms / 1) = 0.1; S(4) = 3.362 / 1.4 = 2.40, S(6) = 3.951 / 1.6 = 2.47 (best)
    d = diagnose(run_with(4, [4, 3, 4], beta=0.8, draft_ms=4.0, verify_ms=10.0))
    assert d.mean_acceptance_length == pytest.approx(1 + 11 / 3) and d.best_tau == 6
    assert d.bottleneck == "τ: with α = 0.80 and c = 0.10, τ = 6 predicts S = 2.47× against 2.40× at τ = 4."


def test_at_the_best_tau_verification_is_where_the_time_should_go():
    # τ = 6, the same α and c (draft 6 ms per step for 6 drafts): the best τ already; drafting 6 / 16 = 38%
    d = diagnose(run_with(6, [6, 5, 6], beta=0.8, draft_ms=6.0, verify_ms=10.0))
    assert d.bottleneck == (
        "Verification: the target's passes take 62% of the decoding time, as they should; τ = 6 is the best τ "
        "for α = 0.80 and c = 0.10."
    )


def test_few_accepted_tokens_and_slow_drafting_are_named():
    few = diagnose(run_with(4, [0, 1, 0, 0], beta=0.5, draft_ms=4.0, verify_ms=10.0))  # mean length 1.25
    assert few.bottleneck.startswith("Acceptance: the target keeps few draft tokens (mean acceptance length 1.25)")
    slow = diagnose(run_with(4, [4, 3, 4], beta=0.9, draft_ms=8.0, verify_ms=10.0))  # c = 0.2, drafting 44%
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
