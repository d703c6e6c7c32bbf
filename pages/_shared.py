"""Streamlit-side helpers shared by the pages: cached model loading and error display."""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

import specviz

SHELL_MARK = "specviz_shell"
APP = Path(__file__).resolve().parents[1] / "app.py"


def ensure_shell() -> None:
    """Run the page inside app.py's navigation. Until some session has run app.py, Streamlit's
    legacy router (it sees a pages/ folder) may run a page file directly, e.g. for a first visit
    to /about: then run app.py, which routes back to this page properly, and stop."""
    if SHELL_MARK not in st.session_state:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()


@st.cache_resource(show_spinner=False, max_entries=3)
def _load(target: str, draft: str) -> specviz.ModelPair:
    return specviz.load_pair(target, draft)


def load_pair(target: str, draft: str) -> specviz.ModelPair | None:
    """The pair, loaded once per process; None (with the reason on the page) when it fails."""
    try:
        with st.spinner(f"Loading {target} and draft {draft} (the very first start converts the model: ~30 s)…"):
            return _load(target, draft)
    except specviz.SpecvizError as exc:
        st.error(f"**Could not load the models.** {exc}", icon=":material/error:")
        return None
