"""Clicks inside a fragment that arrive while the session's script still runs: each one a rerun of its own.

The Decode page below the sidebar is one `st.fragment` (pages/decode.py): a Step reruns only it, which a class
server needs (docs/performance.md, "A class under load: N students over Streamlit's own protocol"). But Streamlit
(1.67) does not stop a running script for a fragment's rerun: it holds the request, and merges every later one into
it, so that two clicks on Step during a slow step's run arrive as one trigger and one of them is lost, where a
whole-app rerun stops the running script and takes each click (`runner.fastReruns`; the Stepper queues each click
from its on_click callback, specviz.server.stepper). So a fragment's rerun asked for while the session's script
runner is alive is made a whole-app rerun, as every click was before the fragment: each click taken, in order
(tests/test_browser.py: four quick clicks during a cold first Step are four Steps). A click on an idle page, the
usual case, reruns the fragment alone.
"""

from __future__ import annotations

from collections.abc import Callable

from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession

MARK = "_specviz_whole_when_busy"


def whole_when_busy(request_rerun: Callable) -> Callable:
    """`AppSession.request_rerun`, but a fragment's rerun becomes a whole-app rerun while a script runner is alive."""

    def wrapped(self, client_state: ClientState | None = None) -> None:
        if client_state is not None and client_state.fragment_id and self._scriptrunner is not None:
            whole = ClientState()
            whole.CopyFrom(client_state)
            whole.fragment_id = ""
            client_state = whole
        return request_rerun(self, client_state)

    setattr(wrapped, MARK, True)
    return wrapped


def install() -> None:
    """Once per process (app.py calls it on every run)."""
    if not getattr(AppSession.request_rerun, MARK, False):
        AppSession.request_rerun = whole_when_busy(AppSession.request_rerun)
