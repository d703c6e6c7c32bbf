"""Training data for a distilled draft: the target's own continuations of many prompts.

A record is {"ids": int32 tensor (prompt + continuation), "start": prompt length}; the positions
from start on are the target's tokens. Labels are not stored: training runs the target over each
batch and reads its full next-token distribution and its hidden states there (one prefill pass,
cheap next to generation). Generation writes one shard per batch; a killed run resumes at the first
missing shard.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from specviz.models.text import HFCodec
from specviz.training.prompts import Prompt

Log = Callable[[str], None]


def encode(codec: HFCodec, prompt: Prompt) -> list[int]:
    text, chat = prompt
    return codec.encode_chat(text)[1] if chat else codec.encode(text)


def generate(
    model: Any, tokenizer: Any, prompts: Sequence[list[int]], new_tokens: int, temperature: float, seed: int
) -> list[dict]:
    """One batch: the target continues every prompt (left-padded) by up to `new_tokens` tokens,
    sampling at `temperature` (0: greedy). Each continuation ends at the end-of-turn token, kept."""
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id
    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, ids in enumerate(prompts):
        input_ids[i, width - len(ids) :] = torch.tensor(ids)
        mask[i, width - len(ids) :] = 1
    torch.manual_seed(seed)
    sampling = {"temperature": temperature, "top_k": 0, "top_p": 1.0} if temperature else {}
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=new_tokens,
            pad_token_id=pad,
            eos_token_id=eos,
            do_sample=bool(temperature),
            **sampling,
        )
    records = []
    for i, ids in enumerate(prompts):
        gen = out[i, width:].tolist()
        n = gen.index(eos) + 1 if eos in gen else len(gen)
        if n:
            records.append({"ids": torch.tensor(list(ids) + gen[:n], dtype=torch.int32), "start": len(ids)})
    return records


def make_split(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    temperatures: Sequence[float],
    out: Path,
    *,
    batch: int,
    new_tokens: int,
    seed: int,
    deadline: float | None = None,
    log: Log = print,
) -> int:
    """Every prompt continued once per temperature, in shards of `batch` under `out`; returns the
    number of generated tokens written now. Stops cleanly (resumable) at `deadline` (perf_counter)."""
    codec = HFCodec(tokenizer)
    encoded = sorted((encode(codec, p) for p in prompts), key=len)  # similar lengths share a batch
    batches = [(encoded[i : i + batch], t) for t in temperatures for i in range(0, len(encoded), batch)]
    out.mkdir(parents=True, exist_ok=True)
    started, made = time.perf_counter(), 0
    for b, (group, temperature) in enumerate(batches):
        path = out / f"shard{b:05d}.pt"
        if path.exists():
            continue
        if deadline is not None and time.perf_counter() > deadline:
            log(f"data {out.name}: stopped at the deadline after {b} of {len(batches)} shards")
            break
        records = generate(model, tokenizer, group, new_tokens, temperature, seed * 100003 + b)
        tmp = path.with_suffix(".tmp")
        torch.save(records, tmp)
        os.replace(tmp, path)
        made += sum(len(r["ids"]) - r["start"] for r in records)
        rate = made / (time.perf_counter() - started)
        log(f"data {out.name}: shard {b + 1}/{len(batches)}, {made} tokens, {rate:.0f} tok/s")
    return made


def load_split(work: Path, split: str) -> list[dict]:
    """Every shard of `split` (for "train": every folder whose name starts with "train")."""
    records: list[dict] = []
    for path in sorted((work / "data").glob(f"{split}*/shard*.pt")):
        records += torch.load(path)
    if not records:
        raise FileNotFoundError(f"no {split} data under {work / 'data'}: run the data stage first")
    return records


def labelled_tokens(records: Sequence[dict]) -> int:
    return sum(len(r["ids"]) - r["start"] for r in records)


def choose_vocab(records: Sequence[dict], size: int, always: Sequence[int]) -> torch.Tensor:
    """The draft's head vocabulary: the `size` tokens the target generated most often in the data
    (ties: the lower id), always including `always`; sorted ids."""
    counts = torch.zeros(max(max(int(r["ids"].max()) for r in records), *always, size - 1) + 1, dtype=torch.float64)
    for r in records:
        counts.index_add_(0, r["ids"][r["start"] :].long(), torch.ones(len(r["ids"]) - r["start"], dtype=torch.float64))
    counts -= torch.arange(len(counts), dtype=torch.float64) * 1e-9  # ties go to the lower id
    for t in always:
        counts[t] = float("inf")
    return counts.topk(size).indices.sort().values


def rank_rows(records: Sequence[dict], ids: torch.Tensor, always: Sequence[int]) -> torch.Tensor:
    """The rows of a head over `ids` (sorted token ids) from the token the target generated most often in `records`
    to the least (ties: the lower id), the `always` tokens first: a cheaper head keeps a prefix of this order."""
    counts = torch.zeros(int(ids.max()) + 1, dtype=torch.float64)
    for r in records:
        gen = r["ids"][r["start"] :].long()
        gen = gen[gen < len(counts)]
        counts.index_add_(0, gen, torch.ones(len(gen), dtype=torch.float64))
    score = counts[ids.long()] - torch.arange(len(ids), dtype=torch.float64) * 1e-9  # ties go to the lower id
    for t in always:
        score[ids == t] = float("inf")
    return score.argsort(descending=True, stable=True)


def token_batches(records: Sequence[dict], tokens_per_batch: int, rng: Any) -> list[list[dict]]:
    """Records grouped by similar length into batches of at most `tokens_per_batch` padded tokens
    (a longer record forms a batch alone), in shuffled order."""
    order = sorted(records, key=lambda r: len(r["ids"]))
    out: list[list[dict]] = []
    cur: list[dict] = []
    for r in order:
        if cur and (len(cur) + 1) * len(r["ids"]) > tokens_per_batch:
            out.append(cur)
            cur = []
        cur.append(r)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def pad(batch: Sequence[dict]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, their attention mask, and `labelled` (B, T): True at positions t whose
    next token t+1 is one the target generated (the logits at t predict it)."""
    width = max(len(r["ids"]) for r in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    labelled = torch.zeros((len(batch), width), dtype=torch.bool)
    for b, r in enumerate(batch):
        n = len(r["ids"])
        ids[b, :n] = r["ids"].long()
        mask[b, :n] = 1
        labelled[b, r["start"] - 1 : n - 1] = True
    return ids, mask, labelled
