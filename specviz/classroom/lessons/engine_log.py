"""Lesson: Reading your engine's log (the same run as vLLM, SGLang and llama.cpp print it, read back by the app's
importer; docs/algorithm.md, "Glossary: the same numbers in the serving engines")."""

from __future__ import annotations

import pandas as pd

from specviz.analysis.engine_import import parse
from specviz.analysis.engine_logs import llamacpp_timing_line, sglang_line, vllm_lines
from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.models.pair import ModelPair

TAU = 3


def engine_log(pair: ModelPair, load: Load) -> Evidence:
    run = decode(pair, mode="greedy", tau=TAU).trace()
    m = run.metrics
    printed = {"vLLM": vllm_lines(run)[0], "SGLang": sglang_line(run), "llama.cpp": llamacpp_timing_line(run)}
    back = {engine: parse(text) for engine, text in printed.items()}  # what the app reads back from each
    sglang_rate = float(printed["SGLang"].split("accept rate: ")[1])
    rows = [
        {
            "engine": "vLLM",
            "mean acceptance length": f"{back['vLLM'].mean_length:.2f} ('Mean acceptance length')",
            "its acceptance rate": f"{100 * m.draft_acceptance_rate:.1f}% ('Avg Draft acceptance rate')",
            "the rate is": f"accepted / drafted draft tokens = {m.accepted_tokens} / {m.drafted_tokens}",
        },
        {
            "engine": "SGLang",
            "mean acceptance length": f"{back['SGLang'].mean_length:.2f} ('accept len')",
            "its acceptance rate": f"{sglang_rate:.2f} ('accept rate')",
            "the rate is": f"accept len / (τ + 1) = (accepted + one token per step) / ({m.steps} steps × {TAU + 1})",
        },
        {
            "engine": "llama.cpp",
            "mean acceptance length": f"{back['llama.cpp'].mean_length:.2f} ('mean acceptance length')",
            "its acceptance rate": f"{m.draft_acceptance_rate:.5f} ('draft acceptance')",
            "the rate is": f"accepted / drafted draft tokens = {m.accepted_tokens} / {m.drafted_tokens}",
        },
    ]
    per_position = back["vLLM"].rates or ()
    return Evidence(
        f"The same {m.steps} steps at τ = {TAU}: all three print the mean acceptance length "
        f"{m.mean_acceptance_length:.2f} = 1 + {m.accepted_tokens} accepted / {m.steps} steps (the target's own token "
        f"counted every step). vLLM's {100 * m.draft_acceptance_rate:.1f}% and llama.cpp's "
        f"{m.draft_acceptance_rate:.5f} are one number: accepted over drafted draft tokens. SGLang's accept rate "
        f"{sglang_rate:.2f} is another: accept len / (τ + 1), the target's token counted and the verified slots, "
        f"root included, as the denominator. vLLM and llama.cpp also print the per-position rates "
        f"({', '.join(f'{r:.3f}' for r in per_position)}: steps that accepted position i, over all steps); SGLang "
        "prints none, so from SGLang alone only a mean length can be read.",
        (),
        pd.DataFrame(rows),
        premise="",
        held=None,
        gates=False,
    )


LESSON = Lesson(
    key="engine-log",
    title="Reading your engine's log",
    question="The same run, logged by vLLM, SGLang and llama.cpp. Which two of their numbers disagree on purpose?",
    choices=(
        "vLLM's 'Mean acceptance length' and SGLang's 'accept len'",
        "vLLM's 'Avg Draft acceptance rate' and SGLang's 'accept rate'",
        "vLLM's 'Avg Draft acceptance rate' and llama.cpp's 'draft acceptance'",
    ),
    right=1,
    takeaway="Mean acceptance length (vLLM, llama.cpp) and accept len (SGLang) are one number: tokens per step, "
    "the target's own counted.\nThe rates differ: vLLM's and llama.cpp's divide accepted by drafted draft tokens, "
    "SGLang's divides accept len by τ + 1.",
    run=engine_log,
)
