"""The sidebar's pair picker: the presets, the GGUF files on this computer (pages/_own_models.py), or free text
for a hub id, a folder, a GGUF spec or a served target."""

from __future__ import annotations

import streamlit as st

import specviz
from pages import _own_models as own_models
from specviz import specs
from specviz.analysis.race import RacePreset, your_race
from specviz.classroom.settings import CUSTOM, ON_THIS_COMPUTER
from specviz.drafts import kinds
from specviz.errors import ModelError
from specviz.specs import ModelSpec
from specviz.viz.plain import plain
from specviz.viz.render import sentence

PRESETS = {p.label: p for p in specviz.PRESETS}


def model_picker(prefix: str, disabled: bool = False) -> tuple[ModelSpec, ModelSpec] | None:
    """Preset pairs, or free text for a hub id, a local folder or a served target: (target, draft), each parsed once
    (specviz.specs); None when there is no pair to load (no GGUF file found; a text that is not well formed, said in
    the sidebar)."""
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
        return parsed(target, draft)
    st.caption(PRESETS[label].description)
    return specs.parse(PRESETS[label].target), specs.parse(PRESETS[label].draft)


def parsed(target: str, draft: str) -> tuple[ModelSpec, ModelSpec] | None:
    """The texts written for the pair as specs; None, with why in the sidebar, when one is not well formed."""
    try:
        return specs.parse(target), specs.parse(draft)
    except ModelError as exc:
        st.error(f"**This pair cannot be read.** {plain(sentence(exc))}", icon=":material/error:")
        return None


def decode_choice() -> tuple[ModelSpec, ModelSpec, str, int, bool | None] | None:
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
