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
    return {"choices": [{"text": f"w{best}", "prompt_logprobs": prompt,
                         "logprobs": {"tokens": [f"token_id:{best}"], "token_logprobs": [last[best]],
                                      "top_logprobs": [{f"token_id:{t}": v for t, v in last.items()}]}}]}  # fmt: skip


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
    return {"text": "", "meta_info": {"input_token_logprobs": actual, "input_top_logprobs": tops,
            "output_token_logprobs": [[last[best], best, None]],
            "output_top_logprobs": [[[v, t, None] for t, v in last.items()]]}}  # fmt: skip


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
    for bad in ("vllm:gpu:8000", "tgi:http://h:1", "llamacpp:ftp://h/v1"):
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
        (400, {"message": "Requested prompt logprobs of 20, which is greater than max allowed: 5"},
         remote.LogprobsCappedError, "max-logprobs"),
        (200, {"choices": [{"text": "x", "logprobs": None}]}, remote.RemoteProtocolError, "prompt_logprobs"),
        (200, "not json", remote.RemoteProtocolError, "JSON"),
    ],
)  # fmt: skip
def test_server_errors_are_typed(status, payload, error, match):
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
