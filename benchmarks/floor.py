"""The embedded target on llama.cpp against this CPU's floor and against Hugging Face `generate` (issue 44).

In this process, with every core (`--threads`, default 2) for both torch and llama.cpp:
- the floor: torch sums every float32 weight of the target (540 MB) once; a one-token pass must read them all,
  so its time bounds T(1) from below (memory bandwidth), median of `--repeats`;
- llama.cpp's T(1) and T(5) (one pass over 1 and 5 tokens at a ~80-token context, interleaved medians), and which
  of ggml's CPU variants ran them (none: a build with one CPU library linked in);
- the target alone on llama.cpp (plain greedy decoding, 48 tokens on each of benchmarks.runtime's four held-out
  prompts, wall clock) against `model.generate` of the same float32 weights in transformers (greedy, the same 48
  tokens' budget, the same prompts), tokens per second.
Run it once per llama.cpp build on a quiet machine, the builds back to back, and compare within those runs.
Usage: python -m benchmarks.floor [--threads 2] [--repeats 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from datetime import date

from benchmarks.runtime import MAX_NEW, PROMPTS


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return platform.processor()
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "")


def weights_read_ms(model, repeats: int) -> float:
    """Median time to sum every float32 weight of `model` once (each tensor read whole, in order)."""
    import torch

    tensors = [p for p in model.parameters() if p.dtype == torch.float32]
    times = []
    with torch.inference_mode():
        for _ in range(repeats + 1):
            start = time.perf_counter()
            total = torch.zeros(())
            for t in tensors:
                total += t.sum()
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times[1:])


def alone_tokens_per_s(pair) -> float:
    """The target alone on `pair`'s runtime (greedy), every prompt, tokens per second (benchmarks.runtime's count)."""
    import specviz
    from benchmarks import runtime

    return runtime.alone_tokens_per_s(pair, PROMPTS, specviz.SpecConfig(mode="greedy", max_new_tokens=MAX_NEW))


def generate_tokens_per_s(pair) -> float:
    """transformers' greedy `generate` on the torch target, every prompt, tokens per second (wall clock)."""
    import torch

    from specviz.core.prompt import encode_prompt

    model = pair.target.model
    seconds, tokens = 0.0, 0
    for prompt in PROMPTS:
        _, ids, _ = encode_prompt(pair, prompt, None)
        inputs = torch.tensor([ids])
        with torch.inference_mode():
            model.generate(inputs, max_new_tokens=4, do_sample=False)  # warm up
            start = time.perf_counter()
            out = model.generate(inputs, max_new_tokens=MAX_NEW, min_new_tokens=MAX_NEW, do_sample=False)
            seconds += time.perf_counter() - start
        tokens += out.shape[1] - len(ids)
    return tokens / seconds


def measure(threads: int, repeats: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    os.environ.setdefault("SPECVIZ_LLAMA_THREADS", str(threads))
    import specviz
    from specviz.analysis.passes import pass_times
    from specviz.core.prompt import encode_prompt
    from specviz.models import llamacpp

    reference = specviz.load_pair("embedded", "embedded", runtime="torch")
    fast = specviz.load_pair("embedded", "embedded", runtime="llama.cpp")
    _, ids, _ = encode_prompt(fast, PROMPTS[0] + " " + PROMPTS[1], None)
    floor = weights_read_ms(reference.target.model, repeats)
    times = pass_times(fast, ids, [1, 5], repeats)
    alone = alone_tokens_per_s(fast)
    generate = generate_tokens_per_s(reference)
    return {
        "date": date.today().isoformat(),
        "cpu": cpu_name(),
        "threads": threads,
        "llama_cpu_variant": llamacpp.cpu_variant(),
        "weights_read_ms": round(floor, 2),
        "T1_ms": round(times[1].value, 2),
        "T5_ms": round(times[5].value, 2),
        "T1_over_floor": round(times[1].value / floor, 2),
        "target_alone_tokens_per_s": round(alone, 2),
        "hf_generate_tokens_per_s": round(generate, 2),
        "alone_over_generate": round(alone / generate, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    result = measure(args.threads, args.repeats)
    print(json.dumps(result))
    print(
        f"{result['cpu']}, {args.threads} threads, llama.cpp CPU variant {result['llama_cpu_variant']}: "
        f"weights read {result['weights_read_ms']} ms; T(1) {result['T1_ms']} ms "
        f"({result['T1_over_floor']}× the read), T(5) {result['T5_ms']} ms; target alone "
        f"{result['target_alone_tokens_per_s']} tokens/s against HF generate {result['hf_generate_tokens_per_s']} "
        f"({result['alone_over_generate']}×)"
    )
    if args.json:
        with open(args.json, "a") as out:
            out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
