"""Distilling a draft from the target: the training loop and its two recipes.

Labels come from the target itself, computed per batch: one target pass gives, at every position,
its full next-token distribution p (temperature 1) and its final hidden state f (the LM head's
input). The loss is the soft cross-entropy −Σ_v p(v) log q(v) over the draft's head vocabulary
(p's mass outside it is out of the draft's reach), which is the KL divergence up to a constant.

- `FeatureRecipe` (specviz.drafts.feature): unrolled the way the draft runs. Unroll 1 reads the
  target's f_(t−1) at every position (the first draft token's case); unroll k reads the draft's own
  g_(t−1) from unroll k − 1 (the k-th draft token's case). Each unroll adds its soft cross-entropy
  and a smooth-L1 pull of g towards f, weighted 1, 1/2, 1/3, …; uniform noise on the input
  features of unroll 1. The head rows are the target's, frozen.
- `LoraRecipe` (specviz.drafts.lora): copied target layers with LoRA adapters and a trained head.

Runs on the CPU (bf16 autocast: AMX) or a GPU; checkpoints after every epoch and every
`save_every` steps, and a killed run resumes from the latest.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specviz.drafts.feature import FeatureDraft
from specviz.drafts.files import DraftSpec, load_trainable, trainable_state
from specviz.drafts.lora import Student
from specviz.training.data import pad, token_batches

Log = Callable[[str], None]


@dataclass
class Options:
    kind: str = "feature"
    vocab: int = 8192
    unrolls: int = 3
    noise: float = 0.1
    embed_scale: float = 15.0
    layers: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 28, 29])  # lora
    rank: int = 64  # lora
    epochs: int = 4
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_tokens: int = 2048
    precision: str = "bf16"
    save_every: int = 200
    seed: int = 0


def autocast(device: torch.device, precision: str):
    """bf16 autocast: on CPUs with AMX (this machine) matmuls run about 7× faster than fp32."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")


@dataclass
class Teacher:
    """What the target says about a batch."""

    ids: torch.Tensor  # (B, T)
    mask: torch.Tensor  # (B, T) attention mask
    labelled: torch.Tensor  # (B, T): positions whose next token the target generated
    features: torch.Tensor  # (B, T, H) float32: f_t, the LM head's input
    logp: torch.Tensor  # (N, V_draft) float32: log p over the draft's vocabulary at labelled positions
    best: torch.Tensor  # (N,): argmax p as an index into the draft's vocabulary, −1 if outside it


def teacher(target: Any, batch: Sequence[dict], vocab: torch.Tensor, index_of: torch.Tensor, precision: str) -> Teacher:
    device = next(target.parameters()).device
    ids, mask, labelled = (x.to(device) for x in pad(batch))
    head = target.get_output_embeddings().weight
    with torch.no_grad(), autocast(device, precision):
        f = target.model(input_ids=ids, attention_mask=mask).last_hidden_state  # after the final norm
        logits = (f[labelled] @ head.t()).float()  # (N, V) full vocabulary
    lse = torch.logsumexp(logits, dim=-1, keepdim=True)
    logp = logits[:, vocab.to(device)] - lse
    best = index_of.to(device)[logits.argmax(-1)]
    return Teacher(ids, mask, labelled, f.float(), logp, best)


def soft_cross_entropy(logq: torch.Tensor, logp: torch.Tensor) -> torch.Tensor:
    """Mean over positions of −Σ_v p(v) log q(v) (rows: positions; columns: the draft's vocabulary)."""
    return -(logp.exp() * logq).sum(-1).mean()


def overlap(logq: torch.Tensor, t: Teacher) -> tuple[float, int]:
    """Summed over positions: Σ_v min(p(v), q(v)) (docs/algorithm.md's β, exact: q is 0 outside the draft's
    vocabulary) and how often argmax q is the target's argmax."""
    beta = torch.minimum(logq.exp(), t.logp.exp()).sum().item()
    return beta, int((logq.argmax(-1) == t.best).sum())


def shift(f: torch.Tensor) -> torch.Tensor:
    """Position t gets f_(t−1); position 0 gets zeros."""
    out = torch.zeros_like(f)
    out[:, 1:] = f[:, :-1]
    return out


class FeatureRecipe:
    kind = "feature"

    def __init__(self, target: Any, vocab: torch.Tensor, opts: Options) -> None:
        self.model = FeatureDraft(target, vocab, embed_scale=opts.embed_scale)
        self.model.head.weight.requires_grad_(False)
        self.opts = opts

    def unrolls(self, t: Teacher, noise: float, n: int) -> list[torch.Tensor]:
        prev = shift(t.features)
        if noise:
            prev = prev + (torch.rand_like(prev) - 0.5) * 2 * noise * t.features.pow(2).mean().sqrt()
        out = []
        with autocast(t.ids.device, self.opts.precision):
            for _ in range(n):
                g = self.model.features(t.ids, prev, t.mask)
                out.append(g)
                prev = shift(g.detach().float())
        return out

    def logq(self, g: torch.Tensor, t: Teacher) -> torch.Tensor:
        return torch.log_softmax(self.model.head.subset(g[t.labelled]).float(), -1)

    def loss(self, t: Teacher) -> torch.Tensor:
        total = torch.zeros((), device=t.ids.device)
        valid = t.mask.bool()
        for k, g in enumerate(self.unrolls(t, self.opts.noise, self.opts.unrolls), start=1):
            reg = torch.nn.functional.smooth_l1_loss(g.float()[valid], t.features[valid])
            total = total + (soft_cross_entropy(self.logq(g, t), t.logp) + reg) / k
        return total

    def measure(self, t: Teacher) -> list[tuple[float, int]]:
        return [overlap(self.logq(g, t), t) for g in self.unrolls(t, 0.0, self.opts.unrolls)]

    def save(self, out: Path, meta: dict) -> None:
        from specviz.drafts.feature import save_feature_draft

        save_feature_draft(self.model, out, meta=meta)


class LoraRecipe:
    kind = "lora"

    def __init__(self, target: Any, vocab: torch.Tensor, opts: Options) -> None:
        self.model = Student(target, DraftSpec(opts.layers, opts.rank, len(vocab)), vocab)
        self.opts = opts

    def logq(self, t: Teacher) -> torch.Tensor:
        with autocast(t.ids.device, self.opts.precision):
            hidden = self.model.lm.model(input_ids=t.ids, attention_mask=t.mask, use_cache=False).last_hidden_state
            return torch.log_softmax(self.model.head.subset(hidden[t.labelled]).float(), -1)

    def loss(self, t: Teacher) -> torch.Tensor:
        return soft_cross_entropy(self.logq(t), t.logp)

    def measure(self, t: Teacher) -> list[tuple[float, int]]:
        return [overlap(self.logq(t), t)]

    def save(self, out: Path, meta: dict) -> None:
        from specviz.drafts.lora import save_draft

        save_draft(self.model, out, meta=meta)


RECIPES = {"feature": FeatureRecipe, "lora": LoraRecipe}


def evaluate(recipe: Any, target: Any, records: Sequence[dict], vocab: torch.Tensor, index_of: torch.Tensor) -> dict:
    """On held-out records, teacher-forced: α (mean β) and greedy agreement of the first draft
    token, α of the later unrolls, and the share of p's mass inside the draft's vocabulary."""
    recipe.model.eval()
    sums: list[list[float]] = []
    inside, n = 0.0, 0
    with torch.no_grad():
        for r in records:
            t = teacher(target, [r], vocab, index_of, recipe.opts.precision)
            for k, (beta, hits) in enumerate(recipe.measure(t)):
                if len(sums) <= k:
                    sums.append([0.0, 0.0])
                sums[k][0] += beta
                sums[k][1] += hits
            inside += t.logp.exp().sum().item()
            n += len(t.logp)
    recipe.model.train()
    out = {"alpha": sums[0][0] / n, "greedy": sums[0][1] / n, "vocab_mass": inside / n, "positions": n}
    out["alpha_unrolls"] = [s[0] / n for s in sums]
    return out


def train(
    target: Any,
    records: Sequence[dict],
    held_out: Sequence[dict],
    vocab: torch.Tensor,
    opts: Options,
    ckpt_dir: Path,
    log: Log = print,
) -> Any:
    """Train a draft of kind `opts.kind` for `target`; returns the recipe (its `.model` trained
    and its `.history`: held-out numbers after every epoch)."""
    torch.manual_seed(opts.seed)
    device = next(target.parameters()).device
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    latest = ckpt_dir / "latest.pt"
    state = torch.load(latest, map_location="cpu") if latest.exists() else None
    recipe = RECIPES[opts.kind](target, vocab, opts)
    recipe.model.to(device)
    index_of = torch.full((target.config.vocab_size,), -1, dtype=torch.long)
    index_of[vocab] = torch.arange(len(vocab))
    params = [p for p in recipe.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=opts.lr, weight_decay=opts.weight_decay)
    rng = random.Random(opts.seed)
    plan = [(e, b) for e in range(opts.epochs) for b in token_batches(records, opts.batch_tokens, rng)]
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=opts.lr, total_steps=len(plan), pct_start=0.05)
    step, history = 0, []
    if state:
        load_trainable(recipe.model, {k: v.to(device) for k, v in state["student"].items()})
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step, history = state["step"], state["history"]
        log(f"resumed at step {step}/{len(plan)}")
    else:
        history.append({"step": 0, "epoch": 0, **evaluate(recipe, target, held_out, vocab, index_of)})
        log(f"before training: {history[-1]}")
    log(f"train {opts.kind}: {len(plan)} steps, {sum(p.numel() for p in params)} trainable parameters")

    def save() -> None:
        blob = {
            "student": trainable_state(recipe.model),
            "opt": opt.state_dict(),
            "sched": sched.state_dict(),
            "step": step,
            "history": history,
            "vocab": vocab,
            "opts": vars(opts),
        }
        torch.save(blob, ckpt_dir / "latest.tmp")
        os.replace(ckpt_dir / "latest.tmp", latest)

    started, loss_avg = time.perf_counter(), None
    recipe.model.train()
    for done, (epoch, batch) in enumerate(plan[step:], start=1):
        loss = recipe.loss(teacher(target, batch, vocab, index_of, opts.precision))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        loss_avg = loss.item() if loss_avg is None else 0.95 * loss_avg + 0.05 * loss.item()
        if step % 50 == 0 or step == len(plan):
            left = (len(plan) - step) * (time.perf_counter() - started) / done / 60
            log(f"step {step}/{len(plan)} epoch {epoch + 1} loss {loss_avg:.3f} ~{left:.1f} min left")
        epoch_end = step == len(plan) or plan[step][0] != epoch
        if epoch_end:
            history.append({"step": step, "epoch": epoch + 1, **evaluate(recipe, target, held_out, vocab, index_of)})
            log(f"epoch {epoch + 1}: {history[-1]}")
        if epoch_end or step % opts.save_every == 0:
            save()
    recipe.history = history
    return recipe
