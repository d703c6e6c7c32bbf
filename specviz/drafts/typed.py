"""Your draft on the real target: a draft that proposes the tokens a person typed and reports the draft
model's own q for them (docs/algorithm.md, "A typed draft").

The textbook's first exercise is a context, "The cat sat on the", and a draft, "mat and then slept": which
tokens does the target keep, and what comes next? `TypedDraft` stages it on real models. It wraps a draft
model (shared, never changed): its sessions score exactly what the model's own sessions score, so q is the
draft model's distribution, and for the one step a typed draft is given to (`TypedDraft.proposing`) they
hand the engine the tokens to propose instead of q's choice (`typed_draft()`; the engine reads it because
the capabilities say `proposes`). The target's one pass, the decision rule, n and the next token are the
engine's own, so every mode and verification rule applies unchanged.

What it means for the guarantees: a rule such as r ≤ p/q keeps the target's distribution only for a token
*drawn from q*. A typed token is not drawn from q, so in lossless mode the output is no longer the target's
distribution: a typed token x is kept with probability min(1, p(x)/q(x)), not p(x), and a token the draft
model finds unlikely (q tiny) is kept almost surely. Greedy mode still reproduces the target's greedy output
(it keeps a token only when it is argmax p). A typed token whose q is 0 (outside the draft's vocabulary, or cut
by top-k, top-p or temperature 0) has no p/q: the draft stops before it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from specviz.bounded import LINK_BYTES, read_json, whole_number
from specviz.errors import ConfigError
from specviz.models.lm import NextTokenModel, Session
from specviz.models.text import Codec

MAX_CHARS = 200  # the longest typed draft read (a draft is at most 16 tokens)


class TypedDraft:
    """A draft model that proposes given tokens for one step at a time, scored by the model it wraps. One per
    run: it holds that run's typed draft while the step that uses it runs. The wrapped model is shared and is
    never changed; the sessions are the wrapped model's own, behind a thin layer."""

    def __init__(self, model: NextTokenModel) -> None:
        if model.capabilities.runtime == "model-free":
            raise ConfigError(
                f"{model.name} has no distribution to score a typed draft with (its q is one-hot at its own proposal)"
            )
        self.model = model
        self.name = model.name
        self.vocab_size = model.vocab_size
        self.max_length = model.max_length
        self.capabilities = dataclasses.replace(model.capabilities, proposes=True, can_target=False)
        self._typed: tuple[int, ...] | None = None  # the draft of the step now running, if one was typed

    def new_session(self, *args: Any, **kwargs: Any) -> TypedSession:
        return TypedSession(self, self.model.new_session(*args, **kwargs))

    @contextlib.contextmanager
    def proposing(self, tokens: Sequence[int]) -> Iterator[None]:
        """Inside the block, the run's next step proposes `tokens` (at most its τ of them) instead of q's choice."""
        if not tokens:
            raise ConfigError("a typed draft needs at least one token")
        self._typed = tuple(int(t) for t in tokens)
        try:
            yield
        finally:
            self._typed = None


class TypedSession:
    """A session of the wrapped model (its cache, its q), which also tells the engine the typed draft."""

    def __init__(self, owner: TypedDraft, inner: Session) -> None:
        self._owner = owner
        self._inner = inner

    @property
    def length(self) -> int:
        return self._inner.length

    @property
    def forwards(self) -> int:
        return self._inner.forwards

    @property
    def forward_seconds(self) -> float:
        return self._inner.forward_seconds

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        return self._inner.extend(ids, keep)

    def crop(self, length: int) -> None:
        self._inner.crop(length)

    def typed_draft(self) -> tuple[int, ...] | None:
        """The tokens this step proposes, or None: the model proposes (argmax or a sample of q)."""
        return self._owner._typed

    def __getattr__(self, name: str) -> Any:  # what else the wrapped session offers (a tree's extend_tree, retain)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def typed_tokens(codec: Codec, words: str, before: str = "") -> list[int]:
    """The tokens of a typed draft as they continue the text `before` (the confirmed text): a space is put before
    the words unless they start with one or the text ends with one or is empty, so "mat" after "The cat sat on
    the" is ' mat', the token the text itself would hold."""
    words = words.rstrip()
    if not words.strip():
        raise ConfigError("type the draft's words first")
    if len(words) > MAX_CHARS:
        raise ConfigError(f"a typed draft is at most {MAX_CHARS} characters; this one has {len(words)}")
    if before and not before[-1].isspace() and not words[0].isspace():
        words = " " + words
    return codec.encode(words)


def typed_to_link(steps: dict[int, str]) -> str:
    """A run's typed drafts (step index, 0-based → the words) as a link's text: {"1": "mat and then slept"} with
    step numbers from 1; "" when there are none."""
    if not steps:
        return ""
    return json.dumps({str(i + 1): words for i, words in sorted(steps.items())}, separators=(",", ":"))


def typed_from_link(text: str) -> dict[int, str]:
    """A link's typed drafts, checked: step index (0-based) → the words; a ConfigError says what is wrong."""
    if not text:
        return {}
    data = read_json(text, error=ConfigError, what="the link's typed drafts", max_bytes=LINK_BYTES, max_depth=1)
    if not isinstance(data, dict):
        raise ConfigError("the link's typed drafts are not a table of step numbers and words")
    steps = {}
    for key, words in data.items():
        try:
            step = whole_number(key, error=ValueError, what="a step")  # digits 0-9 only: not "²" or "٣"
        except ValueError:
            step = 0
        if not 1 <= step <= 10_000:
            raise ConfigError(f"the link's typed drafts name step {_cut(key)!r}: steps are numbered from 1 to 10,000")
        if not isinstance(words, str) or not words.strip() or len(words) > MAX_CHARS:
            raise ConfigError(f"the link's typed draft of step {step} is not 1 to {MAX_CHARS} characters of text")
        steps[step - 1] = words
    return steps


def _cut(text: str, most: int = 20) -> str:
    """A link's text in a message: at most `most` characters."""
    return text if len(text) <= most else text[: most - 1] + "…"


# said wherever a typed step is shown (pages, docs/algorithm.md "A typed draft")
GUARANTEE = (
    "A typed token is not drawn from q, so no rule's guarantee holds for it: in lossless mode the output is no longer "
    "the target's distribution (a typed token is kept with probability min(1, p/q), not p: a token the draft model "
    "finds unlikely is kept almost surely). Greedy mode still writes the target's own greedy text."
)
