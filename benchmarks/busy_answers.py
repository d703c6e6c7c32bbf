"""Issue 63's Done-when on the machine at hand: after one quiet calibration kept on disk, do the timed lessons, the
Race and the CLI sweep answer with counted work at the kept costs beside busy loops, in a fresh process?

1. Quiet: the embedded pair (runtime auto) calibrated once into a fresh timings folder (SPECVIZ_TIMINGS_DIR), as any
   page or command line keeps it, and one quiet visit to each timed lesson (a quiet lesson run keeps the calibration
   of each pair it runs where none is kept: its self-draft, its roles swapped, its quantized drafts).
2. Beside `--busy` busy loops (plain Python processes spinning), a fresh interpreter reading that folder runs every
   timed lesson as the Lessons page does (`lesson.run(pair, load, kept)`, `kept` the book's timings of a pair), the
   Race's first preset (`Race(...).run()`: its own verdict where its pieces were clean, else the counted work at the
   kept costs, as the page shows it), and `python -m specviz sweep --taus 1-4` (what it prints).

Prints, for each, the first line of what it answered, and whether it was an answer from kept costs, a live time, or
only a refusal. One run on this machine; never asserted in a test (tests/test_lessons.py, test_race.py and
test_sweep.py check the same paths with a FakeTimer's disturbed pieces).
Usage: python -m benchmarks.busy_answers [--busy 2] [--runtime auto]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import os, sys
import specviz
from specviz.analysis.pairtimes import TimingBook
from specviz.analysis.race import PRESETS, Race
from specviz.classroom.lessons import LESSONS
from specviz.errors import SpecvizError

runtime = sys.argv[1]
pair = specviz.load_pair("embedded", "embedded", runtime=runtime)
book = TimingBook(os.environ["SPECVIZ_TIMINGS_DIR"])
kept = book.get(pair)
print("kept calibration:", kept.label() if kept else "none")


def load(target, draft, runtime=None):
    return specviz.load_pair(target, draft, runtime=runtime or pair.runtime)


for lesson in (lesson for lesson in LESSONS if lesson.timed):
    try:
        evidence = lesson.run(pair, load, lambda p: book.get(p) or book.measure(p))  # as pages/_timings.kept
        print(f"lesson {lesson.key}: ANSWERED: " + evidence.finding.replace(chr(10), " ")[:400])
    except SpecvizError as exc:
        print(f"lesson {lesson.key}: REFUSED: {type(exc).__name__}: {str(exc)[:300]}")
preset = PRESETS[0]
race_pair = specviz.load_pair(preset.target, preset.draft, runtime=runtime)
config = specviz.SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=48)
result = Race(race_pair, preset.prompt, config, preset.chat).run()
race_kept = book.get(race_pair)
try:
    print("race: LIVE: " + result.summary(race_kept))
except SpecvizError as exc:
    print(f"race: live time withheld ({str(exc)[:160]})")
    print("race: FROM KEPT COSTS: " + (result.costed(race_kept).sentence() if race_kept else "no calibration kept"))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--runtime", default="auto")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    import specviz
    from specviz.analysis.busy import machine
    from specviz.analysis.pairtimes import TimingBook
    from specviz.analysis.race import PRESETS

    folder = tempfile.mkdtemp(prefix="specviz-timings-")
    env = {**os.environ, "SPECVIZ_TIMINGS_DIR": folder, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    print(f"{machine()}; {time.strftime('%Y-%m-%d')}; timings kept in {folder}")
    book = TimingBook(folder)
    for target, draft in (("embedded", "embedded"), (PRESETS[0].target, PRESETS[0].draft)):
        kept = book.measure(specviz.load_pair(target, draft, runtime=args.runtime))
        print(f"quiet calibration of {target} + {draft}: {kept.label()}")
    visit = subprocess.run(  # one quiet visit to each timed lesson: the pairs they load are calibrated and kept
        [sys.executable, "-c", CHILD, args.runtime, "quiet"], env=env, capture_output=True, text=True, timeout=1800
    )
    print("a quiet visit to every timed lesson first:\n" + visit.stdout.strip())
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        time.sleep(1.0)
        child = subprocess.run(
            [sys.executable, "-c", CHILD, args.runtime, "busy"], env=env, capture_output=True, text=True, timeout=1800
        )
        print(f"beside {args.busy} busy loops, a fresh process:")
        print(child.stdout.strip())
        if child.returncode:
            print(child.stderr[-2000:])
        sweep = subprocess.run(
            [
                sys.executable,
                "-m",
                "specviz",
                "sweep",
                "--taus",
                "1-4",
                "--max-new-tokens",
                "32",
                "--prompt",
                "Write a Python function that reverses a list.",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        print("sweep (stdout):\n" + sweep.stdout.strip())
        print("sweep (stderr, last lines):\n" + "\n".join(sweep.stderr.strip().splitlines()[-4:]))
    finally:
        for loop in loops:
            loop.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
