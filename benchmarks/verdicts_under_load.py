"""Do the app's measured verdicts hold under a class's traffic? The same τ sweep, race and lesson, three times in a
row on one server while a class of simulated students steps on it.

A server (class mode) and `--students` students over Streamlit's own protocol (benchmarks.class_load) run; beside
them one more client, like the lecturer's browser, opens the τ sweep page from a link (τ = 1–4, one prompt, 48
tokens), the race page (its first preset: prompt lookup) and the lesson "Parallel, yet slow", presses Run or Start
in a fresh session each round, and reads the verdict the page shows. Two verdicts contradict when one names a best
τ that the other's within-noise set leaves out, or one says "faster" where another says "slower"; "within noise"
contradicts nothing. A speedup above the run's tokens per step is refused by the library (check_bounds), so it
would show as an error on the page: errors are counted.

Usage: python -m benchmarks.verdicts_under_load [--students 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import threading
import time
from datetime import date
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.appserver import serve
from benchmarks.class_load import Student, class_of, page_errors

SWEEP = urlencode({"sweep_taus": "1-4", "sweep_seeds": 1, "sweep_max_new": 48, "sweep_prompts": "Write a short story."})
LESSON = urlencode({"lessons_lesson": "low-speedup"})


def taus_named(verdict: str) -> set[int]:
    """The τ a sweep verdict calls best: one ("best τ = 3") or those within noise of each other."""
    if m := re.search(r"best τ = (\d+)", verdict.split(" Predicted")[0]):
        return {int(m.group(1))}
    if m := re.search(r"τ = ([\d, and]+) are within noise of each other", verdict):
        return {int(t) for t in re.findall(r"\d+", m.group(1))}
    return set()


def word(verdict: str) -> str:
    head = verdict.split(" Predicted")[0]
    return (
        "faster" if "faster than" in head and "slower" not in head else "slower" if "slower than" in head else "noise"
    )


async def one_round(url: str) -> dict:
    from benchmarks.stclient import StreamlitClient

    out: dict = {"errors": []}
    for name, page, query, button in (
        ("sweep", "sweep", SWEEP, "sweep_run"),
        ("race", "race", "", "race_start"),
        ("lesson", "lessons", LESSON, "lessons_run"),
    ):
        client = StreamlitClient(url)
        try:
            await client.connect(query_string=query, page_name=page, timeout=600)
            start = time.perf_counter()
            await client.click(button, timeout=1800)
            out[f"{name}_s"] = time.perf_counter() - start
            out[name] = [a for a in client.alerts() if a] + [m for m in client.markdown() if "premise" in m]
            out["errors"] += page_errors(client)
        finally:
            await client.close()
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
    rounds = []
    with serve(args.out / "server.log", env={"SPECVIZ_CLASS_MODE": "1"}) as url:
        class_of(url, [Student(10_000)], 1.0, 0.5)  # the pair loaded before the class arrives
        students = [Student(i) for i in range(args.students)]
        traffic = threading.Thread(target=class_of, args=(url, students, 3600.0, 10.0), daemon=True)
        traffic.start()
        time.sleep(15)
        for i in range(args.repeats):
            rounds.append(asyncio.run(one_round(url)))
            r = rounds[-1]
            print(f"  round {i + 1} ({r['sweep_s']:.0f} s, {r['race_s']:.0f} s, {r['lesson_s']:.0f} s):", flush=True)
            for name in ("sweep", "race", "lesson"):
                print(f"    {name}: {' | '.join(t[:160] for t in r[name])}", flush=True)
    sweeps = [next((t for t in r["sweep"] if t.startswith("Measured")), "") for r in rounds]
    bests = [taus_named(v) for v in sweeps]
    sweep_words = [word(v) for v in sweeps]
    race_words = [word(next((t for t in r["race"] if "Speculative decoding was" in t), "")) for r in rounds]
    lessons = [
        "held"
        if any("It held" in t for t in r["lesson"])
        else "not shown"
        if any("did not show" in t for t in r["lesson"])
        else "?"
        for r in rounds
    ]
    clash = lambda ws: "faster" in ws and "slower" in ws  # noqa: E731
    sweep_ok = all(a & b for a in bests for b in bests) and all(bests) and not clash(sweep_words)
    race_ok = not clash(race_words)
    errors = [e for r in rounds for e in r["errors"]]
    print(f"sweep: best τ {[sorted(b) for b in bests]}, {sweep_words}: {'consistent' if sweep_ok else 'CONTRADICTORY'}")
    print(f"race: {race_words}: {'consistent' if race_ok else 'CONTRADICTORY'}")
    print(f"lesson 'Parallel, yet slow': premise {lessons}")
    print(f"errors on the pages: {errors or 'none'}")
    return 0 if sweep_ok and race_ok and not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
