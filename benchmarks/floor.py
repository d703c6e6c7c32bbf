"""The embedded target on llama.cpp against this CPU's floor and against Hugging Face `generate` (issue 44).

In this process, with every core (`--threads`, default 2) for both torch and llama.cpp:
- the floor: torch sums every float32 weight of the target (540 MB) once, on every core (and, for reference, on
  one); a one-token pass must read them all, so its time bounds T(1) from below (memory bandwidth);
- llama.cpp's T(1) and T(5) (one pass over 1 and 5 tokens at a ~80-token context), on the thread counts the app
  chooses, and which of ggml's CPU variants ran them (none: a build with one CPU library linked in). The reads
  and the passes alternate round by round (`--repeats` rounds): T(1) / read is the median of each round's own
  ratio, so a load that comes and goes on a shared machine does not land on one side only;
- the target alone on llama.cpp (plain greedy decoding, 48 tokens on each of benchmarks.runtime's four held-out
  prompts, wall clock) against `model.generate` of the same float32 weights in transformers (greedy, the same 48
  tokens' budget, the same prompts), tokens per second.
Run it once per llama.cpp build on a quiet machine, the builds back to back, and compare within those runs.
Usage: python -m benchmarks.floor [--threads 2] [--repeats 40] [--json FILE]
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


def weights_read(tensors) -> float:
    """ms to sum every tensor of `tensors` once (each read whole, in order)."""
    import torch

    with torch.inference_mode():
        start = time.perf_counter()
        total = torch.zeros(())
        for t in tensors:
            total += t.sum()
        return (time.perf_counter() - start) * 1000


def beside(model, fast, ids, threads: int, repeats: int) -> dict[str, list[float]]:
    """Round by round, after one warm-up round: torch reads every float32 weight of `model` on `threads` threads
    and on one, then `fast` (the llama.cpp target) passes over 1 and over 5 tokens at the same cache length, so a
    load that comes and goes on this shared machine hits the floor and the passes alike. Torch runs on one
    thread between reads, as the app runs it (its idle OpenMP workers would otherwise spin on the cores
    llama.cpp's threads use). Each list holds one time (ms) per round."""
    import torch

    tensors = [p for p in model.parameters() if p.dtype == torch.float32]
    head = len(ids) - 5
    session = fast.target.new_session()
    session.extend(list(ids[:head]), keep=1)
    times: dict[str, list[float]] = {"read": [], "read1": [], "T1": [], "T5": []}
    try:
        for round_ in range(repeats + 1):
            torch.set_num_threads(threads)
            read = weights_read(tensors)
            torch.set_num_threads(1)
            read1 = weights_read(tensors)
            passes = {}
            for k in (1, 5) if round_ % 2 else (5, 1):
                start = time.perf_counter()
                session.extend(list(ids[head : head + k]), keep=k)
                passes[k] = (time.perf_counter() - start) * 1000
                session.crop(head)
            if round_:
                for name, value in (("read", read), ("read1", read1), ("T1", passes[1]), ("T5", passes[5])):
                    times[name].append(value)
    finally:
        session.close()
    return times


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

    torch.set_num_threads(1)  # as the app runs torch; the reads set their own count
    import specviz
    from specviz.core.prompt import encode_prompt
    from specviz.loading import LoadSettings
    from specviz.models import llamacpp

    reference = specviz.load_pair("embedded", "embedded", runtime="torch")
    llama = llamacpp.LlamaSettings(threads=int(os.environ.get("SPECVIZ_LLAMA_THREADS", threads)))  # as before
    fast = specviz.load_pair("embedded", "embedded", runtime="llama.cpp", settings=LoadSettings(llama=llama))
    _, ids, _ = encode_prompt(fast, PROMPTS[0] + " " + PROMPTS[1], None)
    times = beside(reference.target.model, fast, ids, threads, repeats)
    median = {name: statistics.median(values) for name, values in times.items()}
    ratios = [t / r for t, r in zip(times["T1"], times["read"], strict=True)]
    alone = alone_tokens_per_s(fast)
    torch.set_num_threads(threads)  # generate gets every core too
    generate = generate_tokens_per_s(reference)
    return {
        "date": date.today().isoformat(),
        "cpu": cpu_name(),
        "threads": threads,
        "llama_cpu_variant": llamacpp.cpu_variant(),
        "one_token_threads": fast.target.one_token_threads(threads),
        "weights_read_ms": round(median["read"], 2),
        "weights_read_one_thread_ms": round(median["read1"], 2),
        "T1_ms": round(median["T1"], 2),
        "T5_ms": round(median["T5"], 2),
        "T1_over_floor": round(statistics.median(ratios), 2),
        "T1_over_floor_iqr": [round(float(q), 2) for q in statistics.quantiles(ratios, n=4)[::2]],
        "target_alone_tokens_per_s": round(alone, 2),
        "hf_generate_tokens_per_s": round(generate, 2),
        "alone_over_generate": round(alone / generate, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    result = measure(args.threads, args.repeats)
    print(json.dumps(result))
    print(
        f"{result['cpu']}, {args.threads} threads, llama.cpp CPU variant {result['llama_cpu_variant']}: "
        f"weights read {result['weights_read_ms']} ms (one thread {result['weights_read_one_thread_ms']}); "
        f"T(1) {result['T1_ms']} ms on {result['one_token_threads']} thread(s) ({result['T1_over_floor']}× the read "
        f"of its round, interquartile {result['T1_over_floor_iqr']}), T(5) {result['T5_ms']} ms; target alone "
        f"{result['target_alone_tokens_per_s']} tokens/s against HF generate {result['hf_generate_tokens_per_s']} "
        f"({result['alone_over_generate']}×)"
    )
    if args.json:
        with open(args.json, "a") as out:
            out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
