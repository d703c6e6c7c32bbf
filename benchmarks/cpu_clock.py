"""Can a pass be timed by its thread's CPU clock on a busy machine? (issue 63.1, "timings that cannot count waiting")

The embedded target's one-token pass and its pass over 5 tokens, and the learned draft's forward, on one thread,
each timed two ways at once: the wall clock (`time.perf_counter`) and the calling thread's CPU clock
(`time.thread_time`, which does not run while the thread waits for a core). First quiet, then beside N busy loops
(plain Python processes spinning, as many as asked, started and stopped here). If the CPU clock beside busy loops
agrees with the quiet wall clock, a pass could be costed on a busy machine; where it does not (the wait is not the
only cost: a shared core's caches and memory bandwidth), only a quiet calibration can be trusted.

One run on this machine, medians of `--repeats`; ratios only. Never asserted in a test.
Usage: python -m benchmarks.cpu_clock [--runtime llama.cpp] [--busy 1,2] [--repeats 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def busy_loops(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--draft", default="embedded")
    parser.add_argument("--busy", default="1,2")
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    import torch

    import specviz
    from specviz.analysis.busy import machine
    from specviz.analysis.pairtimes import timing_ids

    torch.set_num_threads(1)
    pair = specviz.load_pair("embedded", args.draft, runtime=args.runtime)
    ids = timing_ids(pair)
    head = len(ids) - 6
    target, draft = pair.new_sessions()
    target.extend(ids[:head], keep=1)
    draft.extend(ids[: head - 1], keep=1)

    def piece(what: str) -> None:
        if what == "draft":
            draft.extend([ids[head - 1]], keep=1)
            draft.crop(head - 1)
        else:
            k = int(what)
            target.extend(ids[head : head + k], keep=k)
            target.crop(head)

    def timed(what: str) -> tuple[float, float]:
        walls, cpus = [], []
        for _ in range(args.repeats + 3):
            w, c = time.perf_counter(), time.thread_time()
            piece(what)
            cpus.append(1000 * (time.thread_time() - c))
            walls.append(1000 * (time.perf_counter() - w))
        return statistics.median(walls[3:]), statistics.median(cpus[3:])

    pieces = ("1", "5", "draft")
    threads = pair.target.capabilities.threads
    print(f"{machine()}; {pair.runtime}; target threads {threads}; {time.strftime('%Y-%m-%d')}")
    quiet = {p: timed(p) for p in pieces}
    print("quiet:  " + "; ".join(f"{p}: wall {w:.2f} ms, CPU {c:.2f} ms" for p, (w, c) in quiet.items()))
    for n in (int(x) for x in args.busy.split(",") if x):
        loops = busy_loops(n)
        try:
            time.sleep(1.0)
            busy = {p: timed(p) for p in pieces}
        finally:
            for loop in loops:
                loop.kill()
        print(
            f"{n} busy: "
            + "; ".join(
                f"{p}: wall {w:.2f} ms ({w / quiet[p][0]:.2f}× quiet wall), CPU {c:.2f} ms ({c / quiet[p][0]:.2f}×)"
                for p, (w, c) in busy.items()
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
