"""What one verify step costs through a serving engine, against the same step in process.

Starts llama-cpp-python's server (benchmarks/llamaserver.py) on the embedded GGUF, then decodes the
same chat prompts greedily with the same local draft (the embedded model's first 8 layers) twice: the
target in this process, and the target behind the server. Reports the median verify time per step
(for the server: one HTTP request, tokenisation check included) and tokens per second.
Usage: python -m benchmarks.remote [--tokens N] [--tau T]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.llamaserver import llama_server
from specviz import SpecConfig, load_pair
from specviz.core.engine import Decoder
from specviz.drafts.subset import early_exit
from specviz.models.lm import HFModel
from specviz.models.pair import ModelPair

PROMPTS = ("Tell me a short story about a robot.", "What is the capital of France?")


def measure(pair: ModelPair, tokens: int, tau: int) -> tuple[float, float, int]:
    """(median verify ms per step, emitted tokens per second, steps) over PROMPTS."""
    verify, emitted, seconds, steps = [], 0, 0.0, 0
    for prompt in PROMPTS:
        decoder = Decoder(pair, prompt, SpecConfig(mode="greedy", tau=tau, max_new_tokens=tokens), chat=True)
        start = time.perf_counter()
        run = decoder.run()
        seconds += time.perf_counter() - start
        verify += [s.verify_ms for s in run.steps]
        emitted += len(run.new_tokens)
        steps += len(run.steps)
    return statistics.median(verify), emitted / seconds, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--tau", type=int, default=3)
    args = ap.parse_args()
    local = load_pair("embedded", "self")
    draft = HFModel(early_exit(local.target.model, 8), "first 8 layers")
    with llama_server() as url:
        served = load_pair(f"llamacpp:{url}", "embedded")
        rows = {
            "in process": measure(ModelPair(local.target, draft, served.codec), args.tokens, args.tau),
            "llama-cpp-python server": measure(ModelPair(served.target, draft, served.codec), args.tokens, args.tau),
        }
    base = rows["in process"][0]
    print(f"greedy, τ = {args.tau}, {args.tokens} tokens × {len(PROMPTS)} prompts, one run on this machine")
    for name, (ms, tps, steps) in rows.items():
        print(f"{name:>24}: verify {ms:7.1f} ms per step (×{ms / base:.2f}), {tps:5.1f} tok/s, {steps} steps")


if __name__ == "__main__":
    main()
