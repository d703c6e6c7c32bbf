"""The server's pairs, shared by every session: loaded once from one store of model parts, the default pair pinned,
the others bounded in number and, in class mode, in memory (specviz.server.paircache, specviz.models.store); a
page's pair on the sidebar's runtime, and the tokenizer a replayed trace is checked against. The cache is keyed on the
pair's parsed specs (specviz.specs), which compare by value: a text and a spec of the same model share one pair, and
the spec loaded is the one first asked for, so a found GGUF file keeps its path and header (nothing looked for or read
again)."""

from __future__ import annotations

import functools
import gc

import streamlit as st

import specviz
from pages._serving import compute as _compute
from pages._serving import config as _server
from specviz import specs
from specviz.loading import AUTO, Spec, check_allowed, planned_parts, resolve_runtime
from specviz.models import embedded, hub
from specviz.models.store import ModelStore, release_memory
from specviz.server.paircache import PairCache
from specviz.specs import ModelSpec
from specviz.viz.plain import plain
from specviz.viz.render import sentence

DEFAULT_PAIR = (specs.EMBEDDED_SPEC, specs.EMBEDDED_SPEC)  # pinned: never evicted


def _load_and_freeze(store: ModelStore, target: ModelSpec, draft: ModelSpec, runtime: str) -> specviz.ModelPair:
    """A pair, loaded from the server's store (the parts it shares with pairs already held are not loaded again)
    under the class's rules; then every object alive (the models' hundreds of thousands among them) is moved out of
    the garbage collector's sight (gc.freeze): its full collections, which stop every session's thread, then
    walk only what the sessions made since, not the models again (0.25 s each with the pair, measured)."""
    pair = specviz.load_pair(
        target,
        draft,
        runtime=runtime,
        store=store,
        guard=_server.class_policy(),
        settings=_server.config().load_settings(),
    )
    gc.freeze()
    return pair


def _given_back() -> None:
    """After an evicted pair was closed: its objects are frozen (above), so the collector is shown them again,
    collects them, and what stays alive is frozen anew; the allocator's free pages go back to the system."""
    gc.unfreeze()
    release_memory()
    gc.freeze()


@st.cache_resource(show_spinner=False)
def pair_cache() -> PairCache:
    """The server's pairs (specviz.server.paircache): the default pair pinned, the others bounded in number
    and, in class mode, in memory; every pair's parts from one store."""
    rules = _server.class_policy()
    store = ModelStore()
    return PairCache(
        functools.partial(_load_and_freeze, store),
        pinned=lambda key: key[:2] == DEFAULT_PAIR,
        most=rules.max_pairs if rules.on else 3,
        idle_s=60.0 if rules.on else 0.0,  # a person alone: the oldest pair makes room at once
        store=store,
        budget_bytes=int(rules.memory_gb * 1e9) if rules.on else None,
        estimate=lambda key: planned_parts(*key, guard=rules, settings=_server.config().load_settings()),
        released=_given_back,
        per_owner=rules.pairs_per_student if rules.on else None,  # a student's tabs share their places
    )


def cached_pair(target: Spec, draft: Spec, runtime: str = "torch") -> specviz.ModelPair:
    """The pair, loaded once per process and shared by every session, keyed on its specs (a text is parsed once,
    here); raises SpecvizError. A pair the class does not allow is refused before the cache makes room for it or
    sizes it."""
    target, draft = specs.parse(target), specs.parse(draft)
    check_allowed(target, draft, _server.class_policy())
    lecturer = bool(st.session_state.get("specviz_lecturer"))  # first for places and memory
    return pair_cache().get(target, draft, runtime, owner=_compute.student(), lecturer=lecturer)


def load_pair(target: Spec, draft: Spec) -> specviz.ModelPair | None:
    """The pair on the runtime chosen in the sidebar, loaded once per process; None (with the reason
    on the page) when it fails."""
    try:
        runtime = resolve_runtime(target, st.session_state.get("runtime", AUTO), default=_server.config().runtime)
        with st.spinner(
            f"Loading {plain(target)} and draft {plain(draft)} on {plain(runtime)} (the very first start converts "
            "the model: ~30 s)…"
        ):
            return cached_pair(target, draft, runtime)
    except specviz.SpecvizError as exc:
        st.error(f"**Could not load the models.** {plain(sentence(exc))}", icon=":material/error:")
        return None


@st.cache_resource(show_spinner=False, max_entries=8)
def codec_for(target: str):
    """The tokenizer a replayed trace's texts are checked against, loaded once per process (or None). The name comes
    from an uploaded file: in class mode a folder or hub id outside the operator's list is never read for it."""
    try:
        if target != embedded.NAME:  # the embedded target's traces name it by its model name
            check_allowed(target, "self", _server.class_policy())
    except specviz.SpecvizError:
        return None
    return hub.codec_for(target)
