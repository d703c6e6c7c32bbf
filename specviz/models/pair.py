"""A draft and a target that can decode together, with the codec that turns text into ids."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from specviz.errors import IncompatibleModelsError
from specviz.models.lm import HFModel, NextTokenModel, Session
from specviz.models.text import Codec, HFCodec


@dataclass(frozen=True)
class ModelPair:
    target: NextTokenModel  # p: the model whose output the run must reproduce
    draft: NextTokenModel  # q: the cheap proposer
    codec: Codec  # the shared tokenizer
    # [release]: gives the pair's parts back to their store (specviz.models.store), called once by close(); [] after
    _release: list[Callable[[], None]] = field(default_factory=lambda: [lambda: None], compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.target.vocab_size != self.draft.vocab_size:
            raise IncompatibleModelsError(
                f"draft {self.draft.name!r} scores {self.draft.vocab_size} tokens but target "
                f"{self.target.name!r} scores {self.target.vocab_size}: they need one vocabulary"
            )

    def owning(self, release: Callable[[], None]) -> ModelPair:
        """This pair, giving its parts back with `release()` when it is closed."""
        return replace(self, _release=[release])

    def close(self) -> None:
        """Give the pair's models back (specviz.models.store): a part no other pair uses is freed now, a llama.cpp
        model's contexts and weights included. Sessions already open go on working; new ones cannot be opened on a
        model that was freed. Closing twice does nothing."""
        while self._release:
            self._release.pop()()

    @property
    def closed(self) -> bool:
        return not self._release

    @property
    def runtime(self) -> str:
        """What runs the target: "torch", "llama.cpp", or the serving engine of a remote target."""
        return self.target.capabilities.runtime

    def new_sessions(self, tokens: int | None = None, linear: bool = False) -> tuple[Session, Session]:
        """A (target, draft) session pair; a draft that reads the target's hidden states
        (specviz.drafts.feature) gets the target's session. `tokens`: the most a run will hold, for a
        model that allocates a session's memory up front (llama.cpp: 46 KB a token for the embedded target).
        `linear`: the run verifies no token tree (llama.cpp may then batch its passes with other runs')."""

        def sized(model) -> dict:
            return {"tokens": tokens, "linear": linear} if tokens and model.capabilities.sized_sessions else {}

        target = self.target.new_session(**sized(self.target))
        if self.draft.capabilities.reads_target:
            return target, self.draft.new_session(target)
        return target, self.draft.new_session(**sized(self.draft))

    def opening_bytes(self, tokens: int, linear: bool = False) -> int:
        """What `new_sessions(tokens, linear)` would add now to what the models count as held (`nbytes()`): the
        memory a model that sizes its sessions (llama.cpp) allocates for them when they open; 0 for the others,
        whose caches grow as a run goes (counted by their KV bytes per token: specviz.server.quotas)."""
        models = (self.target,) if self.draft.capabilities.reads_target else (self.target, self.draft)
        sized = [m for m in models if m.capabilities.sized_sessions and hasattr(m, "opening_bytes")]
        return sum(int(m.opening_bytes(tokens, linear)) for m in sized)

    def swapped(self) -> ModelPair:
        """The same two models with their roles exchanged: the draft becomes the target whose output
        the run reproduces, the target drafts for it (a lesson: the big model drafting for the small)."""
        if not self.draft.capabilities.can_target:
            raise IncompatibleModelsError(f"{self.draft.name!r} cannot be a target on its own")
        return ModelPair(self.draft, self.target, self.codec)

    @classmethod
    def from_hf(cls, target: Any, draft: Any, tokenizer: Any) -> ModelPair:
        """A pair from already-loaded transformers models and their shared tokenizer."""
        return cls(HFModel(target), HFModel(draft), HFCodec(tokenizer))
