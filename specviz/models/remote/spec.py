"""A served target's address, `KIND:URL[#MODEL]`, and how long a request may take."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from specviz.errors import ModelError

KINDS = ("vllm", "sglang", "llamacpp")
DEFAULT_TOP_K = 20  # vLLM's default --max-logprobs
TIMEOUT_ENV = "SPECVIZ_REMOTE_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0


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
    try:
        parsed = urlparse(url)
        _ = parsed.port  # urllib checks the port as it reads it: digits 0-9, 0 to 65535 ("٣" is no port)
    except ValueError:  # a broken address ("http://[::1"), or a port that is not one
        parsed = None
    if kind not in KINDS or parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ModelError(
            f"write a remote target as KIND:URL[#MODEL] with KIND one of {', '.join(KINDS)}, "
            f"e.g. vllm:http://localhost:8000/v1#my-model; got {spec!r}"
        )
    return RemoteSpec(kind, url.rstrip("/"), model or None)
