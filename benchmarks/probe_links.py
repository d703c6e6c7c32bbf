"""The probes benchmark's tabs (benchmarks.probes): the links a probing student opens, where each tab connects
from, and what a tab saw (exceptions, messages, anything a browser would fetch from another host)."""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

CUSTOM = "Custom: hub id, folder or server"  # the Decode pair picker's entry for a typed hub id, folder or server
REFUSED_HUB_ID = "probe-owner/not-allowed-model"  # a hub id no class allows
SANDBOX_TAU = 8

# --------------------------------------------------------------------------------------
# Where a tab connects from
# --------------------------------------------------------------------------------------

# The address a client connects from, per asyncio task. Streamlit tells the app no address for a client on 127.0.0.1
# (st.context.ip_address is None there), so the class's per-address bounds would not apply to it; another loopback
# address (127.0.0.2) reaches the same server and is one as a student's machine would be.
SOURCE: contextvars.ContextVar[str] = contextvars.ContextVar("probes_source", default="")


@contextlib.contextmanager
def sources() -> Iterator[None]:
    """While inside, benchmarks.stclient's websockets connect from the address `SOURCE` holds in the task that opens
    them (none: as before), by `local_addr`, which websockets hands to the event loop's create_connection."""
    from benchmarks import stclient

    plain_connect = stclient.ws_connect

    def connect(uri: str, **kwargs: Any) -> Any:
        if address := SOURCE.get():
            kwargs.setdefault("local_addr", (address, 0))
        return plain_connect(uri, **kwargs)

    stclient.ws_connect = connect
    try:
        yield
    finally:
        stclient.ws_connect = plain_connect


# --------------------------------------------------------------------------------------
# The probes
# --------------------------------------------------------------------------------------


def sandbox_table(words: int, tau: int = SANDBOX_TAU, seed: int = 0) -> str:
    """A Sandbox link's table (JSON: words, q for each of τ positions, p for τ + 1) of `words` distinct words, each
    row a distribution over them (5 decimals, so the link stays under the app's 100 kB)."""
    rng = random.Random(seed)

    def row() -> list[float]:  # units of 1e-5 that add up to exactly 100 000: the column sums to 1
        weights = [rng.random() + 0.05 for _ in range(words)]
        units = [int(w / sum(weights) * 100_000) for w in weights]
        units[0] += 100_000 - sum(units)
        return [u / 100_000 for u in units]

    table = {
        "words": [f"w{i}" for i in range(words)],
        "q": [row() for _ in range(tau)],
        "p": [row() for _ in range(tau + 1)],
    }
    return json.dumps(table, separators=(",", ":"))


@dataclass
class Probe:
    name: str
    query: dict[str, Any]
    page: str = ""  # the URL path of a page other than Decode
    heavy: bool = False  # kept open the whole `--open` seconds (else closed as soon as its page answered)
    wants_message: bool = True  # must answer with a message (a toast or an alert)


def probes(args: argparse.Namespace, listener: str) -> list[tuple[str, list[Probe]]]:
    """The waves of tabs, each named: the Sandbox links, the auto-stepping Decode links, then the hostile and refused
    links."""
    served = f"vllm:http://{listener}/v1"
    sandbox = [
        Probe(
            f"sandbox {args.words} words τ=8 block #{i + 1}",
            {
                "sandbox_mode": "lossless",
                "sandbox_rule": "block",
                "sandbox_tau": SANDBOX_TAU,
                "sandbox_table": sandbox_table(args.words, seed=i),
            },
            page="sandbox",
            heavy=True,
            wants_message=False,
        )
        for i in range(args.sandbox)
    ]
    auto = [
        Probe(
            f"decode_steps=10000 tree τ=16 64 nodes #{i + 1}",
            {
                "decode_steps": 10_000,
                "decode_tree": "true",
                "decode_tau": 16,
                "decode_tree_nodes": 64,
                "decode_seed": i,
            },
            heavy=True,
            wants_message=False,
        )
        for i in range(args.auto)
    ]
    markdown = f"![m](http://{listener}/md.png) http://{listener}/auto"
    hostile = [
        Probe("decode_drafts {²: x}", {"decode_drafts": '{"²":"x"}'}),
        Probe("decode_drafts 3000 [", {"decode_drafts": "[" * 3000}),
        Probe("lossless_table 3000 [", {"lossless_table": "[" * 3000}, page="lossless"),
        Probe("sandbox_table 3000 [", {"sandbox_table": "[" * 3000, "sandbox_tau": 1}, page="sandbox"),
        Probe(
            "sandbox words as markdown",
            {
                "sandbox_table": json.dumps(
                    {"words": [markdown, "b"], "q": [[0.5, 0.5]], "p": [[0.6, 0.4], [0.5, 0.5]]}
                ),
                "sandbox_tau": 1,
            },
            page="sandbox",
            wants_message=False,
        ),
        Probe(
            "refused hub id as target", {"decode_preset": CUSTOM, "decode_target": REFUSED_HUB_ID, "decode_steps": 1}
        ),
        Probe(
            "refused hub id as draft",
            {"decode_preset": CUSTOM, "decode_target": "embedded", "decode_draft": REFUSED_HUB_ID, "decode_steps": 1},
        ),
        Probe(
            "refused hub id as draft beside a served target",
            {"decode_preset": CUSTOM, "decode_target": served, "decode_draft": REFUSED_HUB_ID, "decode_steps": 1},
        ),
        Probe(
            "the listener as a served target",
            {"decode_preset": CUSTOM, "decode_target": served, "decode_draft": "embedded", "decode_steps": 1},
        ),
    ]
    waves = (("sandbox", sandbox), ("auto-steps", auto), ("hostile and refused", hostile))
    return [(what, wave) for what, wave in waves if wave]


# Elements whose text is not markdown and makes no request (a grid's cells, code, an exception's text, JSON, charts).
_NOT_MARKDOWN = {
    "dataframe",
    "arrow_data_frame",
    "code",
    "exception",
    "json",
    "text",
    "plotly_chart",
    "vega_lite_chart",
}


# A widget's value, options and ids: shown as typed (an input's text, a choice), never read as markdown.
_VALUES = {"value", "default", "raw_value", "options", "placeholder", "id", "form_id", "query_param_key", "data"}


def _strings(message: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(field name, value) of every string field of a protobuf message, nested messages included."""
    out = []
    for descriptor, value in message.ListFields():
        single = isinstance(value, (str, bytes)) or hasattr(value, "ListFields") or not hasattr(value, "__len__")
        values = [value] if single else list(value)
        for v in values:
            if isinstance(v, str):
                out.append((prefix + descriptor.name, v))
            elif hasattr(v, "ListFields"):
                out += _strings(v, prefix + descriptor.name + ".")
    return out


def fetches(elements: list[Any], host: str) -> list[str]:
    """Where elements would make a browser fetch from or link to `host`: in text Streamlit renders as markdown, a
    link, image or autolink to it ("://host" left whole: `specviz.viz.plain` breaks it with a word joiner); in HTML
    (st.html), an attribute naming it; an image, iframe or link button whose address names it."""
    found = []
    named = re.escape(host) + r"(?!\d)"  # 127.0.0.1:9 is not 127.0.0.1:90
    attribute = re.compile(
        r"""<[a-z][^>]*\b(?:src|href|srcset|action|poster|data)\s*=\s*["']?[^"'>\s]*""" + named, re.I
    )
    for element in elements:
        kind = element.WhichOneof("type")
        if kind is None or kind in _NOT_MARKDOWN:
            continue
        for name, text in _strings(getattr(element, kind)):
            if kind == "html":
                hit = attribute.search(text) or re.search(r"url\([^)]*" + named, text, re.I)
            elif name.split(".")[-1] in _VALUES:
                continue
            elif name.split(".")[-1] in ("url", "src", "href"):
                hit = re.search(named, text)
            else:
                hit = re.search("://" + named, text)
            if hit:
                found.append(f"{kind}.{name}: {text[:120]!r}")
    return found


def said(messages: list[str]) -> list[str]:
    """The messages that answer a link (a toast, an error or a warning; not the page's own hints)."""
    return [m for m in messages if m.startswith(("toast:", "error:", "warning:"))]


@dataclass
class Tab:
    probe: Probe
    opened_at: float = 0.0
    answered_s: float | None = None  # seconds to the end of its first script run (None: not within its time open)
    open_s: float = 0.0
    exceptions: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # toasts and alerts
    fetches: list[str] = field(default_factory=list)
    client_error: str | None = None


def _elements(runs: list[Any]) -> list[Any]:
    return [e for run in runs for e in run.elements()]


async def open_tab(url: str, probe: Probe, seconds: float, host: str, source: str = "") -> Tab:
    """A tab opened from the probe's link (connecting from the address `source`, if given), kept open `seconds` (a
    light probe: until its page answered), closed."""
    SOURCE.set(source)
    from streamlit.proto.Alert_pb2 import Alert

    from benchmarks.stclient import RunResult, StreamlitClient

    tab = Tab(probe, opened_at=time.perf_counter())
    client = StreamlitClient(url)
    runs: list[Any] = []
    deadline = tab.opened_at + seconds
    try:
        runs.append(await client.connect(query_string=urlencode(probe.query), page_name=probe.page, wait=False))
        while (left := deadline - time.perf_counter()) > 0:
            try:
                await client.wait_finished(runs[-1], timeout=left)
            except TimeoutError:
                break
            if tab.answered_s is None:
                tab.answered_s = time.perf_counter() - tab.opened_at
                if not probe.heavy:
                    break
            runs.append(RunResult(sent_at=time.perf_counter()))  # reruns the page starts itself (auto-steps)
    except Exception as exc:  # the connection itself failed: say so, as an error of the probe
        tab.client_error = f"{type(exc).__name__}: {exc}"
    finally:
        await client.close()
        tab.open_s = time.perf_counter() - tab.opened_at
    seen = _elements(runs) + client.elements()
    tab.exceptions = sorted({f"{e.exception.type}: {e.exception.message}" for e in seen if e.HasField("exception")})
    alerts = [f"{Alert.Format.Name(e.alert.format).lower()}: {e.alert.body}" for e in seen if e.HasField("alert")]
    tab.messages = list(dict.fromkeys(alerts + [f"toast: {e.toast.body}" for e in seen if e.HasField("toast")]))
    tab.fetches = list(dict.fromkeys(fetches(seen, host)))
    return tab
