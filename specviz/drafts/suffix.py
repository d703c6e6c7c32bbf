"""Suffix decoding: a model-free drafter that matches the context's last tokens against suffix trees of the prompt
and of the target's earlier answers and proposes the most frequent continuation, as many tokens as its counts
allow (Oliaro et al., "SuffixDecoding", arXiv:2411.04975; docs/algorithm.md, "Suffix decoding").

It does what vLLM (`method: "suffix"`) and SGLang (`SUFFIX`) run through Snowflake's ArcticInference
`SuffixDecodingCache` (arctic_inference/suffix_decoding/cache.py over csrc/suffix_decoding/suffix_tree.cc), with the
engines' parameters by their names (`SuffixSettings`):

- two trees: the run's own (its prompt and what it has written so far: the "local" tree) and the shared one (the
  answers of earlier runs, and this run's as it grows: the "global" tree, at most `max_cached_requests` answers,
  the oldest evicted first). Each holds every substring of its sequences up to `max_tree_depth` tokens, with its
  count: how many times it occurs.
- a step matches the context's last m tokens for m = 1, 2, … (the context cut to its last `max_tree_depth`, m below
  its length, while the tree holds them), and from each match walks down the most frequent child (the head of the
  engine's sibling order: most counts first, ties as its linked lists leave them) while the estimated probability,
  the product of count(child) / count(node) along the path, stays ≥ `min_token_prob`, for at most
  min(τ, ⌊m · max_spec_factor + max_spec_offset⌋) tokens. Of all matches the draft whose summed probabilities
  (its score) is largest wins, the longer match on a tie, the run's own tree over the shared one on a tie; the
  arithmetic is the engine's float32.

The tree here is uncompressed (one node per token of a substring) where the engine's is a compressed suffix tree:
the same counts and the same sibling order, so the same drafts; it costs more memory per token, which the shared
history bounds (`SuffixHistory(max_nodes=…)`, evicting the oldest answers like `max_cached_requests`).

Nothing of a run is kept on the drafter (models are shared): the run's tree lives in its session, the earlier
answers in a `SuffixHistory` handed in (`SuffixDrafter.remembering(history)`: a browser session's, or a class's),
else a history of the run's own. Its q is one-hot at the proposal; where the draft has no more tokens the row is
empty (no proposal), so the step drafts fewer than τ. The engine tells its sessions each step's τ before it drafts
(`Capabilities.plans`, `plan(tau)`): a whole draft is made once per step from the confirmed tokens, then handed out
a token at a time.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specviz.models.lm import NO_PROPOSAL, Capabilities, ListSession

_FLOAT32 = struct.Struct("f")


def _f32(x: float) -> float:
    """x rounded to the nearest float32 (as C++ stores a float)."""
    return _FLOAT32.unpack(_FLOAT32.pack(x))[0]


NODE_BYTES = 370  # a tree node's memory in CPython (docs/performance.md, "Suffix decoding"): a history's budget


@dataclass(frozen=True, kw_only=True)
class SuffixSettings:
    """The engines' parameters, by vLLM's names (`suffix_decoding_*`; SGLang's `speculative_suffix_*`), their
    defaults vLLM's (vllm/config/speculative.py)."""

    max_tree_depth: int = 24  # the longest substring a tree holds: the match and the draft together
    max_spec_factor: float = 1.0  # at most max_spec_factor · match length (+ max_spec_offset) tokens a step
    max_spec_offset: float = 0.0  # vLLM passes none (0); SGLang's C++ engines and ArcticInference's cache take it
    min_token_prob: float = 0.1  # a draft token's estimated probability (counts along the path) at least this
    max_cached_requests: int = 10000  # earlier answers kept in the shared tree (0: none, -1: no limit)

    def __post_init__(self) -> None:
        if not 1 <= self.max_tree_depth <= 4096:
            raise ValueError("max_tree_depth must be 1 to 4096")
        if not 0.0 <= self.min_token_prob <= 1.0:
            raise ValueError("min_token_prob must be between 0 and 1")
        if not 0 <= self.max_spec_factor <= 1e6 or not -1e6 <= self.max_spec_offset <= 1e6:
            raise ValueError("max_spec_factor must be 0 to 10⁶ and max_spec_offset −10⁶ to 10⁶")
        if self.max_cached_requests < -1:
            raise ValueError("max_cached_requests must be ≥ -1 (-1: no limit)")


DEFAULTS = SuffixSettings()


@dataclass(frozen=True, kw_only=True)
class SuffixDraft:
    """One speculation: its tokens, each one's estimated probability, their sum (score) and the match it came from."""

    tokens: tuple[int, ...] = ()
    probs: tuple[float, ...] = ()
    score: float = 0.0
    match_len: int = 0


class _Node:
    __slots__ = ("count", "kids", "order", "token")

    def __init__(self, token: int) -> None:
        self.token = token
        self.count = 0
        self.kids: dict[int, _Node] = {}  # token → child
        self.order: list[_Node] = []  # the children in the engine's sibling order: most counts first


class SuffixTree:
    """Every substring of its sequences up to `max_depth` tokens, with its count (ArcticInference's SuffixTree, one
    node per token). `extend(seq, tokens)` appends to a sequence, `remove(seq)` takes one out, `speculate` drafts."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.root = _Node(-1)
        self.nodes = 1
        self._seqs: dict[int, list[int]] = {}
        self._active: dict[int, deque[_Node]] = {}  # per sequence: the nodes its last suffixes end at

    def sequences(self) -> dict[int, tuple[int, ...]]:
        return {seq: tuple(tokens) for seq, tokens in self._seqs.items()}

    def extend(self, seq: int, tokens: Sequence[int]) -> None:
        for token in tokens:
            self._append(seq, int(token))

    def _append(self, seq: int, token: int) -> None:
        tokens = self._seqs.setdefault(seq, [])
        active = self._active.setdefault(seq, deque())
        active.append(self.root)  # the empty suffix that starts at the new token
        self.root.count += 1
        if len(active) > self.max_depth:
            active.popleft()
        tokens.append(token)
        for i, node in enumerate(active):
            child = node.kids.get(token)
            if child is None:  # a new child, count 1: last in its parent's order
                child = _Node(token)
                child.count = 1
                node.kids[token] = child
                node.order.append(child)
                self.nodes += 1
            else:
                _increment(node, child)
            active[i] = child

    def remove(self, seq: int) -> None:
        """Take sequence `seq` out: every substring's count falls by its occurrences there (the engine's remove)."""
        tokens = self._seqs.pop(seq, None)
        self._active.pop(seq, None)
        if tokens is None:
            return
        for start in range(len(tokens)):
            node = self.root
            node.count -= 1
            for token in tokens[start : start + self.max_depth]:
                child = node.kids.get(token)
                if child is None:
                    break
                if child.count > 1:
                    _decrement(node, child)
                else:  # only this occurrence passed through it: it goes, with everything below it
                    node.order.remove(child)
                    del node.kids[token]
                    self.nodes -= _size(child)
                    break
                node = child

    def match(self, pattern: Sequence[int]) -> _Node | None:
        node = self.root
        for token in pattern:
            node = node.kids.get(int(token))
            if node is None:
                return None
        return node

    def speculate(
        self, context: Sequence[int], max_spec_tokens: int, settings: SuffixSettings = DEFAULTS
    ) -> SuffixDraft:
        """The best draft over every match of the context's last m tokens, m = 1 … len(context) − 1 (the engine's
        SuffixTree::speculate: its loop stops at the first m the tree does not hold)."""
        best = SuffixDraft()
        factor, offset, min_prob = (
            _f32(x) for x in (settings.max_spec_factor, settings.max_spec_offset, settings.min_token_prob)
        )
        for m in range(1, len(context)):
            node = self.match(context[len(context) - m :])
            if node is None:
                break
            most = max(0, min(max_spec_tokens, int(_f32(_f32(m * factor) + offset) + 1e-6)))
            draft = _path(node, most, min_prob)
            if draft.score >= best.score:
                best = SuffixDraft(tokens=draft.tokens, probs=draft.probs, score=draft.score, match_len=m)
        return best


def _path(node: _Node, most: int, min_prob: float) -> SuffixDraft:
    """From a matched node, the most frequent child at each level (the engine's _speculate_path). Its float32
    arithmetic exactly: each product, quotient and sum of float32 values is taken in float64 and rounded to float32
    (`_f32`), which gives the float32 result (double rounding is innocuous when 53 ≥ 2 · 24 + 2 bits)."""
    tokens: list[int] = []
    probs: list[float] = []
    prob, score = 1.0, 0.0
    while len(tokens) < most and node.order:
        child = node.order[0]
        if child.count != node.count:  # a quotient of 1 leaves prob as it is
            prob = _f32(prob * _f32(child.count / node.count))
            if prob < min_prob:
                break
        tokens.append(child.token)
        probs.append(prob)
        score = _f32(score + prob)
        node = child
    return SuffixDraft(tokens=tuple(tokens), probs=tuple(probs), score=score)


def _increment(parent: _Node, child: _Node) -> None:
    """count + 1, and the child's place among its siblings as the engine's _increment_count moves it: where its
    elder sibling's count is at most one above its own, before the first sibling of that sibling's count."""
    order = parent.order
    i = order.index(child)
    if i and order[i - 1].count <= child.count + 1:
        head = i - 1
        while head and order[head - 1].count == order[i - 1].count:
            head -= 1
        del order[i]
        order.insert(head, child)
    child.count += 1


def _decrement(parent: _Node, child: _Node) -> None:
    """count − 1, moved as the engine's _decrement_count moves it: behind the last sibling of its old count."""
    order = parent.order
    i = order.index(child)
    if i + 1 < len(order) and order[i + 1].count == child.count:
        end = i + 1
        while end < len(order) and order[end].count == child.count:
            end += 1
        del order[i]
        order.insert(end - 1, child)
    child.count -= 1


def _size(node: _Node) -> int:
    size, stack = 0, [node]
    while stack:
        top = stack.pop()
        size += 1
        stack.extend(top.order)
    return size


class SuffixHistory:
    """The earlier answers a suffix draft matches against: one shared tree (the engine's global tree), at most
    `max_cached_requests` answers and `max_nodes` nodes, the oldest evicted first. Owned by whoever hands it in (a
    browser session, a class server), never by a shared model; safe to use from several runs' threads."""

    def __init__(self, settings: SuffixSettings = DEFAULTS, max_nodes: int | None = None) -> None:
        self.settings = settings
        self.max_nodes = max_nodes
        self.tree = SuffixTree(settings.max_tree_depth)
        self._answers: OrderedDict[int, None] = OrderedDict()  # the answers kept, oldest first
        self._next = 0
        self.lock = threading.RLock()

    @property
    def answers(self) -> int:
        return len(self._answers)

    @property
    def kept(self) -> tuple[int, ...]:
        """The ids of the answers kept, oldest first."""
        return tuple(self._answers)

    def start(self) -> int | None:
        """A new answer's id (None: the history keeps no answers, max_cached_requests = 0)."""
        with self.lock:
            if self.settings.max_cached_requests == 0:
                return None
            answer, self._next = self._next, self._next + 1
            self._answers[answer] = None
            self._evict(keep=answer)
            return answer

    def add(self, answer: int | None, tokens: Sequence[int]) -> None:
        with self.lock:
            if answer in self._answers and tokens:
                self.tree.extend(answer, tokens)
                self._evict(keep=answer)

    def cut(self, answer: int | None, length: int) -> None:
        """The answer back to its first `length` tokens (a step taken back)."""
        with self.lock:
            if answer not in self._answers:
                return
            tokens = self.tree.sequences().get(answer, ())
            if len(tokens) > length:
                self.tree.remove(answer)
                self.tree.extend(answer, tokens[:length])

    def _evict(self, keep: int) -> None:
        most = self.settings.max_cached_requests
        while len(self._answers) > 1 and (
            (most > 0 and len(self._answers) > most) or (self.max_nodes and self.tree.nodes > self.max_nodes)
        ):
            oldest = next(a for a in self._answers if a != keep)
            del self._answers[oldest]
            self.tree.remove(oldest)


class SuffixDrafter:
    """The suffix-decoding draft (shared, never changed): its settings and vocabulary; a run's trees live in its
    session, earlier answers in the history it was handed (`remembering`) or, without one, the run's own."""

    def __init__(
        self,
        vocab_size: int,
        settings: SuffixSettings = DEFAULTS,
        history: SuffixHistory | None = None,
        name: str = "suffix decoding",
    ) -> None:
        self.name = name
        self.vocab_size = vocab_size
        self.max_length = None
        self.settings = settings
        self.history = history
        self.capabilities = Capabilities(runtime="model-free", can_target=False, plans=True)

    def remembering(self, history: SuffixHistory) -> SuffixDrafter:
        """The same draft, matching against `history` (a browser session's or a class's earlier answers)."""
        return SuffixDrafter(self.vocab_size, self.settings, history, self.name)

    def new_session(self) -> SuffixSession:
        return SuffixSession(self, self.history or SuffixHistory(self.settings))


class SuffixSession(ListSession):
    """One run: its own tree (prompt and answer so far), its answer in the history, the step's draft."""

    def __init__(self, owner: SuffixDrafter, history: SuffixHistory) -> None:
        super().__init__()
        self._settings = owner.settings
        self._vocab = owner.vocab_size
        self._history = history
        self._local: SuffixTree | None = None
        self._seen: list[int] = []  # the tokens the run's tree holds: its prompt, then its answer
        self._prompt = 0
        self._answer: int | None = None
        self._planned: int | None = None  # the step's τ, told before it drafts
        self._base = 0  # the context the step's draft was made from, its length
        self.draft = SuffixDraft()  # the step's draft

    def plan(self, tau: int) -> None:
        """A step begins: its draft, at most `tau` tokens, is made from the confirmed tokens at the next position."""
        self._planned = tau

    def crop(self, length: int) -> None:
        super().crop(length)
        if length < self._base:
            self.draft, self._base = SuffixDraft(), 0

    def _row(self, context: list[int]) -> torch.Tensor:
        row = torch.full((self._vocab,), NO_PROPOSAL, dtype=torch.float64)
        if self._planned is not None:
            self._record(context)
            self.draft = self.speculate(context, self._planned)
            self._base, self._planned = len(context), None
        k = len(context) - self._base
        tokens = self.draft.tokens
        if 0 <= k < len(tokens) and list(context[self._base :]) == list(tokens[:k]):
            row[tokens[k]] = 0.0
        return row

    def speculate(self, context: Sequence[int], max_spec_tokens: int) -> SuffixDraft:
        """The draft for `context` (the confirmed tokens, already recorded): the run's tree against the history's,
        the run's own on a tie (ArcticInference's SuffixDecodingCache.speculate)."""
        pattern = context[-self._settings.max_tree_depth :]
        own = self._local.speculate(pattern, max_spec_tokens, self._settings) if self._local else SuffixDraft()
        with self._history.lock:
            shared = self._history.tree.speculate(pattern, max_spec_tokens, self._settings)
        return own if own.score >= shared.score else shared

    def _record(self, context: Sequence[int]) -> None:
        """The confirmed tokens into the trees: the first step's context is the prompt, later ones add the answer;
        a step taken back (undo) takes its tokens back out of both trees."""
        depth = self._settings.max_tree_depth
        prompt = self._seen[: self._prompt]
        if self._local is None or list(context[: self._prompt]) != prompt:  # a new run, or a new prompt
            self._local = SuffixTree(depth)
            self._local.extend(0, context)
            self._seen, self._prompt = list(context), len(context)
            self._answer = self._history.start()
            return
        same = _common(self._seen, context)
        if same < len(self._seen):  # taken back: the run's tree rebuilt, its answer cut
            self._local = SuffixTree(depth)
            self._local.extend(0, self._seen[:same])
            self._seen = self._seen[:same]
            self._history.cut(self._answer, same - self._prompt)
        new = list(context[same:])
        self._local.extend(0, new)
        self._history.add(self._answer, new)
        self._seen.extend(new)


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    if list(a[:n]) == list(b[:n]):
        return n
    return next(i for i in range(n) if a[i] != b[i])
