"""A target served by an existing serving engine (vLLM, SGLang, llama-cpp-python), the draft local.

Write a remote target as `KIND:URL[#MODEL]`:

    vllm:http://gpu-box:8000/v1#meta-llama/Llama-3.1-70B-Instruct   OpenAI-compatible /completions
    sglang:http://gpu-box:30000                                      native /generate
    llamacpp:http://127.0.0.1:8080/v1                                llama-cpp-python's server

One verify step is one HTTP request: the prompt is the confirmed sequence plus the draft, with
max_tokens = 1 at temperature 0, asking for the top-k log-probabilities at every prompt position and
at the generated one. So one request gives p(ŷ_t) exactly (the log-probability of a prompt token is
always returned, whatever k) and the target's argmax at every position, the bonus one included.

What is exact and what is not (README, "A remote target"): the server returns only its top k
probabilities per position. The session fills every other token with an equal share of the missing
mass, so each row sums to one and the known entries are exact: p(ŷ_t), the ratio p/q and argmax p,
hence the **textbook** and **greedy** modes, are exact at temperature 1 (or 0, argmax). What needs
the whole of p is not: α and β are marked *approximate (top-k)* in the trace and on the page, and the
**lossless** mode (its residual max(0, p − q) and its bonus sample from p), temperatures other than 0
and 1, top-k and top-p are refused with a `ConfigError` (specviz.core.engine reads the target's capabilities).
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import torch

from specviz.errors import IncompatibleModelsError, ModelError
from specviz.limits import MAX_TAU
from specviz.models.lm import Capabilities, ListSession

KINDS = ("vllm", "sglang", "llamacpp")
DEFAULT_TOP_K = 20  # vLLM's default --max-logprobs
TIMEOUT_ENV = "SPECVIZ_REMOTE_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
MAX_PROBES = 4  # llama-cpp-python: extra requests to tell which of the ids that share a text is most likely
SAME_LOGPROB = 1e-3  # two requests' log-probabilities of one token at one place differ by less
# strings whose tokenisation must agree between the server and the local tokenizer
PROBES = (
    "The cat sat on the mat.",
    "def reverse(xs):\n    return xs[::-1]  # 42",
    "Naïve café, 東京 and 🙂 — “quotes”.",
)


class RemoteError(ModelError):
    """A remote target failed: the message says what the server did and what to do."""


class RemoteUnreachableError(RemoteError):
    """Nothing answers at the server's address."""


class RemoteTimeoutError(RemoteError):
    """The server took longer than the timeout to answer one request."""


class RemoteHTTPError(RemoteError):
    """The server answered with an HTTP error status."""


class RemoteProtocolError(RemoteError):
    """The server answered, but not with the prompt log-probabilities a verify step needs."""


class LogprobsCappedError(RemoteProtocolError):
    """The server returned fewer top log-probabilities than were asked for (its cap is lower)."""


class RemoteTokenizerError(IncompatibleModelsError, RemoteError):
    """The server splits text into different tokens from the local draft's tokenizer."""


@dataclass(frozen=True)
class RemoteSpec:
    kind: str
    url: str  # base URL as given, without a trailing slash
    model: str | None  # the served model's name, where the engine wants one

    @property
    def root(self) -> str:
        """scheme://host:port, for endpoints that live outside /v1."""
        u = urlparse(self.url)
        return f"{u.scheme}://{u.netloc}"

    def __str__(self) -> str:
        return f"{self.kind}:{self.url}" + (f"#{self.model}" if self.model else "")


def is_remote(spec: str) -> bool:
    return spec.strip().split(":", 1)[0] in KINDS and "://" in spec


def parse_spec(spec: str) -> RemoteSpec:
    """`KIND:URL[#MODEL]`, e.g. vllm:http://host:8000/v1#my-model; a typed error otherwise."""
    kind, _, rest = spec.strip().partition(":")
    url, _, model = rest.partition("#")
    parsed = urlparse(url)
    if kind not in KINDS or parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ModelError(
            f"write a remote target as KIND:URL[#MODEL] with KIND one of {', '.join(KINDS)}, "
            f"e.g. vllm:http://localhost:8000/v1#my-model; got {spec!r}"
        )
    return RemoteSpec(kind, url.rstrip("/"), model or None)


def timeout_s() -> float:
    try:
        return float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    except ValueError as exc:
        raise ModelError(f"{TIMEOUT_ENV} must be a number of seconds") from exc


def post(url: str, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
    """POST JSON, return JSON; every failure becomes a RemoteError (never an endless wait)."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300].strip()
        if exc.code == 400 and "logprob" in detail.lower():
            raise LogprobsCappedError(
                f"{url} refused the log-probabilities asked for ({detail}); "
                "ask for fewer (top_k) or raise the server's --max-logprobs"
            ) from exc
        raise RemoteHTTPError(f"{url} answered HTTP {exc.code}: {detail or exc.reason}") from exc
    except TimeoutError as exc:
        raise RemoteTimeoutError(_late(url, timeout)) from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise RemoteTimeoutError(_late(url, timeout)) from exc
        raise RemoteUnreachableError(f"cannot reach {url}: {exc.reason}; is the server running?") from exc
    except (ConnectionError, OSError) as exc:
        raise RemoteUnreachableError(f"cannot reach {url}: {exc}; is the server running?") from exc
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise RemoteProtocolError(f"{url} did not answer with JSON: {body[:120]!r}") from exc


def _late(url: str, timeout: float) -> str:
    return f"{url} did not answer within {timeout:g} s (set {TIMEOUT_ENV} to wait longer)"


# --- the three engines ----------------------------------------------------------------------------
# `score(ids, k)` returns len(ids) rows: row j holds log-probabilities of the token after ids[: j + 1],
# as {token id: logprob}; it always has the actual next token ids[j + 1] (j < len − 1), and the last
# row (after the whole sequence) has the server's greedy next token. Row 0 may be empty. `keep`: how
# many of the last rows the caller reads (an engine may spend more on those).

Row = dict[int, float]  # rows a verify step never reads may be None (not returned)


class Engine:
    spec: RemoteSpec

    def __init__(self, spec: RemoteSpec, codec: Any) -> None:
        self.spec, self.codec = spec, codec

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


class VLLM(Engine):
    """vLLM's OpenAI-compatible /completions: token-id prompt, `prompt_logprobs` (an extension:
    {id: {logprob, rank, decoded_token}} per prompt position, the actual token always included) and
    `logprobs` with `return_tokens_as_token_ids` for the generated token ("token_id:123" keys)."""

    def score(self, ids: Sequence[int], k: int, timeout: float, keep: int | None = None) -> list[Row]:
        payload = {"prompt": list(ids), "max_tokens": 1, "temperature": 0, "logprobs": k, "prompt_logprobs": k,
                   "return_tokens_as_token_ids": True, "add_special_tokens": False}  # fmt: skip
        if self.spec.model:
            payload["model"] = self.spec.model
        choice = (post(f"{self.spec.url}/completions", payload, timeout).get("choices") or [{}])[0]
        prompt_rows, out = choice.get("prompt_logprobs"), choice.get("logprobs") or {}
        self._need(
            isinstance(prompt_rows, list) and len(prompt_rows) == len(ids), "prompt_logprobs for every prompt token"
        )
        tops = out.get("top_logprobs") or []
        self._need(len(tops) >= 1 and isinstance(tops[0], dict), "top logprobs for the generated token")
        rows: list[Row] = [{}]
        for j, entry in enumerate(prompt_rows[1:], start=1):
            row = {int(t): float(v["logprob"] if isinstance(v, dict) else v) for t, v in (entry or {}).items()}
            self._need(ids[j] in row, f"the log-probability of prompt token {j}")
            self._check_k(row, k, j)
            rows.append(row)
        last = {int(str(t).rsplit(":", 1)[-1]): float(v) for t, v in tops[0].items()}
        self._check_k(last, k, len(ids))
        # prompt row j scores ids[j] (after ids[:j]); ours are shifted by one: row j is after ids[: j + 1]
        return [*rows[1:], last] if len(ids) > 1 else [last]

    def tokenize(self, text: str, timeout: float) -> list[int]:
        payload = {"prompt": text, "add_special_tokens": False}
        if self.spec.model:
            payload["model"] = self.spec.model
        out = post(f"{self.spec.root}/tokenize", payload, timeout)
        self._need(isinstance(out.get("tokens"), list), "token ids from /tokenize")
        return [int(t) for t in out["tokens"]]


class SGLang(Engine):
    """SGLang's native /generate: `input_ids`, `return_logprob`, `logprob_start_len`,
    `top_logprobs_num`; meta_info.input_token_logprobs / input_top_logprobs / output_top_logprobs hold
    [logprob, token_id, text] triples."""

    def _generate(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        info = post(f"{self.spec.root}/generate", payload, timeout).get("meta_info")
        self._need(isinstance(info, dict), "meta_info")
        return info

    def score(self, ids: Sequence[int], k: int, timeout: float, keep: int | None = None) -> list[Row]:
        start = max(0, len(ids) - 2 - MAX_TAU)  # a verify step reads at most τ + 1 rows
        info = self._generate({"input_ids": list(ids), "return_logprob": True, "logprob_start_len": start,
                               "top_logprobs_num": k, "sampling_params": {"max_new_tokens": 1, "temperature": 0}},
                              timeout)  # fmt: skip
        actual, tops, out = (
            info.get("input_token_logprobs"),
            info.get("input_top_logprobs"),
            info.get("output_top_logprobs"),
        )
        self._need(isinstance(actual, list) and isinstance(tops, list) and len(tops) == len(ids) - start,
                   "input_token_logprobs and input_top_logprobs from logprob_start_len")  # fmt: skip
        self._need(isinstance(out, list) and len(out) >= 1 and out[0], "output_top_logprobs")
        rows: list[Row] = [{} for _ in range(start + 1)]  # rows[j] scores ids[j]
        for j in range(start + 1, len(ids)):  # entry j − start scores ids[j]
            row = {int(t): float(lp) for lp, t, *_ in tops[j - start] or []}
            self._check_k(row, k, j)
            lp, t, *_ = actual[j - start]
            self._need(int(t) == ids[j] and lp is not None, f"the log-probability of prompt token {j}")
            row[ids[j]] = float(lp)
            rows.append(row)
        last = {int(t): float(lp) for lp, t, *_ in out[0]}
        self._check_k(last, k, len(ids))
        return [*rows[1:], last] if len(ids) > 1 else [last]

    def tokenize(self, text: str, timeout: float) -> list[int]:
        info = self._generate({"text": text, "return_logprob": True, "logprob_start_len": 0,
                               "sampling_params": {"max_new_tokens": 1, "temperature": 0}}, timeout)  # fmt: skip
        self._need(isinstance(info.get("input_token_logprobs"), list), "input_token_logprobs")
        return [int(entry[1]) for entry in info["input_token_logprobs"]]


class LlamaCpp(Engine):
    """llama-cpp-python's server (`python -m llama_cpp.server --logits_all true`): /v1/completions
    with `echo` and `logprobs`. It takes text, not ids, so every request first checks with
    /extras/tokenize that the server splits the text into exactly the run's ids. Its top log-probs
    are keyed by token text: texts several ids share are left out (their mass goes to the rest),
    except where such a text is the most likely one: then its ids are probed (`_row`).
    It drops a leading BOS token and lines the rows up correctly only then (0.3.x): a prompt that does
    not start with the model's BOS is refused (for SmolLM2 the chat template's <|im_start|> is BOS)."""

    def __init__(self, spec: RemoteSpec, codec: Any) -> None:
        super().__init__(spec, codec)
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
        choice = (post(f"{self.spec.url}/completions", payload, timeout).get("choices") or [{}])[0]
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

    def _row(self, prefix: Sequence[int], entry: dict[str, float] | None, exact: Row, timeout: float,
             resolve: bool) -> Row:  # fmt: skip
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
        other = next((i for i in sorted(row, key=row.get, reverse=True)
                      if self.pieces[i] != top and self._sendable(prefix, i)), None)  # fmt: skip
        return None if other is None else self._echo(prefix, other, 1, timeout)[1].get(top)

    def _by_id(self, entry: dict[str, float] | None) -> Row:
        return {self.ids_by_text[t]: float(v) for t, v in (entry or {}).items() if t in self.ids_by_text}

    def tokenize(self, text: str, timeout: float) -> list[int]:
        out = post(f"{self.spec.root}/extras/tokenize", {"input": text}, timeout)
        self._need(isinstance(out.get("tokens"), list), "token ids from /extras/tokenize")
        return [int(t) for t in out["tokens"]]


def _piece(tokenizer: Any, i: int) -> str:
    """A token's text as llama.cpp renders it alone: its bytes, invalid UTF-8 dropped (control
    tokens render empty: the caller handles them)."""
    return tokenizer.convert_tokens_to_string([tokenizer.convert_ids_to_tokens(i)]).replace("\ufffd", "")


ENGINES: dict[str, type[Engine]] = {"vllm": VLLM, "sglang": SGLang, "llamacpp": LlamaCpp}


# --- the model protocol -----------------------------------------------------------------------------


class RemoteTarget:
    """A NextTokenModel whose every forward pass is one request to a serving engine. Shared and never
    mutated: a session holds its own token list; the server holds no per-run state we rely on."""

    def __init__(self, spec: str | RemoteSpec, codec: Any, vocab_size: int, top_k: int = DEFAULT_TOP_K,
                 timeout: float | None = None, max_length: int | None = None) -> None:  # fmt: skip
        self.spec = spec if isinstance(spec, RemoteSpec) else parse_spec(spec)
        self.name = str(self.spec)
        self.vocab_size = vocab_size
        self.max_length = max_length
        self.top_k = top_k
        self.timeout = timeout_s() if timeout is None else timeout
        self.engine = ENGINES[self.spec.kind](self.spec, codec)
        # top-k rows only: the engine refuses modes that need p in full (specviz.core.engine); one sequence per
        # request: no tree pass; a text-only server may take only a prefix of a draft
        self.capabilities = Capabilities(runtime=f"{self.spec.kind} server", top_k=top_k, trees=False,
                                         splits_drafts=True)  # fmt: skip

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
