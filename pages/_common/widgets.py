"""The widgets every page shares: each widget's range from the one settings registry (limits()), the longest prompt and
upload, the sampling and rule widgets, an expander built only while open, the share link and the downloads."""

from __future__ import annotations

import streamlit as st
from streamlit import config as streamlit_config

import specviz
from pages._serving import config as _server
from specviz.class_policy import UPLOAD_BYTES
from specviz.classroom import links, settings
from specviz.classroom.settings import KNOBS, MODE_HELP, RULE_HELP, RULE_LABELS
from specviz.core.config import RULES


def limits() -> dict:
    """Every widget's range or choices, by its key, from the one settings registry (links check the same), under the
    class policy as the server reads it now (pages/_serving/config.py: read again when its settings change)."""
    return settings.allowed(_server.class_policy())


def prompt_chars() -> int:
    """The longest prompt a student may type (class mode), else the app's."""
    return settings.prompt_chars(_server.class_policy())


def upload_mb() -> int:
    """The largest upload, in MB: the class's cap in class mode, else the app's."""
    rules = _server.class_policy()
    return max(1, -(-(rules.upload_bytes if rules.on else UPLOAD_BYTES) // 1_000_000))


# Every upload, from any widget or a request made by hand, is refused by the server itself past the app's largest cap
# (HTTP 413 before it is kept in memory; Streamlit's own default is 200 MB); each widget says its own cap first.
streamlit_config.set_option("server.maxUploadSize", upload_mb())


def sampling_widgets(prefix: str, disabled: bool = False) -> dict:
    """Mode, temperature, top-k and top-p, as SpecConfig keyword arguments."""
    off = {"disabled": disabled}
    return {
        "mode": st.radio("Mode", specviz.MODES, key=f"{prefix}_mode", horizontal=True, help=MODE_HELP, **off),
        "temperature": st.slider(
            "Temperature (0 = argmax)",
            *limits()[f"{prefix}_temperature"],
            step=0.05,
            key=f"{prefix}_temperature",
            **off,
        ),
        "top_k": st.number_input("Top-k (0 = all tokens)", *limits()[f"{prefix}_top_k"], key=f"{prefix}_top_k", **off),
        "top_p": st.slider("Top-p", *limits()[f"{prefix}_top_p"], step=0.05, key=f"{prefix}_top_p", **off),
    }


def rule_widget(prefix: str, mode: str, disabled: bool = False, lossy: bool = True) -> str:
    """Lossless mode's verification rule (docs/algorithm.md, "Verification as serving engines run it"), the lossy
    ones labelled so (unless `lossy` is off); the other modes keep their own rule, so there it is off and "token" is
    what the settings get."""
    rule = st.selectbox(
        "Verification (lossless mode)",
        RULES if lossy else RULES[:3],
        key=f"{prefix}_rule",
        disabled=disabled or mode != "lossless",
        help=RULE_HELP,
        format_func=RULE_LABELS.__getitem__,
    )
    return rule if mode == "lossless" else "token"


def knob_widgets(prefix: str, rule: str, disabled: bool = False) -> dict:
    """A lossy rule's settings (docs/algorithm.md, "Lossy rules"), as SpecConfig keyword arguments: none for a
    lossless rule."""
    return {
        field: st.number_input(
            label, *limits()[f"{prefix}_{field}"], step=0.05, key=f"{prefix}_{field}", help=text, disabled=disabled
        )
        for label, field, text in KNOBS.get(rule, ())
    }


def lazy_expander(label: str, key: str, **kwargs):
    """An expander whose content the page builds only while it is open (`with lazy_expander(...) as box: if
    box.open: ...`); opening it reruns the page. A class server reruns the page for every Step of every student, and
    a closed panel's tiles, charts and text cost it as much as an open one's (docs/performance.md, "A class under
    load: N students over Streamlit's own protocol")."""
    return st.expander(label, key=key, on_change="rerun", **kwargs)


def share_link(prefix: str, extra: dict | None = None, show: bool = True) -> str:
    """Put the page's settings in the address bar and (with `show`) the link on the page, ready to copy. The
    values are the widgets' as this run leaves them (a page may set some during the run, e.g. a new
    exercise's draws), not the copy app.py kept at the run's start."""
    kept = settings.for_link(prefix, st.session_state.get("specviz_kept", {}))  # this page's, before reading them
    values = {key: st.session_state.get(key, value) for key, value in kept.items()} | (extra or {})
    st.query_params.from_dict(links.encode(values))
    url = links.share_url(st.context.url or "", values)
    if not show:
        return url
    with st.expander("Share: a link that reopens these settings", icon=":material/link:"):
        st.code(url, language=None, wrap_lines=True)
        st.caption("Copy it with the button at the right of the box.")
    return url


def downloads(prefix: str, stem: str, json_text, csv_text, labels: tuple[str, str]) -> None:
    """A JSON and a CSV download side by side, each made only when clicked (`json_text` and `csv_text`
    are callables returning the text): a rerun then costs nothing for a file nobody asked for.
    on_click="ignore": a rerun on click would replace the file while a busy server still sends it."""
    cols = st.columns(4)
    for col, (kind, text, mime), label in zip(
        cols, (("json", json_text, "application/json"), ("csv", csv_text, "text/csv")), labels, strict=False
    ):
        col.download_button(label, text, f"{stem}.{kind}", mime, key=f"{prefix}_{kind}", on_click="ignore")
