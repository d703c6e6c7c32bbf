"""The model card (README.md) written beside an exported draft: architecture, data, the command
that made it, the training curve and the held-out evaluation."""

from __future__ import annotations

from pathlib import Path

from specviz.drafts.files import INT8_FILE, read_int8
from specviz.errors import ConfigError


def architecture(kind: str, meta: dict, stored_mb: float) -> str:
    o, vocab = meta["options"], meta["vocab_size"]
    if kind == "feature":
        return f"""- A feature-level draft (EAGLE-style, `specviz/drafts/feature.py`): at position t it reads the
  token x_t and the target's own final hidden state f_(t-1) (the LM head's input, recorded by the
  target's session while it verifies), mixes them with a trained linear map (2 x 576 -> 576), runs
  one decoder layer (initialised from the target's last layer) and its own norm, and predicts f_t.
  Inside a draft block, where the target has not yet scored the previous token, the draft's own
  prediction stands in; after verification, those positions are recomputed on the target's features.
- q = softmax of the target's own LM head rows for the {vocab} tokens the target generated most
  often in the training data (frozen). Other tokens get q = 0.
- Cost per draft token: one decoder layer + a {vocab}-row head (the target: 30 layers + 49,152 rows).
- Stored: {stored_mb:.1f} MB of fp16 tensors (`draft.safetensors`) + `draft.json`."""
    return f"""- The target's decoder layers {o["layers"]} (of 30), copied; its embeddings and rotary tables shared.
- LoRA rank {o["rank"]} on every projection of those layers, merged at load time; norms trained.
- An LM head over {vocab} tokens (initialised from the target's rows, then trained). Other tokens get q = 0.
- Stored: {stored_mb:.1f} MB of fp16 tensors (`draft.safetensors`) + `draft.json`."""


def training_text(kind: str, o: dict) -> str:
    if kind == "feature":
        return (
            f"Labels are computed per batch by the target itself: its full next-token distribution p and its\n"
            f"final hidden states f. {o['unrolls']} unrolls per batch: unroll 1 reads the target's f_(t-1) at every\n"
            "position (the first draft token's case); unroll k reads the draft's own g_(t-1) from unroll k-1 (the\n"
            "k-th draft token's case). Loss per unroll, weighted 1/k: the soft cross-entropy -sum_v p(v) log q(v)\n"
            f"over the head's vocabulary + smooth-L1 from g to f; uniform noise ({o['noise']} x rms) on unroll 1's\n"
            "input features."
        )
    return "Soft cross-entropy against the target's full distribution p, computed per batch."


def history_table(history: list[dict]) -> str:
    unrolls = len(history[0].get("alpha_unrolls", [])) if history else 0
    head = "| epoch | step | α | greedy agreement | p mass in the head |"
    head += "".join(f" α, unroll {k} |" for k in range(2, unrolls + 1))
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for h in history:
        row = f"| {h['epoch']} | {h['step']} | {h['alpha']:.3f} | {h['greedy']:.3f} | {h['vocab_mass']:.3f} |"
        row += "".join(f" {a:.3f} |" for a in h.get("alpha_unrolls", [])[1:])
        rows.append(row)
    return "\n".join(rows)


def draft_cells(report: dict) -> str:
    """The draft's name and the spec it was loaded from (`--draft` of scripts/eval_draft.py)."""
    return f"{report['draft']} | `{report['spec']}`" if report.get("spec") else f"{report['draft']} | –"


def run_of(report: dict) -> str:
    """When and where an evaluation ran, as its report records it (scripts/eval_draft.py writes both): "DATE,
    HARDWARE". ConfigError where the report names neither: a card never states a run it was not told of."""
    missing = [key for key in ("date", "hardware") if not report.get(key)]
    if missing:
        raise ConfigError(
            f"the evaluation report of {report.get('draft', 'a draft')} names no {' and no '.join(missing)}: write it "
            "again with scripts/eval_draft.py --json, which records both"
        )
    return f"{report['date']}, {report['hardware']}"


def eval_table(reports: list[dict]) -> str:
    rows = [
        "| draft | spec | α (T=1) | greedy agreement (τ=1) | mean acceptance length (greedy, τ=4) | c | best τ "
        "| speedup |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        rows.append(
            f"| {draft_cells(r)} | {r['alpha']:.3f} | {r['greedy_agreement']:.3f} | {r['mean_acceptance_length']:.2f} "
            f"| {r['c']:.3f} | {r['best_tau']} | {r['best_speedup']:.2f}× |"
        )
    return "\n".join(rows)


def speedup_table(reports: list[dict]) -> str:
    """Greedy speculative decoding's measured speedup over the target alone, per draft and τ."""
    taus = sorted({int(t) for r in reports for t in r["speedup"]})
    head = "| draft | spec | target alone |" + "".join(f" τ = {t} |" for t in taus)
    rows = [head, "|---|---|---|" + "---|" * len(taus)]
    for r in reports:
        by_tau = {int(t): s for t, s in r["speedup"].items()}
        cells = "".join(f" {by_tau[t]:.2f}× |" if t in by_tau else " – |" for t in taus)
        rows.append(f"| {draft_cells(r)} | {r['baseline_tokens_per_second']:.1f} tok/s |{cells}")
    return "\n".join(rows)


def int8_text(made: dict) -> str:
    """The card's section on the same draft in int8, from its calibration (int8.json)."""
    ranked, calibrated = made["ranked_on"], made["calibrated_on"]
    return f"""
## The same draft in int8 (`embedded-int8[:ROWS]`, the "Distilled draft in int8" preset)
Every product of the layer and the head in int8 (`specviz.drafts.lean.Int8FeatureDraft`: one scale per weight row,
x quantized at each call by fbgemm's dynamic kernel), each smoothed as SmoothQuant does (strength
{made["strength"]}) by the largest input the float32 draft saw in each channel, teacher-forced on
{calibrated["sequences"]} of the target's continuations ({calibrated["tokens"]} tokens); the head over the ROWS
(default 4,096) tokens the target generated most often in {ranked["sequences"]} continuations ({ranked["tokens"]}
tokens) of training prompts sampled at random, never the held-out ones:
```
{made["command"]}
```
Its q is its own; it reads about an eighth of the float32 draft's bytes per token (6.6 against 54.6 MB).
""" + measured_table(made.get("measured"))


def measured_table(measured: dict | None) -> str:
    """The int8 draft beside the float32 one as last measured (int8.json's `measured`: c, α, and at the best τ the
    speedup counted at the kept costs and measured on the wall clock); "" where none is recorded."""
    if not measured:
        return ""

    def cell(best: list) -> str:
        tau, counted, clocked = best
        return f"τ {tau}: {counted:.2f}× / " + ("–" if clocked is None else f"{clocked:.2f}×")

    rows = [
        "| draft | c | α (T=1, τ=4) | greedy: counted / measured | textbook T=1: counted / measured |",
        "|---|---|---|---|---|",
    ]
    rows += [
        f"| `{r['spec']}` | {r['c']:.3f} | {r['alpha']:.3f} | {cell(r['greedy'])} | {cell(r['textbook'])} |"
        for r in measured["rows"]
    ]
    return (
        f"\nMeasured by `{measured['command']}` ({measured['when']}; {measured['prompts']}): c from one quiet "
        "calibration, the speedup at the best τ counted at those costs and measured on the wall clock beside the "
        'target alone (docs/performance.md, "A cheaper learned draft"). The evaluation below is older and timed '
        "another way: its c is over that day's target pass, whatever runtime it ran on.\n\n" + "\n".join(rows) + "\n"
    )


def model_card(kind: str, meta: dict, out: Path, reports: list[dict]) -> str:
    o, data = meta["options"], meta["data"]
    stored = sum(f.stat().st_size for f in out.glob("*.safetensors")) / 1e6
    sources = "\n".join(f"  - {name}: {n} prompts" for name, n in data["prompt_sources"].items())
    card = f"""# Distilled draft for SmolLM2-135M-Instruct (the embedded target)

Made by `scripts/train_draft.py` (the logic is `specviz.drafts`); loaded by
`specviz.load_pair("embedded", "embedded")` (the app's "Embedded pair"). The untrained draft stays
selectable as `early-exit:8` ("Untrained draft" preset).

## Architecture
{architecture(kind, meta, stored)}

## Data
The target's own continuations (up to {data["new_tokens"]} new tokens each) of {data["prompts"]} prompts,
once per temperature in {data["temperatures"]} (0 = greedy): {data["train_sequences"]} sequences,
{data["train_tokens"]} generated tokens. Prompts (`specviz/drafts/prompts.py`):
{sources}

Held out: the {data["eval_sequences"]} continuations ({data["eval_tokens"]} tokens) of `eval_prompts()`: four per kind
(stories, chat instructions, code, facts), whose subjects and templates no training prompt uses.

## Training
```
{meta["command"]}
```
{training_text(kind, o)}
AdamW (lr {o["lr"]}), one-cycle schedule, gradient clip 1, bf16 autocast, {o["batch_tokens"]} tokens per batch,
{o["epochs"]} epochs; {meta["hardware"]}. Held-out numbers by epoch, teacher-forced (α and greedy agreement
of the first draft token; later columns: the k-th draft token's case):

{history_table(meta["history"])}
"""
    if (out / INT8_FILE).exists():
        card += int8_text(read_int8(out))
    if reports:
        drafts = " ".join(f"--draft {r['spec']}" for r in reports if r.get("spec")) or "--draft embedded"
        card += f"""
## Evaluation (`python scripts/eval_draft.py {drafts}`)

Held-out prompts, {reports[0].get("new_tokens", 64)} new tokens each, the target alone as the baseline in the
same process; one run on {run_of(reports[0])} (shared and noisy).

{eval_table(reports)}
"""
        if all(r.get("speedup") for r in reports):
            card += "\nMeasured speedup of greedy speculative decoding over the target alone, per τ:\n\n"
            card += speedup_table(reports) + "\n"
    if meta.get("limits"):
        card += "\n## What limits it\n" + meta["limits"] + "\n"
    return card
