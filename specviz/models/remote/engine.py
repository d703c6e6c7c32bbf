"""What a serving engine adapter does: score a sequence (top-k log-probabilities per position), tokenize
text, and say how much of a draft a request can carry. One adapter per engine, in its own module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specviz.models.remote.errors import LogprobsCappedError, RemoteProtocolError
from specviz.models.remote.http import Check, post
from specviz.models.remote.spec import RemoteSpec

# --- the three engines ----------------------------------------------------------------------------
# `score(ids, k)` returns len(ids) rows: row j holds log-probabilities of the token after ids[: j + 1],
# as {token id: logprob}; it always has the actual next token ids[j + 1] (j < len − 1), and the last
# row (after the whole sequence) has the server's greedy next token. Row 0 may be empty. `keep`: how
# many of the last rows the caller reads (an engine may spend more on those).

Row = dict[int, float]  # rows a verify step never reads may be None (not returned)


class Engine:
    spec: RemoteSpec

    def __init__(self, spec: RemoteSpec, codec: Any, check: Check | None = None) -> None:
        self.spec, self.codec = spec, codec
        self.check = check  # raises for an address the caller does not allow (specviz.models.remote.http)

    def post(self, url: str, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        return post(url, payload, timeout, self.check)

    def score(self, ids: Sequence[int], k: int, timeout: float, keep: int | None = None) -> list[Row]:
        raise NotImplementedError

    def tokenize(self, text: str, timeout: float) -> list[int]:
        raise NotImplementedError

    def scorable(self, ids: Sequence[int], draft: Sequence[int]) -> int:
        return len(draft)

    def _need(self, cond: bool, what: str) -> None:
        if not cond:
            raise RemoteProtocolError(
                f"{self.spec} did not return {what}: is it a {self.spec.kind} server, "
                "started to return prompt log-probabilities (README, 'A remote target')?"
            )

    def _check_k(self, row: dict, k: int, position: int) -> None:
        if len(row) < k:
            raise LogprobsCappedError(
                f"{self.spec} returned {len(row)} top log-probabilities at position {position}, fewer than the "
                f"{k} asked for: its cap is lower (vLLM: --max-logprobs); ask for fewer"
            )
