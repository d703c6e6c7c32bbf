"""Streamlit-side helpers shared by the pages: cached model loading and error display."""

from __future__ import annotations

import contextlib
import gc
import os
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import streamlit as st

import specviz
from specviz import policy
from specviz.classroom import links, settings
from specviz.classroom.paircache import PairCache
from specviz.classroom.settings import CUSTOM, MODE_HELP, RULE_HELP
from specviz.classroom.turns import Pacer, Slots, Turns, each_in_turn
from specviz.core.config import VERIFICATIONS
from specviz.loading import AUTO, EMBEDDED, resolve_runtime
from specviz.models import hub
from specviz.viz.render import sentence

SHELL_MARK = "specviz_shell"
APP = Path(__file__).resolve().parents[1] / "app.py"


def ensure_shell() -> None:
    """Run the page inside app.py's navigation. Until some session has run app.py, Streamlit's
    legacy router (it sees a pages/ folder) may run a page file directly, e.g. for a first visit
    to /about: then run app.py, which routes back to this page properly, and stop."""
    if SHELL_MARK not in st.session_state:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()


T = TypeVar("T")
COMPUTE_ENV = "SPECVIZ_COMPUTE"  # "turns" (default): one step at a time, in arrival order; "free": no queue


@st.cache_resource(show_spinner=False)
def _turns() -> Turns:
    return Turns()


@st.cache_resource(show_spinner=False)
def _slots() -> Slots:
    rules = policy.current()
    return Slots(rules.heavy_jobs if rules.on else None)


def _kind(kind: str) -> str:
    """The lecturer's session (opened with the class's lecturer key) goes first, whatever it computes."""
    return "lecturer" if st.session_state.get("specviz_lecturer") else kind


@contextlib.contextmanager
def _waiting_note(hold: Callable[[Callable], contextlib.AbstractContextManager]) -> Iterator[None]:
    """`hold(note)` waits for a place in a queue; `note(draw)` draws what the session waits for into one
    placeholder (from the session's own thread), cleared once the place is taken or given up."""
    shown = []

    def note(draw: Callable) -> None:
        if not shown:
            shown.append(st.empty())
        draw(shown[0])

    try:
        with hold(note):
            if shown:  # cleared before the work, never after it: a click arriving during the work stops the
                shown[0].empty()  # script at its next Streamlit call, and one after a step but before the
                shown.clear()  # Stepper marked its click done made that click step twice
            yield
    finally:
        if shown:  # the wait was given up (the session stopped while it waited)
            shown[0].empty()


def _turn(kind: str) -> contextlib.AbstractContextManager:
    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int, seconds: float) -> None:
            about = f" (about {seconds:.1f} s)" if seconds >= 0.05 else ""
            note(
                lambda box: box.caption(
                    f":material/hourglass_top: Waiting for the server: {ahead} ahead of you{about}…"
                )
            )

        return _turns().take(_kind(kind), waiting)

    return _waiting_note(hold)


def compute_turn(kind: str = "step") -> contextlib.AbstractContextManager:
    """Hold this around model work: every session of the server queues for the CPU, the class's Steps before the
    heavy jobs' units (specviz.classroom.turns; README, "Many sessions on one server"); a session that waits
    says so, with the turns ahead of it."""
    return contextlib.nullcontext() if os.environ.get(COMPUTE_ENV) == "free" else _turn(kind)


def heavy_turn() -> contextlib.AbstractContextManager:
    """A heavy job's unit (a sweep run, a batch of trials, a lesson): after the class's waiting Steps."""
    return compute_turn("heavy")


def heavy_job() -> contextlib.AbstractContextManager:
    """A whole heavy job (a sweep, a lossless check, a lesson, a race): in class mode at most the operator's
    number run at once on the server, the others waiting first come first served, and saying so."""

    def hold(note: Callable) -> contextlib.AbstractContextManager:
        def waiting(ahead: int) -> None:
            note(
                lambda box: box.info(
                    f"Waiting for a free slot: {ahead} heavy job{'s' if ahead != 1 else ''} run or wait before this "
                    "one (class mode runs a few at a time, so every Step stays quick).",
                    icon=":material/hourglass_top:",
                )
            )

        return _slots().hold(waiting)

    return _waiting_note(hold)


def pacer() -> Pacer:
    """A session's Steps a second: the class's bound in class mode, none otherwise."""
    rules = policy.current()
    return Pacer(rules.steps_per_second if rules.on else None)


def in_turns(items: Iterator[T]) -> Iterator[T]:
    """Each item of a computing generator made in a heavy turn of its own (specviz.classroom.turns.each_in_turn)."""
    return each_in_turn(items, heavy_turn)


def _load_and_freeze(target: str, draft: str, runtime: str) -> specviz.ModelPair:
    """A pair, loaded; then every object alive (the models' hundreds of thousands among them) is moved out of
    the garbage collector's sight (gc.freeze): its full collections, which stop every session's thread, then
    walk only what the sessions made since, not the models again (0.25 s each with the pair, measured)."""
    pair = specviz.load_pair(target, draft, runtime=runtime)
    gc.freeze()
    return pair


@st.cache_resource(show_spinner=False)
def pair_cache() -> PairCache:
    """The server's pairs (specviz.classroom.paircache): the default pair pinned, the others bounded."""
    rules = policy.current()
    return PairCache(
        _load_and_freeze,
        pinned=lambda key: key[:2] == (EMBEDDED, EMBEDDED),
        most=rules.max_pairs if rules.on else 3,
        idle_s=60.0 if rules.on else 0.0,  # a person alone: the oldest pair makes room at once
    )


def cached_pair(target: str, draft: str, runtime: str = "torch") -> specviz.ModelPair:
    """The pair, loaded once per process and shared by every session; raises SpecvizError."""
    return pair_cache().get(target, draft, runtime)


def load_pair(target: str, draft: str) -> specviz.ModelPair | None:
    """The pair on the runtime chosen in the sidebar, loaded once per process; None (with the reason
    on the page) when it fails."""
    try:
        runtime = resolve_runtime(target, st.session_state.get("runtime", AUTO))
        with st.spinner(
            f"Loading {target} and draft {draft} on {runtime} (the very first start converts the model: ~30 s)…"
        ):
            return cached_pair(target, draft, runtime)
    except specviz.SpecvizError as exc:
        st.error(f"**Could not load the models.** {sentence(exc)}", icon=":material/error:")
        return None


@st.cache_resource(show_spinner=False, max_entries=8)
def codec_for(target: str):
    """The tokenizer a replayed trace's texts are checked against, loaded once per process (or None)."""
    return hub.codec_for(target)


# Every widget's range or choices, by its key, from the one settings registry (links check the same).
LIMITS = settings.allowed()
PROMPT_CHARS = settings.prompt_chars()  # class mode: the longest prompt a student may type
UPLOAD_MB = max(1, -(-(policy.current().upload_bytes if policy.current().on else policy.UPLOAD_BYTES) // 1_000_000))
PRESETS = {p.label: p for p in specviz.PRESETS}


def model_picker(prefix: str, disabled: bool = False) -> tuple[str, str]:
    """Preset pairs, or free text for a hub id, a local folder or a served target: (target, draft)."""
    label = st.selectbox("Pair", [*PRESETS, CUSTOM], key=f"{prefix}_preset", disabled=disabled)
    if label == CUSTOM:
        target = st.text_input(
            "Target (p)",
            key=f"{prefix}_target",
            disabled=disabled,
            help="embedded, a hub id, a local folder, or a "
            "serving engine: vllm:http://host:8000/v1#MODEL, sglang:http://host:30000, llamacpp:http://host:8080/v1",
        )
        hint = "also: self, prompt-lookup, early-exit:K, or a folder made by scripts/train_draft.py"
        draft = st.text_input("Draft (q)", key=f"{prefix}_draft", help=hint, disabled=disabled)
        return target, draft
    st.caption(PRESETS[label].description)
    return PRESETS[label].target, PRESETS[label].draft


def sampling_widgets(prefix: str, disabled: bool = False) -> dict:
    """Mode, temperature, top-k and top-p, as SpecConfig keyword arguments."""
    off = {"disabled": disabled}
    return {
        "mode": st.radio("Mode", specviz.MODES, key=f"{prefix}_mode", horizontal=True, help=MODE_HELP, **off),
        "temperature": st.slider(
            "Temperature (0 = argmax)", *LIMITS[f"{prefix}_temperature"], step=0.05, key=f"{prefix}_temperature", **off
        ),
        "top_k": st.number_input("Top-k (0 = all tokens)", *LIMITS[f"{prefix}_top_k"], key=f"{prefix}_top_k", **off),
        "top_p": st.slider("Top-p", *LIMITS[f"{prefix}_top_p"], step=0.05, key=f"{prefix}_top_p", **off),
    }


def rule_widget(prefix: str, mode: str, disabled: bool = False) -> str:
    """Lossless mode's verification rule (docs/algorithm.md, "Verification as serving engines run it"); the
    other modes keep their own rule, so there it is off and "token" is what the settings get."""
    rule = st.selectbox(
        "Verification (lossless)",
        VERIFICATIONS,
        key=f"{prefix}_rule",
        disabled=disabled or mode != "lossless",
        help=RULE_HELP,
    )
    return rule if mode == "lossless" else "token"


def share_link(prefix: str, extra: dict | None = None, show: bool = True) -> str:
    """Put the page's settings in the address bar and (with `show`) the link on the page, ready to copy. The
    values are the widgets' as this run leaves them (a page may set some during the run, e.g. a new
    exercise's draws), not the copy app.py kept at the run's start."""
    kept = st.session_state.get("specviz_kept", {})
    current = {key: st.session_state.get(key, value) for key, value in kept.items()}
    values = settings.for_link(prefix, current) | (extra or {})
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
