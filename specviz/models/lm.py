"""The next-token model protocol (DESIGN.md, "The seams") and its three implementations.

A `NextTokenModel` is shared and never mutated; each run opens its own `Session`, which owns
the KV cache (or whatever state the model keeps) and can be cropped back to a prefix. The
engine sees only this protocol, so a Hugging Face causal LM, a hand-made probability table and
a model-free prompt-lookup drafter are interchangeable on either side of a pair.

Convention: a logits row that is entirely −inf means "no proposal" (the prompt-lookup drafter
found no match); the engine then stops drafting for that step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import torch

NO_PROPOSAL = float("-inf")


@runtime_checkable
class Session(Protocol):
    """Per-run scoring state over a growing token sequence."""

    length: int  # tokens held (the cache covers exactly these)
    forwards: int  # forward passes made so far
    forward_seconds: float  # wall time spent inside those forward passes

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        """Append `ids` in one forward pass; return float64 CPU logits of shape (m, V) for the
        last m = `keep` (default: all) of them. Row j scores the token that follows row j's input."""
        ...

    def crop(self, length: int) -> None:
        """Forget everything after the first `length` tokens."""
        ...


@runtime_checkable
class NextTokenModel(Protocol):
    name: str
    vocab_size: int  # width of the logits rows
    max_length: int | None  # longest sequence the model can score, None if unbounded

    def new_session(self) -> Session: ...


class SessionStats:
    """Bookkeeping shared by the sessions: length, forward count and forward time."""

    def __init__(self) -> None:
        self.length = 0
        self.forwards = 0
        self.forward_seconds = 0.0

    def _check_crop(self, length: int) -> None:
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot crop a session of {self.length} tokens to {length}")


# --- Hugging Face causal LM -------------------------------------------------------------------


class HFModel:
    """A transformers causal LM behind the protocol; each session owns a `DynamicCache`."""

    def __init__(self, model: torch.nn.Module, name: str = "") -> None:
        self.model = model.eval()
        self.name = name or getattr(model.config, "name_or_path", "") or type(model).__name__
        head = model.get_output_embeddings()  # a restricted head reports the full width it fills
        self.vocab_size = int(getattr(head, "full_vocab_size", 0) or head.weight.shape[0])
        self.max_length = getattr(model.config, "max_position_embeddings", None)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def new_session(self) -> HFSession:
        return HFSession(self)


class HFSession(SessionStats):
    def __init__(self, owner: HFModel) -> None:
        from transformers import DynamicCache

        super().__init__()
        self._model = owner.model
        self._device = owner.device
        self._cache = DynamicCache(config=owner.model.config)
        self._features: torch.Tensor | None = None  # final hidden states, when a draft reads them

    def record_features(self) -> None:
        """From now on keep the final hidden state (the LM head's input) of every scored token,
        for a feature-level draft (specviz.drafts.feature). Only before the first token."""
        if self.length:
            raise ValueError("record features from the start of a session")
        if self._features is None:
            self._features = torch.empty(0)

    @property
    def features_length(self) -> int:
        return 0 if self._features is None else len(self._features)

    def features(self, start: int, stop: int) -> torch.Tensor:
        """The recorded final hidden states of positions start … stop − 1, (stop − start, hidden)."""
        return self._features[start:stop]

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        start = time.perf_counter()
        keep = len(ids) if keep is None else keep
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self._device)
        with torch.inference_mode():
            if self._features is None:
                out = self._model(input_ids=input_ids, past_key_values=self._cache, use_cache=True, logits_to_keep=keep)
                logits = out.logits[0, -keep:]
            else:
                hidden, logits = forward_with_features(self._model, input_ids, self._cache, keep)
                self._features = torch.cat([self._features, hidden[0]]) if len(self._features) else hidden[0]
                logits = logits[0]
        logits = logits.to("cpu", torch.float64)
        self.forward_seconds += time.perf_counter() - start
        self.forwards += 1
        self.length += len(ids)
        return logits

    def crop(self, length: int) -> None:
        self._check_crop(length)
        if length < self.length:
            # transformers 5.x: crop takes the (negative) number of tokens to remove
            self._cache.crop(length - self.length)
            self.length = length
            if self._features is not None:
                self._features = self._features[:length]


def forward_with_features(
    model: Any, input_ids: torch.Tensor, cache: Any = None, keep: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(final hidden states at every position fed, logits of the last `keep`) from one forward of
    a Llama-style causal LM: its decoder body, then its LM head, as the model's own forward does.
    The hidden state is the output of the final norm: what the LM head reads. Nothing is attached
    to the model (no hook), so concurrent runs sharing it never see each other's forwards."""
    body = getattr(model, "model", None)
    if body is None or not hasattr(body, "norm"):
        raise TypeError(f"recording hidden states needs a Llama-style model; {type(model).__name__} is not one")
    out = body(input_ids=input_ids, past_key_values=cache, use_cache=cache is not None)
    hidden = out.last_hidden_state
    keep = hidden.shape[1] if keep is None else keep
    return hidden, model.get_output_embeddings()(hidden[:, -keep:])


# --- table-driven model ------------------------------------------------------------------------


class TableModel:
    """Next-token probabilities from a table: shape (V,) for a context-free model, or (V, V) for
    a bigram model whose row is chosen by the previous token. Exact, tiny and fast."""

    def __init__(self, probs: torch.Tensor | Sequence, name: str = "table") -> None:
        table = torch.as_tensor(probs, dtype=torch.float64)
        if table.dim() not in (1, 2) or (table.dim() == 2 and table.shape[0] != table.shape[1]):
            raise ValueError("a table must have shape (V,) or (V, V)")
        if (table < 0).any() or not torch.allclose(table.sum(-1), torch.ones(()).double()):
            raise ValueError("every row of a table must be a probability distribution")
        self.name = name
        self.table = table
        self.vocab_size = int(table.shape[-1])
        self.max_length = None
        self._logits = table.log()

    def row(self, previous: int) -> torch.Tensor:
        return self._logits if self._logits.dim() == 1 else self._logits[previous]

    def new_session(self) -> TableSession:
        return TableSession(self)


class ListSession(SessionStats):
    """A session whose whole state is the token list; subclasses score its last `keep` positions."""

    def __init__(self) -> None:
        super().__init__()
        self._ids: list[int] = []

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        start = time.perf_counter()
        self._ids.extend(int(y) for y in ids)
        self.length = len(self._ids)
        logits = self._score(keep or len(ids))
        self.forward_seconds += time.perf_counter() - start
        self.forwards += 1
        return logits

    def _score(self, keep: int) -> torch.Tensor:
        raise NotImplementedError

    def crop(self, length: int) -> None:
        self._check_crop(length)
        del self._ids[length:]
        self.length = length


class TableSession(ListSession):
    def __init__(self, owner: TableModel) -> None:
        super().__init__()
        self._owner = owner

    def _score(self, keep: int) -> torch.Tensor:
        return torch.stack([self._owner.row(y) for y in self._ids[-keep:]])
