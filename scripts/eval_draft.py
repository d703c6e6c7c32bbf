"""Evaluate drafts of the embedded target on held-out prompts (never used in training).

    python scripts/eval_draft.py                                  # the default (trained) embedded draft
    python scripts/eval_draft.py --draft embedded --draft early-exit:8 --json runs/eval.json

Reports α at temperature 1, greedy agreement, mean acceptance length at τ = 4 (textbook), c and the
measured speedup of greedy speculative decoding over target-only greedy decoding at each τ, all in
one process. Timings are from one run on this machine: run it alone, nothing else on the CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from draft_prompts import eval_prompts  # noqa: E402

from specviz.draft_eval import evaluate_draft  # noqa: E402
from specviz.models import load_pair  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draft", action="append", help="draft spec (repeatable): embedded, early-exit:K or a folder")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--taus", default="1,2,3,4,5,6")
    ap.add_argument("--prompts", type=int, default=None, help="use only the first N held-out prompts")
    ap.add_argument("--json", help="also write the reports here")
    args = ap.parse_args()
    prompts = eval_prompts()[: args.prompts]
    taus = [int(t) for t in args.taus.split(",")]
    reports = []
    for spec in args.draft or ["embedded"]:
        pair = load_pair("embedded", spec, device="cpu", dtype="float32")
        report = evaluate_draft(
            pair, prompts, new_tokens=args.new_tokens, taus=taus, progress=lambda m: print("  ..", m, flush=True)
        )
        print("\n".join(report.lines()), flush=True)
        reports.append(report.to_dict())
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1) + "\n")


if __name__ == "__main__":
    main()
