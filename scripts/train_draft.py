"""Distil the embedded draft from the embedded target (SmolLM2-135M-Instruct), on this CPU.

    python scripts/train_draft.py all --work runs/draft      # data, then training, then export
    python scripts/train_draft.py data --work runs/draft     # stage 1 only (resumes shard by shard)
    python scripts/train_draft.py train --work runs/draft    # stage 2 only (resumes from the last checkpoint)
    python scripts/train_draft.py export --work runs/draft   # write assets/draft/ from the last checkpoint

Stage 1 (data): the target samples continuations of ~480 varied prompts (stories, chat instructions
in the chat template, code, facts; see draft_prompts.py) in batches, twice per prompt (temperature 1
and 0.7). At every generated position it keeps the target's top-32 next-token log-probabilities (of
the raw, temperature-1 distribution) as soft labels. One shard per batch; a killed run resumes at
the first missing shard.

Stage 2 (train): the student is the target's layers `--layers` (copied), low-rank adapters (LoRA)
on every projection of those layers, their norms and the final norm trainable, and a trainable LM
head restricted to the `--vocab` most frequent tokens of the data (initialised from the tied
embedding rows). Loss: cross-entropy against the target's soft labels (= KL up to a constant).
Checkpoints every `--save-every` steps and at each epoch end; a killed run resumes from the latest.

Export writes the adapters, norms, head and vocabulary (fp16 safetensors) and a JSON spec to
assets/draft/, which `specviz.models.load_pair` loads as the embedded draft.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from draft_prompts import eval_prompts, train_prompts, train_prompts_round2  # noqa: E402

from specviz.draft import load_trainable, trainable_state  # noqa: E402
from specviz.models import load_model  # noqa: E402
from specviz.text import HFCodec  # noqa: E402

TOP_K = 32


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def load_target():
    model, tokenizer = load_model("embedded", 10**10, torch.device("cpu"), torch.float32)
    model.requires_grad_(False)
    return model, tokenizer


def encode(codec: HFCodec, text: str, chat: bool) -> list[int]:
    return codec.encode_chat(text)[1] if chat else codec.encode(text)


# --- stage 1: data ---------------------------------------------------------------------------------


def make_data(args: argparse.Namespace) -> None:
    model, tokenizer = load_target()
    codec = HFCodec(tokenizer)
    for split, prompts, temps, batch_size in (
        ("eval", eval_prompts(), (1.0,), args.batch),
        ("train", train_prompts(args.seed), (1.0, 0.7), args.batch),
        ("train2", train_prompts_round2(args.seed + 1), (1.0, 0.8), 2 * args.batch),  # 64: ~200 tok/s
    ):
        items = [(encode(codec, text, chat), t) for t in temps for text, chat in prompts]
        items.sort(key=lambda it: len(it[0]))  # similar lengths share a batch: little padding
        batches = [items[i : i + batch_size] for i in range(0, len(items), batch_size)]
        out = Path(args.work) / "data" / split
        out.mkdir(parents=True, exist_ok=True)
        started, made = time.perf_counter(), 0
        for b, batch in enumerate(batches):
            path = out / f"shard{b:04d}.pt"
            if path.exists():
                continue
            made += generate_shard(model, tokenizer, batch, args.new_tokens, args.seed * 1000 + b, path)
            rate = made / (time.perf_counter() - started)
            left = (len(batches) - b - 1) * batch_size * args.new_tokens / max(rate, 1e-9)
            log(f"data {split}: shard {b + 1}/{len(batches)}, {made} tokens, {rate:.0f} tok/s, ~{left / 60:.0f} min")


def generate_shard(model, tokenizer, batch, new_tokens: int, seed: int, path: Path) -> int:
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id
    width = max(len(ids) for ids, _ in batch)
    input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, (ids, _) in enumerate(batch):  # left padding
        input_ids[i, width - len(ids) :] = torch.tensor(ids)
        mask[i, width - len(ids) :] = 1
    temperature = batch[0][1]
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids, attention_mask=mask, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
            max_new_tokens=new_tokens, output_logits=True, return_dict_in_generate=True, pad_token_id=pad,
            eos_token_id=eos,
        )  # fmt: skip
    logits = torch.stack(out.logits, dim=1)  # (B, steps, V): raw, temperature 1
    top = torch.log_softmax(logits.float(), dim=-1).topk(TOP_K, dim=-1)
    records, tokens = [], 0
    for i, (ids, _) in enumerate(batch):
        gen = out.sequences[i, width:].tolist()
        n = len(gen)
        if eos in gen:  # keep the end-of-turn token itself, nothing after it
            n = gen.index(eos) + 1
        records.append(
            {
                "ids": torch.tensor(ids + gen[:n], dtype=torch.int32),
                "start": len(ids),
                "top_values": top.values[i, :n].half().clone(),
                "top_ids": top.indices[i, :n].int().clone(),
            }
        )
        tokens += n
    tmp = path.with_suffix(".tmp")
    torch.save(records, tmp)
    os.replace(tmp, path)
    return tokens


def load_split(work: Path, split: str, max_tokens: int | None = None) -> list[dict]:
    """Every shard of `split`; "train" also takes later rounds ("train2", ...)."""
    records: list[dict] = []
    for path in sorted((work / "data").glob(f"{split}*/shard*.pt")):
        records += torch.load(path)
        if max_tokens and sum(len(r["top_ids"]) for r in records) >= max_tokens:
            break
    if not records:
        raise SystemExit(f"no {split} data under {work / 'data'}: run the data stage first")
    return records


# --- stage 2: train --------------------------------------------------------------------------------


def choose_vocab(records: list[dict], size: int, always: list[int]) -> torch.Tensor:
    """The `size` tokens carrying the most teacher probability mass in the data (plus `always`)."""
    top = max(max(int(r["top_ids"].max()) for r in records), *always, size - 1)
    mass = torch.zeros(top + 1, dtype=torch.float64)
    for r in records:
        mass.index_add_(0, r["top_ids"].long().flatten(), r["top_values"].float().exp().double().flatten())
    for t in always:
        mass[t] = math.inf
    return mass.topk(size).indices.sort().values


def batches(records: list[dict], tokens_per_batch: int, rng: random.Random) -> list[list[dict]]:
    order = sorted(records, key=lambda r: len(r["ids"]))
    out, cur = [], []
    for r in order:
        if cur and (len(cur) + 1) * len(r["ids"]) > tokens_per_batch:
            out.append(cur)
            cur = []
        cur.append(r)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def pad(batch: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and their attention mask."""
    width = max(len(r["ids"]) for r in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for b, r in enumerate(batch):
        ids[b, : len(r["ids"])] = r["ids"].long()
        mask[b, : len(r["ids"])] = 1
    return ids, mask


def collate(batch: list[dict], index_of: torch.Tensor):
    """Right-padded ids, and for every labelled position (b, t): the teacher's top-k over the
    student's vocabulary (ids outside it are dropped; their mass is out of the draft's reach)."""
    ids, mask = pad(batch)
    rows, cols, tgt_idx, tgt_p = [], [], [], []
    for b, r in enumerate(batch):
        g = len(r["top_ids"])
        pos = torch.arange(r["start"] - 1, r["start"] - 1 + g)  # logits at t-1 predict token t
        rows.append(torch.full((g,), b))
        cols.append(pos)
        tgt_idx.append(index_of[r["top_ids"].long()])
        tgt_p.append(r["top_values"].float().exp())
    return ids, mask, torch.cat(rows), torch.cat(cols), torch.cat(tgt_idx), torch.cat(tgt_p)


def soft_loss(logp: torch.Tensor, tgt_idx: torch.Tensor, tgt_p: torch.Tensor) -> torch.Tensor:
    inside = tgt_idx >= 0
    picked = logp.gather(1, tgt_idx.clamp(min=0))
    return -(picked * tgt_p * inside).sum(dim=1).mean()


def agreement(q: torch.Tensor, tgt_idx: torch.Tensor, tgt_p: torch.Tensor) -> tuple[float, int]:
    """Summed over positions: Σ min(p, q) on the teacher's top-k (a slight under-estimate of β),
    and how often argmax q is the teacher's argmax."""
    inside = tgt_idx >= 0
    beta = torch.minimum(q.gather(1, tgt_idx.clamp(min=0)) * inside, tgt_p).sum().item()
    best = torch.where(inside[:, 0], tgt_idx[:, 0], -2)  # the teacher's argmax, if the draft can say it
    return beta, int((q.argmax(1) == best).sum())


def evaluate(student, records: list[dict], index_of: torch.Tensor) -> dict:
    """α (with the teacher's top-32 only: a slight under-estimate) and greedy agreement."""
    student.eval()
    alpha, agree, n = 0.0, 0, 0
    with torch.no_grad():
        for r in records:
            ids, mask, rows, cols, tgt_idx, tgt_p = collate([r], index_of)
            beta, hits = agreement(student.subset_logprobs(ids, mask)[rows, cols].exp(), tgt_idx, tgt_p)
            alpha, agree, n = alpha + beta, agree + hits, n + len(rows)
    student.train()
    return {"alpha_top32": alpha / n, "greedy": agree / n, "positions": n}


def autocast(precision: str):
    """bf16 autocast: on CPUs with AMX (this machine) matmuls run about 7× faster than fp32."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


class LoraRecipe:
    """The target's layers `--layers`, LoRA on every projection, a trainable subset head."""

    kind = "lora"

    def __init__(self, target, vocab: torch.Tensor, layers: list[int], args: argparse.Namespace) -> None:
        from specviz import draft as drafts

        self.model = drafts.Student(target, drafts.DraftSpec(layers, args.rank, len(vocab)), vocab)
        if args.freeze_head:
            self.model.head.weight.requires_grad_(False)
        self.precision = args.precision

    def loss(self, batch: list[dict], index_of: torch.Tensor) -> torch.Tensor:
        ids, mask, rows, cols, tgt_idx, tgt_p = collate(batch, index_of)
        with autocast(self.precision):
            logp = self.model.subset_logprobs(ids, mask, rows=rows, cols=cols)
        return soft_loss(logp, tgt_idx, tgt_p)

    def evaluate(self, records: list[dict], index_of: torch.Tensor) -> dict:
        return evaluate(self.model, records, index_of)

    def save(self, out: Path, meta: dict) -> None:
        from specviz import draft as drafts

        drafts.save_draft(self.model, out, meta=meta)


class FeatureRecipe:
    """specviz.eagle.FeatureDraft: one layer reading the target's final hidden states. Trained on
    the target's features (computed once, bf16) with two unrolls: position t reads the target's
    f_{t−1} (the first draft token's case), then the draft's own g_{t−1} (the later tokens' case).
    Loss per unroll: soft cross-entropy + smooth-L1 from g to the target's f; the head is frozen."""

    kind = "feature"

    def __init__(self, target, vocab: torch.Tensor, layers: list[int], args: argparse.Namespace) -> None:
        from specviz.eagle import FeatureDraft

        self.model = FeatureDraft(target, vocab, embed_scale=args.embed_scale)
        self.model.head.weight.requires_grad_(False)
        self.precision, self.noise = args.precision, args.noise
        self.target = target

    @staticmethod
    def _shift(f: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(f)
        out[:, 1:] = f[:, :-1]
        return out

    def _unrolls(self, batch: list[dict], index_of: torch.Tensor, noise: float):
        ids, mask, rows, cols, tgt_idx, tgt_p = collate(batch, index_of)
        feats = torch.zeros((*ids.shape, self.model.fc.out_features))
        for b, r in enumerate(batch):
            feats[b, : len(r["ids"])] = r["feat"].float()
        prev = self._shift(feats)
        if noise:
            prev = prev + (torch.rand_like(prev) - 0.5) * 2 * noise * feats.pow(2).mean().sqrt()
        with autocast(self.precision):
            g1 = self.model.features(ids, prev, mask)
            g2 = self.model.features(ids, self._shift(g1.detach()), mask)
        return (g1, g2), feats, mask.bool(), rows, cols, tgt_idx, tgt_p

    def loss(self, batch: list[dict], index_of: torch.Tensor) -> torch.Tensor:
        gs, feats, mask, rows, cols, tgt_idx, tgt_p = self._unrolls(batch, index_of, self.noise)
        total = 0.0
        for weight, g in zip((1.0, 0.5), gs, strict=True):
            logp = torch.log_softmax(self.model.head.subset(g[rows, cols]).float(), -1)
            reg = torch.nn.functional.smooth_l1_loss(g.float()[mask], feats[mask])
            total = total + weight * (soft_loss(logp, tgt_idx, tgt_p) + reg)
        return total

    def evaluate(self, records: list[dict], index_of: torch.Tensor) -> dict:
        self.model.eval()
        sums = {"alpha_top32": 0.0, "greedy": 0.0, "alpha_top32_second": 0.0}
        n = 0
        with torch.no_grad():
            for r in records:
                gs, _, _, rows, cols, tgt_idx, tgt_p = self._unrolls([r], index_of, 0.0)
                first, second = (torch.softmax(self.model.head.subset(g[rows, cols]).float(), -1) for g in gs)
                beta, hits = agreement(first, tgt_idx, tgt_p)
                sums["alpha_top32"] += beta
                sums["greedy"] += hits
                sums["alpha_top32_second"] += agreement(second, tgt_idx, tgt_p)[0]
                n += len(rows)
        self.model.train()
        return {k: v / n for k, v in sums.items()} | {"positions": n}

    def save(self, out: Path, meta: dict) -> None:
        from specviz.eagle import save_feature_draft

        save_feature_draft(self.model, out, meta=meta)


RECIPES = {"lora": LoraRecipe, "feature": FeatureRecipe}


def attach_features(target, records: list[dict], cache: Path, precision: str, tokens_per_batch: int = 4096) -> None:
    """The target's final hidden state at every position of every record (r["feat"], fp16),
    computed once in batches and cached in `cache`. It is what the target's session records at
    run time (the output of its final norm, the LM head's input)."""
    if cache.exists():
        for r, f in zip(records, torch.load(cache), strict=True):
            r["feat"] = f
        return
    groups = batches(records, tokens_per_batch, random.Random(0))
    started = time.perf_counter()
    for k, batch in enumerate(groups):
        ids, mask = pad(batch)
        with torch.inference_mode(), autocast(precision):
            hidden = target.model(input_ids=ids, attention_mask=mask).last_hidden_state  # after the final norm
        for b, r in enumerate(batch):
            r["feat"] = hidden[b, : len(r["ids"])].to(torch.float16).clone()
        if (k + 1) % 10 == 0 or k + 1 == len(groups):
            log(f"target features: batch {k + 1}/{len(groups)}, {time.perf_counter() - started:.0f} s")
    torch.save([r["feat"] for r in records], cache)


def train(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    work = Path(args.work)
    ckpt_dir = Path(args.ckpt) if args.ckpt else work / "ckpt"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    target, tokenizer = load_target()
    records = load_split(work, "train", args.max_tokens)
    held_out = load_split(work, "eval")
    always = sorted({tokenizer.eos_token_id, *tokenizer.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])})
    latest = ckpt_dir / "latest.pt"
    state = torch.load(latest) if latest.exists() else None
    kind = state["args"].get("kind", "lora") if state else args.kind
    vocab = state["vocab"] if state else choose_vocab(records, args.vocab, always)
    layers = state["layers"] if state else [int(x) for x in args.layers.split(",")]
    if kind == "feature":
        suffix = f"-{args.max_tokens}" if args.max_tokens else ""
        attach_features(target, records, work / f"features-train{suffix}.pt", args.precision)
        attach_features(target, held_out, work / "features-eval.pt", args.precision)
    recipe = RECIPES[kind](target, vocab, layers, args)
    student = recipe.model
    index_of = torch.full((target.config.vocab_size,), -1, dtype=torch.long)
    index_of[vocab] = torch.arange(len(vocab))
    covered = sum(r["top_values"].float().exp().mul(index_of[r["top_ids"].long()] >= 0).sum() for r in records)
    total = sum(r["top_values"].float().exp().sum() for r in records)
    params = [p for p in student.parameters() if p.requires_grad]
    log(
        f"train {kind}: {sum(len(r['top_ids']) for r in records)} labelled tokens in {len(records)} sequences; "
        f"layers {layers}; vocab {len(vocab)} covers {float(covered / total):.3f} of the top-32 mass; "
        f"{sum(p.numel() for p in params)} trainable parameters"
    )
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)
    rng = random.Random(args.seed)
    plan = [batches(records, args.batch_tokens, rng) for _ in range(args.epochs)]
    total_steps = sum(len(p) for p in plan)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=total_steps, pct_start=0.1)
    step = 0
    history = []
    if state:
        load_trainable(student, state["student"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step, history = state["step"], state["history"]
        log(f"resumed at step {step}/{total_steps}")
    else:
        history.append({"step": 0, **recipe.evaluate(held_out, index_of)})
        log(f"before training: {history[-1]}")

    def save() -> None:
        blob = {
            "student": trainable_state(student), "opt": opt.state_dict(), "sched": sched.state_dict(),
            "step": step, "history": history, "vocab": vocab, "layers": layers, "args": {**vars(args), "kind": kind},
        }  # fmt: skip
        torch.save(blob, ckpt_dir / "latest.tmp")
        os.replace(ckpt_dir / "latest.tmp", latest)

    started, loss_avg = time.perf_counter(), None
    flat = [(e, b) for e, p in enumerate(plan) for b in p]
    student.train()
    for done_here, (e, batch) in enumerate(flat[step:], start=1):
        loss = recipe.loss(batch, index_of)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        loss_avg = loss.item() if loss_avg is None else 0.9 * loss_avg + 0.1 * loss.item()
        per = (time.perf_counter() - started) / done_here
        if step % 10 == 0 or step == total_steps:
            left = (total_steps - step) * per / 60
            log(f"step {step}/{total_steps} epoch {e + 1} loss {loss_avg:.3f} ~{left:.1f} min left")
        epoch_end = step == total_steps or flat[step][0] != e
        if epoch_end:
            history.append({"step": step, "epoch": e + 1, **recipe.evaluate(held_out, index_of)})
            log(f"epoch {e + 1}: {history[-1]}")
        if epoch_end or step % args.save_every == 0:
            save()
    save()
    log("training done")


# --- export ----------------------------------------------------------------------------------------


def export(args: argparse.Namespace) -> None:
    work = Path(args.work)
    state = torch.load((Path(args.ckpt) if args.ckpt else work / "ckpt") / "latest.pt")
    target, _ = load_target()
    kind = state["args"].get("kind", "lora")
    train_args = argparse.Namespace(**{**vars(args), **state["args"]})
    recipe = RECIPES[kind](target, state["vocab"], state["layers"], train_args)
    load_trainable(recipe.model, state["student"])
    out = Path(args.out)
    data = {split: _data_summary(work, split) for split in ("train", "eval")}
    meta = {"target": "SmolLM2-135M-Instruct", "history": state["history"], "train_args": state["args"], "data": data}
    recipe.save(out, meta)
    reports = json.loads(Path(args.eval_json).read_text()) if args.eval_json else []
    (out / "README.md").write_text(model_card(kind, state, meta, reports, out))
    log(f"wrote {out} ({sum(f.stat().st_size for f in out.iterdir()) / 1e6:.1f} MB)")


def _data_summary(work: Path, split: str) -> dict:
    records = load_split(work, split)
    return {"sequences": len(records), "labelled_tokens": sum(len(r["top_ids"]) for r in records)}


def model_card(kind: str, state: dict, meta: dict, reports: list[dict], out: Path) -> str:
    a, layers, vocab = meta["train_args"], state["layers"], len(state["vocab"])
    stored = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    second = kind == "feature"
    rows = "\n".join(
        f"| {h.get('epoch', 0)} | {h['step']} | {h['alpha_top32']:.3f} | {h['greedy']:.3f} |"
        + (f" {h['alpha_top32_second']:.3f} |" if second else "")
        for h in meta["history"]
    )
    if kind == "feature":
        architecture = f"""- A feature-level draft (EAGLE-style, `specviz/eagle.py`): at position t it reads the
  token x_t and the target's own final hidden state f_(t-1) (the LM head's input, recorded by the target's session
  while it verifies), mixes them with a trained linear map (2 x 576 -> 576), runs one decoder layer
  (initialised from the target's last layer) and its own norm, and predicts f_t. Inside a draft
  block, where the target has not yet scored the previous token, the draft's own prediction stands in;
  after verification, those positions are recomputed on the target's true features.
- q = softmax of the target's own LM head rows for the {vocab} tokens that carry the most target
  probability in the training data (frozen). Other tokens get q = 0.
- Cost per draft token: one decoder layer + a {vocab}-row head (the target runs 30 layers + 49,152 rows).
- Stored: {stored / 1e6:.1f} MB of fp16 tensors (`draft.safetensors`) + `draft.json`."""
        loss = (
            "Per batch, two unrolls: every position reads the target's f_(t-1) (the first draft token's case),\n"
            "then the draft's own g_(t-1) from the first unroll (the later tokens' case). Loss: soft\n"
            "cross-entropy against the labels + smooth-L1 from g to the target's f, the second unroll at\n"
            f"half weight; uniform noise ({a.get('noise', 0.1)} x rms) on the input features. The target's features\n"
            "for the whole data set are computed once (bf16)."
        )
        command = f"--kind feature --vocab {vocab}"
    else:
        architecture = f"""- The target's decoder layers {layers} (of 30), copied, in that order; its token
  embeddings and rotary tables shared (not stored).
- LoRA rank {a["rank"]} on every projection of those layers (q, k, v, o, gate, up, down), merged into
  the copies at load time; their RMS norms and the final norm trained.
- An LM head over the {vocab} tokens that carry the most target probability in the training data
  (initialised from the target's tied embedding rows, then trained). Other tokens get q = 0.
- Stored: {stored / 1e6:.1f} MB of fp16 tensors (`draft.safetensors`) + `draft.json`."""
        loss = "Cross-entropy against the soft labels (= KL up to a constant)."
        command = f"--kind lora --layers {','.join(map(str, layers))} --rank {a['rank']} --vocab {vocab}"
    card = f"""# Distilled draft for SmolLM2-135M-Instruct (the embedded target)

Made by `scripts/train_draft.py`; loaded by `specviz.load_pair("embedded", "embedded")` (the app's
"Embedded pair"). The untrained draft stays selectable as `early-exit:8` ("Untrained draft" preset).

## Architecture
{architecture}

## Data
The target's own samples: {meta["data"]["train"]["sequences"]} continuations ({meta["data"]["train"]["labelled_tokens"]}
labelled tokens) of up to {a["new_tokens"]} tokens, from the templated prompt lists in `scripts/draft_prompts.py`
(stories, chat instructions in the chat template, code, facts; two rounds of templates, each prompt
sampled twice). Soft labels: the target's top-32 next-token log-probabilities at temperature 1.
Held out: {meta["data"]["eval"]["sequences"]} sequences from prompts that share no subject or template with training.

## Training
```
python scripts/train_draft.py all --work runs/draft {command} \\
    --epochs {a["epochs"]} --lr {a["lr"]} --batch-tokens {a["batch_tokens"]}
```
{loss}
AdamW, one-cycle schedule, gradient clip 1, bf16 autocast (AMX) on the 2-core CPU; checkpoints in
`runs/draft/ckpt`, a killed run resumes. Held-out agreement on the top-32 labels (a slight
under-estimate of α) by epoch{", teacher-forced; the last column is the second unroll" if second else ""}:

| epoch | step | α (top-32) | greedy agreement |{" α, second unroll |" if second else ""}
|---|---|---|---|{"---|" if second else ""}
{rows}
"""
    if reports:
        card += "\n## Evaluation (`python scripts/eval_draft.py --draft embedded --draft early-exit:8`)\n\n"
        card += "Held-out prompts, 64 new tokens each, one run on the 2-core CPU (shared and noisy).\n\n"
        card += "| draft | α (T=1) | greedy agreement | mean acceptance length (τ=4) | c | best τ | speedup |\n"
        card += "|---|---|---|---|---|---|---|\n"
        for r in reports:
            card += (
                f"| {r['draft']} | {r['alpha']:.3f} | {r['greedy_agreement']:.3f} | {r['mean_acceptance_length']:.2f} "
                f"| {r['c']:.3f} | {r['best_tau']} | {r['best_speedup']:.2f}× |\n"
            )
    return card


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=["data", "train", "export", "all"])
    ap.add_argument("--work", default="runs/draft", help="folder for data shards and checkpoints")
    ap.add_argument("--ckpt", help="checkpoint folder (default: WORK/ckpt); probes use their own")
    ap.add_argument("--out", default=str(ROOT / "assets" / "draft"), help="where export writes the draft")
    ap.add_argument("--eval-json", help="export: put these scripts/eval_draft.py reports in the model card")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=32, help="sequences per generation batch")
    ap.add_argument("--new-tokens", type=int, default=128, help="tokens the target generates per prompt")
    ap.add_argument("--layers", default="0,1,2,3,28,29", help="target layers the student copies, in order")
    ap.add_argument("--kind", choices=sorted(RECIPES), default="feature", help="draft architecture")
    ap.add_argument("--embed-scale", type=float, default=15.0, help="feature: initial weight of emb(x_t) in fc")
    ap.add_argument("--noise", type=float, default=0.1, help="feature: uniform noise on input features (× rms)")
    ap.add_argument("--rank", type=int, default=64, help="LoRA rank on every projection")
    ap.add_argument("--vocab", type=int, default=8192, help="size of the draft's restricted LM head")
    ap.add_argument("--freeze-head", action="store_true", help="keep the head rows equal to the target's")
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-tokens", type=int, default=2048, help="tokens per training batch")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16", help="training matmul precision")
    ap.add_argument("--max-tokens", type=int, default=None, help="use only the first shards (probes)")
    ap.add_argument("--save-every", type=int, default=20, help="checkpoint every N steps")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    if args.stage in ("data", "all"):
        make_data(args)
    if args.stage in ("train", "all"):
        train(args)
    if args.stage in ("export", "all"):
        export(args)


if __name__ == "__main__":
    main()
