"""The LoRA-copy recipe: some of the target's layers, copied and low-rank adapted, their norms
and an LM head over a vocabulary subset trained.

The draft is built from the target at load time; only what training changed is stored (fp16
safetensors, see specviz.drafts.files): LoRA factors for every projection of the kept layers, their
norms, the final norm, and an LM head over a subset of the vocabulary (the token ids are stored with
it). Tokens outside the subset get logit −inf, so q = 0 there; the engine's rules need nothing else.
`specviz.training.train` makes the files; `load_lora` turns them back into a causal LM.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn

from specviz.drafts.files import TENSORS_FILE, DraftFileError, DraftSpec, trainable_state, write_spec
from specviz.drafts.subset import SubsetHead, layer_subset

PROJECTIONS = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
)
NORMS = ("input_layernorm", "post_attention_layernorm")


def _submodule(root: nn.Module, dotted: str) -> tuple[nn.Module, str]:
    parent, _, name = dotted.rpartition(".")
    return root.get_submodule(parent), name


class LoRALinear(nn.Module):
    """y = base(x) + B(A x); base frozen, B starts at zero so training starts from the copy."""

    def __init__(self, base: nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base.requires_grad_(False)
        kind = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.lora_A = nn.Parameter(torch.randn(rank, base.in_features, **kind) / math.sqrt(base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, **kind))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_A.t()) @ self.lora_B.t()


class Student(nn.Module):
    """The draft as training sees it: LoRA wrappers on the copied layers (rank 0: the layers
    themselves trainable), a trainable subset head. `subset_logprobs` gives log q over the subset;
    `save_draft` stores it and `load_trained` rebuilds it with the adapters merged."""

    def __init__(self, target: Any, spec: DraftSpec, vocab_ids: torch.Tensor) -> None:
        super().__init__()
        self.spec = spec
        self.lm = layer_subset(target, spec.layers, copy_layers=True, what="a trained draft")
        self.lm.model.embed_tokens.requires_grad_(False)
        for layer in self.lm.model.layers:
            layer.requires_grad_(spec.rank == 0)  # rank 0: full fine-tuning of the copied layers
            for name in PROJECTIONS if spec.rank else ():
                parent, attr = _submodule(layer, name)
                setattr(parent, attr, LoRALinear(getattr(parent, attr), spec.rank))
            for name in NORMS:
                getattr(layer, name).requires_grad_(True)
        self.lm.model.norm.requires_grad_(True)
        self.head = SubsetHead.from_target(target, vocab_ids)
        self.lm.lm_head = self.head

    def trainable(self) -> Iterator[nn.Parameter]:
        return (p for p in self.parameters() if p.requires_grad)

    def subset_logprobs(
        self, ids: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor | None = None, cols: torch.Tensor | None = None
    ) -> torch.Tensor:
        hidden = self.lm.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        if rows is not None:
            hidden = hidden[rows, cols]
        logits = self.head.subset(hidden)
        if logits.dtype in (torch.bfloat16, torch.float16):  # under autocast: the softmax in fp32
            logits = logits.float()
        return torch.log_softmax(logits, dim=-1)

    def files(self) -> dict[str, torch.Tensor]:
        """What `save_draft` stores: trained tensors in fp16, the vocabulary ids as int32."""
        out = {}
        for name, value in trainable_state(self).items():
            key = "head.weight" if name.endswith("lm_head.weight") else name.removeprefix("lm.model.")
            out[key] = value.to(torch.float16).contiguous()
        out["head.ids"] = self.head.ids.to(torch.int32)
        return out


def save_draft(student: Student, directory: Path, meta: dict | None = None) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file(student.files(), str(directory / TENSORS_FILE))
    spec = {**asdict(student.spec), **(meta or {})}
    spec.pop("extra", None)
    write_spec(directory, spec)


def load_lora(target: Any, directory: Path, spec: DraftSpec) -> Any:
    """The runtime draft: a causal LM whose copied layers carry the merged adapters, whose head
    covers the stored vocabulary subset, and whose logits span the full vocabulary."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(directory / TENSORS_FILE))
    except (OSError, SafetensorError) as exc:
        raise DraftFileError(f"cannot read {directory / TENSORS_FILE}: {exc}") from exc
    dtype = target.get_input_embeddings().weight.dtype
    hidden = int(target.config.hidden_size)
    try:
        ids = tensors.pop("head.ids").long()
        head_weight = tensors.pop("head.weight")
        if head_weight.shape != (spec.vocab_size, hidden) or int(ids.max()) >= int(target.config.vocab_size):
            shape = tuple(head_weight.shape)
            raise DraftFileError(f"the draft in {directory} was made for another target (head {shape})")
        draft = layer_subset(target, spec.layers, copy_layers=True, what="a trained draft")
        with torch.no_grad():
            for j, layer in enumerate(draft.model.layers):
                for name in PROJECTIONS:
                    a, b = tensors.pop(f"layers.{j}.{name}.lora_A"), tensors.pop(f"layers.{j}.{name}.lora_B")
                    weight = layer.get_submodule(name).weight
                    weight += (b.double() @ a.double()).to(weight.dtype)
                for name in NORMS:
                    getattr(layer, name).weight.copy_(tensors.pop(f"layers.{j}.{name}.weight"))
            draft.model.norm.weight.copy_(tensors.pop("norm.weight"))
    except KeyError as exc:
        raise DraftFileError(f"the draft in {directory} lacks tensor {exc}") from exc
    except RuntimeError as exc:  # shape mismatch while merging
        raise DraftFileError(f"the draft in {directory} does not fit this target: {exc}") from exc
    if tensors:
        raise DraftFileError(f"the draft in {directory} has unexpected tensors: {sorted(tensors)[:3]}")
    draft.lm_head = SubsetHead(head_weight.to(dtype), ids, int(target.config.vocab_size))
    draft.requires_grad_(False)
    return draft.to(dtype).eval()
