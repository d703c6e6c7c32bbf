"""An engine's own numbers read back (specviz.analysis.engine_import) and turned into settings
(specviz.analysis.engine_advice): the app's own exports read back exactly, every format against fixtures taken from
the engines (tests/fixtures/engine_logs/README.md says where each comes from), the advice checked by hand and
against the published EAGLE-3 / SGLang results, and every kind of bad input refused whole, naming the line."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import pytest

from specviz import Decoder, SpecConfig
from specviz.analysis import engine_advice as ea
from specviz.analysis import engine_import as ei
from specviz.analysis import outlook as ol
from specviz.analysis.costmodel import HARDWARE, MODELS, Hardware, Model, pass_time, predicted_speedup
from specviz.analysis.engine_logs import (
    EngineCounts,
    llamacpp_line,
    llamacpp_timing_line,
    sglang_line,
    vllm_line,
    vllm_lines,
    vllm_prometheus,
)
from specviz.core.metrics import compute_metrics
from specviz.errors import ConfigError, EngineLogError
from specviz.viz.plain import plain
from tests.helpers import table_pair, tiny_text_pair

FIXTURES = Path(__file__).parent / "fixtures" / "engine_logs"
H100 = HARDWARE["NVIDIA H100 SXM"]
LLAMA8, EAGLE3 = MODELS["Llama-3.1-8B"], MODELS["EAGLE-3 head for Llama-3.1-8B"]
# 2 GB of weights, no cache, no attention: 1 TB/s reads them in 2 ms; 100 TFLOP/s computes 2e9 FLOPs a token in
# 0.02 ms, so a pass over n tokens in all costs max(2, 0.02 n) ms: v = 1 up to 100 tokens (as tests/test_outlook.py)
TOY = Model("toy", 1e9, 2, 1, 0, 0)
DEVICE = Hardware("toy device", 1e12, 1e14, 0.0, "by hand")


def text_of(name: str) -> str:
    """A fixture as the engine printed it: its provenance header (lines starting "#> ") left out."""
    return "".join(line for line in (FIXTURES / name).read_text().splitlines(True) if not line.startswith("#> "))


def fixture(name: str) -> ei.EngineImport:
    return ei.parse(text_of(name))


# --- the app's own exports, read back ----------------------------------------------------------------------------


def run_with(taus: list[int], accepted: list[int], tau: int = 3):
    """A run whose steps draft `taus` and accept `accepted` (as tests/test_engine_logs.py builds them)."""
    real = Decoder(table_pair([0.5, 0.5], [0.5, 0.5]), [0], SpecConfig(tau=tau, max_new_tokens=200)).run()
    template = real.steps[0]
    steps = tuple(
        dataclasses.replace(template, index=i, tau=k, n_accepted=n, emitted=(0,) * (n + 1), draft_ms=10.0)
        for i, (k, n) in enumerate(zip(taus, accepted, strict=True))
    )
    return dataclasses.replace(real, steps=steps, metrics=compute_metrics(steps, tau))


@pytest.fixture(scope="module")
def live_run():
    """A lossless run of a table pair at τ = 4 whose accepted lengths vary from step to step."""
    pair = table_pair([0.6, 0.3, 0.1], [0.3, 0.5, 0.2])
    return Decoder(pair, [0], SpecConfig(tau=4, mode="lossless", seed=3, max_new_tokens=300)).run()


def test_the_worked_example_reads_back_from_every_export():
    """docs/algorithm.md's example: τ = 3, four steps accepting 3, 1, 0, 2: 6 of 12 accepted, per-position 3, 2, 1
    of 4 steps, mean acceptance length 2.50; SGLang's accept rate 0.62 = 2.50 / 4, so 4 tokens verified a step."""
    run = run_with([3, 3, 3, 3], [3, 1, 0, 2])
    for text in (vllm_lines(run)[0], vllm_prometheus(run), llamacpp_timing_line(run)):
        back = ei.parse(text)
        assert (back.steps, back.drafted, back.accepted, back.counts) == (4, 12, 6, (3, 2, 1))
        assert back.rates == run.metrics.per_position_acceptance_rate == (0.75, 0.5, 0.25)
        assert back.mean_length == run.metrics.mean_acceptance_length == 2.5 and back.exact
    sglang = ei.parse(sglang_line(run))
    assert sglang.mean_length == 2.5 and sglang.nodes == 4 and sglang.positions == 3
    assert ei.parse(llamacpp_line(run)).acceptance_rate == 0.5


def test_a_real_run_reads_back_exactly_from_vllm_prometheus_and_llama_cpp(live_run):
    counts = EngineCounts.of(live_run.steps, 4)
    m = live_run.metrics
    assert counts.num_drafts == m.steps > 50 and len(set(s.n_accepted for s in live_run.steps)) >= 4
    exports = {"vllm lines of 7 steps": "\n".join(vllm_lines(live_run, every=7))}
    exports |= {"prometheus": vllm_prometheus(live_run), "llama.cpp": llamacpp_timing_line(live_run)}
    for name, text in exports.items():
        back = ei.parse(text)
        assert back.steps == m.steps and back.accepted == m.accepted_tokens, name
        assert back.counts == counts.accepted_per_pos, name  # each position's count, exactly
        assert back.rates == m.per_position_acceptance_rate, name  # the same divisions, the same floats
        assert back.mean_length == pytest.approx(m.mean_acceptance_length, rel=1e-15), name
        assert back.drafted == m.drafted_tokens and back.positions == 4 and back.exact, name
    assert len(ei.parse(exports["vllm lines of 7 steps"]).records) == math.ceil(m.steps / 7)
    assert ei.parse(sglang_line(live_run)).mean_length == float(f"{m.mean_acceptance_length:.2f}")
    assert ei.parse(llamacpp_line(live_run)).acceptance_rate == m.accepted_tokens / m.drafted_tokens


# --- each format, against the engines' own examples ------------------------------------------------------------


def test_vllm_log_lines():
    """141 / Σ(0.897, 0.676, 0.500) = 68.0 drafts: counts 61, 46, 34 (sum 141); 206 / 1.015 = 203: 122, 58, 26; vLLM's
    test: 2 drafts, 1, 1, 1. Pooled: 273 drafts, 350 of 819 accepted, (184, 105, 61), 1 + 350 / 273 = 2.282."""
    imp = fixture("vllm_log.txt")
    assert [(r.steps, r.accepted, r.counts) for r in imp.records] == [
        (68, 141, (61, 46, 34)),
        (203, 206, (122, 58, 26)),
        (2, 3, (1, 1, 1)),
    ]
    assert (imp.steps, imp.drafted, imp.accepted, imp.counts) == (273, 819, 350, (184, 105, 61))
    assert imp.mean_length == pytest.approx(1 + 350 / 273) and imp.positions == 3 and imp.ignored == 1
    assert imp.engine == "vLLM" and "SpecDecodingLogging.log" in imp.format.source


def test_vllm_prometheus_counters_summed_over_engines():
    one = fixture("vllm_metrics.txt")  # vLLM's own test: 1 draft of 3, 2 accepted, positions 1, 1, 0
    assert (one.steps, one.drafted, one.accepted, one.counts, one.positions) == (1, 3, 2, (1, 1, 0), 3)
    dp = fixture("vllm_metrics_dp2.txt")  # engines 0 and 1: 100 + 50 drafts, 180 + 70 accepted
    assert (dp.steps, dp.drafted, dp.accepted, dp.counts) == (150, 450, 250, (115, 82, 53))
    assert dp.rates == (115 / 150, 82 / 150, 53 / 150) and dp.mean_length == pytest.approx(1 + 250 / 150)


def test_vllm_per_request_statistics_in_both_spellings():
    """The docs' example: histogram {0: 39, 1: 1, 3: 3}: 4 steps accepted ≥ 1, 3 ≥ 2, 3 ≥ 3; 10 of 129 accepted."""
    doc = fixture("vllm_request.json")
    assert (doc.steps, doc.accepted, doc.drafted, doc.counts, doc.positions) == (43, 10, 129, (4, 3, 3), 3)
    both = fixture("vllm_request_metrics.jsonl")  # the first line the same numbers as a list; the second 1, 2, 3, 4
    assert [r.counts for r in both.records] == [(4, 3, 3), (9, 7, 4)]
    assert (both.steps, both.accepted, both.counts) == (53, 30, (13, 10, 7))


def test_sglang_decode_lines_give_a_mean_length_and_the_nodes():
    """accept len 3.12, 3.20 at batch 1 and 2.96 at batch 8: weights 40, 40, 320 steps (40 batches a line):
    (124.8 + 128 + 947.2) / 400 = 3.00. 3.12 / 0.78 = 4 tokens verified: a chain of 3."""
    imp = fixture("sglang_log.txt")
    assert imp.mean_length == pytest.approx(3.0) and imp.weight == 400 and imp.steps is None
    assert (imp.nodes, imp.positions, imp.counts, imp.ignored) == (4, 3, None, 2)
    assert imp.guessed and "ran at τ = 3 if a chain" in " ".join(imp.summary())  # a tree of 4 nodes is shallower
    gauge = fixture("sglang_metrics.txt")
    assert (gauge.mean_length, gauge.nodes, gauge.positions, gauge.weight) == (3.12, 4, 3, None)
    tree = ea.from_import(imp, positions=2, tree=True)  # a tree 2 deep: 1 + α + α² = 3, α = 1
    assert tree.alpha == pytest.approx(1.0) and "a tree's tokens per step fitted as a chain 2 deep" in tree.assumption


def test_sglang_meta_info_with_its_histogram():
    """Histogram 4, 4, 8, 16 over 32 steps: 28 accept ≥ 1, 24 ≥ 2, 16 ≥ 3; 4 + 16 + 48 = 68 accepted of 96 = 32 × 3;
    the exact mean 1 + 68 / 32 = 3.125, where the engine's spec_accept_length 101 / 32 counts the prefill token."""
    imp = fixture("sglang_request.json")
    assert (imp.steps, imp.accepted, imp.drafted, imp.counts, imp.positions) == (32, 68, 96, (28, 24, 16), 3)
    assert imp.mean_length == 3.125


def test_llama_cpp_server_statistics_and_example():
    """PR 24536: 167 of 259 over 87 steps (167 / Σ(0.805, 0.632, 0.483) = 87.0): counts 70, 55, 42. Its statistics
    line gives the 87 steps itself (#gen drafts): that source comes first, the per-request line second."""
    reading = ei.read(text_of("llamacpp_server.txt"))
    stats, server = reading.sources
    assert [r.key for r in stats.records] == ["llamacpp-stats"] and stats.cumulative and stats.grade == 0
    assert (stats.steps, stats.accepted, stats.drafted, stats.counts) == (87, 167, 259, (70, 55, 42))
    assert (server.steps, server.accepted, server.drafted, server.counts) == (87, 167, 259, (70, 55, 42))
    assert server.grade == 1 and "2 sources" in reading.notes[0]
    mtp = ei.read(text_of("llamacpp_server_mtp.txt"))  # statistics: 203 steps; 0.847, 0.670 × 203 = 172, 136
    assert (mtp.best.steps, mtp.best.accepted, mtp.best.counts, mtp.best.positions) == (203, 308, (172, 136), 2)
    fitted = mtp.sources[1]  # the interim 'mean len': 308 / 1.52 = 202.6: 203 steps, fitted, no rates
    assert (fitted.steps, fitted.accepted, fitted.counts, fitted.exact) == (203, 308, None, False)
    old = fixture("llamacpp_server_old.txt")  # only a rate: 1376 / 2433
    assert (old.steps, old.acceptance_rate, old.mean_length) == (None, 1376 / 2433, None)
    stats = fixture("llamacpp_stats.txt")  # running totals: the last line (410 steps) counts
    assert (stats.steps, stats.accepted, stats.counts, stats.ignored) == (410, 617, (349, 268), 2)
    example = fixture("llamacpp_speculative.txt")  # 129 emitted − 47 accepted = 82 steps; 129 / 82 = 1.573
    assert (example.steps, example.drafted, example.accepted, example.positions) == (82, 132, 47, 8)
    assert example.mean_length == pytest.approx(129 / 82)
    timings = fixture("llamacpp_timings.json")
    assert (timings.drafted, timings.accepted, timings.steps) == (259, 167, None)


# --- the advice, by hand ------------------------------------------------------------------------------------------


def flat(alpha_counts: int = 8) -> ei.EngineImport:
    """vLLM's counters for α = 0.8 exactly at every position: N = 5^8 drafts, position i accepted by 4^i 5^(8−i)."""
    n = 5**8
    counts = [4**i * 5 ** (8 - i) for i in range(1, alpha_counts + 1)]
    lines = [
        f"vllm:spec_decode_num_drafts_total {n}",
        f"vllm:spec_decode_num_draft_tokens_total {8 * n}",
        f"vllm:spec_decode_num_accepted_tokens_total {sum(counts)}",
        *(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {c}' for i, c in enumerate(counts)),
    ]
    return ei.parse("\n".join(lines))


def test_flat_alpha_of_point_eight_with_free_verification_by_the_closed_form():
    """α = 0.8 at every position, v = 1 (the toy device at batch 1: every pass 2 ms), c = 0.1 measured:
    S(τ) = (1 − 0.8^(τ+1)) / (0.2 (1 + 0.1 τ)): S(5) = 3.68928 / 1.5 = 2.45952, S(6) = 3.951424 / 1.6 = 2.46964,
    S(7) = 4.1611392 / 1.7 = 2.44773: τ = 6. Its interval: min(n, 6) over N = 390,625 steps has mean Σ 0.8^i and
    second moment Σ (2i − 1) 0.8^i. llama.cpp's --draft-p-min: S(5) · δ / a5 = 2.45952 × 0.1 / 0.32768 = 0.7506."""
    accept = ea.from_import(flat())
    assert accept.rates[:8] == pytest.approx([0.8**i for i in range(1, 9)]) and accept.measured_upto == 8
    advice = ea.advise(accept, DEVICE, TOY, TOY, context=1, c=0.1)
    one = advice.at(1)
    assert one.tau == 6 and one.speedup == pytest.approx(3.951424 / 1.6) and one.bound == "memory-bound"
    mean = sum(0.8**i for i in range(1, 7))
    second = sum((2 * i - 1) * 0.8**i for i in range(1, 7))
    half = 1.96 * math.sqrt((second - mean**2) / 5**8)
    assert one.interval == pytest.approx(((1 + mean - half) / 1.6, (1 + mean + half) / 1.6))
    same = ol.outlook(TOY, TOY, DEVICE, accept.acceptance(), batch=1, context=1, c=0.1)  # the page's own model
    assert [advice.speed(t, 1) for t in range(1, 9)] == pytest.approx(list(same.chain[:8]), rel=1e-12)
    vllm, sglang, llama, lmstudio, mlx, hf = ea.flags(advice, batch=1)
    config = json.loads(vllm.text.split("'")[1])
    assert config["num_speculative_tokens"] == 6 and config["num_speculative_tokens_per_batch_size"][0][:1] == [1]
    assert sglang.text.endswith("--speculative-num-steps 6 --speculative-eagle-topk 1 --speculative-num-draft-tokens 7")
    assert json.loads(lmstudio.text)["llm.prediction.speculativeDecoding.maxTokensToDraft"] == 6
    assert json.loads(mlx.text)["llm.prediction.speculativeDecoding.numDraftTokensExact"] == 6
    assert llama.text.endswith("--spec-draft-n-max 6 --spec-draft-n-min 1 --spec-draft-p-min 0.75")
    assert "num_assistant_tokens=6," in hf.text and "assistant_confidence_threshold=0.75" in hf.text


def test_past_the_ridge_the_break_even_batch_worked_by_hand():
    """The same α = 0.8 on the toy device at batch b ≤ 100: T(1) = 2 ms, T(2) = 0.04 b ms. S(1) = 1.8 · 2 /
    (0.1 · 2 + 0.04 b) falls below 1 from b = 86 (3.6 < 0.2 + 0.04 b ⟺ b > 85), where S(2) = 4.88 / (0.4 + 5.16) =
    0.88 loses too: from 86 on no τ pays. At 64: S(1) = 3.6 / 2.76 = 1.304 (τ = 2: 4.88 / 4.24 = 1.151)."""
    advice = ea.advise(ea.from_import(flat()), DEVICE, TOY, TOY, context=1, c=0.1)
    assert advice.break_even == 86 and advice.row(85).pays and not advice.row(86).pays
    busy = advice.at(64)
    assert busy.tau == 1 and busy.speedup == pytest.approx(3.6 / 2.76) and busy.bound == "compute-bound"
    schedule = ea.vllm_schedule(advice)
    assert schedule[0][0] == 1 and schedule[-1] == [86, 512, 0]
    assert all(a[1] + 1 == b[0] and a[2] > b[2] for a, b in itertools.pairwise(schedule))
    for first, last, tau in schedule[:-1]:  # each range's τ is the best at both its ends
        assert advice.row(first).tau == tau == advice.row(last).tau


def test_a_mean_length_alone_is_read_as_iid_alpha():
    """SGLang's 'accept len: 3.00, accept rate: 0.75': 4 tokens verified, a chain of 3. 1 + α + α² + α³ = 3 gives
    α = 0.8105 (α³ + α² + α − 2 = 0). On the toy device at batch 1, within τ ≤ 3: S(3) = 3 / 1.3 = 2.3077, above
    S(2) = (1 + α + α²) / 1.2. With extrapolation the closed form continues: the best τ is the argmax of
    (1 − α^(τ+1)) / ((1 − α)(1 + 0.1 τ))."""
    accept = ea.from_import(ei.parse("accept len: 3.00, accept rate: 0.75"))
    alpha = accept.alpha
    assert alpha**3 + alpha**2 + alpha - 2 == pytest.approx(0, abs=1e-12) and alpha == pytest.approx(0.8105, abs=1e-4)
    assert "α = 0.811" in accept.assumption and accept.measured_upto == 3 and accept.steps is None
    advice = ea.advise(accept, DEVICE, TOY, TOY, context=1, c=0.1)
    assert advice.at(1).tau == 3 and advice.at(1).speedup == pytest.approx(3 / 1.3)
    assert advice.at(1).interval is None  # a bare fragment says over how many steps: nothing
    free = ea.advise(accept, DEVICE, TOY, TOY, context=1, c=0.1, extrapolate=True)
    closed = {t: (1 - alpha ** (t + 1)) / ((1 - alpha) * (1 + 0.1 * t)) for t in range(1, 17)}
    best = max(closed, key=closed.__getitem__)
    assert free.at(1).tau == best > 3 and free.at(1).extrapolated
    assert free.at(1).speedup == pytest.approx(closed[best])


def test_against_the_published_eagle3_sglang_results():
    """SGLang's docs: Llama-3.1-8B-Instruct on one H100 decodes 158.34 tokens/s alone and 373.25 with EAGLE-3 (2.36×);
    the EAGLE-3 paper (arXiv 2503.01840): 1.38× at batch 64 in SGLang. Neither states the accept len, so the check is
    the ceiling: a chain of 3 accepting everything logs 'accept len: 4.00, accept rate: 1.00'. The advice reads it as
    the cost model's own predicted_speedup with E = 4 (tests/test_costmodel.py: under 2.36× at batch 1, a limit of one
    fixed cost per draft pass), says speculation still pays at batch 64 (as published: 1.38× > 1) with a
    memory-bound verify pass, puts the published 1.38× under its ceiling, and needs an accept len of
    1.38 / (S(4) / 4) ≈ 2.53 (at most 4) to give it."""
    line = (
        "[2025-03-05 10:00:00 TP0] Decode batch, #running-req: 64, #token: 40960, token usage: 0.06, accept len: "
        "4.00, accept rate: 1.00, cuda graph: True, gen throughput (token/s): 9000.00, #queue-req: 0, "
    )
    imp = ei.parse(line)
    assert (imp.nodes, imp.positions, imp.weight) == (4, 3, 40 * 64)
    advice = ea.advise(ea.from_import(imp), H100, LLAMA8, EAGLE3)
    one, busy = advice.at(1), advice.at(64)
    assert 1 / pass_time(LLAMA8, H100) == pytest.approx(158.34, rel=0.01)
    assert one.tau == busy.tau == 3 and one.speedup == pytest.approx(predicted_speedup(LLAMA8, EAGLE3, H100, 4.0, 3, 4))
    assert one.speedup < 373.25 / 158.34
    assert busy.speedup == pytest.approx(predicted_speedup(LLAMA8, EAGLE3, H100, 4.0, 3, 4, batch=64))
    assert busy.pays and busy.bound == "memory-bound" and busy.speedup > 1.38 and advice.break_even is None
    assert 1.0 < 1.38 / (busy.speedup / 4) < 4.0


def test_typed_timings_fit_the_roofline_and_reproduce_both_passes():
    """T(1) = 6.32 ms (SGLang's 158.34 tokens/s) and T(64) = 9.00 ms: 15.0 GB at 3.35 TB/s is 4.50 ms, so the fixed
    cost is 1.82 ms; 9.00 − 1.82 = 7.18 ms for 64 tokens' arithmetic is above the memory roof: the compute roof is
    FLOPs(64) / 7.18 ms. T(4) = 6.40 ms lies within 10% of the memory roof: the datasheet's roof is kept."""
    hw, words = ea.typed_hardware(H100, LLAMA8, 6.32, 9.0, 64)
    assert pass_time(LLAMA8, hw, 1) == pytest.approx(6.32e-3) and pass_time(LLAMA8, hw, 64) == pytest.approx(9.0e-3)
    assert hw.overhead == pytest.approx(6.32e-3 - pass_time(LLAMA8, H100) + H100.overhead)
    assert "compute roof" in words and "T(64) = 9.00 ms" in words
    flat_hw, flat_words = ea.typed_hardware(H100, LLAMA8, 6.32, 6.40, 4)
    assert flat_hw.flops == H100.flops and "kept" in flat_words
    with pytest.raises(ConfigError, match="T\\(k\\) ≥ T\\(1\\)"):
        ea.typed_hardware(H100, LLAMA8, 6.32, 5.0, 4)


def test_the_format_without_a_tau_asks_for_it():
    old = fixture("llamacpp_server_old.txt")
    with pytest.raises(ConfigError, match="the τ the engine ran at"):
        ea.from_import(old)
    accept = ea.from_import(old, positions=4)  # rate 0.5656 × 4 drafted a step: 1 + 2.2622 accepted
    assert accept.alpha**4 + accept.alpha**3 + accept.alpha**2 + accept.alpha == pytest.approx(4 * 1376 / 2433)
    assert accept.steps == pytest.approx(2433 / 4)  # every step taken to draft 4
    with pytest.raises(ConfigError, match="cannot have run at τ = 2"):
        ea.from_import(ei.parse("accept len: 3.60, accept rate: 0.90"), positions=2)


# --- real pastes of each engine, across versions (issue 54) -----------------------------------------------------


def test_vllm_v0_running_totals():
    """vLLM 0.6.3 (vllm#9539): k = 3, 13311 draft tokens = 4437 steps of 3; 10616 emitted = 4437 target tokens + 6179
    kept draft tokens: mean length 10616 / 4437 = 2.3926. V0's 'accepted' 8547 also counts tokens kept after a
    rejection (8547 / 13311 = 0.642, as printed), so it is said, not used."""
    v0 = ei.read(text_of("vllm_v0_063.txt"))
    (only,) = v0.sources
    assert (only.steps, only.drafted, only.accepted, only.positions) == (4437, 13311, 6179, 3)
    assert only.mean_length == pytest.approx(10616 / 4437) and only.cumulative and only.grade == 0
    assert only.ignored == 1 and any("0.642" in n and "also after" in n for n in only.notes)
    running = ei.read(text_of("vllm_v0_running.txt"))  # 5 then 15 draft tokens of k = 5: the last line counts
    (last,) = running.sources
    assert (last.steps, last.accepted, last.mean_length, last.ignored) == (3, 0, 1.0, 1)
    first, second = text_of("vllm_v0_running.txt").splitlines()
    restarted = ei.read(second + "\n" + first)  # 15 then 5: the totals fell, so the server restarted: two runs
    assert [s.steps for s in restarted.sources] == [3, 1]
    assert "run 1 of 2" in restarted.sources[0].label and "run 2 of 2" in restarted.sources[1].label


def test_vllm_v08_layouts_give_an_acceptance_rate_and_v085_the_counts():
    """v0.8.2's and v0.8.3's lines (vllm#15902, one interval each): 66 of 66 accepted, a rate only. v0.8.5's layout:
    141 / Σ(0.897, 0.676, 0.500) = 68 drafts, counts 61, 46, 34, mean 1 + 141 / 68 = 3.07."""
    for line in text_of("vllm_v08_rate_only.txt").splitlines():
        imp = ei.parse(line)
        assert (imp.accepted, imp.drafted, imp.steps, imp.mean_length, imp.grade) == (66, 66, None, None, 3)
    v085 = fixture("vllm_v085_log.txt")
    assert (v085.steps, v085.accepted, v085.drafted, v085.counts, v085.positions) == (68, 141, 204, (61, 46, 34), 3)


def test_vllm_dflash_line_of_fifteen_positions():
    """AEON-7's DFlash log: 89 / Σ(0.600, 0.385, 0.215, 0.108, 0.062, 0, …) = 89 / 1.370 = 65 drafts; 975 drafted = 65
    × 15; counts 0.600·65 = 39, 0.385·65 = 25, 0.215·65 = 14, 0.108·65 = 7, 0.062·65 = 4 (sum 89), then zeros."""
    imp = fixture("vllm_dflash_log.txt")
    assert (imp.steps, imp.drafted, imp.accepted, imp.positions) == (65, 975, 89, 15)
    assert imp.counts == (39, 25, 14, 7, 4) + (0,) * 10 and imp.mean_length == pytest.approx(1 + 89 / 65)


def test_sglang_accept_rate_read_under_both_of_its_meanings():
    """2025 (sglang#11948, rate = len / (τ + 1)): 2.17 / 0.54 = 4.02, 1.95 / 0.49 = 3.98, 1.80 / 0.45 = 4.0,
    2.05 / 0.51 = 4.02 → 4 verified, τ = 3; as (len − 1) / τ, 1.17 / 0.54 = 2.17 fits no whole τ. Mean of the four
    lines at batch 1: 7.97 / 4 = 1.9925. 2026 (sglang#30393, rate = (len − 1) / τ): 0.67 / 0.13, 0.68 / 0.14,
    0.73 / 0.14, 0.72 / 0.14 are all 5 within their rounding, while len / rate gives 13 then 12 nodes: τ = 5; mean
    (1.67 + 1.68 + 1.73 + 1.72) / 4 = 1.70 over 4 × 40 × 3 = 480 steps."""
    old = fixture("sglang_log_2025.txt")
    assert (old.positions, old.nodes, old.weight, old.guessed) == (3, 4, 160, True)
    assert old.mean_length == pytest.approx(1.9925)
    new = fixture("sglang_log_2026.txt")
    assert (new.positions, new.nodes, new.weight) == (5, 6, 480) and new.mean_length == pytest.approx(1.70)
    both = ei.parse("accept len: 2.00, accept rate: 0.50")  # 2 / 0.5 = 4 nodes (τ 3), or 1 / 0.5 = τ 2
    assert both.positions == 2 and any("#23530" in n and "τ = 3" in n for n in both.notes)


def test_sglang_server_args_give_tau_and_the_tree():
    """The launch settings in the same paste are exact: a chain (topk 1) of 4 verified tokens is τ = 3, not guessed;
    topk 8 with 5 steps and 64 tokens is a tree 5 deep. Settings that cannot hold a line's accept len are refused."""
    lines = text_of("sglang_log_2025.txt")
    chain = "server_args=ServerArgs(speculative_algorithm='EAGLE3', speculative_num_steps=3, speculative_eagle_topk=1, "
    imp = ei.parse(chain + "speculative_num_draft_tokens=4)\n" + lines)
    assert (imp.positions, imp.nodes, imp.guessed, imp.tree) == (3, 4, False, False)
    tree = "python -m sglang.launch_server --speculative-num-steps 5 --speculative-eagle-topk 8 "
    imp = ei.parse(tree + "--speculative-num-draft-tokens 64\n" + lines)
    assert (imp.positions, imp.nodes, imp.tree) == (5, 64, True)
    too_few = chain.replace("num_steps=3", "num_steps=1") + "speculative_num_draft_tokens=2)\n" + lines
    refused(too_few, 3, "accept len 2.17 is more than the 2 tokens line 1's settings verify")


def test_sglang_meta_info_under_its_new_names():
    """sglang#33518's request: 43 steps, histogram 11, 14, 11, 4, 0, 3 (6 buckets: τ = 5 = 215 / 43): 32 accepted ≥ 1,
    18 ≥ 2, 7 ≥ 3, 3 ≥ 4, 3 ≥ 5; 14 + 22 + 12 + 0 + 15 = 63 correct drafts; mean 1 + 63 / 43 = 2.4651."""
    imp = fixture("sglang_request_2026.json")
    assert (imp.steps, imp.accepted, imp.drafted, imp.positions) == (43, 63, 215, 5)
    assert imp.counts == (32, 18, 7, 3, 3) and imp.mean_length == pytest.approx(1 + 63 / 43) and imp.grade == 0


def test_two_llama_cpp_implementations_are_two_sources():
    """--spec-type draft-dflash,ngram-mod: draft-dflash 511 steps, 974 of 2041, rates × 511 = 390, 269, 185, 130 (sum
    974: complete, 2041 ≤ 4 × 511, τ = 4); ngram-mod 31 steps, 527 of 920, rates × 31 = 28, 25 — 53 of 527: the first
    two positions of drafts of ~30, a prefix. Its mean stays exact: 1 + 527 / 31 = 18.0."""
    reading = ei.read(text_of("llamacpp_two_impls.txt"))
    dflash, ngram = reading.sources
    assert "draft-dflash" in dflash.label and "ngram-mod" in ngram.label and dflash.cumulative and ngram.cumulative
    assert (dflash.steps, dflash.drafted, dflash.accepted, dflash.positions) == (511, 2041, 974, 4)
    assert dflash.counts == (390, 269, 185, 130) and not dflash.partial
    assert (ngram.steps, ngram.drafted, ngram.accepted, ngram.counts) == (31, 920, 527, (28, 25))
    assert ngram.partial and ngram.positions is None and ngram.mean_length == 18.0
    assert any("first 2 positions only" in line for line in ngram.summary())


def test_llama_cpp_older_statistics_layout_and_its_per_request_rate():
    """llama.cpp's speculative-decoding document (067318e6): 'draft' 10 steps, 98 of 110 (mean 1 + 98 / 10 = 10.8);
    ngram_simple 5 steps, 73 of 187 (mean 15.6); the request's 171 / 297 is both together (98 + 73, 110 + 187): a rate
    only, last."""
    reading = ei.read(text_of("llamacpp_docs_stats.txt"))
    draft, ngram, request = reading.sources
    assert (draft.steps, draft.accepted, draft.drafted, draft.mean_length) == (10, 98, 110, pytest.approx(10.8))
    assert (ngram.steps, ngram.accepted, ngram.drafted, ngram.mean_length) == (5, 73, 187, pytest.approx(15.6))
    assert (request.accepted, request.drafted, request.steps, request.grade) == (171, 297, None, 3)


def test_llama_cpp_prometheus_counters_from_zero_or_one():
    """llama.cpp's /metrics: 87 drafts, 259 drafted, 167 accepted, 70, 55, 42 by position, counted from 0 (as vLLM)
    or from 1: the same counts."""
    scrape = fixture("llamacpp_metrics.txt")
    assert (scrape.steps, scrape.drafted, scrape.accepted, scrape.counts, scrape.positions) == (
        87,
        259,
        167,
        (70, 55, 42),
        3,
    )
    assert scrape.engine == "llama.cpp" and scrape.cumulative and scrape.grade == 0
    shifted = text_of("llamacpp_metrics.txt")
    for before, after in (('"2"', '"3"'), ('"1"', '"2"'), ('"0"', '"1"')):
        shifted = shifted.replace(f"position={before}", f"position={after}")
    assert ei.parse(shifted).counts == (70, 55, 42)


def test_running_totals_of_one_implementation_split_where_they_fall():
    """llamacpp_stats.txt: 203 then 410 steps of draft-mtp: one run, the last counts. In the other order the total
    falls (a restart): two runs, each its own source, the longer first."""
    assert fixture("llamacpp_stats.txt").steps == 410
    first, second = text_of("llamacpp_stats.txt").splitlines()[1:]
    reading = ei.read(second + "\n" + first)
    assert [s.steps for s in reading.sources] == [410, 203]


def test_the_build_and_the_version_a_log_prints():
    """llama.cpp#18546's 'build: 6945 (cc98f8d34) with MSVC …', llama.cpp#23544's 'version: 9235 (d14ce3dab)', the
    server's 'build_info: b9235-…', a response's system_fingerprint 'b4882-be7c3034'; vllm#19775's 'vLLM API server
    version 0.9.2.dev121+g4c8f64faa'."""
    request = text_of("llamacpp_server_old.txt")
    reading = ei.read("build: 6945 (cc98f8d34) with MSVC 19.29.30154.0 for x64\n" + request)
    assert (reading.build, reading.commit) == (6945, "cc98f8d34") and "build 6945" in reading.notes[-1]
    assert ei.read("version: 9235 (d14ce3dab)\n" + request).build == 9235
    assert ei.read("main: build_info: b9235-d14ce3dab\n" + request).build == 9235
    timings = json.loads(text_of("llamacpp_timings.json"))
    assert ei.read(json.dumps({**timings, "system_fingerprint": "b4882-be7c3034"})).build == 4882
    server = "INFO 06-17 20:29:40 [api_server.py:1287] vLLM API server version 0.9.2.dev121+g4c8f64faa"
    assert ei.read(server + "\n" + GOOD).version == (0, 9, 2)


# --- bad input: one test per kind ------------------------------------------------------------------------------

GOOD = text_of("vllm_log.txt").splitlines()[1]


def refused(text: str, line: int | None, *words: str) -> EngineLogError:
    with pytest.raises(EngineLogError) as caught:
        ei.parse(text)
    assert caught.value.line == line and all(w in str(caught.value) for w in words), str(caught.value)
    return caught.value


def test_a_malformed_line_is_named():
    refused(f"{GOOD}\nINFO SpecDecoding metrics: Mean acceptance length: high, Accepted: many", 2, "Line 2")
    refused('vllm:spec_decode_num_drafts_total{engine="0"} lots', 1, "Line 1", "a number as its value")
    refused("x\ny\n  accept len: 3.1x, accept rate: 0.78", 3, "Line 3", "accept len")
    refused('{"speculative_decoding_stats": {"num_spec_steps": "ten", "acceptance_histogram": {}}}', 1, "not a count")


ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def test_digits_of_another_script_are_not_read_as_numbers():
    """A regex's \\d, str.isdigit(), int() and float() all take any script's digits ("٣" is 3); the engines print ASCII
    digits, so a line written in others (hand-made here, in Arabic-Indic digits) is refused, named, never read as the
    numbers it would be in ASCII."""
    assert int("141".translate(ARABIC_INDIC)) == 141 and float("3".translate(ARABIC_INDIC)) == 3.0  # what Python reads
    vllm = GOOD.replace("Accepted: 141 tokens", "Accepted: " + "141".translate(ARABIC_INDIC) + " tokens")
    assert vllm != GOOD
    refused(vllm, 1, "Line 1", "cut off", "accepted tokens")
    refused("accept len: " + "3.12".translate(ARABIC_INDIC) + ", accept rate: 0.78", 1, "Line 1", "accept len")
    prom = text_of("vllm_metrics.txt")
    drafts = 'vllm:spec_decode_num_drafts_total{engine="0"} '
    refused(prom.replace(drafts + "1.0", drafts + "1.0".translate(ARABIC_INDIC)), 3, "Line 3", "a number as its value")
    refused(prom.replace('position="2"}', 'position="' + "2".translate(ARABIC_INDIC) + '"}'), 17, "numeric position")
    histogram = text_of("vllm_request.json").replace('"3": 3', '"' + "3".translate(ARABIC_INDIC) + '": 3')
    refused(histogram, 1, "not a count")


def test_a_truncated_line_is_named_and_nothing_is_half_imported():
    cut = GOOD[: GOOD.index("Per-position") + 40]
    error = refused("\n".join([GOOD] * 19 + [cut]), 20, "Line 20", "cut off", "draft acceptance rate")
    assert "Per-position acceptance rate: 0.897" in str(error)  # the line quoted, to find it
    refused(GOOD + "\n" + "draft acceptance = 0.64479 (  167 accepted /", 2, "Line 2")  # … and a mix below
    refused("n_draft   = 8\nn_predict = 129\nn_drafted = 132", 1, "cut off", "n_accept, accept")
    refused('{"speculative_decoding_stats": {"num_spec_steps": 43,\n"acceptance_histogram": {"0": 39', 2, "Line 2")


def test_counts_that_contradict_each_other():
    refused(GOOD.replace("Drafted: 204", "Drafted: 104"), 1, "contradict", "141 tokens accepted but only 104 drafted")
    refused(GOOD.replace("0.676, 0.500", "0.500, 0.676"), 1, "rises from 0.500 at position 2 to 0.676")
    refused(GOOD.replace("Mean acceptance length: 3.07", "Mean acceptance length: 3.50"), 1, "mean acceptance length")
    refused(GOOD.replace("69.1%", "79.1%"), 1, "Avg Draft acceptance rate 79.1%")
    prom = text_of("vllm_metrics.txt")
    refused(prom.replace('position="2"} 0.0', 'position="2"} 2.0'), 17, "2 drafts accepted position 3 but only 1")
    refused(prom.replace('position="1"} 1.0', 'position="1"} 0.0'), 12, "sum to 1, the accepted tokens are 2")
    refused(text_of("vllm_request.json").replace('"3": 3', '"3": 4'), 1, "num_spec_steps is 43")
    refused("accept len: 0.80, accept rate: 0.20", 1, "below 1")


def test_older_layouts_cut_or_contradicting_are_named():
    v0 = text_of("vllm_v0_063.txt").splitlines()[0]
    refused(v0[: v0.index("Number of draft")], 1, "Line 1", "cut off", "number of draft tokens")
    refused(v0.replace("13311", "13312"), 1, "13312 draft tokens are not a whole number of steps of k = 3")
    refused(v0.replace("0.598", "0.698"), 1, "System efficiency 0.698 is not 10616 / (4437 steps × 4)")
    stats = text_of("llamacpp_two_impls.txt").splitlines()[1]
    refused(stats.replace("#acc drafts =   390", "#acc drafts =   600"), 1, "#acc drafts = 600 of only 511 drafts")
    refused("accept len: 3.50, accept rate: 0.30", 1, "fit no draft length")  # 11.5–11.9 nodes, or τ 8.2–8.5
    apart = ei.parse(text_of("sglang_log_2025.txt").replace("accept rate: 0.54", "accept rate: 0.05"))
    assert apart.positions is None and "fit no one draft length" in apart.notes[0]  # τ 42 here, 3 there: asked


def test_a_mix_of_engines_is_refused_and_two_formats_of_one_engine_are_two_sources():
    refused(f"{GOOD}\naccept len: 3.12, accept rate: 0.78", 2, "Line 2 is SGLang's", "line 1 was vLLM's")
    both = ei.read(GOOD + "\n" + text_of("vllm_metrics.txt"))  # the scrape's counts come first, the line second
    assert [s.format.name for s in both.sources] == [ei.FORMATS["vllm-prom"].name, ei.FORMATS["vllm-log"].name]
    assert (both.sources[0].steps, both.sources[1].steps) == (1, 68)
    twice = text_of("vllm_metrics.txt") * 2
    refused(twice, 20, "two scrapes pasted together", "same labels as line 3")


def test_an_enormous_paste_is_bounded():
    refused("x" * (ei.MAX_CHARS + 1), None, "1,000,001 characters", "at most 1,000,000")
    refused("\n" * (ei.MAX_LINES + 1), None, "at most 20,000")
    with pytest.raises(EngineLogError, match="at most 1,000,000 are read"):
        ei.read_upload(b"x" * (ei.MAX_CHARS + 1))
    with pytest.raises(EngineLogError, match="not UTF-8"):
        ei.read_upload(b"\xff\xfe SpecDecoding")
    deep = "[" * 100_000 + "]" * 100_000
    refused(deep, None, "nests")


def test_nothing_found_and_hostile_text_stays_text():
    refused("just a log line\nanother", None, "No speculative-decoding numbers found")
    hostile = GOOD[: GOOD.index("Accepted:")] + " <img src=x onerror=alert(1)> [link](http://evil) **bold**"
    error = refused(hostile, 1, "Line 1")
    shown = plain(str(error))
    assert "\\<img" in shown and "\\[link\\]" in shown and "\\*\\*bold" in shown and "http:\u2060//evil" in shown


# --- the charts and the lesson -----------------------------------------------------------------------------------


def test_the_charts_draw_the_read_the_extrapolated_and_the_interval():
    from specviz.viz.import_charts import advice_chart, rates_chart

    accept = ea.from_import(fixture("vllm_log.txt"))  # 3 positions read: 184, 105, 61 of 273
    own = ea.from_outlook(ol.Acceptance("α by hand", alpha=0.5))
    read, beyond, app = rates_chart(accept, own).to_plotly_json()["data"]
    assert list(read["x"]) == [1, 2, 3] and list(read["y"]) == pytest.approx([184 / 273, 105 / 273, 61 / 273])
    assert list(beyond["x"]) == list(range(3, 17)) and beyond["line"]["dash"] == "dash"
    assert beyond["y"][1] == pytest.approx(61 / 273 * 61 / 105)  # a4 = a3 · a3 / a2
    assert list(app["y"])[:2] == pytest.approx([0.5, 0.25])
    advice = ea.advise(accept, H100, LLAMA8, EAGLE3)
    line = advice_chart(advice).to_plotly_json()["data"][0]
    assert list(line["x"]) == list(ol.BATCHES) and list(line["y"]) == pytest.approx([r.speedup for r in advice.rows])
    assert list(line["error_y"]["array"]) == pytest.approx([r.interval[1] - r.speedup for r in advice.rows])


def test_the_lesson_shows_the_same_run_as_each_engine_logs_it():
    from specviz.classroom.lessons import BY_KEY

    lesson = BY_KEY["engine-log"]
    assert lesson.choices[lesson.right] == "vLLM's 'Avg Draft acceptance rate' and SGLang's 'accept rate'"
    evidence = lesson.run(tiny_text_pair(chat=True), None)
    assert list(evidence.table["engine"]) == ["vLLM", "SGLang", "llama.cpp"]
    steps = int(evidence.finding.split("The same ")[1].split(" steps")[0])
    length = float(evidence.finding.split("mean acceptance length ")[1].split(" ")[0])
    sglang = float(evidence.table["its acceptance rate"][1].split(" ")[0])
    assert sglang == pytest.approx(length / 4, abs=0.006) and steps > 0  # accept len / (τ + 1), printed to 2 places


def test_twenty_vllm_lines_give_the_flags_for_an_h100():
    """The page's case without the page: twenty log intervals of 40–59 drafts, positions kept by 80%, 60% and 45%
    of drafts; on the H100 preset with Llama-3.1-8B and its EAGLE-3 head."""
    lines = []
    for i in range(20):
        n = 40 + i
        per_pos = (round(0.8 * n), round(0.6 * n), round(0.45 * n))
        lines.append(vllm_line(EngineCounts(n, 3 * n, sum(per_pos), per_pos, 10.0, n)))
    imp = ei.parse("\n".join(lines))
    assert imp.steps == sum(range(40, 60)) and len(imp.records) == 20 and imp.positions == 3
    advice = ea.advise(ea.from_import(imp), H100, LLAMA8, EAGLE3)
    vllm = ea.flags(advice, batch=64)[0]
    config = json.loads(vllm.text.split("'")[1])
    schedule = ea.vllm_schedule(advice)  # vLLM: num_speculative_tokens bounds every τ of the schedule
    assert config["num_speculative_tokens"] == max(t for _, _, t in schedule)
    assert config["num_speculative_tokens_per_batch_size"] == schedule and schedule[0][2] == advice.at(1).tau
