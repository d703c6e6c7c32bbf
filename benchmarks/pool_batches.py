"""What a shared decode costs when its runs' streams lie side by side, and when they are scattered.

A class server's pool (specviz.models.llamapool) decodes the passes of the runs that wait together in one
llama_decode. llama.cpp puts into one micro-batch only runs in consecutive streams ("equal split"), so k runs in
scattered streams cost k passes over the weights. For k = 1, 4, 8 and 16 passes of 5 tokens (τ = 4) into the
embedded target's pool, each timed as the median of interleaved rounds (CPU seconds of the thread that decodes):

- side by side: the runs in streams 0, 1, …, k − 1;
- scattered, as llama.cpp alone takes them: streams 0, 4, 8, … (the pool's line-up bypassed);
- scattered, lined up: the same streams through the pool's `decode`, which moves the runs' cells first (the
  copies are in the time; the runs are moved back between rounds, outside it).

Then `--stepping N` runs (default 8) of the embedded pair stepping at once, each in a thread of its own, as a
class server's turns step them: steps a second, the process's CPU per step, the target's pass per step (CPU of
the threads that decoded) and passes per decode.

Usage: python -m benchmarks.pool_batches [--rounds N] [--stepping N]. Pin it to a core (`taskset -c 1`) to time one
core.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from benchmarks.floor import cpu_name

SIZES = (1, 4, 8, 16)
SPREAD = 4  # scattered: every fourth stream


def measure(rounds: int) -> dict[str, dict[int, float]]:
    import specviz
    from specviz.class_policy import ClassPolicy
    from specviz.models import llamapool

    llamapool.PREFIXES = 0  # no kept prompt takes a stream
    pair = specviz.load_pair("embedded", "embedded", runtime="llama.cpp", guard=ClassPolicy(on=True))
    pool = pair.target.pool()
    runs = [pool.lease() for _ in range(max(SIZES) * SPREAD)]
    prompt = [(100 + i, i) for i in range(60)]
    for stream in runs:
        pool.decode(stream, prompt, 1)

    def passes(streams):
        return [llamapool._Pass(s, [(7 + j, 60 + j) for j in range(5)], 5) for s in streams]

    def crop(streams):
        for s in streams:
            pool.crop(s, 60)

    def direct(streams) -> float:  # one llama_decode of the group as it is
        clock = time.thread_time()
        pool._run(passes(streams))
        took = time.thread_time() - clock
        crop(streams)
        return took

    def lined(streams) -> float:  # the pool's decode: waiting together, lined up, decoded
        homes = [s.seq for s in streams]
        spent = []
        with pool._cond:
            pool._busy = True
        threads = [threading.Thread(target=lambda s=s: pool.decode(s, passes([s])[0].tokens, 5)) for s in streams]
        original = pool._run

        def timed(group):
            clock = time.thread_time()
            try:
                return original(group)
            finally:
                spent.append(time.thread_time() - clock)

        pool._run = timed
        for t in threads:
            t.start()
        while len(pool._waiting) < len(streams):
            time.sleep(0.001)
        with pool._cond:
            pool._busy = False
            pool._cond.notify_all()
        for t in threads:
            t.join()
        del pool._run
        crop(streams)
        with pool._cond:
            for s, home in zip(streams, homes, strict=True):  # back where they were, for the next round
                if s.seq != home:
                    pool._move(s, home)
        pool._run([llamapool._Pass(streams[0], [(7, 60)], 1)])  # llama.cpp copies at a decode: here, untimed
        crop(streams[:1])
        return sum(spent)

    kinds = {
        "side by side": (direct, lambda k: runs[:k]),
        "scattered, as llama.cpp takes them": (direct, lambda k: runs[: k * SPREAD : SPREAD]),
        "scattered, lined up": (lined, lambda k: runs[: k * SPREAD : SPREAD]),
    }
    times: dict[str, dict[int, list[float]]] = {kind: {k: [] for k in SIZES} for kind in kinds}
    for round_ in range(rounds + 1):  # the first round warms up
        for k in SIZES:
            order = list(kinds)
            for kind in order[round_ % 3 :] + order[: round_ % 3]:
                how, streams = kinds[kind]
                took = how(streams(k))
                if round_:
                    times[kind][k].append(took)
    return {kind: {k: statistics.median(v) for k, v in by.items()} for kind, by in times.items()}


def stepping(runs: int, steps: int = 16) -> dict[str, float]:
    """`runs` Decoders of the embedded pair in class mode stepping at once (after a first step each, untimed)."""
    import specviz
    from specviz.class_policy import ClassPolicy
    from specviz.models import llamapool

    pair = specviz.load_pair("embedded", "embedded", runtime="llama.cpp", guard=ClassPolicy(on=True))
    prompt = "Write a long story about a robot who learns to paint."
    configs = [specviz.SpecConfig(tau=4, max_new_tokens=96, seed=i) for i in range(runs)]
    decoders = [specviz.Decoder(pair, prompt, config) for config in configs]
    for decoder in decoders:
        decoder.step()
    pool = pair.target.pool()
    decodes, passes = pool.decodes, pool.passes
    spent, taken = [], []
    original = llamapool.SlotPool._run

    def timed(self, group):
        clock = time.thread_time()
        try:
            return original(self, group)
        finally:
            spent.append(time.thread_time() - clock)

    llamapool.SlotPool._run = timed
    start = threading.Barrier(runs + 1)

    def run(decoder):
        start.wait()
        for _ in range(steps):
            if decoder.done:
                break
            decoder.step()
            taken.append(1)

    threads = [threading.Thread(target=run, args=(d,)) for d in decoders]
    for t in threads:
        t.start()
    start.wait()
    cpu, wall = time.process_time(), time.perf_counter()
    for t in threads:
        t.join()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    llamapool.SlotPool._run = original
    n = len(taken)
    return {
        "steps_per_second": n / wall,
        "cpu_per_step": cpu / n,
        "target_per_step": sum(spent) / n,
        "passes_per_decode": (pool.passes - passes) / max(1, pool.decodes - decodes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stepping", type=int, default=8, help="runs stepping at once (0: skip)")
    args = parser.parse_args(argv)
    result = measure(args.rounds)
    print(f"pool decodes of k passes of 5 tokens, {cpu_name()}, median of {args.rounds} rounds, CPU ms")
    print(f"{'':36s}" + "".join(f"{f'k = {k}':>10s}" for k in SIZES))
    for kind, by in result.items():
        print(f"{kind:36s}" + "".join(f"{by[k] * 1e3:10.1f}" for k in SIZES))
    alone = result["side by side"][1]
    for kind, by in result.items():
        print(f"{kind:36s}" + "".join(f"{by[k] / (k * alone):10.2f}" for k in SIZES) + "  (of k passes alone)")
    if args.stepping:
        r = stepping(args.stepping)
        print(
            f"{args.stepping} runs stepping at once: {r['steps_per_second']:.1f} steps a second, CPU per step "
            f"{r['cpu_per_step'] * 1e3:.1f} ms, the target's pass per step {r['target_per_step'] * 1e3:.1f} ms, "
            f"{r['passes_per_decode']:.1f} passes per decode"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
