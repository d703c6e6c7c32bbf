"""Do the app's measured verdicts hold under a class's traffic? The same τ sweep, race and lesson, three times in a
row, while a class of simulated students steps on a real server on the same machine.

A server (class mode) and `--students` students over Streamlit's own protocol run in the background
(benchmarks.class_load); meanwhile this process runs, on the embedded pair and the same runtime as the app, three
times each: the τ sweep (τ = 1–4, one prompt, 48 tokens), the race's first preset (prompt lookup) and the lesson
"Parallel, yet slow". A verdict contradicts another when one run names a best τ that another's interval rules out
(their sets of τ within noise of the best do not meet), or one says "faster" where another says "slower"; "within
noise" never contradicts. It also checks that no shown speedup exceeds the run's tokens per step.

Usage: python -m benchmarks.verdicts_under_load [--students 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from datetime import date
from pathlib import Path

from benchmarks.appserver import serve
from benchmarks.class_load import Student, class_of


def contradictory(words: list[str]) -> bool:
    return any("faster" in a for a in words) and any("slower" in a for a in words)


def run_all(repeats: int) -> dict[str, list]:
    import torch

    import specviz
    from specviz.analysis.measure import against_one
    from specviz.analysis.race import PRESETS, Race
    from specviz.analysis.sweep import Sweep, SweepSettings
    from specviz.classroom.lessons import BY_KEY

    torch.set_num_threads(int(os.environ.get("SPECVIZ_TORCH_THREADS", "1")))
    pair = specviz.load_pair("embedded", "embedded")
    preset = PRESETS[0]
    lookup = specviz.load_pair("embedded", preset.draft, runtime=pair.runtime)
    out: dict[str, list] = {"sweep": [], "race": [], "lesson": [], "above_tokens": []}
    for i in range(repeats):
        summary = Sweep(pair, SweepSettings(taus=(1, 2, 3, 4), prompts=("Write a short story about a cat.",))).run()
        summary = summary.summary()
        best = summary.best_tau_measured()
        ties = summary.within_noise_of_best()
        out["sweep"].append((best, ties, against_one(summary.row(best).speedup), summary.verdict()))
        for row in summary.rows:
            if row.speedup is not None and row.speedup.value > row.mean_acceptance_length + 1e-9:
                out["above_tokens"].append(("sweep", i, row.tau, row.speedup.value, row.mean_acceptance_length))
        race = Race(lookup, preset.prompt, specviz.SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=64))
        result = race.run()
        spread = result.speedup_spread()
        out["race"].append((against_one(spread), spread.text(), result.summary()))
        if spread.value > result.tokens_per_pass + 1e-9:
            out["above_tokens"].append(("race", i, spread.value, result.tokens_per_pass))
        lesson = BY_KEY["low-speedup"]
        evidence = lesson.run(pair, lambda t, d, runtime=None: specviz.load_pair(t, d, runtime=runtime or pair.runtime))
        out["lesson"].append((evidence.held, evidence.finding))
        print(f"  round {i + 1}: sweep {out['sweep'][-1][:3]}; race {out['race'][-1][:2]}; lesson held {evidence.held}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("runs/verdicts"))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    from specviz.analysis.snapshot import machine

    print(f"verdicts under load, {date.today()}, {machine()}, {args.students} students stepping beside", flush=True)
    with serve(args.out / "server.log", env={"SPECVIZ_CLASS_MODE": "1"}) as url:
        class_of(url, [Student(10_000)], 1.0, 0.5)  # the server's pair loaded before the class arrives
        students = [Student(i) for i in range(args.students)]
        traffic = threading.Thread(target=class_of, args=(url, students, 3600.0, 10.0), daemon=True)
        traffic.start()
        time.sleep(15)
        results = run_all(args.repeats)
    bests = [set(ties) for _, ties, _, _ in results["sweep"]]
    sweep_ok = all(a & b for a in bests for b in bests) and not contradictory([w for _, _, w, _ in results["sweep"]])
    race_ok = not contradictory([w for w, _, _ in results["race"]])
    lessons = {held for held, _ in results["lesson"]}
    print(f"sweep: best τ sets {[sorted(b) for b in bests]}, {'no contradiction' if sweep_ok else 'CONTRADICTION'}")
    for _, _, _, verdict in results["sweep"]:
        print(f"  {verdict}")
    print(f"race: {[w for w, _, _ in results['race']]}, {'no contradiction' if race_ok else 'CONTRADICTION'}")
    print(f"lesson 'Parallel, yet slow': premise held {sorted(map(str, lessons))}")
    print(f"speedups above the run's tokens per step: {results['above_tokens'] or 'none'}")
    return 0 if sweep_ok and race_ok and not results["above_tokens"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
