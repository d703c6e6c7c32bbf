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

from specviz.models.remote.engine import Engine, Row
from specviz.models.remote.errors import (
    LogprobsCappedError,
    RemoteError,
    RemoteHTTPError,
    RemoteProtocolError,
    RemoteTimeoutError,
    RemoteTokenizerError,
    RemoteUnreachableError,
)
from specviz.models.remote.http import post
from specviz.models.remote.llamacpp_server import LlamaCpp
from specviz.models.remote.sglang import SGLang
from specviz.models.remote.spec import (
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOP_K,
    KINDS,
    TIMEOUT_ENV,
    RemoteSpec,
    is_remote,
    parse_spec,
)
from specviz.models.remote.target import ENGINES, PROBES, RemoteSession, RemoteTarget, fill_row
from specviz.models.remote.vllm import VLLM

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TOP_K",
    "ENGINES",
    "KINDS",
    "PROBES",
    "TIMEOUT_ENV",
    "VLLM",
    "Engine",
    "LlamaCpp",
    "LogprobsCappedError",
    "RemoteError",
    "RemoteHTTPError",
    "RemoteProtocolError",
    "RemoteSession",
    "RemoteSpec",
    "RemoteTarget",
    "RemoteTimeoutError",
    "RemoteTokenizerError",
    "RemoteUnreachableError",
    "Row",
    "SGLang",
    "fill_row",
    "is_remote",
    "parse_spec",
    "post",
]
