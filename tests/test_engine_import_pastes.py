"""Engines' numbers as users paste them (issue 64.3): each kind read to its counts, worked by hand from the fixtures
(tests/fixtures/engine_logs/README.md says where each comes from) — a rounded rate taken as the interval it allows,
a trailing space, newlines lost, vLLM V0's older spelling, several V0 runs, vLLM's spec_decode.py summary, SGLang's
meta_info printed by Python or quoted in text, and drafts with no acceptance said as exactly that."""

from __future__ import annotations

import json
import pprint

import pytest

from specviz.analysis import engine_import as ei
from tests.test_engine_import import refused, text_of


def collapsed(text: str) -> str:
    """The paste with its newlines and runs of spaces lost (a chat box or a terminal that joined the lines)."""
    return " ".join(text.split())


def test_a_rounded_rate_is_the_interval_it_allows():
    """15 accepted at a rate printed 0.035: 15 / 0.035 = 428.6 would round to 429 steps, but 0.035 means 0.0345 to
    0.0355, so 15 / 0.0355 = 422.5 to 15 / 0.0345 = 434.8 steps (423–434); the mean 1.03 (1.025–1.035) allows 429–600;
    431 tokens drafted at one a step (τ = 1) need exactly 431 steps: 431, 15 of 431 accepted, count (15,)."""
    imp = ei.parse(text_of("vllm_rounded_rate.txt"))
    assert (imp.steps, imp.drafted, imp.accepted, imp.counts, imp.positions) == (431, 431, 15, (15,), 1)
    assert imp.exact and imp.grade == 1 and imp.mean_length == pytest.approx(1 + 15 / 431)
    assert any("423 to 434 steps" in n and "431" in n for n in imp.notes), imp.notes


def test_a_trailing_space_keeps_the_last_rate():
    """v0.8.5's layout ends with the per-position rates; a space after them (as copied from a terminal) leaves
    0.897, 0.676, 0.500 and the same 68 drafts and counts 61, 46, 34 as without it."""
    line = text_of("vllm_v085_log.txt").rstrip("\n")
    for text in (line + " ", line + " \t", line + " \n"):
        imp = ei.parse(text)
        assert (imp.steps, imp.accepted, imp.counts, imp.positions) == (68, 141, (61, 46, 34), 3)


def test_pastes_whose_newlines_were_lost_read_line_by_line():
    """The same numbers as the fixtures' own lines, each joined into one line of single spaces."""
    vllm = ei.parse(collapsed(text_of("vllm_log.txt")))
    assert [(r.steps, r.accepted, r.counts) for r in vllm.records] == [
        (68, 141, (61, 46, 34)),
        (203, 206, (122, 58, 26)),
        (2, 3, (1, 1, 1)),
    ]
    assert (vllm.steps, vllm.accepted, vllm.counts) == (273, 350, (184, 105, 61))
    llama = ei.read(collapsed(text_of("llamacpp_server.txt")))
    assert [(s.steps, s.accepted, s.counts) for s in llama.sources] == [(87, 167, (70, 55, 42))] * 2
    two = ei.read(collapsed(text_of("llamacpp_two_impls.txt")))
    assert [s.steps for s in two.sources] == [511, 31]
    scrape = ei.parse(collapsed(text_of("vllm_metrics_dp2.txt")))
    assert (scrape.steps, scrape.accepted, scrape.counts) == (150, 250, (115, 82, 53))
    sglang = ei.parse(collapsed(text_of("sglang_log.txt")))
    assert sglang.mean_length == pytest.approx(3.0) and sglang.weight == 400
    example = ei.parse(collapsed(text_of("llamacpp_speculative.txt")))
    assert (example.steps, example.drafted, example.accepted) == (82, 132, 47)
    v0 = ei.parse(collapsed(text_of("vllm_v0_063.txt")))
    assert (v0.steps, v0.accepted) == (4437, 6179)


def test_vllm_v0s_older_spelling_tokens_tokens():
    """vllm#6768 (Medusa, k = 16): 42272 then 51056 draft tokens (running totals, the last counts): 51056 / 16 = 3191
    steps; 3191 emitted = one target token a step, so no draft token was kept; System efficiency 3191 / (3191 × 17) =
    0.059 as printed."""
    reading = ei.read(text_of("vllm_v0_tokens_tokens.txt"))
    (imp,) = reading.sources
    assert (imp.steps, imp.drafted, imp.accepted, imp.positions, imp.mean_length) == (3191, 51056, 0, 16, 1.0)
    assert imp.cumulative and imp.grade == 0 and imp.ignored == 4  # three other lines and one superseded total


def test_several_v0_runs_are_several_sources():
    """Three runs, each after its own 'Initializing an LLM engine' line: run 2's first total (700 draft tokens) is
    above run 1's last (600), yet it is a new run. Each run's last line: 600 / 2 = 300 steps, 690 − 300 = 390 kept;
    1000 / 2 = 500, 1100 − 500 = 600; 400 / 2 = 200, 350 − 200 = 150. Best first: the most steps."""
    reading = ei.read(text_of("vllm_v0_three_runs.txt"))
    assert [(s.steps, s.accepted, s.drafted) for s in reading.sources] == [
        (500, 600, 1000),
        (300, 390, 600),
        (200, 150, 400),
    ]
    assert [s.mean_length for s in reading.sources] == [pytest.approx(2.2), pytest.approx(2.3), pytest.approx(1.75)]
    assert ["run 2 of 3" in reading.sources[0].label, "run 1 of 3" in reading.sources[1].label] == [True, True]
    assert "3 sources" in reading.notes[0]


def test_vllm_spec_decode_example_summary():
    """examples/offline_inference/spec_decode.py: 6931 drafts, 12553 of 20793 accepted (exact), mean 1 + 12553 / 6931 =
    2.811 (printed 2.81). Its rates to two decimals, 0.79, 0.59, 0.44 of 6931 drafts, allow 5441–5510, 4055–4124 and
    3015–3084 steps accepting each position; those summing to 12553 are rebuilt, not counted."""
    imp = ei.parse(text_of("vllm_spec_decode_example.txt"))
    assert (imp.steps, imp.drafted, imp.accepted, imp.positions) == (6931, 20793, 12553, 3)
    assert imp.mean_length == pytest.approx(1 + 12553 / 6931) and imp.grade == 1 and not imp.exact
    assert sum(imp.counts) == 12553 and list(imp.counts) == sorted(imp.counts, reverse=True)
    for count, (low, high) in zip(imp.counts, ((5441, 5510), (4055, 4124), (3015, 3084)), strict=True):
        assert low <= count <= high
    said = imp.summary()  # the steps as the engine counted them; the counts within the rates' rounding
    assert "6,931 verify steps" in said and any("counts rebuilt within" in line for line in said)
    assert ei.parse("total_num_output_tokens: 19484\n" + text_of("vllm_v085_log.txt")).steps == 68  # alone: nothing
    older = ei.parse("mean acceptance length: 2.81\n" + "-" * 50 + "\nacceptance at token 0:0.79\n"
                     "acceptance at token 1:0.59\nacceptance at token 2:0.44")  # fmt: skip
    assert (older.mean_length, older.positions, older.steps, older.grade) == (2.81, 3, None, 2)
    refused("num_drafts: 6931\nnum_draft_tokens: 20793\nnum_accepted_tokens: 22553", 1, "22553 tokens accepted")


def test_two_real_spec_decode_summaries_are_two_sources():
    """vllm#26498's two runs at K = 10: 4687 drafts, 12368 of 46870 accepted (mean 1 + 12368 / 4687 = 3.639, printed
    3.64), and 20468 drafts, 48266 of 204680 (3.358, printed 3.36); each run its own source, the longer first, its
    ten counts summing to its accepted tokens, each within half a hundredth of its printed rate."""
    reading = ei.read(text_of("vllm_spec_decode_26498.txt"))
    assert [(s.steps, s.drafted, s.accepted, s.positions) for s in reading.sources] == [
        (20468, 204680, 48266, 10),
        (4687, 46870, 12368, 10),
    ]
    printed = (
        (0.71, 0.50, 0.36, 0.26, 0.18, 0.13, 0.10, 0.07, 0.04, 0.02),
        (0.74, 0.54, 0.41, 0.30, 0.22, 0.16, 0.12, 0.08, 0.05, 0.02),
    )
    for source, rates in zip(reading.sources, printed, strict=True):
        assert sum(source.counts) == source.accepted and source.grade == 1 and "run" in source.label
        assert all(abs(c / source.steps - r) <= 0.005 for c, r in zip(source.counts, rates, strict=True))


def sglang_meta() -> dict:
    return json.loads(text_of("sglang_request.json"))["meta_info"]


def test_sglang_meta_info_printed_by_python():
    """The same request as sglang_request.json (32 steps, 68 of 96, histogram 4, 4, 8, 16: counts 28, 24, 16) printed
    by Python: repr() of the dict, pprint of it, and SGLang's own 'Finish: … out={…}' log line."""
    for text in (repr(sglang_meta()), pprint.pformat(sglang_meta(), width=60), text_of("sglang_finish_log.txt")):
        imp = ei.parse(text)
        assert (imp.steps, imp.accepted, imp.drafted, imp.counts, imp.positions) == (32, 68, 96, (28, 24, 16), 3)
        assert imp.mean_length == 3.125 and imp.grade == 0 and imp.engine == "SGLang"
    nan = repr({**sglang_meta(), "e2e_latency": float("nan")})  # not a literal Python reads back: its fields still are
    assert (ei.parse(nan).steps, ei.parse(nan).counts) == (32, (28, 24, 16))
    full = {**sglang_meta(), "spec_accept_histogram": [0, 0, 0, 32], "spec_accept_token_num": 96}  # all 3 each step
    two = ei.parse(repr(sglang_meta()) + "\n" + repr(full))
    assert (two.steps, two.accepted, two.counts) == (64, 68 + 96, (28 + 32, 24 + 32, 16 + 32))


def test_sglang_meta_info_fields_quoted_in_text():
    """Fields copied into prose or a table: spec_verify_ct 32, spec_accept_token_num 68, spec_draft_token_num 96 →
    32 steps, 68 of 96 (τ = 96 / 32 = 3), mean 1 + 68 / 32 = 3.125; no histogram, so no per-position counts."""
    for text in (
        "the server returned spec_verify_ct: 32, spec_accept_token_num: 68 and spec_draft_token_num: 96",
        "| `spec_verify_ct` | 32 |\n| `spec_accept_token_num` | 68 |\n| `spec_draft_token_num` | 96 |",
        'meta_info["spec_verify_ct"] = 32, meta_info["spec_accept_token_num"] = 68, "spec_draft_token_num": 96',
    ):
        imp = ei.parse(text)
        assert (imp.steps, imp.accepted, imp.drafted, imp.positions, imp.counts) == (32, 68, 96, 3, None), text
        assert imp.mean_length == 3.125
    new = ei.parse("spec_num_correct_drafts = 63, spec_num_proposed_drafts = 215, spec_verify_ct = 43")
    assert (new.steps, new.accepted, new.drafted, new.positions) == (43, 63, 215, 5)


def test_drafts_with_no_acceptance_say_exactly_that():
    """Intervals that counted drafts (mean acceptance length 1.00) but no draft token: vLLM prints nan% (0 / 0). The
    message says drafts were seen and no acceptance can be read, not that nothing was found."""
    error = refused(text_of("vllm_nan_acceptance.txt"), 2, "Line 2", "drafts", "nan%", "no acceptance")
    assert "No speculative-decoding numbers found" not in str(error) and "2 lines" in str(error)
    v0 = "Speculative metrics: Draft acceptance rate: nan, System efficiency: nan, Number of speculative tokens: 3, "
    error = refused(v0 + "Number of accepted tokens: 0, Number of draft tokens: 0, Number of emitted tokens: 0.", 1)
    assert "nothing drafted yet" in str(error) and "No speculative-decoding numbers found" not in str(error)
