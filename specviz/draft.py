"""The trained embedded draft: some of the target's layers, low-rank adapted, with a small LM head.

The draft is built from the target at load time; only what training changed is stored (fp16
safetensors in `assets/draft/`): LoRA factors for every projection of the kept layers, their norms,
the final norm, and an LM head over a subset of the vocabulary (the token ids are stored with it).
Tokens outside the subset get logit −inf, so q = 0 there; the engine's rules need nothing else.
`scripts/train_draft.py` makes the files; `load_trained` turns them back into a causal LM.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from specviz.errors import ModelError

SPEC_FILE = "draft.json"
TENSORS_FILE = "draft.safetensors"
FORMAT = 1
PROJECTIONS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
               "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")  # fmt: skip
NORMS = ("input_layernorm", "post_attention_layernorm")
_INSTALLED = Path(__file__).resolve().parent / "assets" / "draft"  # a wheel's package data
DEFAULT_DIR = _INSTALLED if _INSTALLED.is_dir() else Path(__file__).resolve().parents[1] / "assets" / "draft"


class DraftFileError(ModelError):
    """A trained-draft folder is missing, incomplete or made for another target."""


@dataclass(frozen=True)
class DraftSpec:
    layers: list[int]  # indices of the target's decoder layers the draft keeps, in order
    rank: int  # LoRA rank on every projection
    vocab_size: int  # size of the draft's restricted LM head
    kind: str = "lora"  # "lora": adapted target layers; "feature": specviz.eagle
    extra: dict = field(default_factory=dict, compare=False)


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


def _submodule(root: nn.Module, dotted: str) -> tuple[nn.Module, str]:
    parent, _, name = dotted.rpartition(".")
    return root.get_submodule(parent), name


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


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters training changes (by name): what checkpoints keep."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(value)


def save_draft(student: Student, directory: Path, meta: dict | None = None) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file(student.files(), str(directory / TENSORS_FILE))
    spec = {"format": FORMAT, **asdict(student.spec), **(meta or {})}
    spec.pop("extra", None)
    (directory / SPEC_FILE).write_text(json.dumps(spec, indent=1) + "\n")


def is_draft_dir(path: str | Path) -> bool:
    return (Path(path) / SPEC_FILE).is_file()


def read_spec(directory: Path) -> DraftSpec:
    try:
        raw = json.loads((directory / SPEC_FILE).read_text())
        if raw.get("format") != FORMAT:
            raise DraftFileError(f"{directory / SPEC_FILE} has format {raw.get('format')}; this specviz reads {FORMAT}")
        kind = raw.get("kind", "lora")
        if kind not in ("lora", "feature"):
            raise DraftFileError(f"{directory / SPEC_FILE}: unknown draft kind {kind!r}")
        return DraftSpec([int(i) for i in raw["layers"]], int(raw["rank"]), int(raw["vocab_size"]), kind, raw)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DraftFileError(f"cannot read the trained draft in {directory}: {exc}") from exc


def load_trained(target: Any, directory: str | Path = DEFAULT_DIR) -> Any:
    """The runtime draft: a causal LM whose copied layers carry the merged adapters, whose head
    covers the stored vocabulary subset, and whose logits span the full vocabulary."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    directory = Path(directory)
    spec = read_spec(directory)
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
