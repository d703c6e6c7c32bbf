"""A browser-less client for a Streamlit 1.67 app server, over its own websocket protocol.

It speaks what the browser's frontend speaks: it opens ``/_stcore/stream`` with the
``streamlit`` subprotocol, sends ``BackMsg.rerun_script`` (a ``ClientState``: query string,
widget states, page, cached message hashes, context info) and reads ``ForwardMsg``s
(``new_session``, ``delta``, ``navigation``, ``page_info_changed``, ``script_finished`` ...).
Only Streamlit's own protobuf classes are used to build and parse messages.

Used by benchmarks.class_load (a class of simulated students). Protocol notes: docs/performance.md,
"A class under load". Typical use::

    c = StreamlitClient("http://127.0.0.1:8765")
    run = await c.connect(query_string="student=alice")
    run = await c.click("demo_step")            # st.button(key="demo_step")
    run = await c.set_value("demo_tokens", 42)  # st.number_input(key="demo_tokens")
    run = await c.switch_page("Errors")         # st.navigation page, by title / url path / hash
    print(run.elapsed, c.markdown(), c.exceptions())
    await c.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
import uuid
from collections.abc import Iterable
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackendOperationRequest, BackMsg, DeferredFileRequestPayload
from streamlit.proto.ClientState_pb2 import ClientState, ContextInfo
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from websockets.asyncio.client import connect as ws_connect

from benchmarks.stelements import (
    FINISHED_EARLY_FOR_RERUN,
    FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
    FINISHED_SUCCESSFULLY,
    ElementQueries,
    Node,
    RunResult,
    StreamlitClientError,
    element_type,
    state_for_value,
    state_from_proto,
    user_key_of,
)

STREAM_PATH = "_stcore/stream"
HEALTH_PATH = "_stcore/health"
HOST_CONFIG_PATH = "_stcore/host-config"
XSRF_COOKIE = "_streamlit_xsrf"


# Widgets whose state is a trigger (true for exactly one rerun).
_TRIGGER_TYPES = {"button", "download_button"}


# --------------------------------------------------------------------------------------
# The forward-message cache, as the frontend's ForwardMsgCache does it
# --------------------------------------------------------------------------------------


class _ForwardMsgCache:
    def __init__(self) -> None:
        self.messages: dict[str, tuple[bytes, int]] = {}  # hash -> (encoded msg, run count)
        self.run_count = 0
        self.hits = 0  # ref_hash messages resolved from the cache

    def hashes(self) -> list[str]:
        return list(self.messages)

    def process(self, msg: ForwardMsg, raw: bytes) -> ForwardMsg:
        kind = msg.WhichOneof("type")
        if kind != "ref_hash" and msg.metadata.cacheable and msg.hash and msg.hash not in self.messages:
            self.messages[msg.hash] = (raw, self.run_count)
        if kind != "ref_hash":
            return msg
        entry = self.messages.get(msg.ref_hash)
        if entry is None:
            raise StreamlitClientError(f"cached ForwardMsg miss for ref_hash {msg.ref_hash}")
        self.messages[msg.ref_hash] = (entry[0], self.run_count)  # touch
        self.hits += 1
        full = ForwardMsg()
        full.ParseFromString(entry[0])
        full.metadata.CopyFrom(msg.metadata)  # the reference carries this use's delta_path
        return full

    def increment_run_count(self, max_age: int) -> None:
        self.run_count += 1
        for h, (_, rc) in list(self.messages.items()):
            if self.run_count - rc > max_age:
                del self.messages[h]


# --------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------


class StreamlitClient(ElementQueries):
    """One simulated browser tab (one Streamlit session)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8501",
        *,
        emulate_cache: bool = True,
        http_preflight: bool = True,
        compression: str | None = "deflate",
        timezone: str = "Europe/Berlin",
        timezone_offset: int = -60,
        locale: str = "en-US",
        color_scheme: str = "light",
        open_timeout: float = 30.0,
        browser_cookie: str | None = None,
    ) -> None:
        """`browser_cookie`: the XSRF cookie of a browser this tab belongs to (another tab's `browser_cookie` after
        it connected): a browser's tabs all send the cookie it was given once, so a class server counts them as
        one student. Without it, each client is a browser of its own (the server's cookie from the health check)."""
        parsed = urllib.parse.urlsplit(base_url)
        self.scheme = parsed.scheme or "http"
        self.netloc = parsed.netloc
        self.base_path = parsed.path.strip("/")  # server.baseUrlPath, if any
        self.emulate_cache = emulate_cache
        self.http_preflight = http_preflight
        self.compression = compression
        self.context = dict(
            timezone=timezone, timezone_offset=timezone_offset, locale=locale, color_scheme=color_scheme
        )
        self.open_timeout = open_timeout
        self.browser_cookie = browser_cookie

        self.ws: Any = None
        self._reader: asyncio.Task | None = None
        self._inbox: asyncio.Queue[tuple[float, int, ForwardMsg | BaseException]] = asyncio.Queue()
        self._cache = _ForwardMsgCache()
        self._received_new_session = False
        self._operations: dict[str, asyncio.Future] = {}  # request id -> the server's answer

        # Session / app state learnt from the server
        self.session_id: str | None = None
        self.main_script_hash = ""
        self.page_script_hash = ""  # current page (sent back on every rerun)
        self.pages: list[Any] = []  # AppPage protos from the latest `navigation` message
        self.query_string = ""
        self.max_cached_message_age = 2
        self.script_run_id = ""
        self.fragment_ids_this_run: list[str] = []  # the fragments the current run reruns (none: the whole app)
        self.script_running = False
        self.tree: dict[tuple[int, ...], Node] = {}
        self.http_timings: dict[str, float] = {}
        self.bytes_received = 0
        self.messages_received = 0

        # Widget values the "browser" holds: element id -> WidgetState (no triggers)
        self.widget_states: dict[str, WidgetState] = {}
        self._form_pending: dict[str, dict[str, WidgetState]] = {}

    # ------------------------------------------------------------------ connection
    @property
    def http_base(self) -> str:
        return f"{self.scheme}://{self.netloc}/" + (self.base_path + "/" if self.base_path else "")

    @property
    def ws_url(self) -> str:
        ws_scheme = "wss" if self.scheme == "https" else "ws"
        return f"{ws_scheme}://{self.netloc}/" + (self.base_path + "/" if self.base_path else "") + STREAM_PATH

    async def connect(
        self,
        query_string: str = "",
        *,
        page_name: str = "",
        session_id: str | None = None,
        wait: bool = True,
        timeout: float = 120.0,
    ) -> RunResult:
        """Open the session like a page load: GET health and host-config (as the frontend
        does before it opens the socket), open the websocket, send the first rerun_script.

        query_string: the URL's query without '?', e.g. "student=alice&x=1".
        page_name: the URL path of a non-default st.navigation page (the frontend sends it
          on the first run only, with an empty page_script_hash).
        session_id: a previous session id to resume (third Sec-WebSocket-Protocol entry).
        """
        xsrf_token = self.browser_cookie
        cookie = None if xsrf_token is None else f"{XSRF_COOKIE}={xsrf_token}"
        if self.http_preflight:
            t0 = time.perf_counter()
            status, headers, _ = await http_get(self.http_base + HEALTH_PATH)
            self.http_timings["health"] = time.perf_counter() - t0
            if status != 200:
                raise StreamlitClientError(f"health check answered {status}")
            for name, value in headers:
                if self.browser_cookie is None and name == "set-cookie" and value.startswith(XSRF_COOKIE + "="):
                    xsrf_token = value.split(";", 1)[0].split("=", 1)[1]
                    cookie = f"{XSRF_COOKIE}={xsrf_token}"
            t0 = time.perf_counter()
            await http_get(self.http_base + HOST_CONFIG_PATH)
            self.http_timings["host_config"] = time.perf_counter() - t0

        # Sec-WebSocket-Protocol: "streamlit", <xsrf token or placeholder>, [<session id>]
        protocols = ["streamlit", xsrf_token or "PLACEHOLDER_AUTH_TOKEN"]
        if session_id:
            protocols.append(session_id)
        headers = {"Cookie": cookie} if cookie else None
        t0 = time.perf_counter()
        self.ws = await ws_connect(
            self.ws_url,
            subprotocols=protocols,  # type: ignore[arg-type]
            origin=f"{self.scheme}://{self.netloc}",  # type: ignore[arg-type]
            additional_headers=headers,
            max_size=None,  # Streamlit messages can be up to server.maxMessageSize (200 MB)
            compression=self.compression,
            ping_interval=None,  # browsers do not ping; the server pings us (we answer)
            open_timeout=self.open_timeout,
        )
        self.http_timings["ws_open"] = time.perf_counter() - t0
        self.browser_cookie = xsrf_token
        self._reader = asyncio.create_task(self._read_loop(), name="stclient-reader")
        if query_string.startswith("?"):
            query_string = query_string[1:]
        self.query_string = query_string
        return await self.rerun(page_name=page_name, wait=wait, timeout=timeout)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self.ws = None
        self._reader = None

    async def __aenter__(self) -> StreamlitClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ------------------------------------------------------------------ receiving
    async def _read_loop(self) -> None:
        try:
            async for raw in self.ws:
                t = time.perf_counter()
                if isinstance(raw, str):
                    raise StreamlitClientError("unexpected text frame from server")
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                if msg.WhichOneof("type") == "ref_hash" or self.emulate_cache:
                    msg = self._cache.process(msg, raw)
                self.bytes_received += len(raw)
                self.messages_received += 1
                self._apply(msg)
                self._inbox.put_nowait((t, len(raw), msg))
            self._inbox.put_nowait((time.perf_counter(), 0, ConnectionError("websocket closed by server")))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # surface to the waiter
            self._inbox.put_nowait((time.perf_counter(), 0, exc))

    def _apply(self, msg: ForwardMsg) -> None:
        """Update the client's view of the app, as the frontend's App.handleMessage does."""
        kind = msg.WhichOneof("type")
        if kind == "backend_operation_response":
            answer = msg.backend_operation_response
            waiter = self._operations.pop(answer.request_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(answer)
        elif kind == "new_session":
            ns = msg.new_session
            self._received_new_session = True
            if ns.HasField("initialize"):
                self.session_id = ns.initialize.session_id or self.session_id
                self.script_running = ns.initialize.session_status.script_is_running
            self.main_script_hash = ns.main_script_hash
            if ns.page_script_hash:
                self.page_script_hash = ns.page_script_hash
            self.max_cached_message_age = ns.config.max_cached_message_age or 2
            self.script_run_id = msg.metadata.run.script_run_id
            self.fragment_ids_this_run = list(msg.metadata.run.fragment_ids)
        elif kind == "navigation":
            self.pages = list(msg.navigation.app_pages)
            if msg.navigation.page_script_hash:
                self.page_script_hash = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.script_running = msg.session_status_changed.script_is_running
        elif kind == "delta":
            path = tuple(msg.metadata.delta_path)
            dtype = msg.delta.WhichOneof("type")
            if dtype in ("new_element", "add_block"):
                self.tree[path] = Node(path, msg, self.script_run_id, msg.metadata.active_script_hash)
                if dtype == "new_element":
                    self._on_widget_proto(msg.delta.new_element)
        elif kind == "script_finished":
            status = msg.script_finished
            if status == FINISHED_SUCCESSFULLY:
                # Full-app run over: drop stale nodes (not written by this run) and the
                # state of widgets no longer shown (the frontend's removeInactiveWidgetState).
                self.tree = {p: n for p, n in self.tree.items() if n.run_id == self.script_run_id}
                live = set(self._widget_nodes())
                self.widget_states = {k: v for k, v in self.widget_states.items() if k in live}
            elif status == FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                # A fragment's run over: only that fragment's stale nodes go (the rest of the page stays as it was).
                ran = set(self.fragment_ids_this_run)
                self.tree = {
                    p: n
                    for p, n in self.tree.items()
                    if n.run_id == self.script_run_id or n.msg.delta.fragment_id not in ran
                }
            if status != FINISHED_EARLY_FOR_RERUN and self._received_new_session and self.emulate_cache:
                self._cache.increment_run_count(self.max_cached_message_age)

    # ------------------------------------------------------------------ widgets
    def _widget_nodes(self) -> dict[str, tuple[str, Any, Node]]:
        """element id -> (element type, element sub-proto, node) for widgets in the tree."""
        out: dict[str, tuple[str, Any, Node]] = {}
        for node in self.tree.values():
            el = node.element
            if el is None:
                continue
            t = element_type(el)
            sub = getattr(el, t)
            wid = getattr(sub, "id", "")  # widgets (and a few selectable elements) carry an id
            if wid:
                out[wid] = (t, sub, node)
        return out

    def widgets(self) -> dict[str, tuple[str, str]]:
        """user key (or id for keyless widgets) -> (element type, element id)."""
        return {(user_key_of(w) or w): (t, w) for w, (t, _, _) in self._widget_nodes().items()}

    def widget_id(self, key: str) -> str:
        """The element id of the widget with user key ``key`` (or an id passed through)."""
        nodes = self._widget_nodes()
        if key in nodes:
            return key
        hits = [w for w in nodes if user_key_of(w) == key]
        if not hits:
            raise KeyError(f"no widget with key {key!r} on the current page; have {sorted(self.widgets())}")
        return hits[0]

    def widget(self, key: str) -> tuple[str, Any]:
        t, sub, _ = self._widget_nodes()[self.widget_id(key)]
        return t, sub

    def _on_widget_proto(self, el: Element) -> None:
        """Seed a newly shown widget's value from its proto (the frontend registers its
        initial value on mount), and take over a value the script pushed (set_value)."""
        t = element_type(el)
        sub = getattr(el, t) if t else None
        wid = getattr(sub, "id", "") if sub is not None else ""
        if not wid or t in _TRIGGER_TYPES:
            return
        pushed = bool(getattr(sub, "set_value", False))
        if wid in self.widget_states and not pushed:
            return
        ws = state_from_proto(t, sub, pushed)
        if ws is not None:
            ws.id = wid
            self.widget_states[wid] = ws
        elif pushed:  # the script set a value we cannot mirror (e.g. None): let the server keep it
            self.widget_states.pop(wid, None)

    def _current_states(self, only: Iterable[str] | None = None) -> list[WidgetState]:
        ids = self.widget_states.keys() if only is None else [i for i in only if i in self.widget_states]
        return [self.widget_states[i] for i in ids]

    # ------------------------------------------------------------------ sending
    async def send_rerun(
        self,
        widget_states: Iterable[WidgetState] | None = None,
        *,
        page_script_hash: str | None = None,
        page_name: str = "",
        query_string: str | None = None,
        fragment_id: str = "",
    ) -> RunResult:
        """Send one BackMsg.rerun_script and return the (not yet filled) RunResult."""
        if self.ws is None:
            raise StreamlitClientError("not connected")
        while not self._inbox.empty():  # forget what earlier runs left unread
            _, _, item = self._inbox.get_nowait()
            if isinstance(item, BaseException):
                raise item
        cs = ClientState(
            query_string=self.query_string if query_string is None else query_string,
            page_script_hash=self.page_script_hash if page_script_hash is None else page_script_hash,
            page_name=page_name,
            fragment_id=fragment_id,
            context_info=ContextInfo(url=self._page_url(), is_embedded=False, **self.context),
        )
        if widget_states is not None:
            cs.widget_states.CopyFrom(WidgetStates(widgets=list(widget_states)))
        if self.emulate_cache:
            cs.cached_message_hashes.extend(self._cache.hashes())
        back = BackMsg(rerun_script=cs)
        self._received_new_session = False
        run = RunResult(sent_at=time.perf_counter())
        await self.ws.send(back.SerializeToString())
        return run

    def _page_url(self) -> str:
        url = self.http_base
        for p in self.pages:
            if p.page_script_hash == self.page_script_hash and not p.is_default:
                url += p.url_pathname
        return url + (("?" + self.query_string) if self.query_string else "")

    async def rerun(
        self,
        widget_states: Iterable[WidgetState] | None = None,
        *,
        extra: Iterable[WidgetState] = (),
        wait: bool = True,
        timeout: float = 120.0,
        **kw: Any,
    ) -> RunResult:
        """Rerun the script with the given widget states (default: the values this client
        holds for every widget shown) plus ``extra`` states (e.g. a button trigger)."""
        states = list(self._current_states() if widget_states is None else widget_states)
        extra = list(extra)
        extra_ids = {w.id for w in extra}
        states = [w for w in states if w.id not in extra_ids] + extra
        run = await self.send_rerun(states, **kw)
        if wait:
            await self.wait_finished(run, timeout=timeout)
        return run

    async def wait_finished(self, run: RunResult | None = None, *, timeout: float = 120.0) -> RunResult:
        """Collect ForwardMsgs until a script_finished that ends the run chain (any status
        but FINISHED_EARLY_FOR_RERUN, which st.rerun()/st.switch_page() and interrupted runs
        send before the next run starts). Sets run.elapsed = send -> that script_finished."""
        if run is None:
            run = RunResult(sent_at=time.perf_counter())
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no script_finished within {timeout}s")
            t, size, item = await asyncio.wait_for(self._inbox.get(), left)
            if isinstance(item, BaseException):
                raise item
            msg = item
            run.messages.append(msg)
            run.bytes_received += size
            kind = msg.WhichOneof("type")
            if kind == "delta" and run.first_delta_s is None:
                run.first_delta_s = t - run.sent_at
            elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
                e = msg.session_event.script_compilation_exception
                run.compile_errors.append((e.type, e.message))
            elif kind == "page_not_found":
                run.page_not_found.append(msg.page_not_found.page_name)
            elif kind == "script_finished":
                run.statuses.append(msg.script_finished)
                if msg.script_finished != FINISHED_EARLY_FOR_RERUN:
                    run.status = msg.script_finished
                    run.elapsed = t - run.sent_at
                    return run

    # ------------------------------------------------------------------ user actions
    def fragment_of(self, wid: str) -> str:
        """The fragment a widget was drawn in ("" outside any): as the browser does, a widget there reruns only it."""
        node = self._widget_nodes().get(wid)
        return node[2].msg.delta.fragment_id if node is not None else ""

    async def click(self, key: str, **kw: Any) -> RunResult:
        """Click st.button / st.form_submit_button with user key ``key``: send a WidgetState
        with trigger_value=True for its id together with the other widgets' values (and, for a button in an
        st.fragment, that fragment's id, as the browser does: only the fragment reruns)."""
        wid = self.widget_id(key)
        _t, sub = self.widget(wid)
        if getattr(sub, "is_form_submitter", False):
            pending = self._form_pending.pop(sub.form_id, {})
            self.widget_states.update(pending)
        kw.setdefault("fragment_id", self.fragment_of(wid))
        return await self.rerun(extra=[WidgetState(id=wid, trigger_value=True)], **kw)

    async def set_value(self, key: str, value: Any, **kw: Any) -> RunResult | None:
        """Change a widget's value as a user would, which reruns the script (or, for a widget
        inside st.form, only stores the value until the form's submit button is clicked)."""
        wid = self.widget_id(key)
        t, sub = self.widget(wid)
        ws = state_for_value(t, sub, value)
        ws.id = wid
        if getattr(sub, "form_id", ""):
            self._form_pending.setdefault(sub.form_id, {})[wid] = ws
            return None
        self.widget_states[wid] = ws
        kw.setdefault("fragment_id", self.fragment_of(wid))
        return await self.rerun(**kw)

    async def set_widget_state(self, key: str, **fields: Any) -> RunResult:
        """Send an arbitrary WidgetState (fields as in WidgetStates.proto) for a widget."""
        wid = self.widget_id(key)
        ws = WidgetState(id=wid, **fields)
        self.widget_states[wid] = ws
        return await self.rerun()

    def find_page(self, page: str) -> Any:
        for p in self.pages:
            if page in (p.page_script_hash, p.page_name, p.url_pathname):
                return p
        raise KeyError(f"no page {page!r}; have {[p.page_name for p in self.pages]}")

    async def switch_page(self, page: str, *, query_string: str | None = None, **kw: Any) -> RunResult:
        """Go to another st.navigation page (by title, url_pathname or page_script_hash),
        as a click on the page's nav entry or st.page_link does: rerun with that
        page_script_hash, the widget states of widgets drawn by the main script only,
        and the query string reduced to params bound to those widgets."""
        target = self.find_page(page)
        keep_nodes = [n for n in self._widget_nodes().values() if n[2].active_script_hash == self.main_script_hash]
        keep_ids = [sub.id for _, sub, _ in keep_nodes]
        if query_string is None:
            bound = {getattr(sub, "query_param_key", "") for _, sub, _ in keep_nodes} - {""}
            pairs = urllib.parse.parse_qsl(self.query_string, keep_blank_values=True)
            query_string = urllib.parse.urlencode([(k, v) for k, v in pairs if k in bound])
        if target.page_script_hash != self.page_script_hash:
            self.query_string = query_string
        return await self.rerun(self._current_states(keep_ids), page_script_hash=target.page_script_hash, **kw)

    @property
    def cache_hits(self) -> int:
        """How many ForwardMsgs the server sent as a ref_hash (resolved from our cache)."""
        return self._cache.hits

    @property
    def current_page(self) -> Any | None:
        for p in self.pages:
            if p.page_script_hash == self.page_script_hash:
                return p
        return None

    async def download(self, key: str, timeout: float = 120.0) -> bytes:
        """The file behind st.download_button(key=...), as the browser gets it: a button whose data is a
        callable is deferred (the frontend asks for it with a BackendOperationRequest and GETs the URL
        the server answers with); one with its data inline carries the URL already."""
        _, sub = self.widget(key)
        url = sub.url
        if sub.HasField("deferred_file_id"):
            request_id = str(uuid.uuid4())
            waiter = asyncio.get_running_loop().create_future()
            self._operations[request_id] = waiter
            request = BackendOperationRequest(
                request_id=request_id,
                session_id=self.session_id or "",
                deferred_file=DeferredFileRequestPayload(file_id=sub.deferred_file_id),
            )
            await self.ws.send(BackMsg(backend_operation_request=request).SerializeToString())
            answer = await asyncio.wait_for(waiter, timeout)
            if answer.error_msg:
                raise StreamlitClientError(f"download {key!r}: {answer.error_msg}")
            url = answer.deferred_file.url
        status, _, body = await http_get(urllib.parse.urljoin(self.http_base, url.lstrip("/")), timeout)
        if status != 200:
            raise StreamlitClientError(f"download {key!r}: HTTP {status}")
        return body

    async def heartbeat(self) -> None:
        await self.ws.send(BackMsg(app_heartbeat=True).SerializeToString())

    async def stop_script(self) -> None:
        await self.ws.send(BackMsg(stop_script=True).SerializeToString())

    # ------------------------------------------------------------------ queries on the tree
    def _elements(self) -> list[Element]:
        return [n.element for _, n in sorted(self.tree.items()) if n.element is not None]


# --------------------------------------------------------------------------------------
# A minimal HTTP GET (health / host-config preflight), no extra dependency
# --------------------------------------------------------------------------------------


async def http_get(url: str, timeout: float = 30.0) -> tuple[int, list[tuple[str, str]], bytes]:
    u = urllib.parse.urlsplit(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    ssl = u.scheme == "https" or None
    reader, writer = await asyncio.wait_for(asyncio.open_connection(u.hostname, port, ssl=ssl), timeout)
    try:
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nAccept: */*\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip().lower(), value.strip()))
    return status, headers, body
