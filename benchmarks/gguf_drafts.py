"""Graded drafts on llama.cpp: the embedded target drafting for itself in 8, 4, 3 and 2 bits (llama.cpp's own
quantizer, specviz.models.quantize) beside the distilled one-layer draft, on held-out prompts.

For each draft and τ, greedy and lossless (T = 1): every step timed beside the target alone decoding the same tokens
(specviz.analysis.measure.paired_run: the two interleaved a step at a time, so load falls on both), the steps of
the four prompts pooled: the speedup (Σ alone / Σ speculative, a 95% bootstrap interval over steps), α, tokens per
step, c (a draft pass over a one-token target pass) and v(τ + 1) (a verify pass over a one-token pass). The best τ
per draft and mode is the one with the highest measured speedup. One run on this machine; compare only within it.
Usage: python -m benchmarks.gguf_drafts [--taus 2 3 4 6] [--drafts embedded:Q4_0 ...] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date

from benchmarks.runtime import PROMPTS

DRAFTS = ("embedded", "embedded:Q8_0", "embedded:Q4_0", "embedded:Q3_K_M", "embedded:Q2_K")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taus", type=int, nargs="+", default=[2, 3, 4, 6])
    parser.add_argument("--max-new", type=int, default=48)
    parser.add_argument("--drafts", nargs="+", default=list(DRAFTS), help="the drafts to run (default: all five)")
    parser.add_argument("--quick", action="store_true", help="two prompts, τ 2 and 4, 24 tokens")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    prompts, taus, new = (PROMPTS[:2], [2, 4], 24) if args.quick else (PROMPTS, args.taus, args.max_new)

    import torch

    import specviz
    from specviz.analysis.busy import machine
    from specviz.analysis.measure import PairedRun, draft_cost_of, paired_run, speedup_of, verify_cost_of
    from specviz.models.store import ModelStore

    torch.set_num_threads(1)  # as app.py sets it
    store = ModelStore()
    print(f"{date.today()}, {machine()}, llama.cpp, {len(prompts)} held-out prompts, {new} tokens each")
    print("draft | mode | τ | α | tokens/step | c | v(τ+1) | speedup (95%)")
    best: dict[tuple[str, str], tuple[int, str, float]] = {}
    for draft in args.drafts:
        pair = specviz.load_pair("embedded", draft, runtime="llama.cpp", store=store)
        for mode in ("greedy", "lossless"):
            for tau in taus:
                started = time.perf_counter()
                runs: list[PairedRun] = [
                    paired_run(pair, prompt, specviz.SpecConfig(tau=tau, mode=mode, max_new_tokens=new, seed=i))
                    for i, prompt in enumerate(prompts)
                ]
                steps = [s for r in runs for s in r.steps]
                alphas = [a for r in runs if (a := r.trace.metrics.alpha) is not None]
                alpha = sum(alphas) / len(alphas) if alphas else float("nan")
                emitted = sum(r.trace.metrics.emitted_tokens for r in runs)
                length = emitted / sum(r.trace.metrics.steps for r in runs)
                speed = speedup_of(steps)
                c, v = draft_cost_of(steps), verify_cost_of(steps)
                print(
                    f"{pair.draft.name} | {mode} | {tau} | {alpha:.2f} | {length:.2f} | {c.text(unit='')} | "
                    f"{v.text(unit='')} | {speed.text()}   ({time.perf_counter() - started:.0f} s)",
                    flush=True,
                )
                key = (pair.draft.name, mode)
                if key not in best or speed.value > best[key][2]:
                    best[key] = (tau, speed.text(), speed.value)
        pair.close()
    print("\nbest τ per draft and mode (measured):")
    for (name, mode), (tau, text, _) in best.items():
        print(f"  {name}, {mode}: τ = {tau}, {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
