"""Streamlit-side helpers shared by the pages: cached model loading and error display."""

from __future__ import annotations

import streamlit as st

import specviz


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
