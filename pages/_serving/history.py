"""Suffix decoding's earlier answers (specviz.drafts.suffix.SuffixHistory), handed to a run's draft, never kept on
the shared model: this browser session's, or in class mode the class's, one for the server within a share of the
class's memory budget (the oldest answers evicted first)."""

from __future__ import annotations

import threading

import streamlit as st

import specviz
from pages._serving import config as _server
from specviz.drafts.suffix import NODE_BYTES, SuffixDrafter, SuffixHistory, SuffixSettings

SESSION_BYTES = 100_000_000  # one person's earlier answers: about 270,000 tree nodes
CLASS_SHARE = 0.05  # the class's: this share of the class's memory budget (6 GB: 300 MB)


@st.cache_resource(show_spinner=False)
def _class_histories() -> tuple[dict[SuffixSettings, SuffixHistory], threading.Lock]:
    return {}, threading.Lock()


def history(settings: SuffixSettings) -> SuffixHistory:
    """The earlier answers a suffix draft with these settings matches against, here."""
    rules = _server.class_policy()
    if rules.on:
        held, lock = _class_histories()
        with lock:
            budget = int(rules.memory_gb * 1e9 * CLASS_SHARE / NODE_BYTES)
            return held.setdefault(settings, SuffixHistory(settings, max_nodes=budget))
    mine = st.session_state.setdefault("suffix_histories", {})
    return mine.setdefault(settings, SuffixHistory(settings, max_nodes=SESSION_BYTES // NODE_BYTES))


def remembered(pair: specviz.ModelPair) -> specviz.ModelPair:
    """The pair whose suffix draft, if it has one, matches against the earlier answers here (the pair as it is
    otherwise); the shared draft is not changed, the pair returned is the run's own."""
    if not isinstance(pair.draft, SuffixDrafter):
        return pair
    return specviz.ModelPair(pair.target, pair.draft.remembering(history(pair.draft.settings)), pair.codec)
