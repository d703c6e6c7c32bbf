"""The sidebar's pair picker: the presets, the GGUF files on this computer (pages/_own_models.py), or free text
for a hub id, a folder, a GGUF spec or a served target."""

from __future__ import annotations

import streamlit as st

import specviz
from pages import _own_models as own_models
from specviz.classroom.settings import CUSTOM, ON_THIS_COMPUTER

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
        hint = (
            "also: self, prompt-lookup, early-exit:K, a folder made by scripts/train_draft.py, a GGUF file of the "
            "target's vocabulary, or embedded:Q8_0 / Q4_0 / Q3_K_M / Q2_K (the embedded target quantized here)"
        )
        draft = st.text_input("Draft (q)", key=f"{prefix}_draft", help=hint, disabled=disabled)
        return target, draft
    st.caption(PRESETS[label].description)
    return PRESETS[label].target, PRESETS[label].draft
