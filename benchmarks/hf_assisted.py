"""The engine against Hugging Face assisted generation, greedy, on the same pair, prompt and τ.

Both run in one process on the embedded target with the untrained `early-exit:8` draft (HF needs
an HF model as the assistant; the distilled feature-level draft is not one): `target.generate(assistant_model=draft,
num_assistant_tokens=τ, num_assistant_tokens_schedule="constant", do_sample=False)` against the
engine in greedy mode. Tokens must be identical; the script reports tokens/s of each (prefill
included on both sides), the target forward passes each made, and as its last line
`engine/hf tokens-per-second ratio: X.XX` over all τ together.
Usage: python -m benchmarks.hf_assisted [--taus 1,2,4] [--max-new-tokens 64] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import GenerationConfig

import specviz
from specviz.cli import parse_taus
from specviz.core.prompt import encode_prompt

PROMPTS = ("The cat sat on the", "Write a Python function that reverses a list.")


def _count_forwards(module: torch.nn.Module) -> list[int]:
    calls = [0]
    module.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


def hf_generate(pair, ids: list[int], tau: int, n: int) -> tuple[tuple[int, ...], float]:
    target, draft = pair.target.model, pair.draft.model
    # transformers 5.x reads the draft length from the *assistant's* generation config (default 20,
    # and drafting stops early under 0.4 confidence): set them there too, so that every step drafts
    # exactly τ tokens, as the engine does. The draft forward counts printed below check it.
    draft.generation_config.num_assistant_tokens = tau
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0
    config = GenerationConfig(
        do_sample=False,
        max_new_tokens=n,
        num_assistant_tokens=tau,
        num_assistant_tokens_schedule="constant",
        eos_token_id=pair.codec.eos_token_id,
        pad_token_id=pair.codec.eos_token_id,
    )
    start = time.perf_counter()
    out = target.generate(torch.tensor([ids]), assistant_model=draft, generation_config=config)
    return tuple(out[0, len(ids) :].tolist()), time.perf_counter() - start


def engine_generate(pair, ids: list[int], tau: int, n: int) -> tuple[tuple[int, ...], float]:
    start = time.perf_counter()
    run = specviz.Decoder(pair, ids, specviz.SpecConfig(tau=tau, mode="greedy", max_new_tokens=n)).run()
    return run.new_tokens, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taus", default="1,2,4")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats of each (best is kept)")
    args = parser.parse_args()
    pair = specviz.load_pair("embedded", "early-exit:8")  # an HF model: HF assisted generation needs one
    calls, draft_calls = _count_forwards(pair.target.model), _count_forwards(pair.draft.model)
    prompts = [encode_prompt(pair, p, chat=None)[1] for p in PROMPTS]
    engine_generate(pair, prompts[0], 2, 8)  # warm up both paths
    hf_generate(pair, prompts[0], 2, 8)
    print(f"{pair.target.name} + draft {pair.draft.name}; greedy; {args.max_new_tokens} tokens; best of {args.repeats}")
    print("forward passes per run: target/draft")
    print(f"{'τ':>3} {'prompt':>6} {'tokens':>6} {'engine tok/s':>12} {'hf tok/s':>9} {'engine fwd':>11} {'hf fwd':>9}")
    total = {"engine": [0, 0.0], "hf": [0, 0.0]}
    for tau in parse_taus(args.taus):
        for i, ids in enumerate(prompts):
            row = {}
            for name, fn in (("engine", engine_generate), ("hf", hf_generate)):
                best, before, draft_before = None, calls[0], draft_calls[0]
                for _ in range(args.repeats):
                    tokens, seconds = fn(pair, ids, tau, args.max_new_tokens)
                    best = seconds if best is None else min(best, seconds)
                forwards = f"{(calls[0] - before) // args.repeats}/{(draft_calls[0] - draft_before) // args.repeats}"
                row[name] = (tokens, best, forwards)
                total[name][0] += len(tokens)
                total[name][1] += best
            assert row["engine"][0] == row["hf"][0], f"tokens differ at τ={tau}, prompt {i + 1}"
            (tokens, e_s, e_f), (_, h_s, h_f) = row["engine"], row["hf"]
            speeds = f"{len(tokens) / e_s:>12.1f} {len(tokens) / h_s:>9.1f}"
            print(f"{tau:>3} {i + 1:>6} {len(tokens):>6} {speeds} {e_f:>11} {h_f:>9}")
    ratio = (total["engine"][0] / total["engine"][1]) / (total["hf"][0] / total["hf"][1])
    print(f"engine/hf tokens-per-second ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
