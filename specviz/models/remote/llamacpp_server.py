"""llama-cpp-python's OpenAI-compatible server (text prompts only) as a verify step's target."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from specviz.models.remote.engine import Engine, Row
from specviz.models.remote.errors import RemoteProtocolError, RemoteTokenizerError
from specviz.models.remote.http import Check
from specviz.models.remote.spec import RemoteSpec

MAX_PROBES = 4  # extra requests to tell which of the ids that share a text is most likely
SAME_LOGPROB = 1e-3  # two requests' log-probabilities of one token at one place differ by less


class LlamaCpp(Engine):
    """llama-cpp-python's server (`python -m llama_cpp.server --logits_all true`): /v1/completions
    with `echo` and `logprobs`. It takes text, not ids, so every request first checks with
    /extras/tokenize that the server splits the text into exactly the run's ids. Its top log-probs
    are keyed by token text: texts several ids share are left out (their mass goes to the rest),
    except where such a text is the most likely one: then its ids are probed (`_row`).
    It drops a leading BOS token and lines the rows up correctly only then (0.3.x): a prompt that does
    not start with the model's BOS is refused (for SmolLM2 the chat template's <|im_start|> is BOS)."""

    def __init__(self, spec: RemoteSpec, codec: Any, check: Check | None = None) -> None:
        super().__init__(spec, codec, check)
        tokenizer = codec.tokenizer
        by_text: dict[str, list[int]] = {}
        special = set(getattr(tokenizer, "all_special_ids", ()))
        for i in range(len(tokenizer)):
            by_text.setdefault("" if i in special else _piece(tokenizer, i), []).append(i)
        self.ids_by_text = {text: ids[0] for text, ids in by_text.items() if len(ids) == 1}
        self.sharing = {text: ids for text, ids in by_text.items() if len(ids) > 1}  # texts several ids print as
        self.pieces = {i: text for text, ids in by_text.items() for i in ids}
        self.bos, self.eos, self.special = tokenizer.bos_token_id, tokenizer.eos_token_id, special

    def scorable(self, ids: Sequence[int], draft: Sequence[int]) -> int:
        for j in range(len(draft), 0, -1):
            seq = [*ids, *draft[:j]]
            if self.codec.tokenizer.encode(self._text(seq), add_special_tokens=False) == seq:
                return j
        return 0

    def _text(self, ids: Sequence[int]) -> str:
        return self.codec.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def score(self, ids: Sequence[int], k: int, timeout: float, keep: int | None = None) -> list[Row]:
        tops, actual, after = self._request(ids, k, timeout)
        # one entry per position after the first whose token is not BOS (it skips every BOS)
        positions = [m for m in range(1, len(ids)) if ids[m] != self.bos]
        first_kept = len(ids) - (keep or len(ids)) + 1  # the caller reads rows[m] for m ≥ this: resolve only those
        rows: list[Row | None] = [None] * len(ids)  # rows[m] scores ids[m]; None: not returned (BOS)
        for e, m in enumerate(positions):
            if e == 0:  # the API nulls the first entry
                continue
            self._need(actual[e] is not None, f"the log-probability of prompt token {m}")
            rows[m] = self._row(ids[:m], tops[e], {ids[m]: float(actual[e])}, timeout, resolve=m >= first_kept)
        # texts several tokens share collapse into one key, so only the longest entry shows a cap
        self._check_k(max((entry or {} for entry in [*tops, after]), key=len), k, len(ids))
        exact: Row = {}
        if after is None:  # its greedy token was EOS, which it does not return: ask again with EOS there
            exact[self.eos], after = self._echo(ids, self.eos, k, timeout)
        return [*rows[1:], self._row(ids, after, exact, timeout, resolve=True)]

    def _request(self, ids: Sequence[int], k: int, timeout: float) -> tuple[list, list, dict | None]:
        """(top log-probabilities by text, the actual token's log-probability) per echoed prompt position,
        and the top log-probabilities after the whole sequence: None where the server generated EOS,
        which it stops at without returning it."""
        if ids[0] != self.bos:
            raise RemoteProtocolError(
                f"{self.spec} (llama-cpp-python) lines up prompt log-probabilities only when the prompt starts with "
                f"the model's BOS token {self.codec.token_text(self.bos)!r}; this one starts with "
                f"{self.codec.token_text(ids[0])!r}: turn the chat template on, or use a vLLM or SGLang server"
            )
        text = self._text(ids)
        server_ids = self.tokenize(text, timeout)
        if server_ids != list(ids):
            at = next(
                (j for j, (a, b) in enumerate(zip(server_ids, ids, strict=False)) if a != b),
                min(len(ids), len(server_ids)),
            )
            raise RemoteTokenizerError(
                f"{self.spec} takes text, and it splits this text into other tokens than the run's from token {at} on "
                f"(server {server_ids[at : at + 3]}, run {list(ids[at : at + 3])}) "
                f"(the draft or the target chose a split the tokenizer would not): llama-cpp-python cannot score "
                f"these ids; use a vLLM or SGLang server, which take token ids"
            )
        payload = {"prompt": text, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": k}
        if self.spec.model:
            payload["model"] = self.spec.model
        choice = (self.post(f"{self.spec.url}/completions", payload, timeout).get("choices") or [{}])[0]
        lp = choice.get("logprobs") or {}
        tokens, actual, tops = lp.get("tokens"), lp.get("token_logprobs"), lp.get("top_logprobs")
        self._need(
            isinstance(tokens, list) and isinstance(tops, list), "echoed prompt log-probabilities (--logits_all true)"
        )
        positions = [m for m in range(1, len(ids)) if ids[m] != self.bos]
        expected, n = [self.pieces[ids[m]] for m in positions], len(positions)
        if len(tokens) not in (n, n + 1) or tokens[:n] != expected:
            at = next((j for j, (a, b) in enumerate(zip(tokens, expected, strict=False)) if a != b), len(expected))
            raise RemoteProtocolError(
                f"{self.spec} did not return one echoed entry per prompt token: {len(tokens)} entries for "
                f"{len(expected)} tokens, the first difference at entry {at}: {tokens[at : at + 2]!r} where "
                f"{expected[at : at + 2]!r} was sent (README, 'A remote target')"
            )
        return tops[:n], actual[:n], (tops[n] or {}) if len(tokens) > n else None

    def _row(
        self, prefix: Sequence[int], entry: dict[str, float] | None, exact: Row, timeout: float, resolve: bool
    ) -> Row:
        """The log-probabilities of the token after `prefix` by id: the top-k entries whose text one id
        alone prints as, and `exact` (the actual token's). The server keys its top-k by text, in rank
        order, and keeps one value per text. When the most likely token prints as a text several ids
        share (every control token and byte piece prints as '', 38 tokens as ' '), its ids are asked
        for in turn (EOS first; one request each, `MAX_PROBES` in all) until one is surely the most
        likely: its probability is at least all the mass still unknown, or equals the largest one
        (which a request with one top log-probability and another token there gives exactly).
        Only rows the step reads are `resolve`d."""
        row = {**self._by_id(entry), **exact}
        top = next(iter(entry or {}), None)  # the most likely token's text (the server keeps rank order)
        if not resolve or top is None or top in self.ids_by_text:
            return row
        if top not in self.sharing:
            raise RemoteProtocolError(
                f"{self.spec}: the most likely token after position {len(prefix)} prints as {top!r}, which no token "
                f"of the draft's tokenizer prints as: do the server and the draft share one vocabulary?"
            )
        best: float | None = None  # the largest log-probability there, once asked for
        probes = 0
        for c in sorted(self.sharing[top], key=lambda i: (i not in row, i != self.eos, i not in self.special, i)):
            if c not in row:
                if probes >= MAX_PROBES or not self._sendable(prefix, c):
                    continue
                probes += 1
                row[c] = self._echo(prefix, c, 1, timeout)[0]
            unknown = 1.0 - sum(math.exp(v) for v in row.values())
            if row[c] >= max(row.values()) and math.exp(row[c]) >= unknown:
                return row
            if best is None and probes < MAX_PROBES:
                probes += 1
                best = self._largest(prefix, row, top, timeout)
            if best is not None and abs(row[c] - best) < SAME_LOGPROB:
                return row
        raise RemoteProtocolError(
            f"{self.spec} (llama-cpp-python) names tokens by their text, and the most likely token after position "
            f"{len(prefix)} prints as {top!r}, which {len(self.sharing[top])} tokens share; {probes} more requests "
            f"did not tell which one it is (it may be one that cannot be sent as text). Use a vLLM or SGLang "
            f"server: they name tokens by id"
        )

    def _sendable(self, prefix: Sequence[int], token: int) -> bool:
        """Whether `token` after `prefix` can be sent: BOS has no echoed entry, and text the tokenizer
        would split otherwise cannot be scored."""
        return token != self.bos and self.scorable(prefix, [token]) == 1

    def _echo(self, prefix: Sequence[int], token: int, k: int, timeout: float) -> tuple[float, dict[str, float]]:
        """One request for prefix + [token]: (token's log-probability, the top-k by text there)."""
        tops, actual, _ = self._request([*prefix, token], k, timeout)
        return float(actual[-1]), tops[-1] or {}

    def _largest(self, prefix: Sequence[int], row: Row, top: str, timeout: float) -> float | None:
        """The largest log-probability after `prefix`, exactly: asked for with one top log-probability
        and, in that place, a known token of another text (so the answer keeps the top text's value)."""
        other = next(
            (i for i in sorted(row, key=row.get, reverse=True) if self.pieces[i] != top and self._sendable(prefix, i)),
            None,
        )
        return None if other is None else self._echo(prefix, other, 1, timeout)[1].get(top)

    def _by_id(self, entry: dict[str, float] | None) -> Row:
        return {self.ids_by_text[t]: float(v) for t, v in (entry or {}).items() if t in self.ids_by_text}

    def tokenize(self, text: str, timeout: float) -> list[int]:
        out = self.post(f"{self.spec.root}/extras/tokenize", {"input": text}, timeout)
        self._need(isinstance(out.get("tokens"), list), "token ids from /extras/tokenize")
        return [int(t) for t in out["tokens"]]


def _piece(tokenizer: Any, i: int) -> str:
    """A token's text as llama.cpp renders it alone: its bytes, invalid UTF-8 dropped (control
    tokens render empty: the caller handles them)."""
    return tokenizer.convert_tokens_to_string([tokenizer.convert_ids_to_tokens(i)]).replace("\ufffd", "")
