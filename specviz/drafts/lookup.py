"""Prompt lookup: a model-free drafter that copies what followed the context's last n-gram
earlier in the context. Its q is one-hot (or no proposal at all)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specviz.models.lm import NO_PROPOSAL, Capabilities, ListSession


class PromptLookupDrafter:
    """Proposes the token that followed the most recent earlier occurrence of the context's last
    n-gram (longest n first). Its q is one-hot; with no match it makes no proposal."""

    def __init__(self, vocab_size: int, max_ngram: int = 3, name: str = "prompt lookup") -> None:
        if max_ngram < 1:
            raise ValueError("max_ngram must be at least 1")
        self.name = name
        self.vocab_size = vocab_size
        self.max_length = None
        self.max_ngram = max_ngram
        self.capabilities = Capabilities(runtime="model-free", can_target=False)

    def propose(self, context: Sequence[int]) -> int | None:
        for n in range(min(self.max_ngram, len(context) - 1), 0, -1):
            pattern = list(context[-n:])
            for start in range(len(context) - n - 1, -1, -1):
                if list(context[start : start + n]) == pattern:
                    return int(context[start + n])
        return None

    def new_session(self) -> PromptLookupSession:
        return PromptLookupSession(self)


class PromptLookupSession(ListSession):
    def __init__(self, owner: PromptLookupDrafter) -> None:
        super().__init__()
        self._owner = owner

    def _row(self, context: list[int]) -> torch.Tensor:
        row = torch.full((self._owner.vocab_size,), NO_PROPOSAL, dtype=torch.float64)
        token = self._owner.propose(context)
        if token is not None:
            row[token] = 0.0
        return row
