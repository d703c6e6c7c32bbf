"""Drafts built from the target's own parts: a subset of its decoder layers (shared or copied)
and an LM head over a subset of its vocabulary."""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import nn

from specviz.drafts.files import DraftFileError
from specviz.errors import ModelError


class SubsetHead(nn.Module):
    """An LM head over `ids` only; `forward` returns full-vocabulary logits with −inf elsewhere."""

    def __init__(self, weight: torch.Tensor, ids: torch.Tensor, full_vocab_size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight)
        self.register_buffer("ids", ids.long())
        self.full_vocab_size = full_vocab_size

    @classmethod
    def from_target(cls, target: Any, ids: torch.Tensor) -> SubsetHead:
        """The target's own LM head rows for `ids` (a copy: training may change it)."""
        head = target.get_output_embeddings().weight
        return cls(head[ids.long()].detach().clone(), ids, int(target.config.vocab_size))

    def subset(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden @ self.weight.t()

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        small = self.subset(hidden)
        out = small.new_full((*small.shape[:-1], self.full_vocab_size), -math.inf)
        out[..., self.ids] = small
        return out


def layer_subset(target: Any, layers: list[int], *, copy_layers: bool, what: str = "this draft") -> Any:
    """A causal LM of the target's class made of the target's decoder layers `layers` (in order)
    and its final norm, sharing its embeddings and rotary tables. With copy_layers the layers and
    the norm are copies (training changes them) renumbered for the draft's own KV cache; without,
    they are the target's own tensors, which only a prefix of the layers can be (cache indices)."""
    from transformers import AutoModelForCausalLM

    base = getattr(target, "model", None)
    if base is None or not hasattr(base, "layers") or not hasattr(base, "norm"):
        raise ModelError(f"{what} needs a Llama-style target; {type(target).__name__} is not one")
    total = len(base.layers)
    if not layers or any(not 0 <= i < total for i in layers):
        raise DraftFileError(f"draft layers {layers} do not fit a target with {total} layers")
    if not copy_layers and layers != list(range(len(layers))):
        raise ValueError("shared (uncopied) layers must be a prefix of the target's")
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = len(layers)
    if getattr(config, "layer_types", None):
        config.layer_types = [config.layer_types[i] for i in layers]
    with torch.device("meta"):
        draft = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    draft.model.embed_tokens = base.embed_tokens
    draft.model.rotary_emb = base.rotary_emb
    if copy_layers:
        copies = [copy.deepcopy(base.layers[i]) for i in layers]
        for j, layer in enumerate(copies):
            layer.self_attn.layer_idx = j  # index into the draft's own KV cache
        draft.model.layers = nn.ModuleList(copies)
        draft.model.norm = copy.deepcopy(base.norm)
    else:
        draft.model.layers = nn.ModuleList(base.layers[: len(layers)])
        draft.model.norm = base.norm
    return draft


def early_exit(target: Any, layers: int) -> Any:
    """A draft made of the target's first `layers` decoder layers, its final norm and LM head.
    It shares the target's weight tensors (no copy), so it costs no memory."""
    total = len(getattr(getattr(target, "model", None), "layers", ()))
    if total and not 1 <= layers < total:
        raise ModelError(f"an early-exit draft keeps 1 to {total - 1} of the target's {total} layers; got {layers}")
    draft = layer_subset(target, list(range(layers)), copy_layers=False, what="an early-exit draft")
    draft.lm_head = target.lm_head
    return draft.eval()
