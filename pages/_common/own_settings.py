"""The settings to run the user's own GGUF pair in their engine, at the τ they measured it at: llama-server's and LM
Studio's lines with their own files' paths (specviz.analysis.engine_flags.own_gguf_pair), where they measured it (the
Decode run, the Race)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages._common.picker import decode_choice
from specviz.analysis import engine_flags
from specviz.specs import GGUFFile, ModelSpec
from specviz.viz.plain import plain


def own_file(spec: ModelSpec) -> tuple[str, str] | None:
    """A GGUF file of the user's: (its path, its name as LM Studio and the sidebar list it); None for anything else
    (the embedded target's copies, a hub file not yet on this computer, a model that is no file)."""
    if not isinstance(spec, GGUFFile):
        return None
    if spec.found is not None:
        return str(spec.found.path), spec.found.name
    if spec.ref.startswith(("ollama:", "hf:")):
        return None
    return spec.ref, Path(spec.ref).name


def files() -> tuple[tuple[str, str], tuple[str, str]] | None:
    """The Decode run's pair where it is two GGUF files of the user's: (target, draft), each (path, name); else None."""
    if (chosen := decode_choice()) is None:
        return None
    target, draft = own_file(chosen[0]), own_file(chosen[1])
    return None if target is None or draft is None else (target, draft)


def fill_engine_boxes(target_key: str, draft_key: str) -> None:
    """Boxes that ask for the user's target and draft (path or name), where still empty: the Decode run's own files."""
    if (own := files()) is None:
        return
    for key, (path, _name) in zip((target_key, draft_key), own, strict=True):
        if not str(st.session_state.get(key) or "").strip():
            st.session_state[key] = path


def flags(tau: int) -> tuple[engine_flags.Flag, ...]:
    """The Decode run's pair of the user's own GGUF files at `tau`, as llama-server and LM Studio take it; () where the
    pair is not two such files."""
    if (own := files()) is None:
        return ()
    (target, _target_name), (draft, draft_name) = own
    return engine_flags.own_gguf_pair(target, draft, draft_name, tau)


def panel(tau: int, where: str) -> None:
    """An expander with those settings, `where` saying where τ was measured ("the Decode run's", "this race's")."""
    made = flags(tau)
    if not made:
        return
    with st.expander(f"Run this pair in your own engine: llama-server and LM Studio at τ = {tau}"):
        st.caption(
            plain(
                f"Your own files and {where} τ = {tau}; p-min 0: every step drafts τ tokens, as measured here "
                "(llama.cpp's own default stops a draft earlier where the draft is unsure)."
            )
        )
        for flag, column in zip(made, st.columns(len(made)), strict=True):
            with column:
                st.code(flag.text, language="json" if flag.engine.startswith("LM Studio") else "bash", wrap_lines=True)
                st.caption(plain(f"{flag.engine}: {flag.reason}"))
