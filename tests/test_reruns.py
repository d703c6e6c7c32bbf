"""pages/_decode/reruns.py: a fragment's rerun asked for while the session's script runs becomes a whole-app rerun (so
that Streamlit stops the running script and takes each click, instead of merging the clicks into one); on an idle page
it stays the fragment's."""

from __future__ import annotations

from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession

from pages._decode import reruns as _reruns


class Session:
    def __init__(self, runner: object | None) -> None:
        self._scriptrunner = runner


def test_a_fragments_rerun_is_the_whole_apps_while_a_script_runs_and_its_own_when_idle():
    asked: list[ClientState | None] = []
    request_rerun = _reruns.whole_when_busy(lambda session, state: asked.append(state))
    click = ClientState(fragment_id="f1", query_string="decode_seed=3")
    request_rerun(Session(runner=None), click)  # idle: the fragment alone
    assert asked[-1].fragment_id == "f1"
    request_rerun(Session(runner=object()), click)  # a run in progress: the whole app, with everything else kept
    assert asked[-1].fragment_id == "" and asked[-1].query_string == "decode_seed=3"
    assert click.fragment_id == "f1"  # the browser's message itself is not changed
    request_rerun(Session(runner=object()), ClientState(query_string="x"))  # a whole-app rerun: as it was
    assert asked[-1].fragment_id == "" and asked[-1].query_string == "x"
    request_rerun(Session(runner=object()), None)
    assert asked[-1] is None


def test_installed_once_on_streamlits_app_session(monkeypatch):
    monkeypatch.setattr(AppSession, "request_rerun", AppSession.request_rerun)  # restored after the test
    _reruns.install()
    patched = AppSession.request_rerun
    assert getattr(patched, _reruns.MARK)
    _reruns.install()  # every run of app.py calls it: no second wrapper
    assert AppSession.request_rerun is patched
