"""Each student's share of a class server, as the pages use it (specviz.server.quotas): who the student is (their
browser), their tabs counted from a session's first run and refused past the class's bound, a Decode run's memory
estimated from its real sizes and set against the budget before it starts (a student's idle run, or for the lecturer
any student's, given back first), and a closed tab's run given back by the trimmer's sweep. The lecturer's session
(?lecturer=KEY) is exempt from every bound. Outside class mode nothing is bounded."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Hashable

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

import specviz
from pages._serving import config as _server
from pages._serving.compute import student
from pages._serving.pairs import pair_cache
from specviz.class_policy import RefusedError
from specviz.core.engine import session_tokens
from specviz.core.prompt import encode_prompt, toggled_chat
from specviz.server.quotas import Quotas, RunMemory, kv_bytes_per_token, run_memory
from specviz.viz.plain import plain


def session_id() -> Hashable | None:
    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def lecturer() -> bool:
    return bool(st.session_state.get("specviz_lecturer"))


@st.cache_resource(show_spinner=False)
def _steppers() -> weakref.WeakValueDictionary:
    """Session → its Decode Stepper, so that a run can be given back from another session's thread."""
    return weakref.WeakValueDictionary()


def _give_back(session: Hashable, steppers: weakref.WeakValueDictionary) -> None:
    """Drop a session's run (its decoder, with its caches and trace): its next Step starts a new one."""
    if (stepper := steppers.get(session)) is not None:
        stepper.give_back()


@st.cache_resource(show_spinner=False)
def quotas() -> Quotas:
    """The server's count of each student's tabs and runs; their memory beside the pairs' under one budget."""
    rules, cache, steppers = _server.class_policy(), pair_cache(), _steppers()
    if not rules.on:
        return Quotas()
    share = Quotas(
        sessions=rules.tabs_per_student,
        runs=rules.runs_per_student,
        budget_bytes=int(rules.memory_gb * 1e9),
        held=cache.held_bytes,
        give_back=lambda session: _give_back(session, steppers),
    )
    cache.runs_bytes = share.runs_bytes  # a pair's memory is set against the runs' too
    return share


def open_tab() -> None:
    """On every run of a session: counted as one of its student's tabs, or refused (said, and the script stops)."""
    if (session := session_id()) is None:
        return
    try:
        quotas().open_session(session, student(), lecturer())
    except RefusedError as exc:
        st.warning(plain(exc), icon=":material/tab:")
        st.stop()


def reap(share: Quotas) -> int:
    """The tabs whose websocket closed, forgotten and their runs given back (the trimmer's sweep, every 10 s)."""
    if not runtime.exists():
        return 0
    server = runtime.get_instance()
    return share.reap(server.is_active_session)


def estimate(pair: specviz.ModelPair, prompt: str, chat: bool, config) -> RunMemory:
    """A Decode run's memory before it starts: its prompt's tokens as the run will read them, its new tokens and
    draft length, the pair's KV bytes per token and vocabulary; for a model that sizes its sessions when they open
    (llama.cpp), what it would allocate for this run's now (its own context and buffers, or the shared batched
    context where this run opens it)."""
    _, ids, _ = encode_prompt(pair, prompt, toggled_chat(pair, chat))  # as the Decoder will read it

    def growing(model) -> int:
        return 0 if model.capabilities.sized_sessions else kv_bytes_per_token(model)

    return run_memory(
        prompt_tokens=len(ids),
        max_new_tokens=config.max_new_tokens,
        tau=config.scored_per_step,  # a tree's nodes
        target_kv=growing(pair.target),
        draft_kv=growing(pair.draft),
        vocab=pair.target.vocab_size,
        top=config.top_n,  # the trace's top-n lists of q, p and the residual
        opens=pair.opening_bytes(session_tokens(len(ids), config), linear=not config.tree),
    )


def start_run(stepper, pair: specviz.ModelPair, prompt: str, chat: bool, config) -> Callable[[], None]:
    """Before a Decode run starts: within the student's open runs and the server's memory (idle pairs given back
    first, then a student's idle run; for the lecturer any student's); RefusedError naming the student's own use.
    Returns what to call if the run then fails to start: the session's count goes back to the run it keeps."""
    if (session := session_id()) is None:
        return lambda: None
    memory = estimate(pair, prompt, chat, config)
    with contextlib.suppress(RefusedError):  # pairs first; what they cannot free, runs may (and say so in own words)
        pair_cache().room_for_run(memory.total, lecturer())
    share = quotas()
    share.open_session(session, student(), lecturer())  # a session the shell did not count (a page run alone)
    replaced = share.start_run(session, memory)
    _steppers()[session] = stepper
    return lambda: share.restore_run(session, replaced)


def opened() -> None:
    """This session's new run has opened its sessions: what they allocated is in the models' count from now on."""
    if (session := session_id()) is not None:
        quotas().opened(session)


def touch() -> None:
    """A step of this session's run: it is in use."""
    if (session := session_id()) is not None:
        quotas().touch(session)
