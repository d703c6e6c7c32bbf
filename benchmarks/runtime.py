"""The runtimes that can run the embedded pair, measured side by side as docs/algorithm.md's cost model reads them.

For each candidate (eager torch, the reference, with 1 and 2 threads; torch with every Linear of the
target on the kernel timed fastest for its shape and row count, specviz.models.kernels; llama.cpp in
process with the draft's lean forward, 1 and 2 threads), at a realistic context (two chat prompts,
about 80 tokens):
- T(k): the target's time for one pass over k = 1…9 tokens (median of `--repeats`), v(k) = T(k) / T(1);
- the distilled draft's time per draft token (from the runs' traces);
- target-alone tokens/s (plain decoding, 48 tokens per prompt, wall clock, same runtime, same process);
- the embedded pair's speedup over the target alone at each τ = 1…6, greedy and textbook (T = 1), on
  held-out prompts of four kinds (story, instruction, code, fact), wall clock of whole steps;
- prompt lookup (greedy) on each of the race's input-grounded prompts at its own τ;
- for every candidate but eager torch: the largest |Δp| against it over every position of the prompts.

Each candidate runs in a fresh interpreter (thread counts are per process). One run each on this
machine; compare only within one run.
Usage: python -m benchmarks.runtime [--repeats 7] [--quick] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import date

PROMPTS = (  # held out from the draft's training prompts: four kinds
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain in three sentences how a refrigerator keeps food cold.",
    "Write a Python function that returns the n-th Fibonacci number.",
    "What is the capital of Australia, and why was it chosen?",
)
CANDIDATES = {  # name: (runtime, threads)
    "torch (eager), 1 thread": ("torch", 1),
    "torch (eager), 2 threads": ("torch", 2),
    "torch + per-shape kernels + lean draft, 1 thread": ("torch-kernels", 1),
    "llama.cpp + lean draft, 1 thread": ("llama.cpp", 1),
    "llama.cpp + lean draft, 2 threads": ("llama.cpp", 2),
}
MAX_NEW = 48


def alone_tokens_per_s(pair, prompts, config) -> float:
    from specviz.analysis.measure import TargetAlone

    seconds, tokens = 0.0, 0
    for prompt in prompts:
        alone = TargetAlone(pair, prompt, config)
        while not alone.done:
            alone.step()
        seconds, tokens = seconds + alone.seconds, tokens + len(alone.tokens)
    return tokens / seconds


def _spec(pair, prompts, config) -> tuple[float, float, int]:
    """(tokens/s over whole steps, wall clock; draft ms; drafted tokens)."""
    import specviz

    seconds, tokens, draft_ms, drafted = 0.0, 0, 0.0, 0
    for prompt in prompts:
        decoder = specviz.Decoder(pair, prompt, config)
        start = time.perf_counter()
        while not decoder.done:
            decoder.step()
        seconds += time.perf_counter() - start
        run = decoder.trace()
        tokens += run.metrics.emitted_tokens
        draft_ms, drafted = draft_ms + run.metrics.draft_ms, drafted + run.metrics.drafted_tokens
    return tokens / seconds, draft_ms, drafted


def measure(runtime: str, repeats: int, taus: tuple[int, ...], threads: int) -> dict:
    """In this process, torch's thread count already set; llama.cpp's handed to the model."""
    import specviz
    from specviz.analysis.passes import pass_times
    from specviz.analysis.race import PRESETS as RACES
    from specviz.core.prompt import encode_prompt
    from specviz.loading import LoadSettings
    from specviz.models.llamacpp import LlamaSettings

    llama = LoadSettings(llama=LlamaSettings(threads=threads))
    pair = specviz.load_pair("embedded", "embedded", runtime=runtime, settings=llama)
    _, ids, _ = encode_prompt(pair, PROMPTS[0] + " " + PROMPTS[1], None)
    times = {k: t.value for k, t in pass_times(pair, ids, list(range(1, 10)), repeats).items()}  # medians
    out: dict = {
        "T_ms": {k: round(v, 2) for k, v in times.items()},
        "v": {k: round(times[k] / times[1], 3) for k in times},
    }
    draft_ms, drafted = 0.0, 0
    for mode in ("greedy", "textbook"):
        base = specviz.SpecConfig(mode=mode, temperature=1.0, max_new_tokens=MAX_NEW)
        alone = alone_tokens_per_s(pair, PROMPTS, base)
        speedups = {}
        for tau in taus:
            rate, ms, n = _spec(
                pair, PROMPTS, specviz.SpecConfig(tau=tau, mode=mode, temperature=1.0, max_new_tokens=MAX_NEW)
            )
            speedups[tau] = round(rate / alone, 3)
            draft_ms, drafted = draft_ms + ms, drafted + n
        best = max(speedups, key=speedups.get)
        out[mode] = {
            "target_alone_tokens_per_s": round(alone, 2),
            "speedup_by_tau": speedups,
            "best": {"tau": best, "speedup": speedups[best]},
        }
    out["target_alone_tokens_per_s"] = out["greedy"]["target_alone_tokens_per_s"]
    out["draft_ms_per_token"] = round(draft_ms / drafted, 2)
    lookup = specviz.load_pair("embedded", "prompt-lookup", runtime=runtime)
    out["prompt_lookup"] = {}  # each input-grounded race prompt at its own τ
    for race in (r for r in RACES if r.draft == "prompt-lookup"):
        greedy = specviz.SpecConfig(mode="greedy", tau=race.tau, max_new_tokens=MAX_NEW)
        alone = alone_tokens_per_s(lookup, [race.prompt], greedy)
        out["prompt_lookup"][race.label] = round(_spec(lookup, [race.prompt], greedy)[0] / alone, 3)
    if runtime != "torch":
        reference = specviz.load_pair("embedded", "embedded", runtime="torch")
        worst = 0.0
        for prompt in PROMPTS:
            _, prompt_ids, _ = encode_prompt(pair, prompt, None)
            p_fast = pair.target.new_session().extend(prompt_ids).softmax(-1)
            p_ref = reference.target.new_session().extend(prompt_ids).softmax(-1)
            worst = max(worst, float((p_fast - p_ref).abs().max()))
        out["max_abs_dp"] = worst
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="τ = 3 and 4 only")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", default=None, choices=list(CANDIDATES), help="candidates to run")
    args = parser.parse_args(argv)
    taus = (3, 4) if args.quick else tuple(range(1, 7))
    if args.child:
        import torch

        runtime, threads = CANDIDATES[args.child]
        torch.set_num_threads(threads)
        print(json.dumps(measure(runtime, args.repeats, taus, threads)))
        return 0
    results = {}
    for name in args.only or CANDIDATES:
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        cmd = [sys.executable, "-m", "benchmarks.runtime", "--child", name, "--repeats", str(args.repeats)]
        done = subprocess.run(cmd + (["--quick"] if args.quick else []), env=env, capture_output=True, text=True)
        if done.returncode:
            print(
                f"{name}: failed ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode})"
            )
            continue
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"Runtime candidates, {date.today()}, {os.cpu_count()} cores ({platform.machine()}), embedded pair")
    print(
        "| runtime | T(1) ms | T(5) ms | v(5) | draft ms/token | target alone tok/s | greedy best | textbook best |"
        " prompt lookup: repeat / quote / code | max |Δp| |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        t, v = r["T_ms"], r["v"]
        g, b, pl = r["greedy"]["best"], r["textbook"]["best"], r["prompt_lookup"]
        dp = f"{r['max_abs_dp']:.1e}" if "max_abs_dp" in r else "(reference)"
        cells = [
            f"{t['1']:.1f}",
            f"{t['5']:.1f}",
            f"{v['5']:.2f}",
            f"{r['draft_ms_per_token']:.1f}",
            f"{r['target_alone_tokens_per_s']:.1f}",
            f"{g['speedup']:.2f}× (τ = {g['tau']})",
            f"{b['speedup']:.2f}× (τ = {b['tau']})",
            " / ".join(f"{x:.2f}×" for x in pl.values()),
            dp,
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
