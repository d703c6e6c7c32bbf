"""This machine's roofline fitted to the embedded target's timed passes, and a greedy τ sweep's measured speedups
beside S_v predicted from it: how close the fit (its largest error over T(1..16)) and the predictions (how many
τ agree within their interval widened by the fit's error) come on the CPU at hand, quiet or busy.

A timing, so it is reported here and never asserted in a unit test (tests/test_outlook.py checks the parts).
Usage: python -m benchmarks.calibration [--runtime torch-kernels] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", default="torch-kernels")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    import torch

    import specviz
    from specviz.analysis import outlook as ol
    from specviz.analysis.busy import machine
    from specviz.analysis.sweep import Sweep, SweepSettings
    from specviz.classroom.settings import FIRST_PROMPT
    from specviz.core.prompt import encode_prompt

    torch.set_num_threads(1)  # as app.py sets it
    pair = specviz.load_pair("embedded", "embedded", runtime=args.runtime)
    _, ids, _ = encode_prompt(pair, FIRST_PROMPT + " " + FIRST_PROMPT, None)
    cal = ol.calibrate(pair, ids, repeats=args.repeats)
    print(f"{machine()}, {pair.runtime}")
    for row in cal.rows():
        print("  " + "  ".join(f"{k}: {v}" for k, v in row.items()))
    print(cal.sentence())
    print(f"fit error (largest over the k timed): {cal.fit.max_rel_error:.3f}")
    prompts = (FIRST_PROMPT, "The cat sat on the")
    sweep = Sweep(pair, SweepSettings(taus=(1, 2, 3, 4), prompts=prompts, mode="greedy", max_new_tokens=32))
    for _ in sweep.advance():
        pass
    summary = sweep.result().summary()
    measured = [(r.tau, r.mean_acceptance_length, r.speedup) for r in summary.rows]
    rows = ol.against_measured(cal, summary.c.value, measured)
    for row in rows:
        print("  " + "  ".join(f"{k}: {v}" for k, v in row.items()))
    print(f"predictions within their widened interval: {sum(r['agrees'] for r in rows)} of {len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
