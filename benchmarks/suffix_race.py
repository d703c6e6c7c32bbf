"""Suffix decoding in the Race (specviz.analysis.race), as the Race page runs it: the embedded target with the `suffix`
draft, greedy, on the preset "Suffix decoding: the same question again" (the question asked once first, untimed, into
the draft's history) and on new text (a question it has seen nothing of: a history of its own), beside prompt lookup
on the same question. Per race: the speedup over the target alone from the clean pieces (with its interval, and why
it is withheld where the race could not measure one), tokens per target pass (counted), v(τ + 1) as the race measured
it, and how many pieces waited for a core. One run each on this machine; compare only within one run.

Usage: python -m benchmarks.suffix_race [--tokens 48] [--runtime auto] [--no-lookup]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_ratio(pair, prompt: str, config) -> float:
    """Speculation's tokens per CPU second over the target alone's, each lane run on its own after its prompt was
    read (this process's CPU time: what a busy machine's waiting does not count)."""
    from specviz.analysis.measure import TargetAlone
    from specviz.core.engine import Decoder

    alone = TargetAlone(pair, prompt, config)
    start = time.process_time()
    while not alone.done:
        alone.step()
    alone_s = time.process_time() - start
    dec = Decoder(pair, prompt, config)
    start = time.process_time()
    dec.run()
    spec_s = time.process_time() - start
    return (len(dec.new_tokens) / spec_s) / (len(alone.tokens) / alone_s)


def race_row(make_pair, prompt: str, config, asked_before: bool) -> dict:
    """The race on a pair from `make_pair()` (a suffix draft: a history of its own), then the same on another."""
    from specviz.analysis.race import Race, RacePreset, ask_before
    from specviz.errors import SpecvizError

    preset = RacePreset("bench", "suffix", prompt, config.tau, "", asked_before=asked_before)
    pair = make_pair()
    ask_before(pair, preset, config)
    result = Race(pair, prompt, config).run()
    again = make_pair()  # the CPU-time measurement: the race's situation again, on a history of its own
    ask_before(again, preset, config)
    try:
        spread = result.speedup_spread()
        interval = [round(spread.low, 2), round(spread.high, 2)]
    except SpecvizError as exc:  # every piece of a lane waited for a core
        interval = str(exc)
    every = result.speculative.tokens_per_second / result.alone.tokens_per_second
    return {
        "speedup (clean pieces, as the Race shows it)": round(result.speedup, 2),
        "interval": interval,
        "withheld": result.void(),
        "speedup, every piece (wall clock, load on both lanes)": round(every, 2),
        "speedup, CPU time (each lane alone)": round(cpu_ratio(again, prompt, config), 2),
        "tokens": len(result.speculative.tokens),
        "tokens per target pass": round(result.tokens_per_pass, 2),
        "v(tau+1)": round(result.verify_cost, 2),
        "one-token pass ms": round(result.one_token_ms, 1),
        "draft ms per drafted token": round(result.draft_ms_per_token, 2),
        "pieces waited (alone, speculative)": [result.alone.disturbed_count, result.speculative.disturbed_count],
        "same text": result.same_text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--no-lookup", action="store_true", help="leave out prompt lookup's race")
    args = parser.parse_args()
    # torch as the app runs it: one thread a pass, OpenMP waiting passively (docs/performance.md, "Suffix decoding":
    # with torch's default two threads on two busy cores, a pass over 9 tokens took 6 to 8 one-token passes)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    import specviz
    from specviz.analysis.race import BY_LABEL
    from specviz.classroom.lessons.suffix_pays import NEW
    from specviz.drafts.suffix import SuffixHistory

    preset = BY_LABEL["Suffix decoding: the same question again"]
    config = specviz.SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=args.tokens)
    suffix = specviz.load_pair("embedded", "suffix", runtime=args.runtime)
    lookup = specviz.load_pair("embedded", "prompt-lookup", runtime=args.runtime)

    def remembering():
        history = SuffixHistory(suffix.draft.settings)
        return specviz.ModelPair(suffix.target, suffix.draft.remembering(history), suffix.codec)

    out = {
        "date": str(date.today()),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "load average": [round(x, 2) for x in os.getloadavg()],
        "runtime": suffix.runtime,
        "tau": preset.tau,
        "tokens": args.tokens,
        "suffix, the same question again": race_row(remembering, preset.prompt, config, asked_before=True),
        "suffix, new text": race_row(remembering, NEW, config, asked_before=False),
    }
    if not args.no_lookup:
        out["prompt lookup, the same question"] = race_row(lambda: lookup, preset.prompt, config, asked_before=False)
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
