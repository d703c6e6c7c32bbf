"""A run as the serving engines log it, on runs whose numbers are set by hand (docs/algorithm.md, "Glossary:
the same numbers in the serving engines": the worked example there is the first test)."""

from __future__ import annotations

import dataclasses

from specviz import Decoder, SpecConfig
from specviz.analysis.engine_logs import engine_report, llamacpp_line, sglang_line, vllm_lines, vllm_prometheus
from specviz.core.metrics import compute_metrics
from tests.helpers import table_pair


def run_with(taus: list[int], accepted: list[int], draft_ms: float, verify_ms: float, tau: int = 3):
    real = Decoder(table_pair([0.5, 0.5], [0.5, 0.5]), [0], SpecConfig(tau=tau, max_new_tokens=200)).run()
    template = real.steps[0]
    steps = tuple(
        dataclasses.replace(
            template, index=i, tau=k, n_accepted=n, emitted=(0,) * (n + 1), draft_ms=draft_ms, verify_ms=verify_ms
        )
        for i, (k, n) in enumerate(zip(taus, accepted, strict=True))
    )
    return dataclasses.replace(real, steps=steps, metrics=compute_metrics(steps, tau))


def test_the_worked_example_as_vllm_sglang_and_llama_cpp_print_it():
    """τ = 3, four steps accepting 3, 1, 0, 2; 100 ms drafting and 25 ms verifying each (400 + 100 ms).
    Accepted 6, drafted 12, 4 drafts: mean acceptance length 1 + 6/4 = 2.50; throughputs 6 / 0.5 s = 12 and
    12 / 0.5 s = 24; per position: n ≥ 1 in 3 of 4 steps, n ≥ 2 in 2, n ≥ 3 in 1; 6/12 = 50.0%.
    SGLang: (6 + 4) / 4 = 2.50, over τ + 1 = 4: 0.625 → 0.62. llama.cpp: 6 / 12."""
    run = run_with([3, 3, 3, 3], [3, 1, 0, 2], draft_ms=100.0, verify_ms=25.0)
    assert vllm_lines(run) == [
        "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 12.00 tokens/s, Drafted "
        "throughput: 24.00 tokens/s, Accepted: 6 tokens, Drafted: 12 tokens, Per-position acceptance rate: "
        "0.750, 0.500, 0.250, Avg Draft acceptance rate: 50.0%"
    ]
    assert sglang_line(run) == "accept len: 2.50, accept rate: 0.62"
    assert llamacpp_line(run) == "draft acceptance rate = 0.50000 (    6 accepted /    12 generated)"
    assert vllm_prometheus(run).splitlines() == [
        "vllm:spec_decode_num_drafts_total 4",
        "vllm:spec_decode_num_draft_tokens_total 12",
        "vllm:spec_decode_num_accepted_tokens_total 6",
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 3',
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 2',
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 1',
    ]
    # the app's own numbers for the same run: vLLM's mean acceptance length and unconditional rates
    assert run.metrics.mean_acceptance_length == 2.5
    assert list(run.metrics.per_position_acceptance_rate) == [0.75, 0.5, 0.25]


def test_a_step_that_drafted_nothing_is_not_a_vllm_draft_and_log_intervals_split_the_steps():
    """Steps (τ, n): (2, 2), (0, 0), (2, 1), (1, 0), 10 + 10 ms each. vLLM counts the three drafts only:
    accepted 3, drafted 5, 1 + 3/3 = 2.00, per position (n ≥ 1: 2 of 3, n ≥ 2: 1 of 3) 0.667, 0.333, 60.0%;
    SGLang counts all four passes: (3 + 4) / 4 = 1.75, over τ + 1 = 3: 0.58. Intervals of two steps: the first
    has one draft (2 accepted of 2, 40 ms: 50 tokens/s), the second two (1 of 3)."""
    run = run_with([2, 0, 2, 1], [2, 0, 1, 0], draft_ms=10.0, verify_ms=10.0, tau=2)
    (line,) = vllm_lines(run)
    assert "Mean acceptance length: 2.00," in line and "Accepted: 3 tokens, Drafted: 5 tokens" in line
    assert "Per-position acceptance rate: 0.667, 0.333, Avg Draft acceptance rate: 60.0%" in line
    assert "Accepted throughput: 37.50 tokens/s" in line  # 3 / 0.08 s
    assert sglang_line(run) == "accept len: 1.75, accept rate: 0.58"
    first, second = vllm_lines(run, every=2)
    assert "Mean acceptance length: 3.00" in first and "Accepted: 2 tokens, Drafted: 2 tokens" in first
    assert "Accepted throughput: 50.00 tokens/s" in first and "Per-position acceptance rate: 1.000, 1.000" in first
    assert "Mean acceptance length: 1.50" in second and "Accepted: 1 tokens, Drafted: 3 tokens" in second
    report = engine_report(run, every=2)
    assert first in report and second in report and "draft acceptance rate = 0.60000" in report
