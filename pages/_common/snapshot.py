"""Snapshots for slides on a page: freeze what is measured (a file and a link), open one back, and say
on screen that a reopened measurement is a frozen one (specviz.analysis.snapshot); a saved trace opened to replay."""

from __future__ import annotations

import streamlit as st

from pages._common.widgets import upload_mb
from pages._serving import config as _server
from specviz.analysis.snapshot import Snapshot, SnapshotError, from_json
from specviz.classroom import links
from specviz.classroom.replay import Replay, replay_for
from specviz.viz.plain import plain

KEY = "specviz_snapshot"  # the snapshot a link or a file opened, shown by the page of its kind
PROBLEM = "specviz_snapshot_problem"  # why the link's snapshot could not be opened: said by the page it opened


def opened(kind: str) -> Snapshot | None:
    """The snapshot of this kind that a link or a file opened in this session, if any; a banner says so,
    with a button back to live measurement. A link's snapshot that could not be opened: why, on the page it opened."""
    if problem := st.session_state.get(PROBLEM):
        st.error(f"**This link's snapshot cannot be opened.** {plain(problem)}", icon=":material/link_off:")
    snap = st.session_state.get(KEY)
    if snap is None or snap.kind != kind:
        return None
    st.info(snap.describe(plain), icon=":material/photo_camera:")
    if st.button("Back to live measurement", key=f"{kind}_snapshot_close", icon=":material/close:"):
        del st.session_state[KEY]
        st.rerun()
    return snap


def panel(kind: str, snap: Snapshot | None) -> None:
    """Freeze what the page shows (a file and, when short enough, a link), or open a frozen one."""
    with st.expander(
        "Snapshot for slides: freeze these measurements, or open a frozen one", icon=":material/photo_camera:"
    ):
        if snap is not None:
            st.caption(snap.describe(plain).replace("The numbers below are that measurement, not a new one.", ""))
            st.download_button(
                "Download the snapshot (JSON)",
                snap.to_json(),
                f"specviz-{kind}-snapshot.json",
                "application/json",
                key=f"{kind}_snapshot_json",
                on_click="ignore",
            )
            param = snap.link_param()
            if param is None:
                st.caption("Too large for a link: reopen it from the file.")
            else:
                st.code(links.share_url(st.context.url or "", {"snapshot": param}), language=None, wrap_lines=True)
        upload = st.file_uploader(
            "Open a snapshot file", type="json", key=f"{kind}_snapshot_upload", max_upload_size=upload_mb()
        )
        if upload is not None:
            try:
                opened_snap = from_json(upload.getvalue(), _server.class_policy())
            except SnapshotError as exc:
                st.error(f"**This file cannot be opened.** {plain(exc)}", icon=":material/error:")
                return
            if opened_snap.kind != kind:
                st.error(
                    f"This is a snapshot of a {plain(opened_snap.kind)}: open it on that page.", icon=":material/error:"
                )
                return
            if st.session_state.get(KEY) != opened_snap:
                st.session_state[KEY] = opened_snap
                st.rerun()


def replay(data: bytes, name: str, kept: Replay | None, codec_for) -> tuple[Replay | None, str | None]:
    """A saved trace's replay (specviz.classroom.replay.replay_for), within the class's upload bounds."""
    return replay_for(data, name, kept, codec_for, _server.class_policy())
