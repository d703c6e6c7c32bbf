"""The next-token model protocol (docs/architecture.md, "The seams") and its sessions.

A `NextTokenModel` is shared and never mutated; each run opens its own `Session`, which owns
the KV cache (or whatever state the model keeps) and can be cropped back to a prefix. The
engine sees only this protocol, so a Hugging Face causal LM, a hand-made probability table and
a model-free prompt-lookup drafter are interchangeable on either side of a pair.

Convention: a logits row that is entirely −inf means "no proposal" (the prompt-lookup drafter
found no match); the engine then stops drafting for that step.

Longer than most modules, for a reason: the protocol and its sessions live together, because the tree
layout they share (SessionStats: parents, positions, the attention mask of a tree pass) is what keeps a
transformers model, a table and a model-free drafter scoring a tree the same way.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from specviz.models import threads as torch_threads

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
class TreeSession(Session, Protocol):
    """A session that can also score a token tree in one pass (docs/algorithm.md, "Token trees")."""

    def extend_tree(self, ids: Sequence[int], parents: Sequence[int]) -> torch.Tensor:
        """Append `ids` as tree nodes in one forward pass: node j's parent is the held token (or the
        earlier node of this call) at absolute index `parents[j]`; it attends to its ancestors and
        itself, at position (its parent's position + 1). Returns one logits row per node."""
        ...

    def retain(self, path: Sequence[int]) -> None:
        """Keep the linear prefix and the nodes at absolute indices `path` (a chain down the tree,
        root to leaf), in that order; drop every other tree node (gather, then crop)."""
        ...


@runtime_checkable
class FeatureSession(Session, Protocol):
    """A target session that can keep the final hidden state of every token it scores (for a draft that
    reads them: specviz.drafts.feature)."""

    def record_features(self) -> None: ...

    def features(self, start: int, stop: int) -> torch.Tensor: ...


@dataclass(frozen=True)
class Capabilities:
    """What a model can do beyond the protocol's minimum, declared by its class: the engine and the pair
    read this, never an attribute they probe for."""

    runtime: str = "torch"  # what runs it: torch, torch-kernels, llama.cpp, "vllm server", table, …
    threads: int | None = None  # the threads it runs on: its own (llama.cpp's contexts; torch's, pinned at each pass)
    top_k: int | None = None  # it returns only its top-k probabilities (a served target); None: all of p
    trees: bool = True  # it scores a token tree in one pass (its sessions are TreeSessions)
    splits_drafts: bool = False  # it may take only a prefix of a draft (its sessions' scorable_draft)
    reads_target: bool = False  # a draft whose sessions read the target's session (new_session(target))
    can_target: bool = True  # it can be a target on its own (a pair's roles can be swapped to it)
    sized_sessions: bool = False  # new_session(tokens=n) allocates a session's memory for n tokens only
    # its sessions may hand the engine a draft to propose instead of q's choice (`typed_draft()`: a person's typed
    # draft, specviz.drafts.typed); q is still the model's own distribution
    proposes: bool = False
    # its sessions are told each step's τ before it drafts (`plan(tau)`): a drafter that makes a whole draft at once
    # from the confirmed tokens and hands it out a token at a time (suffix decoding, specviz.drafts.suffix)
    plans: bool = False


@runtime_checkable
class NextTokenModel(Protocol):
    name: str
    vocab_size: int  # width of the logits rows
    max_length: int | None  # longest sequence the model can score, None if unbounded
    capabilities: Capabilities

    def new_session(self) -> Session: ...


class SessionStats:
    """Bookkeeping shared by the sessions: length, forward count and forward time, and the shape of
    the held tokens: a linear prefix, then (while a tree step verifies) tree nodes with parents."""

    def __init__(self) -> None:
        self.length = 0
        self.forwards = 0
        self.forward_seconds = 0.0
        self._tree: list[tuple[int, int]] = []  # (parent index, position) of each held tree node

    @property
    def linear_length(self) -> int:
        """Held tokens before the first tree node: a plain sequence."""
        return self.length - len(self._tree)

    def _check_crop(self, length: int) -> None:
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot crop a session of {self.length} tokens to {length}")
        del self._tree[max(0, length - self.linear_length) :]

    def _check_linear(self) -> None:
        if self._tree:
            raise ValueError("this session holds tree nodes: retain a path or crop before extending it")

    def _position(self, index: int, new: Sequence[tuple[int, int]] = ()) -> int:
        base = self.linear_length
        if index < base:
            return index
        index -= base
        return self._tree[index][1] if index < len(self._tree) else new[index - len(self._tree)][1]

    def _tree_layout(self, parents: Sequence[int]) -> tuple[list[tuple[int, int]], torch.Tensor]:
        """(parent, position) of each new node, and the boolean mask (nodes, held + nodes) of what
        each may attend to: the linear prefix, its tree ancestors and itself. Parent −1: the node
        starts the sequence (only in a session that holds no plain prefix)."""
        base, held = self.linear_length, self.length
        new: list[tuple[int, int]] = []
        for j, parent in enumerate(parents):
            if not (0 <= parent < held + j or (parent == -1 and base == 0)):
                raise ValueError(f"tree node {j}: parent {parent} is not a held token or an earlier node")
            new.append((parent, self._position(parent, new) + 1))
        nodes = self._tree + new
        mask = torch.zeros(len(new), held + len(new), dtype=torch.bool)
        mask[:, :base] = True
        for j in range(len(new)):
            at = held + j
            while at >= base:
                mask[j, at] = True
                at = nodes[at - base][0]
            mask[j, : at + 1] = True
        return new, mask

    def _tree_inputs(
        self, new: Sequence[tuple[int, int]], allowed: torch.Tensor, dtype: torch.dtype, device: torch.device
    ) -> dict[str, torch.Tensor]:
        """The additive attention mask and position ids of a tree pass; none when the nodes simply
        continue the held sequence (a chain: the model's own causal pass computes exactly that)."""
        held = allowed.shape[1] - len(new)
        causal = torch.ones(len(new), held + len(new), dtype=torch.bool).tril(held)
        if torch.equal(allowed, causal):
            return {}
        mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
        positions = torch.tensor([[pos for _, pos in new]], dtype=torch.long, device=device)
        return {"attention_mask": mask[None, None].to(device), "position_ids": positions}

    def _retained(self, path: Sequence[int]) -> list[int]:
        """Indices of the held tokens that `retain(path)` keeps, checked to be a chain from the prefix."""
        base = self.linear_length
        previous = base - 1
        for index in path:
            if not base <= index < self.length or self._tree[index - base][0] != previous:
                raise ValueError(f"{list(path)} is not a path down the held tree")
            previous = index
        return [*range(base), *path]

    def _keep_linear(self, kept: int) -> None:
        self._tree.clear()
        self.length = kept


# --- Hugging Face causal LM -------------------------------------------------------------------


class HFModel:
    """A transformers causal LM behind the protocol; each session owns a `DynamicCache`. Every forward pass runs
    on `threads` torch threads (default: the count of the thread that makes it), from whatever thread it is
    called: the same bits everywhere (specviz.models.threads)."""

    def __init__(
        self, model: torch.nn.Module, name: str = "", runtime: str = "torch", threads: int | None = None
    ) -> None:
        self.model = model.eval()
        self.threads = threads or torch_threads.current()
        # runtime "torch-kernels": its Linear modules on chosen kernels
        self.capabilities = Capabilities(runtime=runtime, threads=self.threads)
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
        self._threads = owner.threads
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
        self._check_linear()
        return self._forward(ids, len(ids) if keep is None else keep)

    def extend_tree(self, ids: Sequence[int], parents: Sequence[int]) -> torch.Tensor:
        new, allowed = self._tree_layout(parents)
        dtype = next(self._model.parameters()).dtype
        logits = self._forward(ids, len(ids), self._tree_inputs(new, allowed, dtype, self._device))
        self._tree.extend(new)
        return logits

    def _forward(self, ids: Sequence[int], keep: int, shape: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        start = time.perf_counter()
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self._device)
        shape = shape or {}
        with torch.inference_mode(), torch_threads.pinned(self._threads):
            if self._features is None:
                out = self._model(
                    input_ids=input_ids, past_key_values=self._cache, use_cache=True, logits_to_keep=keep, **shape
                )
                logits = out.logits[0, -keep:]
            else:
                hidden, logits = forward_with_features(self._model, input_ids, self._cache, keep, **shape)
                self._features = torch.cat([self._features, hidden[0]]) if len(self._features) else hidden[0]
                logits = logits[0]
        logits = logits.to("cpu", torch.float64)
        self.forward_seconds += time.perf_counter() - start
        self.forwards += 1
        self.length += len(ids)
        return logits

    def retain(self, path: Sequence[int]) -> None:
        kept = self._retained(path)
        if len(kept) < self.length:
            gather_cache(self._cache, kept)
            if self._features is not None:
                self._features = self._features[kept]
        self._keep_linear(len(kept))

    def crop(self, length: int) -> None:
        self._check_crop(length)
        if length < self.length:
            # transformers 5.x: crop takes the (negative) number of tokens to remove
            self._cache.crop(length - self.length)
            self.length = length
            if self._features is not None:
                self._features = self._features[:length]


def gather_cache(cache: Any, kept: Sequence[int]) -> None:
    """Keep only the cached positions `kept` (in that order) in every layer of a DynamicCache."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise TypeError(f"cannot gather positions of a {type(cache).__name__}")
    for layer in layers:
        if getattr(layer, "is_sliding", False):
            raise TypeError("a sliding-window cache cannot keep a tree path")
        if layer.keys is not None and layer.keys.numel():
            index = torch.tensor(kept, dtype=torch.long, device=layer.keys.device)
            layer.keys = layer.keys.index_select(-2, index)
            layer.values = layer.values.index_select(-2, index)


def forward_with_features(
    model: Any, input_ids: torch.Tensor, cache: Any = None, keep: int | None = None, **shape: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """(final hidden states at every position fed, logits of the last `keep`) from one forward of
    a Llama-style causal LM: its decoder body, then its LM head, as the model's own forward does.
    The hidden state is the output of the final norm: what the LM head reads. Nothing is attached
    to the model (no hook), so concurrent runs sharing it never see each other's forwards."""
    body = getattr(model, "model", None)
    if body is None or not hasattr(body, "norm"):
        raise TypeError(f"recording hidden states needs a Llama-style model; {type(model).__name__} is not one")
    out = body(input_ids=input_ids, past_key_values=cache, use_cache=cache is not None, **shape)
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
        self.capabilities = Capabilities(runtime="table")
        self.table = table
        self.vocab_size = int(table.shape[-1])
        self.max_length = None
        self._logits = table.log()

    def row(self, previous: int) -> torch.Tensor:
        return self._logits if self._logits.dim() == 1 else self._logits[previous]

    def new_session(self) -> TableSession:
        return TableSession(self)


class ListSession(SessionStats):
    """A session whose whole state is the token list; subclasses score a context (`_row`) or the
    last `keep` positions (`_score`). A tree node's context is the prefix and its path."""

    def __init__(self) -> None:
        super().__init__()
        self._ids: list[int] = []

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        self._check_linear()
        start = time.perf_counter()
        self._ids.extend(int(y) for y in ids)
        self.length = len(self._ids)
        logits = self._score(keep or len(ids))
        self.forward_seconds += time.perf_counter() - start
        self.forwards += 1
        return logits

    def extend_tree(self, ids: Sequence[int], parents: Sequence[int]) -> torch.Tensor:
        start = time.perf_counter()
        new, allowed = self._tree_layout(parents)
        self._ids.extend(int(y) for y in ids)
        self._tree.extend(new)
        self.length = len(self._ids)
        held = torch.tensor(self._ids)
        logits = torch.stack([self._row(held[row].tolist()) for row in allowed])
        self.forward_seconds += time.perf_counter() - start
        self.forwards += 1
        return logits

    def retain(self, path: Sequence[int]) -> None:
        kept = self._retained(path)
        self._ids = [self._ids[i] for i in kept]
        self._keep_linear(len(kept))

    def _score(self, keep: int) -> torch.Tensor:
        return torch.stack([self._row(self._ids[:end]) for end in range(self.length - keep + 1, self.length + 1)])

    def _row(self, context: list[int]) -> torch.Tensor:
        """Logits of the token after `context`."""
        raise NotImplementedError

    def crop(self, length: int) -> None:
        self._check_crop(length)
        del self._ids[length:]
        self.length = length


class TableSession(ListSession):
    def __init__(self, owner: TableModel) -> None:
        super().__init__()
        self._owner = owner

    def _row(self, context: list[int]) -> torch.Tensor:
        return self._owner.row(context[-1])
