"""Traces: field names, lossless JSON and DataFrame round trips, metrics computed by hand."""

import json

import pandas as pd
import pytest

from specviz import Decoder, RunTrace, SpecConfig, StepTrace
from specviz.core.metrics import Metrics, compute_metrics
from tests.helpers import runs_by_mode, table_pair

REQUIRED_STEP_FIELDS = {
    "draft_tokens",
    "draft_text",
    "q",
    "p",
    "ratio",
    "r",
    "accepted",
    "n_accepted",
    "next_token",
    "next_rule",
    "beta",
    "q_top",
    "p_top",
    "next_top",
    "residual_top",
    "draft_ms",
    "verify_ms",
}


@pytest.fixture(scope="module")
def runs():
    return runs_by_mode([3, 9, 27, 81], tau=3, max_new_tokens=20, seed=5)


def test_step_trace_has_the_documented_fields(runs):
    step = runs["lossless"].steps[0]
    assert set(step.to_dict()) >= REQUIRED_STEP_FIELDS
    assert len(step.q_top) == len(step.p_top) == step.tau
    assert all(len(top) == 10 for top in step.q_top)
    assert len(step.next_top) == 10
    run = runs["lossless"]
    assert {"steps", "text", "new_tokens", "metrics"} <= set(run.to_dict())
    names = set(run.metrics.to_dict())
    assert {
        "draft_acceptance_rate",
        "mean_acceptance_length",
        "per_position_acceptance_rate",
        "alpha",
        "c",
    } <= names


@pytest.mark.parametrize("mode", ["textbook", "lossless", "greedy"])
def test_json_round_trip_is_lossless(runs, mode):
    run = runs[mode]
    text = run.to_json()
    json.loads(text)  # strict JSON: no NaN
    assert RunTrace.from_json(text) == run
    for step in run.steps:
        assert StepTrace.from_json(step.to_json()) == step


@pytest.mark.parametrize("mode", ["textbook", "lossless", "greedy"])
def test_dataframe_round_trip_is_lossless(runs, mode):
    run = runs[mode]
    frame = run.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(run.steps)
    assert RunTrace.from_frame(frame) == run
    for step in run.steps:
        table = step.to_frame()
        assert list(table["position"]) == list(range(1, step.tau + 1))
        assert list(table["q"]) == list(step.q) and list(table["decision"]) == list(step.decision)
        assert StepTrace.from_frame(table) == step


def test_positions_frame_has_one_row_per_drafted_token(runs):
    run = runs["textbook"]
    frame = run.positions_frame()
    assert len(frame) == run.metrics.drafted_tokens
    assert frame["accepted"].sum() == run.metrics.accepted_tokens


def test_zero_draft_step_round_trips():
    from specviz import ModelPair, PromptLookupDrafter, TableModel
    from tests.helpers import IdsCodec

    pair = ModelPair(TableModel([0.5, 0.5]), PromptLookupDrafter(2), IdsCodec())
    step = Decoder(pair, [0], SpecConfig(tau=3, max_new_tokens=2)).step()
    assert step.tau == 0
    assert StepTrace.from_frame(step.to_frame()) == step
    assert StepTrace.from_json(step.to_json()) == step


def test_metrics_by_hand():
    """Three hand-made steps with τ = 3: n = 0, 3, 1."""
    pair = table_pair([0.5, 0.5], [0.5, 0.5])
    template = Decoder(pair, [0], SpecConfig(tau=3)).step()

    def fake(n, tau=3, beta=(0.5, 0.5, 0.5), draft_ms=3.0, verify_ms=2.0):
        return StepTrace.from_dict(
            template.to_dict()
            | {
                "tau": tau,
                "n_accepted": n,
                "beta": beta,
                "emitted": (1,) * (n + 1),
                "draft_ms": draft_ms,
                "verify_ms": verify_ms,
            }
        )

    steps = [fake(0, beta=(0.2, 0.4, 0.6)), fake(3, beta=(1.0, 1.0, 1.0)), fake(1)]
    m = compute_metrics(steps, tau=3)
    assert m.steps == 3 and m.drafted_tokens == 9 and m.accepted_tokens == 4
    assert m.emitted_tokens == 7
    assert m.draft_acceptance_rate == pytest.approx(4 / 9)
    assert m.mean_acceptance_length == pytest.approx(1 + 4 / 3)
    assert m.per_position_acceptance_rate == pytest.approx((2 / 3, 1 / 3, 1 / 3))
    assert m.alpha == pytest.approx((1.2 + 3.0 + 1.5) / 9)
    # c = (9 ms / 9 draft forwards) / (6 ms / 3 target forwards) = 1 / 2
    assert m.c == pytest.approx(0.5)
    assert m.tokens_per_second == pytest.approx(7 / 0.015)
    # engines' conditional rate: position 1 reached by all 3 steps, accepted by 2; position 2 reached
    # by the 2 steps that accepted token 1, accepted by 1; position 3 reached by 1, accepted by 1
    assert m.conditional_per_position_acceptance_rate == pytest.approx((2 / 3, 1 / 2, 1 / 1))
    assert m.mean_accepted_draft_tokens == pytest.approx(4 / 3)  # mean acceptance length − 1


def test_conditional_rate_skips_positions_a_short_step_never_drafted():
    """n = 2 of τ = 2 (the last step of a run, shortened), n = 1 and n = 3 of τ = 3, with τ = 3."""
    pair = table_pair([0.5, 0.5], [0.5, 0.5])
    template = Decoder(pair, [0], SpecConfig(tau=3)).step().to_dict()
    steps = [
        StepTrace.from_dict(template | {"tau": tau, "n_accepted": n, "beta": (0.5,) * tau, "emitted": (1,) * (n + 1)})
        for tau, n in ((3, 1), (3, 3), (2, 2))
    ]
    m = compute_metrics(steps, tau=3)
    # position 1: reached 3, accepted 3; position 2: reached 3 (n ≥ 1 and τ ≥ 2), accepted 2 (n = 3,
    # n = 2); position 3: reached only by the τ = 3 step with n = 3 (the n = 2 step drafted 2), accepted 1
    assert m.conditional_per_position_acceptance_rate == pytest.approx((1.0, 2 / 3, 1.0))
    assert m.per_position_acceptance_rate == pytest.approx((1.0, 2 / 3, 1 / 3))  # unconditional: over 3 steps


def test_metrics_of_an_empty_run_are_defined():
    m = compute_metrics([], tau=4)
    assert m.steps == 0 and m.alpha is None and m.per_position_acceptance_rate == (0.0,) * 4
    assert m.conditional_per_position_acceptance_rate == (None,) * 4 and m.mean_accepted_draft_tokens is None


def test_metrics_of_a_trace_saved_before_the_engine_rates_still_load():
    saved = compute_metrics([], tau=2).to_dict()
    del saved["conditional_per_position_acceptance_rate"], saved["mean_accepted_draft_tokens"]
    assert Metrics.from_dict(saved).per_position_acceptance_rate == (0.0, 0.0)


def test_replay_walks_a_saved_trace_without_models(runs):
    from specviz.classroom.replay import Replay
    from specviz.core.metrics import compute_metrics

    saved = RunTrace.from_json(runs["lossless"].to_json())
    replay = Replay(saved)
    assert replay.steps == () and replay.undo() is None and not replay.done
    for k, step in enumerate(saved.steps, start=1):
        assert replay.step() == step
        partial = replay.trace()
        assert partial.steps == saved.steps[:k]
        assert partial.metrics == compute_metrics(saved.steps[:k], saved.config.tau)
        assert partial.new_tokens == tuple(t for s in saved.steps[:k] for t in s.emitted)
    assert replay.done and replay.trace() == saved and replay.stop_reason == saved.stop_reason
    assert replay.undo() == saved.steps[-1] and not replay.done
    assert replay.run() == saved
