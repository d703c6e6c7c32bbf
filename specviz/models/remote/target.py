"""The served target behind the model protocol: a session per run, one request per forward pass."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from specviz.models.lm import Capabilities, ListSession
from specviz.models.remote.engine import Engine, Row
from specviz.models.remote.errors import RemoteProtocolError, RemoteTokenizerError
from specviz.models.remote.http import Check
from specviz.models.remote.llamacpp_server import LlamaCpp
from specviz.models.remote.sglang import SGLang
from specviz.models.remote.spec import DEFAULT_TIMEOUT_S, DEFAULT_TOP_K, RemoteSpec, parse_spec
from specviz.models.remote.vllm import VLLM

# strings whose tokenisation must agree between the server and the local tokenizer
PROBES = (
    "The cat sat on the mat.",
    "def reverse(xs):\n    return xs[::-1]  # 42",
    "Naïve café, 東京 and 🙂 — “quotes”.",
)
ENGINES: dict[str, type[Engine]] = {"vllm": VLLM, "sglang": SGLang, "llamacpp": LlamaCpp}


class RemoteTarget:
    """A NextTokenModel whose every forward pass is one request to a serving engine. Shared and never
    mutated: a session holds its own token list; the server holds no per-run state we rely on."""

    def __init__(
        self,
        spec: str | RemoteSpec,
        codec: Any,
        vocab_size: int,
        top_k: int = DEFAULT_TOP_K,
        timeout: float = DEFAULT_TIMEOUT_S,  # a server's $SPECVIZ_REMOTE_TIMEOUT, handed in
        max_length: int | None = None,
        check: Check | None = None,
    ) -> None:
        self.spec = spec if isinstance(spec, RemoteSpec) else parse_spec(spec)
        self.name = str(self.spec)
        self.vocab_size = vocab_size
        self.max_length = max_length
        self.top_k = top_k
        self.timeout = timeout
        self.engine = ENGINES[self.spec.kind](self.spec, codec, check)
        # top-k rows only: the engine refuses modes that need p in full (specviz.core.engine); one sequence per
        # request: no tree pass; a text-only server may take only a prefix of a draft
        self.capabilities = Capabilities(
            runtime=f"{self.spec.kind} server", top_k=top_k, trees=False, splits_drafts=True
        )

    def check_tokenizer(self, codec: Any) -> None:
        """Before the first step: the server must split the probe strings exactly as the local tokenizer."""
        tokenizer = getattr(codec, "tokenizer", None)
        bos = getattr(tokenizer, "bos_token_id", None)
        for text in PROBES:
            local = tokenizer.encode(text, add_special_tokens=False) if tokenizer is not None else codec.encode(text)
            server = self.engine.tokenize(text, self.timeout)
            if server[:1] == [bos] and local[:1] != [bos]:  # a server that adds BOS to text it tokenises
                server = server[1:]
            if local != server:
                raise RemoteTokenizerError(
                    f"{self.spec} and the local draft's tokenizer ({codec.name}) split {text!r} differently "
                    f"(server {server[:8]}…, local {local[:8]}…): serve a target of the draft's family, or pick a "
                    f"draft with the target's tokenizer"
                )

    def new_session(self) -> RemoteSession:
        return RemoteSession(self)


class RemoteSession(ListSession):
    """Holds the token list; each extend sends the whole sequence (the server's prefix cache makes
    the repeat cheap) and turns the returned top-k rows into full rows (see the module's note)."""

    def __init__(self, owner: RemoteTarget) -> None:
        super().__init__()
        self._owner = owner

    def scorable_draft(self, ids: Sequence[int], draft: Sequence[int]) -> int:
        """How many leading draft tokens a verify request can carry: all of them for servers that take
        token ids; for a text-only server (llama-cpp-python), the longest block whose text the tokenizer
        splits back into exactly these ids (a split it would not make cannot be sent). The engine cuts
        the draft there before verifying, as if the draft had proposed fewer tokens."""
        return self._owner.engine.scorable(ids, draft)

    def _score(self, keep: int) -> torch.Tensor:
        owner = self._owner
        rows = owner.engine.score(self._ids, owner.top_k, owner.timeout, keep)[-keep:]
        if any(row is None for row in rows):
            raise RemoteProtocolError(f"{owner.spec} returns no log-probabilities for a BOS token inside the sequence")
        return torch.stack([fill_row(row, owner.vocab_size) for row in rows])


def fill_row(row: Row, vocab_size: int) -> torch.Tensor:
    """Log-probabilities over the whole vocabulary from the known ones: each unknown token gets an
    equal share of the missing mass 1 − Σ known, so exp of the row sums to 1 and every known entry is
    exact. Each share is at most the smallest known top-k probability, so the argmax is kept."""
    out = torch.full((vocab_size,), -math.inf, dtype=torch.float64)
    if not row:
        return torch.zeros(vocab_size, dtype=torch.float64) - math.log(vocab_size)
    ids = torch.tensor(list(row), dtype=torch.long)
    if int(ids.max()) >= vocab_size or int(ids.min()) < 0:
        raise RemoteProtocolError(f"the server returned token id {int(ids.max())}, outside the draft's {vocab_size}")
    values = torch.tensor(list(row.values()), dtype=torch.float64)
    missing = 1.0 - float(values.exp().sum())
    unknown = vocab_size - len(row)
    if unknown and missing > 0:
        out.fill_(math.log(missing / unknown))
    out[ids] = values
    return out
