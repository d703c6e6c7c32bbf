"""A neighbour on the cores: the embedded target's passes and the target alone while other processes keep cores busy.

For each condition (nothing else running, one busy loop `python3 -c "while True: pass"`, one per core) and each
runtime variant (llama.cpp on every core with its count fixed, the old choice; llama.cpp bending to the cores free
now, the new; torch-kernels), interleaved round by round: T(1) and T(5), one pass at one cache length, and the target
alone decoding 16 tokens (tokens/s). Medians, and each condition's against the quiet one; and the share of the
pieces the disturbance signal (specviz.analysis.clock) called disturbed. One run on this machine; compare only
within it. Usage: python -m benchmarks.neighbour [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchmarks.floor import cpu_name


def variants():
    """name → a pair whose target is the embedded model on that runtime (llama.cpp: two models on one file)."""
    import specviz
    from specviz.models import embedded, llamacpp
    from specviz.models.pair import ModelPair

    bending = specviz.load_pair("embedded", "embedded", runtime="llama.cpp")
    path = embedded.ensure_f32_gguf()
    fixed = llamacpp.LlamaCppModel(path, embedded.NAME, bend=False)
    kernels = specviz.load_pair("embedded", "embedded", runtime="torch-kernels")
    return {
        "llama.cpp, threads fixed (old)": ModelPair(fixed, bending.draft, bending.codec),
        "llama.cpp, bending (new)": bending,
        "torch-kernels": kernels,
    }


def one_round(pair, ids: list[int], timer) -> dict[str, tuple[float, bool]]:
    """(ms or tokens/s, disturbed) of T(1), T(5) and the target alone, on a fresh session."""
    from specviz.analysis import clock
    from specviz.analysis.measure import TargetAlone
    from specviz.core.config import SpecConfig

    out = {}
    session = pair.target.new_session()
    head = len(ids) - 5
    session.extend(ids[:head], keep=1)
    for k in (1, 5):
        threads = clock.threads_of(pair.target, k)
        _, timed = timer.time(
            lambda k=k: session.extend(ids[head : head + k], keep=k), what="pass", tokens=k, threads=threads
        )
        session.crop(head)
        out[f"T({k}) ms"] = (timed.ms, bool(timed.disturbed()))
    alone = TargetAlone(pair, ids, SpecConfig(max_new_tokens=16, mode="greedy"), timer=timer)
    while not alone.done:
        alone.step()
    out["alone tok/s"] = (len(alone.tokens) / alone.seconds, sum(map(bool, alone.disturbed)) > len(alone.tokens) / 4)
    return out


def measure(rounds: int) -> dict:
    import torch

    from specviz.analysis import clock
    from specviz.models import cpu

    torch.set_num_threads(1)
    pairs = variants()
    first = next(iter(pairs.values()))
    ids = first.codec.encode("Write a short story about a lighthouse keeper who finds a message in a bottle." * 2)
    timer = clock.Timer(watch=cpu.watch())
    cores = len(cpu.allowed_cores())
    results: dict = {}
    for busy in (0, 1, cores):
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            time.sleep(1.0)
            raw: dict = {name: {} for name in pairs}
            for r in range(rounds + 1):
                names = list(pairs)
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    got = one_round(pairs[name], ids, timer)
                    if r:  # the first round warms up
                        for what, value in got.items():
                            raw[name].setdefault(what, []).append(value)
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()
        results[f"{busy} busy loop{'s' if busy != 1 else ''}"] = {
            name: {
                what: {
                    "median": statistics.median(v for v, _ in values),
                    "disturbed": sum(d for _, d in values) / len(values),
                }
                for what, values in by.items()
            }
            for name, by in raw.items()
        }
    return {"cpu": cpu_name(), "cores": cores, "rounds": rounds, "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    report = measure(args.rounds)
    quiet = report["results"]["0 busy loops"]
    print(f"{report['cpu']}, {report['cores']} cores, {report['rounds']} rounds (date {time.strftime('%Y-%m-%d')})")
    for condition, by in report["results"].items():
        print(f"\n{condition}")
        for name, whats in by.items():
            cells = []
            for what, m in whats.items():
                ratio = m["median"] / quiet[name][what]["median"]
                cells.append(f"{what} {m['median']:.1f} ({ratio:.2f}× quiet, {m['disturbed']:.0%} disturbed)")
            print(f"  {name}: " + "; ".join(cells))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
