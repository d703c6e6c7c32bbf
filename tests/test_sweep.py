"""The τ sweep: counts, the i.i.d. acceptance model on a constant-β toy pair, caching and
resuming, charts, and the command line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import chisquare

from specviz import ConfigError, HFCodec, HFModel, ModelPair, PromptError
from specviz.analysis.measure import MeasurementError, PairedStep
from specviz.analysis.sweep import RunSummary, Sweep, SweepResult, SweepSettings, histogram
from specviz.analysis.sweep_summary import SweepSummary
from specviz.analysis.theory import acceptance_length_pmf, expected_speedup, expected_tokens_per_step
from specviz.cli import parse_taus
from specviz.core.metrics import StepCount
from specviz.viz.charts import legend_rows
from specviz.viz.sweep_charts import (
    sweep_acceptance_chart,
    sweep_length_chart,
    sweep_position_chart,
    sweep_speedup_chart,
)
from tests.helpers import fake_ms, save_tiny, table_pair, tiny_llama, word_tokenizer


@pytest.fixture(scope="module")
def tiny_pair():
    target = HFModel(tiny_llama(0), "tiny-target")
    return ModelPair(target, HFModel(tiny_llama(1, layers=1), "tiny-draft"), HFCodec(word_tokenizer(), "tiny"))


@pytest.fixture(scope="module")
def result(tiny_pair):
    settings = SweepSettings(taus=(1, 2, 3, 4), prompts=("w1 w2 w3", "w7 w8"), seeds=(0, 1), max_new_tokens=16)
    return Sweep(tiny_pair, settings).run()


def test_one_row_per_tau_with_consistent_counts(result):
    rows = result.by_tau()
    assert [s.tau for s in rows] == [1, 2, 3, 4]
    for s in rows:
        assert s.runs == 4  # 2 prompts × 2 seeds
        assert s.emitted == s.accepted + s.steps  # every step adds its accepted run and one target token
        assert s.mean_acceptance_length == pytest.approx(1 + s.accepted / s.steps)
        assert s.mean_acceptance_length_low <= s.mean_acceptance_length <= s.mean_acceptance_length_high
        assert list(s.per_position_acceptance_rate) == sorted(s.per_position_acceptance_rate, reverse=True)
        assert s.expected_tokens_per_step == pytest.approx(expected_tokens_per_step(result.alpha, s.tau))
        assert s.predicted_speedup == pytest.approx(expected_speedup(result.alpha, s.tau, result.c.value))
        paired = result.paired(s.tau)  # every step of its runs timed beside the target alone on the same tokens
        assert len(paired) == s.steps and sum(p.tokens for p in paired) == s.emitted
        assert s.speedup.value == pytest.approx(sum(p.alone_ms for p in paired) / sum(p.spec_ms for p in paired))
        assert s.speedup.low <= s.speedup.value <= s.speedup.high and sum(s.lengths) == s.steps
    assert result.complete
    frame = result.to_frame()
    assert list(frame["τ"]) == [1, 2, 3, 4]
    data = json.loads(result.to_json())
    assert [row["tau"] for row in data["taus"]] == [1, 2, 3, 4] and "α = " in data["verdict"]
    assert SweepSummary.from_dict(json.loads(json.dumps(result.summary().to_dict()))) == result.summary()


def test_pooled_metrics_and_the_measured_timing_by_hand():
    """Two runs at τ = 2, made by hand: three steps keeping 2, 0 and 1 draft tokens (3, 1, 2 tokens out), each
    drafting 2 tokens in 4 ms, verifying 3 in 8 ms, 12 ms in all; the target alone, beside each step, takes 5 ms
    for each of the same tokens (15, 5, 10 ms)."""
    counts = [StepCount(2, n, (0.5, 0.7), (1,) * (n + 1), draft_ms=4.0, verify_ms=8.0) for n in (2, 0, 1)]
    timed = [PairedStep(n + 1, 2, 12.0, 4.0, 8.0, 5.0 * (n + 1)) for n in (2, 0, 1)]
    runs = (
        RunSummary(2, 0, 0, tuple(counts[:2]), "fixed", tuple(timed[:2])),
        RunSummary(2, 0, 1, (counts[2],), "fixed", (timed[2],)),
    )
    result = SweepResult(SweepSettings(taus=(2,), prompts=("x",), seeds=(0, 1)), runs, pending=0)
    assert result.c.value == pytest.approx(2 / 5)  # c: 2 ms per draft forward / 5 ms per target-alone token
    assert result.alpha == pytest.approx(0.6)
    # 3 accepted; the steps with n = 0 and n = 1 each rejected one token: 3 of 5 decided tokens accepted
    assert result.acceptance_probability == pytest.approx(3 / 5)
    (row,) = result.by_tau()
    assert row.expected_tokens_per_step_measured == pytest.approx(1 + 0.6 + 0.36)  # (1 − a³) / (1 − a)
    assert (row.steps, row.drafted, row.accepted, row.emitted, row.lengths) == (3, 6, 3, 6, (1, 1, 1))
    assert row.mean_acceptance_length == pytest.approx(2.0)
    assert (row.mean_acceptance_length_low, row.mean_acceptance_length_high) == (pytest.approx(2.0), pytest.approx(2.0))
    assert row.per_position_acceptance_rate == pytest.approx((2 / 3, 1 / 3))
    assert row.conditional_per_position_acceptance_rate == pytest.approx((2 / 3, 1 / 2))
    # measured: 30 ms alone against 36 ms = 0.833×; resampling the 3 steps, all three the 1-token step (1/27 of the
    # resamples, more than 2.5%) gives 5 / 12 = 0.417, all three the 3-token step 15 / 12 = 1.25
    assert (row.speedup.value, row.speedup.low, row.speedup.high) == pytest.approx((30 / 36, 5 / 12, 15 / 12))
    # docs/algorithm.md "Verify cost": a verify pass of τ + 1 = 3 tokens takes 8 ms against 5 ms for a token of the
    # target alone: v(3) = 1.6 in every resample; S_v = E / (τc + v) = 1.96 / (2 × 0.4 + 1.6) = 0.8167, where
    # Leviathan's S (v = 1) = 1.96 / 1.8 = 1.089
    assert (row.verify_cost.value, row.verify_cost.low, row.verify_cost.high) == pytest.approx((1.6, 1.6, 1.6))
    assert row.predicted_speedup_v.value == pytest.approx(1.96 / 2.4)
    assert row.predicted_speedup == pytest.approx(1.96 / 1.8)
    verdict = result.verdict()
    assert "Measured: best τ = 2, 0.83× (0.42–1.25×) the target alone: within noise of the target alone." in verdict
    assert "best τ = 2, S_v = 0.82×" in verdict and "v = 1.60–1.60 one-token" in verdict
    assert "predicts τ = 1 (1.14×)" in verdict  # S(1) = 1.6 / (0.4 + 1) beats S(2) = 1.089 when v = 1


def test_verdicts_name_a_best_tau_only_where_the_intervals_separate_it():
    """τ = 1 steps: 1 token each; τ = 2 steps: 2 tokens. Each step takes 10 ms, the target alone 6 ms a token."""

    def run(tau: int, tokens: list[int]) -> RunSummary:
        counts = tuple(StepCount(tau, t - 1, (0.9,) * tau, (1,) * t, 2.0, 8.0) for t in tokens)
        return RunSummary(
            tau, 0, 0, counts, "fixed", tuple(PairedStep(t, tau, 10.0, 2.0, 8.0, 6.0 * t) for t in tokens)
        )

    settings = SweepSettings(taus=(1, 2), prompts=("x",))
    # τ = 1 always 1 token (0.6×, every resample alike); τ = 2 always 3 (1.8×): separated, and above 1
    clear = SweepResult(settings, (run(1, [1] * 6), run(2, [3] * 6)), pending=0).summary()
    assert clear.best_tau_measured() == 2 and clear.within_noise_of_best() == [2]
    assert clear.verdict().startswith("Measured: best τ = 2, 1.80× the target alone: faster than the target alone.")
    # τ = 1: 1 or 2 tokens (0.6–1.2×); τ = 2: 1 or 3 (0.6–1.8×): the intervals overlap, so no τ is named best
    noisy = SweepResult(settings, (run(1, [1, 2] * 3), run(2, [1, 3] * 3)), pending=0).summary()
    assert noisy.within_noise_of_best() == [1, 2]
    assert noisy.verdict().startswith("Measured: τ = 1 and 2 are within noise of each other here")
    assert "so no τ is best; each is within noise of the target alone." in noisy.verdict()


@pytest.mark.slow  # many repetitions: in `make test`, not in `make test-fast`
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_constant_beta_histogram_matches_the_iid_model():
    """Context-free p and q in lossless mode: every draft token is accepted with probability
    β = Σ min(p, q) = 0.6, independently, so P(n = k) = β^k (1 − β) for k < τ and β^τ at τ."""
    pair = table_pair([0.5, 0.3, 0.2], [0.2, 0.2, 0.6])
    settings = SweepSettings(taus=(2, 4), prompts=("0",), mode="lossless", max_new_tokens=12_000)
    res = Sweep(pair, settings).run()
    assert res.alpha == pytest.approx(0.6)
    for tau in (2, 4):
        run = next(r for r in res.runs if r.tau == tau)
        full = [n for n, t in zip(run.accepted_lengths, run.step_taus, strict=True) if t == tau]
        observed = histogram(full, tau)
        expected = [pk * len(full) for pk in acceptance_length_pmf(0.6, tau)]
        assert chisquare(observed, expected).pvalue > 1e-3
    # the test has power: the same counts are rejected for a slightly different α
    wrong = [pk * len(full) for pk in acceptance_length_pmf(0.5, 4)]
    assert chisquare(observed, wrong).pvalue < 1e-6


def test_stop_keeps_finished_work_and_the_cache_makes_revisits_free(tiny_pair):
    settings = SweepSettings(taus=(1, 2, 3), prompts=("w1 w2",), max_new_tokens=8)
    cache: dict = {}
    sweep = Sweep(tiny_pair, settings, cache)
    assert len(sweep.units()) == 3  # one run per τ, each timed beside the target alone on its own tokens
    progress = sweep.advance()
    next(progress)  # τ = 1, then the user presses Stop
    partial = sweep.result()
    assert not partial.complete and partial.pending == 2 and [r.tau for r in partial.runs] == [1]
    again = Sweep(tiny_pair, settings, cache)  # the page reruns with the same cache
    assert len(again.pending()) == 2
    finished = again.run()
    assert finished.complete and [s.tau for s in finished.by_tau()] == [1, 2, 3]
    revisit = Sweep(tiny_pair, settings, cache)
    assert revisit.pending() == [] and list(revisit.advance()) == []
    assert revisit.result().runs == finished.runs
    wider = Sweep(tiny_pair, SweepSettings(taus=(1, 2, 3, 4), prompts=("w1 w2",), max_new_tokens=8), cache)
    assert [u.tau for u in wider.pending()] == [4]


def test_bad_sweep_settings_are_typed_errors(tiny_pair):
    with pytest.raises(ConfigError):
        SweepSettings(taus=(), prompts=("a",))
    with pytest.raises(ConfigError):
        SweepSettings(taus=(0, 1), prompts=("a",))
    with pytest.raises(ConfigError):
        SweepSettings(taus=(1,), prompts=("  ",))
    with pytest.raises(PromptError):
        Sweep(tiny_pair, SweepSettings(taus=(1,), prompts=("w1 " * 600,)))
    assert parse_taus("1-8") == tuple(range(1, 9))
    assert parse_taus("1,2,4") == (1, 2, 4) and parse_taus("1-3, 8") == (1, 2, 3, 8)
    with pytest.raises(ConfigError):
        parse_taus("one-eight")


def test_sweep_charts_show_the_summaries(result):
    rows, summary = result.by_tau(), result.summary()
    fig = sweep_acceptance_chart(summary)
    measured = next(t for t in fig.data if t.name == "measured")
    theory = next(t for t in fig.data if t.name.startswith("theory"))
    assert list(measured.y) == [s.mean_acceptance_length for s in rows]
    assert list(theory.y) == [s.expected_tokens_per_step for s in rows]
    fig = sweep_speedup_chart(summary)
    assert list(fig.data[0].y) == [s.speedup.value for s in rows]  # each with its interval as an error bar
    assert list(fig.data[0].error_y.array) == pytest.approx([s.speedup.high - s.speedup.value for s in rows])
    assert list(fig.data[0].error_y.arrayminus) == pytest.approx([s.speedup.value - s.speedup.low for s in rows])
    assert list(fig.data[1].y) == [s.predicted_speedup for s in rows]
    star = next(t for t in fig.data if t.name.startswith(("best τ = ", "τ = ")))
    assert list(star.x) == summary.within_noise_of_best()
    band = next(t for t in fig.data if t.name == "S_v: range of the measured v")
    assert list(band.y) == [s.predicted_speedup_v.high for s in rows] + [s.predicted_speedup_v.low for s in rows][::-1]
    baseline = next(t for t in fig.data if t.name == "target alone (1×)")
    assert set(baseline.y) == {1.0}
    # nothing is written on the plot area (the best τ's label once covered "target alone"): the legend names all
    assert not fig.layout.annotations and all("text" not in (t.mode or "") for t in fig.data)
    # the legend sits below the τ axis's title, with room for every row it needs (a projector's 20 px legend
    # once overlapped the title "τ"): 3·20 + 14 px below the plot, its rows in the bottom margin
    for size, width in ((16, 620), (20, 1200), (20, 500)):
        fig = sweep_speedup_chart(summary, font_size=size, width=width)
        lines = legend_rows([t.to_plotly_json() for t in fig.data], size, width)
        plot = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert fig.layout.legend.y * plot == pytest.approx(-(3 * size + 14))
        assert fig.layout.margin.b >= 3 * size + 14 + lines * (size + 10)
        assert plot >= 420 - 50 - (3 * size + 14) - 2 * (size + 10)  # more rows: a taller chart, not a smaller plot
    fig = sweep_length_chart(summary)
    assert sorted(fig.data[1].y) == sorted(n for r in result.runs if r.tau == 2 for n in r.accepted_lengths)
    fig = sweep_position_chart(summary)
    assert [list(t.y) for t in fig.data[:-1]] == [list(s.per_position_acceptance_rate) for s in rows]
    a = result.acceptance_probability  # the i.i.d. model's a^i beside them, out to the longest τ
    assert list(fig.data[-1].y) == pytest.approx([a, a**2, a**3, a**4]) and fig.data[-1].name.startswith("a^i")


@pytest.mark.slow  # a fresh interpreter: in `make test`, not in `make test-fast`
def test_sweep_command_line_prints_one_json_document(tmp_path):
    from tests.helpers import fake_pass_times

    target, draft = save_tiny(tmp_path / "t", seed=0), save_tiny(tmp_path / "d", seed=1, layers=1)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **fake_pass_times(tmp_path)}  # its times decided, not the machine's
    cmd = [
        sys.executable,
        "-m",
        "specviz",
        "sweep",
        "--taus",
        "1-3",
        "--prompt",
        "w1 w2",
        "--prompt",
        "w3",
        "--max-new-tokens",
        "8",
        "--seeds",
        "1",
        "--json",
        "--target",
        target,
        "--draft",
        draft,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [row["tau"] for row in data["taus"]] == [1, 2, 3]
    assert all(row["emitted"] == row["accepted"] + row["steps"] for row in data["taus"])
    assert all(row["speedup"]["low"] <= row["speedup"]["value"] <= row["speedup"]["high"] for row in data["taus"])
    assert data["complete"]
    bad = subprocess.run([*cmd[:4], "--taus", "x", *cmd[6:]], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "specviz: error: write τ values like 1-8 or 1,2,4; got 'x'"
    ]


def self_drafting_pair() -> ModelPair:
    """The tiny target drafting for itself: greedy, every draft token accepted (τ + 1 tokens a step)."""
    from tests.helpers import tiny_text_pair

    base = tiny_text_pair()
    return ModelPair(base.target, base.target, base.codec)


def test_a_busy_sweep_keeps_what_it_counted_and_costs_it_from_the_kept_calibration():
    """Every step reported as waiting for a core (a FakeTimer): the clocked speedup, v and c of each τ are withheld,
    the counts are not. The tiny target drafting for itself, greedy, on "a b c" (room for 7 tokens): τ = 3 makes two
    steps (passes of 4 tokens, 6 draft tokens, 4 + 3 tokens: 3.5 a pass), τ = 1 four steps (passes of 2, 4 draft
    tokens, 2 + 2 + 2 + 1 tokens: 1.75 a pass). With the pair's calibration kept (T(k) = 10 + 2(k − 1) ms, a draft
    forward 1 ms: v(2) = 1.2, v(4) = 1.6, c = 0.1): τ = 3 costs 2 · 1.6 + 6 · 0.1 = 3.8 one-token passes for 7 tokens,
    7/3.8 = 1.842×; τ = 1, 4 · 1.2 + 4 · 0.1 = 5.2: 7/5.2 = 1.346×. The ceiling at τ = 3: 4/1.6 = 2.5×; with its
    acceptance 3.5/1.6 = 2.1875×; with c too, 3.5/(0.3 + 1.6) = 1.842×."""
    from specviz.analysis.clock import FakeTimer
    from specviz.analysis.pairtimes import measure_pair

    pair = self_drafting_pair()
    settings = SweepSettings(taus=(1, 3), prompts=("a b c",), mode="greedy", max_new_tokens=8, chat=False)
    busy = FakeTimer(fake_ms, disturbed=lambda what, k, i: True)
    ids = pair.codec.encode(" ".join(f"w{i}" for i in range(30)))
    kept = measure_pair(pair, ids, ks=(1, 2, 4), repeats=3, timer=FakeTimer(fake_ms))
    bare = Sweep(pair, settings, timer=busy).run()  # no calibration kept: what was counted, and what one would add
    assert [(r.tau, r.steps, r.emitted, r.speedup) for r in bare.by_tau()] == [(1, 4, 7, None), (3, 2, 7, None)]
    assert all("busy machine" in r.withheld for r in bare.by_tau()) and bare.summary().c is None
    words = bare.verdict()
    assert words.startswith("The clocked numbers of τ = 1 and 3 are withheld (this run was measured on a busy")
    assert "what was counted is shown: τ = 1: mean acceptance length 2.00, τ = 3: mean acceptance length 4.00." in words
    assert "No calibration of this pair is kept on this machine yet: one quiet minute" in words
    assert "Nothing is shown" not in words + bare.to_frame().to_string()
    result = Sweep(pair, settings, timer=busy, timings=kept).run()
    one, three = result.by_tau()
    assert one.costed_speedup == pytest.approx(7 / 5.2) and three.costed_speedup == pytest.approx(7 / 3.8)
    assert (three.ceiling, three.ceiling_alpha, three.ceiling_c) == pytest.approx((2.5, 2.1875, 3.5 / 1.9))
    words = result.verdict()
    assert f"From counted work at the pair's kept costs ({kept.label()}): τ = 1: 1.35×, τ = 3: 1.84×" in words
    assert "At τ = 3 a perfect draft that costs nothing would give 2.50×" in words
    frame = result.to_frame()
    assert list(frame["from kept costs"]) == ["1.35×", "1.84×"] and list(frame["speedup (95% interval)"]) == ["–"] * 2
    again = SweepSummary.from_dict(json.loads(json.dumps(result.summary().to_dict())))
    assert again == result.summary()


@pytest.mark.slow  # two fresh interpreters: in `make test`, not in `make test-fast`
def test_a_fresh_process_on_a_busy_machine_sweeps_from_the_calibration_an_earlier_one_kept(tmp_path):
    """Issue 63's Done-when: one command line calibrates the pair quietly and keeps it (SPECVIZ_TIMINGS_DIR); a later
    one, every piece of its work waiting for a core, answers from the counted work at that calibration, labelled, and
    discards nothing it counted."""
    from tests.helpers import FAKE_PASS_TIMES

    target, draft = save_tiny(tmp_path / "t", seed=0), save_tiny(tmp_path / "d", seed=1, layers=1)
    quiet, busy = tmp_path / "quiet", tmp_path / "busy"
    for site, line in ((quiet, ""), (busy, "clock.set_default(clock.FakeTimer(fake_ms, lambda *_: True))\n")):
        site.mkdir()
        (site / "sitecustomize.py").write_text(FAKE_PASS_TIMES + line)
    kept, here = tmp_path / "kept", os.pathsep + str(Path(__file__).resolve().parents[1])  # this checkout's specviz
    base = {**os.environ, "HF_HUB_OFFLINE": "1", "SPECVIZ_TIMINGS_DIR": str(kept)}
    cmd = [sys.executable, "-m", "specviz", "sweep", "--taus", "1-2", "--prompt", "w1 w2", "--max-new-tokens", "8"]
    cmd += ["--target", target, "--draft", draft]
    run = lambda site, *more: subprocess.run(  # noqa: E731
        [*cmd, *more], capture_output=True, text=True, env={**base, "PYTHONPATH": str(site) + here}, timeout=300
    )
    first = run(quiet)
    assert first.returncode == 0, first.stderr
    assert "speeds from counted work at the calibration kept just now on torch" in first.stderr
    assert (kept / "pair-timings.json").exists() and "from kept costs" in first.stdout
    second = run(busy, "--json")
    assert second.returncode == 0, second.stderr
    assert "timing the pair's passes" not in second.stderr  # reused, not measured again
    data = json.loads(second.stdout)
    assert data["calibration"].startswith("the calibration kept ") and " on torch (" in data["calibration"]
    assert [row["tau"] for row in data["taus"]] == [1, 2]
    for row in data["taus"]:  # counted: kept; clocked: withheld, with why; costed: shown
        assert row["steps"] > 0 and row["emitted"] == row["accepted"] + row["steps"] and row["lengths"]
        assert row["speedup"] is None and "busy machine" in row["withheld"] and row["costed_speedup"] > 0
    assert "From counted work at the pair's kept costs (the calibration kept " in data["verdict"]
    without = subprocess.run(  # no calibration anywhere, the machine busy: what was counted, what a minute would add
        [*cmd],
        capture_output=True,
        text=True,
        env={**base, "PYTHONPATH": str(busy) + here, "SPECVIZ_TIMINGS_DIR": str(tmp_path / "none")},
        timeout=300,
    )
    assert without.returncode == 0, without.stderr
    assert "specviz: no calibration kept: " in without.stderr and "one quiet minute of calibration" in without.stdout


def test_tau_policies_run_beside_fixed_tau_and_are_compared_with_the_best():
    """Draft = target (every token accepted, greedy): the heuristic policy grows τ from 2 by 2 per
    step (2, 4, 6, …) and the confidence policy keeps τ = 2 (the draft is sure); fixed rows ignore them."""
    cycle = [[0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.9, 0.05, 0.05]]
    settings = SweepSettings(
        taus=(1, 2),
        prompts=("0",),
        mode="greedy",
        max_new_tokens=30,
        policies=("heuristic", "confidence"),
        policy_tau=2,
    )
    pair = table_pair(cycle, cycle)
    pair.codec.encode = lambda text: [int(w) for w in text.split()]  # the prompt "0" is token 0
    result = Sweep(pair, settings).run()
    assert [s.tau for s in result.by_tau()] == [1, 2] and all(s.runs == 1 for s in result.by_tau())
    heuristic, confidence = result.by_policy()
    run = next(r for r in result.runs if r.policy == "heuristic")
    assert run.step_taus[:4] == (2, 4, 6, 8)  # each step fully accepted: +2
    assert heuristic.mean_acceptance_length > confidence.mean_acceptance_length == pytest.approx(3.0)
    frame = result.summary().policy_frame()
    assert list(frame["policy"]) == ["heuristic", "confidence"]
    assert json.loads(result.to_json())["policies"][0]["policy"] == "heuristic"


def test_verify_timing_scores_the_same_tokens_both_ways(tiny_pair):
    from specviz.analysis.passes import verify_timing

    timing = verify_timing(tiny_pair, "w1 w2 w3 w4 w5 w6 w7", tau=3, repeats=3)
    assert timing.tokens == 4 and timing.parallel_ms.value > 0 and timing.sequential_ms.value > 0
    assert timing.ratio.n == 3 and timing.ratio.low <= timing.ratio.value <= timing.ratio.high
    with pytest.raises(ConfigError, match="at least 6 tokens"):
        verify_timing(tiny_pair, "w1 w2", tau=4)


def test_the_sweep_across_drafts_runs_each_drafts_sweep_once_and_reads_each_ones_best_tau():
    """Two drafts of one tiny target: the target itself (greedy: every draft token accepted, τ + 1 tokens a step) and a
    random one-layer model. Each draft's own sweep, units counted across both and run in turn (the first draft first,
    then the second first), cached (a second call runs nothing);
    the self-draft's tokens per step are exactly τ + 1, and the chart has one line per draft beside 1×.

    Pass times injected (a FakeTimer: nothing here reads the clock): a target pass over k tokens 10 + 2(k − 1) ms, a
    draft forward 1 ms. The tiny target's context leaves room for 7 new tokens. The self-draft at τ = 3: two steps of
    3 · 1 + 16 = 19 ms, emitting 4 and then the 3 that fit, against the target alone's 10 ms a token: 70 / 38 =
    1.842×; at τ = 1, four steps of 1 + 12 = 13 ms emitting 2, 2, 2, 1: 70 / 52 = 1.346×. c = one draft forward
    over one target-alone token = 1 / 10."""
    from specviz.analysis.clock import FakeTimer
    from specviz.analysis.draft_sweep import summarize, sweep_drafts
    from specviz.viz.sweep_charts import draft_sweep_chart
    from tests.helpers import tiny_text_pair

    base = tiny_text_pair()
    pairs = {"self": ModelPair(base.target, base.target, base.codec), "random": base}
    settings = SweepSettings(taus=(1, 3), prompts=("a b c",), mode="greedy", max_new_tokens=8)
    caches: dict = {}
    timer = FakeTimer(fake_ms)
    progress = list(sweep_drafts(pairs, settings, caches, timer=timer))
    assert [(done, total) for done, total, _ in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [label for *_, label in progress] == ["self", "random", "random", "self"]  # interleaved, turns rotating
    assert list(sweep_drafts(pairs, settings, caches)) == []  # finished units are kept
    result = summarize(pairs, settings, caches)
    rows = {(r.draft, r.tau): r for r in result.rows()}
    assert sorted(rows) == [("random", 1), ("random", 3), ("self", 1), ("self", 3)]
    # the self-draft keeps every token: τ + 1 a step, except a last step cut by max_new_tokens (8 tokens: 4 steps
    # of 2 at τ = 1; at τ = 3 two steps of 4)
    assert rows[("self", 1)].tokens_per_step == 2.0 and rows[("self", 3)].tokens_per_step == 4.0
    assert rows[("self", 1)].alpha == pytest.approx(1.0)
    assert rows[("self", 3)].speedup.value == pytest.approx(70 / 38)
    assert rows[("self", 1)].speedup.value == pytest.approx(70 / 52)
    assert rows[("self", 3)].c.value == pytest.approx(0.1)
    assert set(result.best()) == {"self", "random"}
    assert result.best()["self"].tau == 3
    assert result.verdict().startswith("self pays best here.")
    figure = draft_sweep_chart(result)
    names = [t["name"] for t in figure.to_dict()["data"]]
    assert names == ["self", "random", "target alone (1×)"]


def test_a_tau_whose_timings_no_runtime_could_give_is_taken_out_and_timed_again(tiny_pair):
    """τ = 2's steps re-timed by hand as a busy minute would: each step made 2 tokens in a verify pass of 6 ms while
    the target alone took 15 ms a token (30 ms the step's two): v(3) = 6 · 2 / 30 = 0.4, under V_FLOOR (0.6), at a
    one-token time of 15 ms (weight-bound, over WEIGHT_BOUND_MS). Its runs leave the cache; τ = 1 and 3, timed on
    injected pass times (10 + 2(k − 1) ms a target pass, 1 ms a draft forward: nothing read from the clock), stay."""
    import dataclasses

    from specviz.analysis.clock import FakeTimer

    settings = SweepSettings(taus=(1, 2, 3), prompts=("w1 w2",), max_new_tokens=8)
    cache: dict = {}
    timer = FakeTimer(fake_ms)
    sweep = Sweep(tiny_pair, settings, cache, timer=timer)
    sweep.run()
    (unit,) = [u for u in sweep.units() if u.tau == 2]
    run = cache[sweep.key(unit)]
    busy = tuple(PairedStep(2, 2, 40.0, 1.0, 6.0, 30.0) for _ in run.paired)
    cache[sweep.key(unit)] = dataclasses.replace(run, paired=busy)
    with pytest.raises(MeasurementError, match=r"pass over 3 tokens would have cost 0\.40 single-token passes"):
        sweep.result()._summary(2)
    row = sweep.result().summary().row(2)  # shown: what was counted; withheld: the clocked numbers, with why
    assert row.speedup is None and row.verify_cost is None and "0.40 single-token passes" in row.withheld
    assert row.steps == len(run.steps) and row.emitted == sum(len(s.emitted) for s in run.steps)
    ((tau, why),) = sweep.drop_impossible()
    assert tau == 2 and "0.40 single-token passes" in why
    assert [u.tau for u in sweep.pending()] == [2] and [s.tau for s in sweep.result().by_tau()] == [1, 3]
    assert sweep.drop_impossible() == []  # the rest is possible: nothing more to take out


def test_a_sweep_under_a_lossy_rule_reports_its_gain_beside_its_exact_distance_per_tau(tiny_pair):
    """SGLang's thresholds at 0.5 swept over τ = 1, 2: each row holds the run's own steps' exact costs, pooled (TV over
    the positions each step decided; tokens per pass of the rule and of one-hot on the same drafts), and the table
    shows them; a lossless sweep has none of these columns."""
    half = (("threshold_single", 0.5), ("threshold_acc", 0.5))
    settings = SweepSettings(
        taus=(1, 2), prompts=("w1 w2 w3",), max_new_tokens=8, mode="lossless", verification="sglang", knobs=half
    )
    sweep = Sweep(tiny_pair, settings)
    result = sweep.run()
    for row in result.by_tau():
        steps = [s for u in sweep.units() if u.tau == row.tau for s in sweep.cache[sweep.key(u)].steps]
        decided = [d for s in steps for d in s.cost.tv[: s.n_accepted + 1]]
        assert row.tv_mean == pytest.approx(sum(decided) / len(decided)) and row.tv_max == pytest.approx(max(decided))
        assert row.lossy_tokens_per_pass >= row.baseline_tokens_per_pass
    frame = result.to_frame()
    assert {"TV from target, mean", "tokens per pass, lossless on the same drafts"} <= set(frame.columns)
    plain = Sweep(tiny_pair, SweepSettings(taus=(1,), prompts=("w1 w2",), max_new_tokens=4, mode="lossless")).run()
    assert "TV from target, mean" not in plain.to_frame().columns
