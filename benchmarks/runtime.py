"""The runtime that runs the embedded pair, measured the way SPEC.md's cost model reads it.

For each candidate runtime (today: eager torch with 1 and with 2 threads per operation, passive
waiting as the app sets it), at a realistic context (a chat prompt of about 80 tokens):
- T(k): the target's time for one pass over k = 1…9 tokens (median of `--repeats`), and v(k) = T(k) / T(1);
- the distilled draft's time per draft token (from a greedy run's trace);
- target-alone tokens/s (plain greedy decoding, 48 tokens);
- the embedded pair's measured speedup at each τ = 1…6 in greedy mode, and the best.

Each candidate runs in a fresh interpreter (torch's thread count is per process). One run each on
this machine; compare only within one run. Usage: python -m benchmarks.runtime [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import date

PROMPTS = (  # held out from the draft's training prompts: four kinds
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain in three sentences how a refrigerator keeps food cold.",
    "Write a Python function that returns the n-th Fibonacci number.",
    "What is the capital of Australia, and why was it chosen?",
)
CANDIDATES = {"eager torch, 1 thread": 1, "eager torch, 2 threads": 2}


def measure(repeats: int) -> dict:
    """In this process, with the thread count already set."""
    import specviz
    from specviz.analysis.diagnosis import pass_times
    from specviz.analysis.sweep import target_only
    from specviz.core.engine import encode_prompt

    pair = specviz.load_pair("embedded", "embedded")
    _, ids, _ = encode_prompt(pair, PROMPTS[0] + " " + PROMPTS[1], None)
    times = pass_times(pair, ids, list(range(1, 10)), repeats)
    out: dict = {
        "T_ms": {k: round(v, 2) for k, v in times.items()},
        "v": {k: round(times[k] / times[1], 3) for k in times},
    }
    alone_ms, alone_tokens = 0.0, 0
    for prompt in PROMPTS:
        base = target_only(pair, prompt, specviz.SpecConfig(mode="greedy", max_new_tokens=48))
        alone_ms, alone_tokens = alone_ms + base.decode_ms, alone_tokens + base.tokens
    out["target_alone_tokens_per_s"] = round(1000 * alone_tokens / alone_ms, 2)
    speedups, draft_ms, drafted = {}, 0.0, 0
    for tau in range(1, 7):
        spec_ms, spec_tokens = 0.0, 0
        for prompt in PROMPTS:
            run = specviz.Decoder(pair, prompt, specviz.SpecConfig(tau=tau, mode="greedy", max_new_tokens=48)).run()
            spec_ms += run.metrics.draft_ms + run.metrics.verify_ms
            spec_tokens += run.metrics.emitted_tokens
            draft_ms, drafted = draft_ms + run.metrics.draft_ms, drafted + run.metrics.drafted_tokens
        speedups[tau] = round((1000 * spec_tokens / spec_ms) / out["target_alone_tokens_per_s"], 3)
    out["draft_ms_per_token"] = round(draft_ms / drafted, 2)
    out["speedup_by_tau"] = speedups
    best = max(speedups, key=speedups.get)
    out["best"] = {"tau": best, "speedup": speedups[best]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        import torch

        torch.set_num_threads(args.child)
        print(json.dumps(measure(args.repeats)))
        return 0
    results = {}
    for name, threads in CANDIDATES.items():
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        cmd = [sys.executable, "-m", "benchmarks.runtime", "--child", str(threads), "--repeats", str(args.repeats)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"Runtime candidates, {date.today()}, {os.cpu_count()} cores ({platform.machine()}), embedded pair, greedy")
    print("| runtime | T(1) ms | T(5) ms | v(5) | v(9) | draft ms/token | target alone tok/s | best τ: speedup |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        t, v, best = r["T_ms"], r["v"], r["best"]
        cells = [f"{t['1']:.1f}", f"{t['5']:.1f}", f"{v['5']:.2f}", f"{v['9']:.2f}", f"{r['draft_ms_per_token']:.1f}",
                 f"{r['target_alone_tokens_per_s']:.1f}", f"τ = {best['tau']}: {best['speedup']:.2f}×"]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
