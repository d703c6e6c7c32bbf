"""One JSON request to a serving engine: every failure a RemoteError, never an endless wait. A caller may hand in a
`check(url)` that raises for an address it does not allow (the app hands in its class mode's allowlist,
specviz.class_policy): it is asked before any connection is made, and again for every redirect."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from specviz.bounded import read_json
from specviz.models.remote.errors import (
    LogprobsCappedError,
    RemoteHTTPError,
    RemoteProtocolError,
    RemoteTimeoutError,
    RemoteUnreachableError,
)
from specviz.models.remote.spec import TIMEOUT_ENV

Check = Callable[[str], None]  # raises for an address the caller does not allow
RESPONSE_BYTES = 16_000_000  # an answer read at most this long: a step's top log-probabilities are kilobytes
RESPONSE_DEPTH = 32  # and nested at most this deep (an engine's answer nests five or six levels)


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an address the caller's check allows."""

    def __init__(self, check: Check) -> None:
        self.check = check

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.check(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener()


def post(url: str, payload: dict[str, Any], timeout: float, check: Check | None = None) -> dict[str, Any]:
    """POST JSON, return JSON; every failure becomes a RemoteError (never an endless wait). `check(url)` is asked
    before any connection and for every redirect."""
    opener = _OPENER
    if check is not None:
        check(url)  # before any connection
        opener = urllib.request.build_opener(_CheckedRedirects(check))
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(RESPONSE_BYTES + 1)  # one byte more tells an answer too long
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
    answer = read_json(
        body, error=RemoteProtocolError, what=f"{url}'s answer", max_bytes=RESPONSE_BYTES, max_depth=RESPONSE_DEPTH
    )
    if not isinstance(answer, dict):
        raise RemoteProtocolError(f"{url}'s answer cannot be read: it is JSON, but not an object")
    return answer


def _late(url: str, timeout: float) -> str:
    return f"{url} did not answer within {timeout:g} s (set {TIMEOUT_ENV} to wait longer)"
