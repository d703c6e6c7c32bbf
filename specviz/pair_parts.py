"""A pair's parts in a model store (specviz.models.store): their keys, made in one place for loading (load_pair) and
planning (planned_parts) so the two never disagree, and the parts one pair took, given back together when it closes.
specviz.loading decides what a pair is made of; this module names and holds what it took."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specviz import specs
from specviz.models import embedded
from specviz.models.hub import load_model
from specviz.models.store import ModelStore, tensor_bytes
from specviz.specs import ModelSpec


@dataclass(frozen=True)
class Keys:
    """The store's keys of a pair's parts, made in one place for loading (load_pair) and planning (planned_parts)."""

    device: torch.device
    dtype: torch.dtype
    slots: int  # a llama.cpp target's streams of the shared batched context (a class server's runs share decodes)

    @property
    def at(self) -> tuple[str, str]:
        return str(self.device), str(self.dtype)

    def torch(self, spec: ModelSpec) -> tuple:
        """A transformers model, one copy for every pair that runs it the same way."""
        return ("torch", str(spec), *self.at, "eager")

    def kernels(self, target: ModelSpec, draft: ModelSpec) -> tuple:
        """A target on per-shape kernels with its draft: one part."""
        return ("torch-kernels", str(target), str(draft), *self.at)

    def llama(self, where: Path | str, slots: int) -> tuple:
        """A llama.cpp model: the embedded target (EMBEDDED) or a GGUF file."""
        return ("llama.cpp", str(where), slots)

    def draft(self, target: ModelSpec, draft: ModelSpec, lean: bool) -> tuple:
        """A draft built beside a torch target."""
        return ("draft", str(target), str(draft), *self.at, lean)


class Parts:
    """The parts one pair took from a store, given back together when the pair closes."""

    def __init__(self, store: ModelStore, keys: Keys) -> None:
        self.store, self.keys, self.taken = store, keys, []

    def take(self, key: tuple, make: Any, name: str, size: Any) -> Any:
        value = self.store.take(key, make, name=name, size=size)
        self.taken.append(key)
        return value

    def give_back(self) -> None:
        taken, self.taken = self.taken, []
        for key in reversed(taken):
            self.store.give(key)

    def torch_model(self, spec: ModelSpec, limit: int, progress: Any) -> tuple[Any, Any]:
        """(model, tokenizer) of a transformers model, one copy for every pair that runs it the same way."""
        dev, torch_dtype = self.keys.device, self.keys.dtype
        name = f"{name_of(spec)} (torch, {str(torch_dtype).removeprefix('torch.')})"
        make = lambda: load_model(str(spec), limit, dev, torch_dtype, progress)  # noqa: E731
        return self.take(self.keys.torch(spec), make, name, _model_bytes)


def _model_bytes(loaded: tuple[Any, Any]) -> int:
    return tensor_bytes(loaded[0])


def name_of(spec: ModelSpec) -> str:
    """How a torch model is named: the embedded model by its name, any other by its spec."""
    return embedded.NAME if isinstance(spec, specs.Embedded) else str(spec)
