"""The sidebar's pair picker: the presets, the GGUF files on this computer (pages/_own_models.py), or free text
for a hub id, a folder, a GGUF spec or a served target."""

from __future__ import annotations

import streamlit as st

import specviz
from pages import _own_models as own_models
from specviz.analysis.race import RacePreset, your_race
from specviz.classroom.settings import CUSTOM, ON_THIS_COMPUTER
from specviz.drafts import kinds

PRESETS = {p.label: p for p in specviz.PRESETS}


def model_picker(prefix: str, disabled: bool = False) -> tuple[str, str]:
    """Preset pairs, or free text for a hub id, a local folder or a served target: (target, draft)."""
    label = st.selectbox("Pair", [*PRESETS, ON_THIS_COMPUTER, CUSTOM], key=f"{prefix}_preset", disabled=disabled)
    if label == ON_THIS_COMPUTER:
        return own_models.picker(prefix, disabled)
    if label == CUSTOM:
        target = st.text_input(
            "Target (p)",
            key=f"{prefix}_target",
            disabled=disabled,
            help="embedded, a hub id, a local folder, a GGUF file (path.gguf, ollama:NAME:TAG, hf:ORG/REPO:Q4_K_M), "
            "or a serving engine: vllm:http://host:8000/v1#MODEL, sglang:http://host:30000, llamacpp:http://host:8080/v1",
        )
        hint = f"also: {kinds.hints()}"  # every registered draft kind (specviz.drafts.kinds)
        draft = st.text_input("Draft (q)", key=f"{prefix}_draft", help=hint, disabled=disabled)
        return target, draft
    st.caption(PRESETS[label].description)
    return PRESETS[label].target, PRESETS[label].draft


def decode_choice() -> tuple[str, str, str, int, bool | None] | None:
    """The Decode page's run as it was started: (target spec, draft spec, prompt, τ, whether its prompt was wrapped in
    the chat template); None before its first Step (the other pages take the user's pair from there). The chat is
    the run's own, not the toggle's: the other pages then encode the very prompt Decode did."""
    stepper = st.session_state.get("decode_stepper")
    if stepper is None or stepper.decoder is None or not stepper.settings:
        return None
    target, draft, _runtime, prompt, _toggle, config = stepper.settings
    return target, draft, prompt, config.tau, stepper.decoder.chat


def decode_race() -> RacePreset:
    """The Decode page's pair, prompt and τ as a race; before its first Step, what to do, and the page stops."""
    if (chosen := decode_choice()) is None:
        st.info(
            "Choose a pair on the **Decode** page (your own GGUF files under *Models on this computer*, say), press "
            "**Step** there once, then come back: the race runs that pair on that prompt with that τ.",
            icon=":material/swap_horiz:",
        )
        st.stop()
    target, draft, prompt, tau, chat = chosen
    name = st.session_state["decode_stepper"].decoder.pair.draft.name
    return your_race(target=target, draft=draft, prompt=prompt, tau=tau, chat=chat, draft_name=name)
