"""The learned drafts' speed on the held-out prompts (issue 63.5), each draft on the runtime at hand.

Per draft: its c and the target's v(k) from one quiet calibration (specviz.analysis.pairtimes.measure_pair, as every
page keeps it), α (textbook, T = 1, τ = 4, pooled), and at each τ the greedy and the textbook (T = 1) speedup from the
work counted on the held-out prompts at those costs (specviz.analysis.counted); at the best τ of each mode, the
speedup measured on the wall clock beside it (each step timed beside the target alone decoding the same tokens,
specviz.analysis.measure.paired_run) and the ceiling with the shares lost to α and to c (specviz.analysis.theory).

Timings: one run on this machine, ratios only; run it alone (nothing else on the CPU). Never asserted in a test.
Usage: python -m benchmarks.learned_draft [--drafts embedded,embedded-int8] [--prompts 8] [--tokens 48]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drafts", default="embedded,embedded-int8:16384,embedded-int8:8192,embedded-int8")
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--prompts", type=int, default=8, help="the first N held-out prompts")
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per prompt")
    parser.add_argument("--taus", default="1,2,3,4,5,6")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    import torch

    import specviz
    from specviz.analysis.busy import machine
    from specviz.analysis.counted import costed
    from specviz.analysis.measure import speedup_of
    from specviz.analysis.pairtimes import measure_pair, timing_ids
    from specviz.core.config import SpecConfig
    from specviz.core.engine import Decoder
    from specviz.core.metrics import StepCount, compute_metrics
    from specviz.training.evaluate import paired_runs
    from specviz.training.prompts import eval_prompts

    torch.set_num_threads(1)  # as app.py sets it
    prompts = eval_prompts()[: args.prompts]
    taus = [int(t) for t in args.taus.split(",")]
    print(f"{machine()}; {len(prompts)} held-out prompts × {args.tokens} new tokens; {time.strftime('%Y-%m-%d')}")
    for spec in args.drafts.split(","):
        pair = specviz.load_pair("embedded", spec, runtime=args.runtime)
        timings = measure_pair(pair, timing_ids(pair))
        print(
            f"\n{spec} ({pair.draft.name}) on {pair.runtime}: T(1) = {timings.one_token_ms.value:.1f} ms, "
            f"c = {timings.c:.3f}, v(2..7) = " + ", ".join(f"{timings.v(k):.2f}" for k in range(2, 8))
        )
        base = SpecConfig(tau=4, mode="textbook", temperature=1.0, seed=0, max_new_tokens=args.tokens)
        for mode in ("greedy", "textbook"):
            by_tau = {}
            for tau in taus:
                config = dataclasses.replace(base, mode=mode, tau=tau)
                steps = [s for text, chat in prompts for s in Decoder(pair, text, config, chat=chat).run().steps]
                metrics = compute_metrics([StepCount.of(s) for s in steps], tau)
                by_tau[tau] = (costed(steps, timings), metrics)
            if mode == "textbook" and 4 in by_tau:
                print(f"  α (textbook, T = 1, τ = 4): {by_tau[4][1].alpha:.3f}")
            row = ", ".join(
                f"τ {t}: {c.speedup:.2f}× ({c.work.tokens_per_pass:.2f}/pass)" for t, (c, _) in by_tau.items()
            )
            print(f"  {mode}, from counted work at these costs: {row}")
            best = max(by_tau, key=lambda t: by_tau[t][0].speedup)
            _, paired = paired_runs(pair, prompts, dataclasses.replace(base, mode=mode, tau=best))
            measured = speedup_of(paired)
            print(
                f"  {mode}, best τ = {best}: {by_tau[best][0].speedup:.2f}× counted at the kept costs; measured on "
                f"the wall clock beside the target alone {measured.value:.2f}× ({measured.low:.2f}–{measured.high:.2f})"
            )
            print("  " + by_tau[best][0].ceiling(best).words())
        del pair
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
