"""The session every page runs in: on a session's first run, the settings a link carries (a sandbox
worksheet, a frozen snapshot, the steps to take); on every run, every page's settings kept across pages;
and the sidebar's runtime choice. app.py calls these; the pages never import app.py, and each page's first call,
ensure_shell, runs it when Streamlit ran the page alone."""

from __future__ import annotations

import contextlib
import gc
import runpy
from pathlib import Path

import streamlit as st
from streamlit import runtime

import specviz
from pages._serving import config as _server
from pages._serving import share as _share
from specviz.analysis import snapshot
from specviz.classroom import links, sandbox, settings
from specviz.classroom.settings import RUNTIME_HELP, gguf_target_line, runtime_line
from specviz.drafts.typed import typed_from_link
from specviz.loading import RUNTIMES
from specviz.server import trimmer
from specviz.server.stepper import held_stepper
from specviz.specs import GGUFFile
from specviz.viz.plain import plain
from specviz.viz.render import sentence

SHELL_MARK = "specviz_shell"
TYPED_LINK = "decode_typed_link"  # a link's typed drafts, taken by the steps Decode replays (pages/_decode/typed.py)
APP = Path(__file__).resolve().parents[2] / "app.py"


def ensure_shell() -> None:
    """Run the page inside app.py's navigation. Until some session has run app.py, Streamlit's
    legacy router (it sees a pages/ folder) may run a page file directly, e.g. for a first visit
    to /about: then run app.py, which routes back to this page properly, and stop."""
    if SHELL_MARK not in st.session_state:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()


def drop_expired_sessions(manager=None) -> int:
    """Streamlit keeps a closed tab's session `server.disconnectedSessionTTL` seconds for a reconnect, in a TTLCache
    that reaps an expired one only when another session disconnects: on a quiet server, never. Reap them now (under
    the manager's own lock), so that what they held (runs, llama.cpp contexts, charts) is freed; returns how many."""
    if manager is None:
        manager = getattr(runtime.get_instance(), "_session_mgr", None) if runtime.exists() else None
    cache = getattr(getattr(manager, "_session_storage", None), "_cache", None)
    if not hasattr(cache, "expire"):
        return 0
    with getattr(manager, "_storage_lock", None) or contextlib.nullcontext():
        reaped = len(cache.expire())
    if reaped:
        gc.collect()  # a session's objects refer to each other: freed by a collection, not by their counts
    return reaped


def prepare_session(page: str = "") -> None:
    """Settings from the link on a session's first run; every page's settings kept on every run. `page`: the page
    this run draws ("decode", "race", …): only its own settings (and those of no page, the runtime) are taken from
    the session; every other page's are the kept ones."""
    share = _share.quotas()  # each student's tabs and runs (class mode)
    trimmer.ensure_running(before=lambda: (drop_expired_sessions(), _share.reap(share)))  # ended sessions' memory back
    defaults = settings.defaults(class_policy=_server.class_policy())  # every page's widgets, from the one registry
    st.session_state[SHELL_MARK] = True  # pages check that they run inside this navigation
    st.session_state.pop(
        "specviz_snapshot_problem", None
    )  # said on the first run's page only (pages/_common/snapshot.py)
    if "specviz_lecturer" not in st.session_state:  # a class server: the lecturer's link (lecturer=KEY) goes first
        rules = _server.class_policy()
        key = st.query_params.get("lecturer", "")
        st.session_state["specviz_lecturer"] = bool(rules.on and rules.lecturer_key and key == rules.lecturer_key)
    _share.open_tab()  # one of its student's tabs, or refused (class mode)
    if "specviz_kept" not in st.session_state:  # a session's first run: settings from the link, if any
        from_link, problems = settings.from_link(st.query_params.to_dict(), _server.class_policy())
        st.session_state["decode_autostep"] = from_link.pop("decode_steps", 0)
        try:  # the typed drafts of the steps it replays (Decode's "Your draft"); what cannot be read is said
            st.session_state[TYPED_LINK] = typed_from_link(from_link.pop("decode_drafts", ""))
        except specviz.ConfigError as exc:
            problems.append(str(exc))
        st.session_state["lossless_table_link"] = links.table(from_link.pop("lossless_table", ""), problems)
        worksheet = {k: from_link.pop(k) for k in list(from_link) if k.startswith("sandbox_")}
        st.session_state["specviz_kept"] = {**defaults, **from_link}
        if worksheet:  # the link's sandbox worksheet: its table, τ and draws
            exercise, case, shown = sandbox.from_link(worksheet, problems)
            st.session_state["specviz_kept"].update({**worksheet, **shown})
            st.session_state["specviz_kept"].pop("sandbox_table", None)
            st.session_state.update(sandbox_loaded=exercise, sandbox_case=case)
        if packed := st.query_params.get("snapshot"):  # a frozen measurement: the page of its kind shows it
            try:
                st.session_state["specviz_snapshot"] = snapshot.from_link_param(packed, _server.class_policy())
            except snapshot.SnapshotError as exc:  # the page of a snapshot's kind says why, in full
                st.session_state["specviz_snapshot_problem"] = str(exc)
        for problem in problems:  # they quote the link's values: text, never markdown
            st.toast(plain(problem), icon=":material/link_off:")

    # Streamlit forgets a widget's value once a run does not draw it (another page), and a value restored
    # in such a run never reaches the browser. So keep a copy under a plain key, and assign every value
    # again on every run: the run that draws the widget then sends it. A page's settings change only on its own runs:
    # after a Step (a fragment's run) the next run on another page read Decode's sidebar as its first choices
    # ("Embedded pair") and kept that (issue 67: Decode's own sidebar fell back, "Settings changed").
    kept = st.session_state.setdefault("specviz_kept", dict(defaults))
    for key in defaults:
        if key in st.session_state and _owned_by(key, page):
            kept[key] = st.session_state[key]
        st.session_state[key] = kept[key]


PAGE_KEYS = ("decode", "race", "sweep", "pay", "sandbox", "lossless", "lessons")  # each page's settings: "decode_tau"


def _owned_by(key: str, page: str) -> bool:
    """Whether a run of `page` may change setting `key`: its own, or one of no page's (the sidebar's runtime); every
    setting where the page is not known."""
    owner = next((name for name in PAGE_KEYS if key.startswith(f"{name}_")), "")
    return not page or not owner or owner == page


def _own_gguf_target() -> str:
    """The Decode run's target as the pages name it, where it is a GGUF file of the user's (not the embedded target's
    own copies); "" otherwise."""
    stepper = held_stepper(st.session_state)
    if stepper is None or stepper.decoder is None or not stepper.settings:
        return ""
    target = stepper.settings.target
    return stepper.decoder.pair.target.name if isinstance(target, GGUFFile) else ""


def mode_line() -> None:
    """The sidebar's word on the mode: personal, or class mode and its bounds (specviz.class_policy)."""
    rules = _server.class_policy()
    lecturer = " This is the lecturer's session: it goes first." if st.session_state.get("specviz_lecturer") else ""
    st.caption(f":material/{'school' if rules.on else 'person'}: {rules.words()}{lecturer}")


def runtime_picker() -> None:
    """The sidebar's runtime choice, and in words what runs the target: the Decode run's GGUF file of the user's where
    there is one (llama.cpp, whatever the choice), else the embedded target, and how to get faster."""
    choice = st.selectbox("Runtime", RUNTIMES, key="runtime", help=RUNTIME_HELP)
    try:
        server = _server.config()
        if name := _own_gguf_target():
            st.caption(gguf_target_line(plain(name), threads=server.llama.threads))
        else:
            st.caption(runtime_line(choice, default=server.runtime, threads=server.llama.threads))
    except specviz.SpecvizError as exc:
        st.caption(f":red[{plain(sentence(exc))}]")
