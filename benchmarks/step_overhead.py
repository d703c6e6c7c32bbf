"""How much a speculative step costs beyond its own forward passes.

For a tiny and a mid-size random Llama pair, run the engine step by step and compare the wall
time of each step with the time spent inside its τ draft forwards and 1 target forward. The
ratio is the engine's overhead: sampling, acceptance, cache cropping and trace building.
Goal: ≤ 1.15. Usage: python -m benchmarks.step_overhead [--steps N] [--tau T]
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz import Decoder, HFModel, ModelPair, SpecConfig
from specviz.models.text import IdsCodec

SIZES = {  # name: (hidden, target layers, draft layers, vocab)
    "tiny": (64, 2, 1, 256),
    "mid": (512, 8, 2, 32_000),
}


def _llama(hidden: int, layers: int, vocab: int, seed: int) -> HFModel:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    return HFModel(LlamaForCausalLM(config).eval(), f"llama-{hidden}x{layers}")


def measure(size: str, steps: int, tau: int) -> tuple[float, float, float]:
    hidden, t_layers, d_layers, vocab = SIZES[size]
    pair = ModelPair(_llama(hidden, t_layers, vocab, 0), _llama(hidden, d_layers, vocab, 1), IdsCodec())
    prompt = list(range(1, 33))
    config = SpecConfig(tau=tau, mode="textbook", max_new_tokens=steps * (tau + 1))
    dec = Decoder(pair, prompt, config)
    for _ in range(3):  # warm up
        dec.step()
    f0, wall = sum(dec.forward_seconds), 0.0
    for _ in range(steps):
        start = time.perf_counter()
        dec.step()
        wall += time.perf_counter() - start
    forward = sum(dec.forward_seconds) - f0
    return wall / steps * 1000, forward / steps * 1000, wall / forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--tau", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    print(f"τ = {args.tau}, {args.steps} steps, textbook mode, {torch.get_num_threads()} threads")
    print(f"{'model':<6} {'step ms':>9} {'forwards ms':>12} {'overhead':>9}")
    for size in SIZES:
        step_ms, fwd_ms, ratio = measure(size, args.steps, args.tau)
        print(f"{size:<6} {step_ms:>9.2f} {fwd_ms:>12.2f} {ratio:>9.3f}")


if __name__ == "__main__":
    main()
