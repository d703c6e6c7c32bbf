"""A remote target (specviz.models.remote) against stand-in servers: request and response formats
of vLLM and SGLang as documented, every failure as a typed error, and the exactness rules. The real
server (llama-cpp-python serving the embedded GGUF) is in tests/test_remote_server.py."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from benchmarks.appserver import free_port
from specviz import SpecConfig
from specviz.core.engine import Decoder
from specviz.errors import ConfigError, ModelError
from specviz.models import remote
from specviz.models.lm import TableModel
from specviz.models.pair import ModelPair
from specviz.models.remote import http as remote_http
from specviz.models.text import IdsCodec

# a 5-token bigram target: row = previous token
P = torch.tensor(
    [
        [0.05, 0.60, 0.20, 0.10, 0.05],
        [0.10, 0.05, 0.70, 0.10, 0.05],
        [0.05, 0.10, 0.05, 0.50, 0.30],
        [0.40, 0.30, 0.10, 0.05, 0.15],
        [0.25, 0.25, 0.20, 0.20, 0.10],
    ],
    dtype=torch.float64,
)
Q = torch.tensor(  # a draft that agrees with the target's argmax only on some rows
    [
        [0.10, 0.50, 0.20, 0.10, 0.10],
        [0.10, 0.05, 0.25, 0.55, 0.05],
        [0.05, 0.10, 0.05, 0.60, 0.20],
        [0.30, 0.40, 0.10, 0.10, 0.10],
        [0.20, 0.20, 0.20, 0.20, 0.20],
    ],
    dtype=torch.float64,
)


def top(row: torch.Tensor, k: int) -> dict[int, float]:
    values, ids = torch.topk(row, k)
    return {int(i): math.log(float(v)) for i, v in zip(ids, values, strict=True)}


def vllm_answer(ids: list[int], k: int) -> dict:
    """What vLLM's /completions returns for prompt=ids, prompt_logprobs=k, logprobs=k,
    return_tokens_as_token_ids (the actual prompt token is always in its position's dict)."""
    prompt = [None]
    for j in range(1, len(ids)):
        row = top(P[ids[j - 1]], k)
        row[ids[j]] = math.log(float(P[ids[j - 1], ids[j]]))
        prompt.append({str(t): {"logprob": v, "rank": 1, "decoded_token": f"w{t}"} for t, v in row.items()})
    last = top(P[ids[-1]], k)
    best = max(last, key=last.get)
    return {
        "choices": [
            {
                "text": f"w{best}",
                "prompt_logprobs": prompt,
                "logprobs": {
                    "tokens": [f"token_id:{best}"],
                    "token_logprobs": [last[best]],
                    "top_logprobs": [{f"token_id:{t}": v for t, v in last.items()}],
                },
            }
        ]
    }


def sglang_answer(ids: list[int], k: int, start: int) -> dict:
    """SGLang /generate meta_info: [logprob, token_id, text] triples from logprob_start_len on."""
    actual = [
        [None if j == 0 else math.log(float(P[ids[j - 1], ids[j]])), ids[j], None] for j in range(start, len(ids))
    ]
    tops = [
        None if j == 0 else [[v, t, None] for t, v in top(P[ids[j - 1]], k).items()] for j in range(start, len(ids))
    ]
    last = top(P[ids[-1]], k)
    best = max(last, key=last.get)
    return {
        "text": "",
        "meta_info": {
            "input_token_logprobs": actual,
            "input_top_logprobs": tops,
            "output_token_logprobs": [[last[best], best, None]],
            "output_top_logprobs": [[[v, t, None] for t, v in last.items()]],
        },
    }


class Server:
    """A stand-in HTTP server on a loopback port; `handle(path, body) -> (status, payload)`."""

    def __init__(self, handle) -> None:
        owner = self
        self.requests: list[tuple[str, dict]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append((self.path, body))
                status, payload = handle(self.path, body)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def vllm_server(k_returned: int | None = None) -> Server:
    def handle(path, body):
        if path == "/tokenize":
            return 200, {"tokens": [int(w[1:]) for w in body["prompt"].split()]}
        return 200, vllm_answer(body["prompt"], k_returned or body["prompt_logprobs"])

    return Server(handle)


def remote_pair(spec: str, k: int = 3) -> ModelPair:
    return ModelPair(remote.RemoteTarget(spec, IdsCodec(), 5, top_k=k, timeout=5), TableModel(Q), IdsCodec())


# --- the row a session builds from top-k ------------------------------------------------------------


def test_fill_row_keeps_known_entries_exact_and_spreads_the_rest():
    row = remote.fill_row({0: math.log(0.5), 3: math.log(0.3)}, 5)
    # 0.2 missing over the 3 unknown tokens: 0.0667 each; softmax of the row leaves it unchanged
    assert torch.softmax(row, -1).tolist() == pytest.approx([0.5, 0.2 / 3, 0.2 / 3, 0.3, 0.2 / 3])
    assert int(row.argmax()) == 0


def test_fill_row_rejects_ids_outside_the_vocabulary():
    with pytest.raises(remote.RemoteProtocolError, match="outside"):
        remote.fill_row({7: -0.1}, 5)


# --- spec parsing -----------------------------------------------------------------------------------


def test_spec_parsing_and_errors():
    spec = remote.parse_spec("vllm:http://gpu:8000/v1/#meta-llama/Llama-3.1-70B")
    assert (spec.kind, spec.url, spec.model, spec.root) == (
        "vllm",
        "http://gpu:8000/v1",
        "meta-llama/Llama-3.1-70B",
        "http://gpu:8000",
    )
    assert remote.is_remote("sglang:http://h:30000") and not remote.is_remote("embedded")
    # issue 57.3: a broken address was a ValueError; a port in other digits ("٣") was read as 3 by http.client
    odd = ("sglang:http://[::1/x", "vllm:http://h:٣/v1", "vllm:http://h:²/v1", "vllm:http://h:70000/v1")
    for bad in ("vllm:gpu:8000", "tgi:http://h:1", "llamacpp:ftp://h/v1", *odd):
        with pytest.raises(ModelError, match="KIND:URL"):
            remote.parse_spec(bad)


# --- vLLM and SGLang formats ------------------------------------------------------------------------


def test_vllm_rows_line_up_with_the_prompt_by_hand():
    with vllm_server() as server:
        engine = remote.VLLM(remote.parse_spec(f"vllm:http://127.0.0.1:{server.port}/v1#m"), IdsCodec())
        rows = engine.score([0, 1, 2], k=2, timeout=5)
        path, body = server.requests[-1]
    assert path == "/v1/completions" and body["prompt"] == [0, 1, 2] and body["model"] == "m"
    assert body["prompt_logprobs"] == 2 and body["max_tokens"] == 1 and body["temperature"] == 0
    # row 0: after [0]: top-2 of P[0] = {1: .6, 2: .2}, and the actual next token 1 (already there)
    assert {t: round(math.exp(v), 6) for t, v in rows[0].items()} == {1: 0.6, 2: 0.2}
    # row 1: after [0, 1]: top-2 of P[1] = {2: .7, 0 or 3: .1}; the actual token 2 is in it
    assert round(math.exp(rows[1][2]), 6) == 0.7
    # row 2: after [0, 1, 2]: the generated token's top-2 = {3: .5, 4: .3}
    assert {t: round(math.exp(v), 6) for t, v in rows[2].items()} == {3: 0.5, 4: 0.3}


def test_sglang_rows_line_up_with_the_prompt_by_hand():
    def handle(path, body):
        return 200, sglang_answer(body["input_ids"], body["top_logprobs_num"], body["logprob_start_len"])

    with Server(handle) as server:
        engine = remote.SGLang(remote.parse_spec(f"sglang:http://127.0.0.1:{server.port}"), IdsCodec())
        rows = engine.score([0, 1, 2, 4], k=2, timeout=5)
        path, body = server.requests[-1]
    assert path == "/generate" and body["input_ids"] == [0, 1, 2, 4] and body["return_logprob"] is True
    # after [0, 1, 2]: P[2]'s top-2 is {3: .5, 4: .3}, and 4 is the actual token
    assert round(math.exp(rows[2][4]), 6) == 0.3
    assert round(math.exp(rows[0][1]), 6) == 0.6 and round(math.exp(rows[1][2]), 6) == 0.7
    # after the whole prompt [.., 4]: P[4] top-2 = two of 0.25
    assert sorted(round(math.exp(v), 6) for v in rows[3].values()) == [0.25, 0.25]


def test_the_actual_token_is_exact_even_outside_the_top_k():
    with vllm_server() as server:
        engine = remote.VLLM(remote.parse_spec(f"vllm:http://127.0.0.1:{server.port}/v1"), IdsCodec())
        rows = engine.score([1, 4], k=1, timeout=5)  # P[1][4] = 0.05, far below the top-1
    assert round(math.exp(rows[0][4]), 6) == 0.05 and round(math.exp(rows[0][2]), 6) == 0.7


# --- decoding through a stand-in vLLM ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["greedy", "textbook"])
def test_decoding_with_a_remote_target_matches_the_local_one(mode):
    local = ModelPair(TableModel(P), TableModel(Q), IdsCodec())
    cfg = SpecConfig(mode=mode, tau=3, max_new_tokens=24, seed=5)
    with vllm_server() as server:
        far = Decoder(remote_pair(f"vllm:http://127.0.0.1:{server.port}/v1", k=3), [0], cfg).run()
        requests = len(server.requests)
    near = Decoder(local, [0], cfg).run()
    assert far.new_tokens == near.new_tokens
    # p(ŷ), p/q and the decisions are exact; one request per step (and none for a 1-token prompt)
    for a, b in zip(far.steps, near.steps, strict=True):
        assert a.p == pytest.approx(b.p) and a.ratio == pytest.approx(b.ratio) and a.decision == b.decision
    assert requests == len(far.steps)
    assert far.target_top_k == 3 and near.target_top_k is None


def test_modes_that_need_all_of_p_are_refused():
    pair = remote_pair("vllm:http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="lossless"):
        Decoder(pair, [0], SpecConfig(mode="lossless"))
    for cfg in (SpecConfig(temperature=0.7), SpecConfig(top_k=2), SpecConfig(top_p=0.9)):
        with pytest.raises(ConfigError, match="top 3 probabilities"):
            Decoder(pair, [0], cfg)


# --- every failure is a typed error, quickly ----------------------------------------------------------


def test_unreachable_server():
    with pytest.raises(remote.RemoteUnreachableError, match="is the server running"):
        Decoder(remote_pair(f"vllm:http://127.0.0.1:{free_port()}/v1"), [0, 1], SpecConfig())


def test_timeout_is_bounded():
    def slow(path, body):
        time.sleep(3)
        return 200, {}

    with Server(slow) as server:
        target = remote.RemoteTarget(f"vllm:http://127.0.0.1:{server.port}/v1", IdsCodec(), 5, timeout=0.5)
        start = time.perf_counter()
        with pytest.raises(remote.RemoteTimeoutError, match=r"within 0\.5 s"):
            Decoder(ModelPair(target, TableModel(Q), IdsCodec()), [0, 1], SpecConfig())
        assert time.perf_counter() - start < 2.5


@pytest.mark.parametrize(
    ("status", "payload", "error", "match"),
    [
        (500, {"error": "out of memory"}, remote.RemoteHTTPError, "HTTP 500"),
        (
            400,
            {"message": "Requested prompt logprobs of 20, which is greater than max allowed: 5"},
            remote.LogprobsCappedError,
            "max-logprobs",
        ),
        (200, {"choices": [{"text": "x", "logprobs": None}]}, remote.RemoteProtocolError, "prompt_logprobs"),
        (200, "not json", remote.RemoteProtocolError, "JSON"),
        (200, "[" * 40 + "]" * 40, remote.RemoteProtocolError, "nests deeper than 32 levels"),
        (200, "[1, 2]", remote.RemoteProtocolError, "not an object"),
        (200, '{"choices": [{"text": "' + "x" * 2_000 + '"}]}', remote.RemoteProtocolError, "more than the 1,000 read"),
        (200, '{"n": 1' + "0" * 100 + "}", remote.RemoteProtocolError, "digits"),
    ],
)
def test_server_errors_are_typed(status, payload, error, match, monkeypatch):
    """An answer is read within bounds (here 1,000 bytes, 32 levels): one too long, too deep, not an object, or with
    a number of 101 digits is a protocol error naming why, never a parser left to run."""
    monkeypatch.setattr(remote_http, "RESPONSE_BYTES", 1_000)
    with Server(lambda path, body: (status, payload)) as server, pytest.raises(error, match=match):
        Decoder(remote_pair(f"vllm:http://127.0.0.1:{server.port}/v1"), [0, 1], SpecConfig())


def test_fewer_logprobs_than_asked_is_a_cap():
    with vllm_server(k_returned=1) as server, pytest.raises(remote.LogprobsCappedError, match="fewer than the 3"):
        Decoder(remote_pair(f"vllm:http://127.0.0.1:{server.port}/v1", k=3), [0, 1, 2], SpecConfig())


def test_a_server_with_another_tokenizer_is_refused():
    class Words(IdsCodec):
        name = "words"

        def encode(self, text: str) -> list[int]:
            return [len(w) for w in text.split()]

    def handle(path, body):
        return 200, {"tokens": [7] * len(body["prompt"].split())}

    with Server(handle) as server:
        target = remote.RemoteTarget(f"vllm:http://127.0.0.1:{server.port}/v1", Words(), 5)
        with pytest.raises(remote.RemoteTokenizerError, match="split"):
            target.check_tokenizer(Words())
        assert server.requests[0][0] == "/tokenize"


def test_load_pair_refuses_drafts_that_need_the_targets_weights():
    from specviz import load_pair

    for draft in ("self", "prompt-lookup", "early-exit:4"):
        with pytest.raises(ModelError, match="standalone local model"):
            load_pair("vllm:http://127.0.0.1:9/v1", draft)


def test_a_remote_runs_trace_says_top_k_and_replays():
    import json as _json

    from specviz.classroom.replay import load_trace
    from specviz.errors import TraceError

    with vllm_server() as server:
        run = Decoder(
            remote_pair(f"vllm:http://127.0.0.1:{server.port}/v1", k=3), [0], SpecConfig(max_new_tokens=6)
        ).run()
    assert load_trace(run.to_json()).target_top_k == 3
    old = run.to_dict()
    del old["target_top_k"]  # a trace saved before remote targets existed
    assert load_trace(_json.dumps(old)).target_top_k is None
    with pytest.raises(TraceError, match="target_top_k"):
        load_trace(_json.dumps({**old, "target_top_k": -1}))


def test_a_step_that_fails_leaves_the_run_as_it_was():
    """The server fails once mid-run (HTTP 503): the step raises, and stepping on gives exactly the
    run that never failed (caches and random state restored)."""
    calls = {"n": 0}

    def flaky(path, body):
        calls["n"] += 1
        if calls["n"] == 3:
            return 503, {"error": "busy"}
        return 200, vllm_answer(body["prompt"], body["prompt_logprobs"])

    cfg = SpecConfig(mode="textbook", tau=2, max_new_tokens=12, seed=2)
    with Server(flaky) as server:
        dec = Decoder(remote_pair(f"vllm:http://127.0.0.1:{server.port}/v1"), [0], cfg)
        dec.step()
        dec.step()
        with pytest.raises(remote.RemoteHTTPError, match="503"):
            dec.step()
        assert len(dec.steps) == 2
        run = dec.run()
    assert run.new_tokens == Decoder(ModelPair(TableModel(P), TableModel(Q), IdsCodec()), [0], cfg).run().new_tokens


def test_a_server_that_adds_bos_to_text_still_matches():
    """Llama-style servers put BOS in front of text they tokenise; the draft's ids for the same text
    (without special tokens) must match the rest."""

    class Tok:
        bos_token_id = 1

        def encode(self, text, add_special_tokens=True):
            return ([1] if add_special_tokens else []) + [2 + len(w) for w in text.split()]

    class Codec(IdsCodec):
        name = "words"
        tokenizer = Tok()

    def handle(path, body):
        return 200, {"tokens": Tok().encode(body["prompt"])}  # BOS first, as the server adds it

    with Server(handle) as server:
        remote.RemoteTarget(f"vllm:http://127.0.0.1:{server.port}/v1", Codec(), 5).check_tokenizer(Codec())


# --- llama-cpp-python: top log-probabilities keyed by text ---------------------------------------------
# A stand-in beside the real server (tests/test_remote_server.py), for cases a real model rarely shows
# on demand. Its vocabulary has texts several ids print as, the way byte-level tokenizers do: every
# control token and the lone byte piece 6 print as '', the space 4 and "space + byte piece" 5 as ' '.

VOCAB = ["<s>", "</s>", " a", " b", " ", " \ufffd", "\ufffd", " c"]
SENDABLE = ["<s>", "</s>", " a", " b", " c", " "]  # what the tokenizer ever produces (longest match first)
LLAMA_P = {  # next-token distributions by previous token (row sums 1); never 0, as on a real server
    2: [0.001, 0.5, 0.001, 0.2, 0.1, 0.079, 0.05, 0.069],  # after " a": EOS, printed '', is most likely
    3: [0.001, 0.001, 0.15, 0.001, 0.3, 0.25, 0.151, 0.146],  # after " b": " " (id 4) over " \ufffd" (id 5)
    4: [0.001, 0.3, 0.25, 0.2, 0.001, 0.001, 0.001, 0.246],  # after " ": four texts, no two alike
    7: [0.001, 0.25, 0.15, 0.15, 0.099, 0.05, 0.3, 0.0],  # after " c": the byte piece 6, which cannot be sent
}


class ByteishTokenizer:
    bos_token_id, eos_token_id, all_special_ids = 0, 1, [0, 1]

    def __len__(self) -> int:
        return len(VOCAB)

    def convert_ids_to_tokens(self, i: int) -> str:
        return VOCAB[i]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) -> str:
        return "".join(VOCAB[i] for i in ids)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = []
        while text:
            piece = next((s for s in sorted(SENDABLE, key=len, reverse=True) if text.startswith(s)), None)
            ids.append(VOCAB.index(piece) if piece else -1)  # -1: a split this tokenizer never makes
            text = text[len(piece or text[0]) :]
        return ids


class ByteishCodec(IdsCodec):
    tokenizer = ByteishTokenizer()


def llama_cpp_answer(text: str, k: int) -> dict:
    """llama-cpp-python 0.3's echo + logprobs: BOS dropped, top-k as {text: logprob} built in rank
    order (a text several of the top-k share keeps the lowest one's value), the actual token's
    text set to its own value, the first entry nulled, then the greedy generated token, unless it is
    EOS (generation stops there and returns nothing)."""
    tokens = ByteishTokenizer().encode(text)[1:]
    texts = [VOCAB[t].replace("\ufffd", "") if t > 1 else "" for t in range(len(VOCAB))]
    rows = [[0.125] * 8, *(LLAMA_P.get(t, [0.125] * 8) for t in tokens)]  # before each token, then after the last
    tops, actual = [], []
    for j, row in enumerate(rows):
        if j < len(tokens) and tokens[j] == 0:
            continue  # no entry for a BOS token
        ranked = sorted(range(len(VOCAB)), key=lambda t: -row[t])
        entry = {texts[t]: math.log(row[t]) for t in ranked[:k]}
        if j < len(tokens):
            entry[texts[tokens[j]]] = math.log(row[tokens[j]])
        tops.append(entry)
        actual.append(math.log(row[tokens[j] if j < len(tokens) else ranked[0]]))
    tops[0], actual[0] = None, None
    words = [texts[t] for t in tokens if t != 0] + [texts[max(range(8), key=lambda t: rows[-1][t])]]
    if max(range(8), key=lambda t: rows[-1][t]) == 1:
        words, tops, actual = words[:-1], tops[:-1], actual[:-1]
    return {"choices": [{"logprobs": {"tokens": words, "token_logprobs": actual, "top_logprobs": tops}}]}


def llama_cpp_server() -> Server:
    def handle(path, body):
        if path == "/extras/tokenize":
            return 200, {"tokens": ByteishTokenizer().encode(body["input"])}
        return 200, llama_cpp_answer(body["prompt"], body["logprobs"])

    return Server(handle)


def test_llama_cpp_most_likely_token_with_a_shared_text_is_found_by_asking_for_it():
    """After " a" the most likely token is EOS (p 0.5): the server generates it and so returns nothing
    after the prompt; asked again with EOS appended, it prints EOS as '' like the byte piece 6, so the
    top-k cannot say which, but EOS's own log-probability is exact there and, as 0.5 ≥ all the mass
    still unknown (1 − 0.5 − 0.2), EOS is surely the argmax.
    The ' ' pair (ids 4, 5) is left out of that row (it is not the most likely text there). After
    " b", ' ' leads: id 4 is asked for (0.3, less than the 0.55 unknown), then the largest value
    there, with one top log-probability and " a" in that place: 0.3 again, so id 4 is the argmax."""
    with llama_cpp_server() as server:
        engine = remote.LlamaCpp(remote.parse_spec(f"llamacpp:http://127.0.0.1:{server.port}/v1"), ByteishCodec())
        rows = engine.score([0, 4, 3, 2], k=4, timeout=5, keep=2)
        assert len(server.requests) == 8  # tokenize and score, then both again for each of three probes
        assert [body["prompt"] for _, body in server.requests[3::2]] == ["<s>  b ", "<s>  b a", "<s>  b a</s>"]
        assert [body["logprobs"] for _, body in server.requests[1::2]] == [4, 1, 1, 4]  # EOS: asked after
    assert rows[-1] == pytest.approx({3: math.log(0.2), 1: math.log(0.5)})
    assert rows[-2] == pytest.approx({4: math.log(0.3), 2: math.log(0.15)})  # the '' entry (0.151) left out
    fill = remote.fill_row(rows[-1], len(VOCAB))
    assert int(fill.argmax()) == 1 and float(fill.exp().sum()) == pytest.approx(1.0)


def test_llama_cpp_rows_the_step_does_not_read_are_not_probed():
    with llama_cpp_server() as server:
        engine = remote.LlamaCpp(remote.parse_spec(f"llamacpp:http://127.0.0.1:{server.port}/v1"), ByteishCodec())
        rows = engine.score([0, 4, 3, 2], k=4, timeout=5, keep=1)  # only the last row: EOS probed, " " not
        assert len(server.requests) == 4
    assert rows[-2] == pytest.approx({2: math.log(0.15)})


def test_llama_cpp_a_most_likely_token_that_cannot_be_told_is_an_error():
    """After " c" the byte piece 6 (p 0.3) leads, printed '' like EOS (0.25) and BOS: EOS is asked for,
    then the largest value there (0.3): EOS is not it; BOS has no row and the piece cannot be sent."""
    with llama_cpp_server() as server:
        engine = remote.LlamaCpp(remote.parse_spec(f"llamacpp:http://127.0.0.1:{server.port}/v1"), ByteishCodec())
        with pytest.raises(remote.RemoteProtocolError, match="prints as '', which 3 tokens share; 2 more requests"):
            engine.score([0, 4, 7], k=3, timeout=5, keep=1)


def test_llama_cpp_a_most_likely_text_no_local_token_prints_is_an_error(monkeypatch):
    monkeypatch.setitem(LLAMA_P, 4, [0.001, 0.25, 0.3, 0.2, 0.001, 0.001, 0.001, 0.246])  # " a" leads after " "
    with llama_cpp_server() as server:
        engine = remote.LlamaCpp(remote.parse_spec(f"llamacpp:http://127.0.0.1:{server.port}/v1"), ByteishCodec())
        engine.ids_by_text.pop(" a")  # as if the server printed a token the draft's tokenizer does not have
        with pytest.raises(remote.RemoteProtocolError, match="prints as ' a', which no token of the draft"):
            engine.score([0, 4, 4, 2], k=4, timeout=5, keep=2)
