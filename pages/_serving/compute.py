"""The server's queues for model work, as the pages use them: the compute turn every model step takes (the class's
Steps before heavy units, the lecturer first), the slots of heavy jobs, whose every piece of work takes a heavy
turn of its own (specviz.pieces), a session's Steps a second, and what a session waiting in them sees
(specviz.server.turns). Who asked: the client's address (a student's tabs share it, and a heavy job counts against
it) and whether the browser session is still open; work ends with its session: a closed tab's next turn or slot is
refused, so what a link or a widget started stops with its tab."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pages._serving import config as _server
from specviz import pieces
from specviz.class_policy import RefusedError
from specviz.errors import SessionEndedError
from specviz.server.quotas import browser_token
from specviz.server.turns import Alive, Pacer, Slots, Turns
from specviz.viz.plain import plain

BROWSER_COOKIE = "_streamlit_xsrf"  # Tornado's XSRF cookie, which Streamlit sets on a browser's first page load


def address() -> str | None:
    """The client's address (a student's tabs share it), where Streamlit knows it."""
    with contextlib.suppress(AttributeError, RuntimeError):
        return st.context.ip_address
    return None


def student() -> Hashable:
    """What identifies a student: their browser, by the XSRF cookie every tab of it sends with its websocket (set once
    per browser, kept across tabs and reloads: a student's 28 tabs are one student), else the client's address (a
    client that sends no cookie: every such client behind one address is one student)."""
    with contextlib.suppress(AttributeError, RuntimeError, KeyError, TypeError):
        if isinstance(cookie := st.context.cookies.get(BROWSER_COOKIE), str) and cookie:
            return ("browser", browser_token(cookie))
    where = address()
    return ("address", where if isinstance(where, str) else None)


def alive() -> Alive | None:
    """Whether this browser session is still open, as Streamlit's runtime knows it: its session manager drops a
    session from its active ones as soon as the tab's websocket closes (it also asks the script to stop, which
    work that makes no Streamlit call never hears). None where no runtime runs (AppTest, a script)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None or not runtime.exists():
        return None
    server, session = runtime.get_instance(), ctx.session_id
    return lambda: server.is_active_session(session)


@st.cache_resource(show_spinner=False)
def _turns() -> Turns:
    """Class mode: several steps at once, so that their llama.cpp passes can share decodes
    (specviz.models.llamapool); otherwise one at a time."""
    rules = _server.class_policy()
    return Turns(width=rules.steps_at_once if rules.on else 1)


@st.cache_resource(show_spinner=False)
def _slots() -> Slots:
    rules = _server.class_policy()
    if rules.on:
        return Slots(rules.heavy_jobs, per_owner=rules.heavy_jobs_per_address, waiting_most=rules.heavy_jobs_waiting)
    return Slots(None)


def _owners() -> dict:
    """Whose share a heavy job counts against: the student's browser and their address (the lecturer: nobody's)."""
    rules = _server.class_policy()
    if st.session_state.get("specviz_lecturer") or not rules.on:
        return {}
    return {("student", student()): rules.heavy_jobs_per_student, ("address", address()): rules.heavy_jobs_per_address}


def _kind(kind: str) -> str:
    """The lecturer's session (opened with the class's lecturer key) goes first, whatever it computes."""
    return "lecturer" if st.session_state.get("specviz_lecturer") else kind


@contextlib.contextmanager
def _waiting_note(hold: Callable[[Callable], contextlib.AbstractContextManager]) -> Iterator[None]:
    """`hold(note)` waits for a place in a queue; `note(draw)` draws what the session waits for into one
    placeholder (from the session's own thread), cleared once the place is taken or given up."""
    shown = []

    def note(draw: Callable) -> None:
        if not shown:
            shown.append(st.empty())
        draw(shown[0])

    try:
        with hold(note):
            if shown:  # cleared before the work, never after it: a click arriving during the work stops the
                shown[0].empty()  # script at its next Streamlit call, and one after a step but before the
                shown.clear()  # Stepper marked its click done made that click step twice
            yield
    except SessionEndedError:  # nobody to show anything to: the script ends here, its places given back
        st.stop()
    finally:
        if shown:  # the wait was given up (the session stopped while it waited)
            shown[0].empty()


@contextlib.contextmanager
def _turn(kind: str) -> Iterator[None]:
    """A turn of `kind`, held: a piece of work inside it takes no second one (specviz.pieces.held)."""

    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int, seconds: float) -> None:
            about = f" (about {seconds:.1f} s)" if seconds >= 0.05 else ""
            text = f":material/hourglass_top: Waiting for the server: {ahead} ahead of you{about}…"
            note(lambda box: box.caption(text))

        return _turns().take(_kind(kind), waiting, alive=alive())

    with _waiting_note(hold), pieces.held(), _making_way():
        pieces.between()  # a page opening that holds its turn already: the lecturer's Step before its model work
        yield


@contextlib.contextmanager
def _making_way() -> Iterator[None]:
    """Between two parts of the work a turn is held for (a long prompt's passes; the model work of a page opening,
    whose compute turns come here too), the turn is lent to a lecturer's turn that is held or waiting, and taken back
    after (Turns.make_way): a burst of tab loads or a student's long prompt lets the lecturer's Step run alone
    between two of its parts."""
    turns, still = _turns(), alive()
    with pieces.making_way(lambda: turns.make_way(still)):
        yield


def compute_turn(kind: str = "step") -> contextlib.AbstractContextManager:
    """Hold this around model work: every session of the server queues for the CPU, the class's Steps before the
    heavy jobs' units (specviz.server.turns; README, "Many sessions on one server"); a session that waits
    says so, with the turns ahead of it."""
    return contextlib.nullcontext() if _server.config().compute == "free" else _turn(kind)


def heavy_turn() -> contextlib.AbstractContextManager:
    """A heavy job's unit (a sweep run, a batch of trials, a lesson): after the class's waiting Steps."""
    return compute_turn("heavy")


@contextlib.contextmanager
def heavy_job() -> Iterator[None]:
    """A whole heavy job (a sweep, a lossless check, a lesson, a race): in class mode at most the operator's
    number run at once on the server, the others waiting first come first served, and saying so. Inside it every
    piece of work the library marks (a step, a round of timed passes: specviz.pieces) takes a heavy turn of
    its own: the class's Steps go between two pieces, and a closed tab's job stops at its next one."""

    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int) -> None:
            note(
                lambda box: box.info(
                    f"Waiting for a free slot: {ahead} heavy job{'s' if ahead != 1 else ''} run or wait before this "
                    "one (class mode runs a few at a time, so every Step stays quick).",
                    icon=":material/hourglass_top:",
                )
            )

        return _slots().hold(waiting, alive=alive(), owners=_owners())

    _let_go_of_opening()  # a tab's opening turn is not held through a heavy job: its pieces take heavy turns
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(_waiting_note(hold))
        except RefusedError as exc:  # too many from this address, or the queue full: said, and the script stops
            st.warning(plain(exc), icon=":material/block:")  # before any work (one from inside is the job's to show)
            st.stop()
        with pieces.in_pieces(heavy_turn):
            yield


_opening = threading.local()  # the opening turn this thread holds, if any


@contextlib.contextmanager
def page_open() -> Iterator[None]:
    """Class mode: a tab's first run (its page opening, the costliest run of a session) takes a Step's turn in the
    server's queue, the lecturer's first, and holds it while the page draws, until the page's first heavy job: a burst
    of tab loads waits behind the lecturer's Steps instead of running beside them. Later runs take none."""
    first = "specviz_opened" not in st.session_state
    st.session_state["specviz_opened"] = True
    if not first or _server.config().compute == "free" or not _server.class_policy().on:
        yield
        return

    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int, seconds: float) -> None:
            text = f":material/hourglass_top: Opening the page: {ahead} turns ahead of it…"
            note(lambda box: box.caption(text))

        return _turns().take(_kind("step"), waiting, alive=alive())

    with contextlib.ExitStack() as stack:
        stack.enter_context(_waiting_note(hold))
        _opening.stack = stack
        try:
            yield
        finally:
            _opening.stack = None


def _let_go_of_opening() -> None:
    if (stack := getattr(_opening, "stack", None)) is not None:
        _opening.stack = None
        stack.close()


def pacer() -> Pacer:
    """A session's Steps a second: the class's bound for a student in class mode; none for the lecturer (exempt from
    every per-student bound) or outside class mode."""
    rules = _server.class_policy()
    paced = rules.on and not st.session_state.get("specviz_lecturer")
    return Pacer(rules.steps_per_second if paced else None)
