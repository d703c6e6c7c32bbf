"""Who asked for some work: the client's address (a student's tabs share it) and whether the browser session is
still open. The queues of pages/_compute.py count a heavy job against its address, and refuse a turn or a slot to a
session that has ended, so what a link or a widget started stops with its tab."""

from __future__ import annotations

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from specviz.server.turns import Alive


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
