"""Distil the embedded draft from the embedded target (SmolLM2-135M-Instruct): the stages behind
`scripts/train_draft.py`.

    prompts  write WORK/prompts.json (training and held-out prompts; reused if present)
    data     the target continues every prompt once per temperature (resumes shard by shard)
    train    train the draft on the target's labels (resumes from the last checkpoint)
    export   write the draft folder and its model card from the last checkpoint
    card     rewrite the model card of --out (e.g. with --eval-json from scripts/eval_draft.py)
    int8     calibrate the int8 draft (`embedded-int8`) of the draft in --out: its head rows in order of how often
             the target generates each token and its products' input ranges, on --rank-prompts training prompts
             the target continues now: OUT/int8.json
    all      every stage in turn

Runs on this CPU (slow but complete) or with --device cuda on a GPU.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import fields
from pathlib import Path

import torch

from specviz.drafts.files import DEFAULT_DIR, load_trainable
from specviz.training import data, prompts
from specviz.training.card import model_card
from specviz.training.train import RECIPES, Options, train


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def load_target(device: str, dtype: torch.dtype = torch.float32):
    from specviz.models.hub import load_model

    model, tokenizer = load_model("embedded", 10**10, torch.device(device), dtype)
    model.requires_grad_(False)
    return model, tokenizer


def build_prompts(work: Path, args: argparse.Namespace) -> dict:
    path = work / "prompts.json"
    if path.exists():
        return json.loads(path.read_text())
    sources = {
        "templated round 1 (stories, chat instructions, code, facts, emails)": prompts.train_prompts(args.seed),
        "templated round 2 (new templates, same subjects)": prompts.train_prompts_round2(args.seed + 1),
        "stories: adjective x character x setting x 5 templates": prompts.story_prompts(args.stories),
        "Python standard library docstrings (prose, function bodies, chat requests)": prompts.corpus_prompts(
            args.corpus
        ),
    }
    out = {
        "train": [p for ps in sources.values() for p in ps],
        "eval": prompts.eval_prompts(),
        "sources": {name: len(ps) for name, ps in sources.items()},
    }
    work.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=0))
    return out


def make_data(work: Path, args: argparse.Namespace) -> None:
    listing = build_prompts(work, args)
    model, tokenizer = load_target(args.device, torch.bfloat16 if args.device != "cpu" else torch.float32)
    deadline = time.perf_counter() + args.max_minutes * 60 if args.max_minutes else None
    temps = [float(t) for t in args.temperatures.split(",")]
    for split, items, ts in (("eval", listing["eval"], [1.0]), ("train", listing["train"], temps)):
        data.make_split(
            model,
            tokenizer,
            [tuple(p) for p in items],
            ts,
            work / "data" / split,
            batch=args.batch,
            new_tokens=args.new_tokens,
            seed=args.seed + (split == "eval"),
            deadline=deadline,
            log=log,
        )


def options(args: argparse.Namespace) -> Options:
    given = {f.name: getattr(args, f.name) for f in fields(Options) if hasattr(args, f.name)}
    given["layers"] = [int(x) for x in str(args.layers).split(",")]
    return Options(**given)


def always_tokens(tokenizer) -> list[int]:
    return sorted({tokenizer.eos_token_id, *tokenizer.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])})


def run_training(work: Path, args: argparse.Namespace):
    target, tokenizer = load_target(args.device)
    records, held_out = data.load_split(work, "train"), data.load_split(work, "eval")
    ckpt = work / "ckpt"
    state = torch.load(ckpt / "latest.pt", map_location="cpu") if (ckpt / "latest.pt").exists() else None
    opts = Options(**state["opts"]) if state else options(args)
    vocab = state["vocab"] if state else data.choose_vocab(records, opts.vocab, always_tokens(tokenizer))
    log(f"data: {len(records)} sequences, {data.labelled_tokens(records)} generated tokens; held out {len(held_out)}")
    return train(target, records, held_out, vocab, opts, ckpt, log=log)


def export(work: Path, args: argparse.Namespace) -> None:
    state = torch.load(work / "ckpt" / "latest.pt", map_location="cpu")
    opts = Options(**state["opts"])
    target, _ = load_target("cpu")
    recipe = RECIPES[opts.kind](target, state["vocab"], opts)
    load_trainable(recipe.model, state["student"])
    listing = build_prompts(work, args)
    train_records, eval_records = data.load_split(work, "train"), data.load_split(work, "eval")
    made = json.loads((work / "made.json").read_text()) if (work / "made.json").exists() else {}
    meta = {
        "target": "SmolLM2-135M-Instruct",
        "history": state["history"],
        "options": vars(opts),
        "vocab_size": len(state["vocab"]),
        "command": made.get("command", "python scripts/train_draft.py all"),
        "hardware": made.get("hardware", "see the command"),
        "data": {
            "prompts": len(listing["train"]),
            "prompt_sources": listing["sources"],
            "new_tokens": args.new_tokens,
            "temperatures": made.get("temperatures", args.temperatures),
            "train_sequences": len(train_records),
            "train_tokens": data.labelled_tokens(train_records),
            "eval_sequences": len(eval_records),
            "eval_tokens": data.labelled_tokens(eval_records),
        },
    }
    out = Path(args.out)
    recipe.save(out, meta)
    write_card(out, args)
    log(f"wrote {out} ({sum(f.stat().st_size for f in out.iterdir()) / 1e6:.1f} MB)")


def int8_stage(work: Path, args: argparse.Namespace) -> None:
    """The int8 draft's calibration (specviz.training.int8), from the target's continuations of a random sample of
    the training prompts (never the held-out ones) at temperatures 1 and 0 (greedy), resumable; written beside
    the draft in --out."""
    import random

    from specviz.drafts.feature import load_feature_draft
    from specviz.drafts.files import INT8_FILE, read_spec
    from specviz.training import int8

    listing = build_prompts(work, args)
    sample = random.Random(args.seed + 7).sample([tuple(p) for p in listing["train"]], args.rank_prompts)
    model, tokenizer = load_target(args.device)
    deadline = time.perf_counter() + args.max_minutes * 60 if args.max_minutes else None
    split = work / "data" / "rank"
    data.make_split(
        model,
        tokenizer,
        sample,
        [1.0, 0.0],
        split,
        batch=args.batch,
        new_tokens=args.new_tokens,
        seed=args.seed + 11,
        deadline=deadline,
        log=log,
    )
    records = data.load_split(work, "rank")
    out = Path(args.out)
    draft = load_feature_draft(model, out, read_spec(out))
    made = int8.calibrate(model, draft, records, always_tokens(tokenizer))
    made["command"] = "python scripts/train_draft.py " + " ".join(map(shlex.quote, sys.argv[1:]))
    (out / INT8_FILE).write_text(json.dumps(made) + "\n")
    log(f"wrote {out / INT8_FILE}: {len(made['order'])} rows ranked on {made['ranked_on']['tokens']} tokens")


def write_card(out: Path, args: argparse.Namespace) -> None:
    """The model card from the draft's own draft.json and, if given, scripts/eval_draft.py's reports."""
    meta = json.loads((out / "draft.json").read_text())
    reports = json.loads(Path(args.eval_json).read_text()) if args.eval_json else []
    if args.limits:
        meta["limits"] = args.limits
    (out / "README.md").write_text(model_card(meta["kind"], meta, out, reports))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=["prompts", "data", "train", "export", "card", "int8", "all"])
    ap.add_argument("--work", default="runs/draft", help="folder for prompts, data shards and checkpoints")
    ap.add_argument("--out", default=str(DEFAULT_DIR), help="where export writes the draft")
    ap.add_argument("--eval-json", help="export: put these scripts/eval_draft.py reports in the model card")
    ap.add_argument("--limits", default="", help="export: a paragraph on what limited the draft")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda where a GPU is available")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stories", type=int, default=3000, help="generated story prompts")
    ap.add_argument("--corpus", type=int, default=8000, help="prompts from the standard library's docstrings")
    ap.add_argument("--batch", type=int, default=32, help="sequences per generation batch")
    ap.add_argument("--new-tokens", type=int, default=160, help="tokens the target generates per prompt")
    ap.add_argument("--temperatures", default="1.0,0", help="one continuation per prompt at each (0 = greedy)")
    ap.add_argument("--max-minutes", type=float, default=None, help="data: stop generating after this long")
    ap.add_argument("--rank-prompts", type=int, default=480, help="int8: training prompts the target continues")
    d = Options()
    ap.add_argument("--kind", choices=sorted(RECIPES), default=d.kind, help="draft architecture")
    ap.add_argument("--vocab", type=int, default=d.vocab, help="size of the draft's head vocabulary")
    ap.add_argument("--unrolls", type=int, default=d.unrolls, help="feature: draft positions unrolled in training")
    ap.add_argument("--noise", type=float, default=d.noise, help="feature: uniform noise on input features (× rms)")
    ap.add_argument("--embed-scale", type=float, default=d.embed_scale, help="feature: initial weight of emb(x_t)")
    ap.add_argument("--layers", default="0,1,2,3,28,29", help="lora: target layers the student copies")
    ap.add_argument("--rank", type=int, default=d.rank, help="lora: rank on every projection")
    ap.add_argument("--epochs", type=int, default=d.epochs)
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--weight-decay", type=float, default=d.weight_decay)
    ap.add_argument("--batch-tokens", type=int, default=d.batch_tokens, help="padded tokens per training batch")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default=d.precision)
    ap.add_argument("--save-every", type=int, default=d.save_every, help="checkpoint every N steps")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    work = Path(args.work)
    if args.device == "cpu":
        import os

        torch.set_num_threads(os.cpu_count() or 1)
    if args.stage in ("prompts", "data", "all"):
        build_prompts(work, args)
    if args.stage in ("data", "all"):
        make_data(work, args)
    if args.stage in ("train", "all"):
        run_training(work, args)
        (work / "made.json").write_text(
            json.dumps(
                {
                    "command": "python scripts/train_draft.py " + " ".join(map(shlex.quote, argv or sys.argv[1:])),
                    "hardware": f"trained on {torch.cuda.get_device_name() if args.device != 'cpu' else 'the CPU'}",
                    "temperatures": args.temperatures,
                }
            )
        )
    if args.stage in ("export", "all"):
        export(work, args)
    if args.stage == "card":
        write_card(Path(args.out), args)
    if args.stage == "int8":
        int8_stage(work, args)
