"""Suffix decoding in the Race (specviz.analysis.race), as the Race page runs it: the embedded target with the `suffix`
draft, greedy, on the preset "Suffix decoding: the same question again" (the question asked once first, untimed, into
the draft's history) and on new text (a question it has seen nothing of: a history of its own), beside prompt lookup
on the same question. Per race: the speedup over the target alone from the clean pieces (with its interval, and why
it is withheld where the race could not measure one), tokens per target pass (counted), v(τ + 1) as the race measured
it, and how many pieces waited for a core. One run each on this machine; compare only within one run.

Usage: python -m benchmarks.suffix_race [--tokens 48] [--runtime auto]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import date


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def race_row(pair, prompt: str, config, asked_before: bool) -> dict:
    from specviz.analysis.race import Race, RacePreset, ask_before

    preset = RacePreset("bench", "suffix", prompt, config.tau, "", asked_before=asked_before)
    ask_before(pair, preset, config)
    result = Race(pair, prompt, config).run()
    spread = result.speedup_spread()
    return {
        "speedup": round(result.speedup, 2),
        "interval": [round(spread.low, 2), round(spread.high, 2)],
        "withheld": result.void(),
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
    args = parser.parse_args()

    import specviz
    from specviz.analysis.race import BY_LABEL
    from specviz.classroom.lessons.suffix_pays import NEW
    from specviz.drafts.suffix import SuffixHistory

    preset = BY_LABEL["Suffix decoding: the same question again"]
    config = specviz.SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=args.tokens)
    suffix = specviz.load_pair("embedded", "suffix", runtime=args.runtime)
    lookup = specviz.load_pair("embedded", "prompt-lookup", runtime=args.runtime)

    def remembering(pair):
        history = SuffixHistory(pair.draft.settings)
        return specviz.ModelPair(pair.target, pair.draft.remembering(history), pair.codec)

    out = {
        "date": str(date.today()),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "load average": [round(x, 2) for x in os.getloadavg()],
        "runtime": suffix.runtime,
        "tau": preset.tau,
        "tokens": args.tokens,
        "suffix, the same question again": race_row(remembering(suffix), preset.prompt, config, asked_before=True),
        "suffix, new text": race_row(remembering(suffix), NEW, config, asked_before=False),
        "prompt lookup, the same question": race_row(lookup, preset.prompt, config, asked_before=False),
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
