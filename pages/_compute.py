"""The server's queues for model work, as the pages use them: the compute turn every model step takes (the class's
Steps before heavy units, the lecturer first), the slots of heavy jobs, a session's Steps a second, and what a
session waiting in them sees (specviz.server.turns). Who asked: the client's address (a student's tabs share it,
and a heavy job counts against it) and whether the browser session is still open; work ends with its session: a
closed tab's next turn or slot is refused, so what a link or a widget started stops with its tab."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pages import _server
from specviz.errors import SessionEndedError
from specviz.server.class_policy import RefusedError
from specviz.server.turns import Alive, Pacer, Slots, Turns, each_in_turn
from specviz.viz.plain import plain

T = TypeVar("T")


def address() -> str | None:
    """The client's address (a student's tabs share it), where Streamlit knows it."""
    try:
        return st.context.ip_address
    except (AttributeError, RuntimeError):
        return None


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
    if not rules.on:
        return Slots(None)
    return Slots(rules.heavy_jobs, per_owner=rules.heavy_jobs_per_address, waiting_most=rules.heavy_jobs_waiting)


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


def _turn(kind: str) -> contextlib.AbstractContextManager:
    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int, seconds: float) -> None:
            about = f" (about {seconds:.1f} s)" if seconds >= 0.05 else ""
            note(
                lambda box: box.caption(
                    f":material/hourglass_top: Waiting for the server: {ahead} ahead of you{about}…"
                )
            )

        return _turns().take(_kind(kind), waiting, alive=alive())

    return _waiting_note(hold)


def compute_turn(kind: str = "step") -> contextlib.AbstractContextManager:
    """Hold this around model work: every session of the server queues for the CPU, the class's Steps before the
    heavy jobs' units (specviz.server.turns; README, "Many sessions on one server"); a session that waits
    says so, with the turns ahead of it."""
    return contextlib.nullcontext() if _server.config().compute == "free" else _turn(kind)


def heavy_turn() -> contextlib.AbstractContextManager:
    """A heavy job's unit (a sweep run, a batch of trials, a lesson): after the class's waiting Steps."""
    return compute_turn("heavy")


def heavy_job() -> contextlib.AbstractContextManager:
    """A whole heavy job (a sweep, a lossless check, a lesson, a race): in class mode at most the operator's
    number run at once on the server, the others waiting first come first served, and saying so."""

    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int) -> None:
            note(
                lambda box: box.info(
                    f"Waiting for a free slot: {ahead} heavy job{'s' if ahead != 1 else ''} run or wait before this "
                    "one (class mode runs a few at a time, so every Step stays quick).",
                    icon=":material/hourglass_top:",
                )
            )

        return _slots().hold(waiting, owner=address(), alive=alive())

    return _refused_stops(_waiting_note(hold))


@contextlib.contextmanager
def _refused_stops(held: contextlib.AbstractContextManager) -> Iterator[None]:
    """A heavy job the class refuses (too many from this address, or the queue full): said on the page, and the
    script stops there, before any work; a refusal from inside the job is the job's own to show."""
    try:
        held.__enter__()
    except RefusedError as exc:
        st.warning(plain(exc), icon=":material/block:")
        st.stop()
    try:
        yield
    except BaseException as exc:
        if not held.__exit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        held.__exit__(None, None, None)


def pacer() -> Pacer:
    """A session's Steps a second: the class's bound in class mode, none otherwise."""
    rules = _server.class_policy()
    return Pacer(rules.steps_per_second if rules.on else None)


def in_turns(items: Iterator[T]) -> Iterator[T]:
    """Each item of a computing generator made in a heavy turn of its own (specviz.server.turns.each_in_turn)."""
    return each_in_turn(items, heavy_turn)
