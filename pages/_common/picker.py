"""The sidebar's pair picker: the presets, the GGUF files on this computer (pages/_common/own_models.py), or free text
for a hub id, a folder, a GGUF spec or a served target."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._common import own_models
from specviz import specs
from specviz.analysis.race import RacePreset, your_race
from specviz.classroom.settings import CUSTOM, ON_THIS_COMPUTER
from specviz.drafts import kinds
from specviz.errors import ModelError
from specviz.server.stepper import held_stepper
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
    stepper = held_stepper(st.session_state)
    if stepper is None or stepper.decoder is None or not stepper.settings:
        return None
    run = stepper.settings  # specviz.server.stepper.RunSettings
    return run.target, run.draft, run.prompt, run.config.tau, stepper.decoder.chat


def pair_keys(target: ModelSpec, draft: ModelSpec) -> dict[str, str]:
    """The sidebar's choices (without the page's prefix) that give this pair: a preset's label; the files found on this
    computer (a found file's own spec: the box lists it so); else the texts, as a custom pair."""
    for label, preset in PRESETS.items():
        if (specs.parse(preset.target), specs.parse(preset.draft)) == (target, draft):
            return {"preset": label}
    if isinstance(target, specs.GGUFFile) and target.found is not None:
        drafted = draft.found.spec if isinstance(draft, specs.GGUFFile) and draft.found is not None else str(draft)
        return {"preset": ON_THIS_COMPUTER, "local_target": target.found.spec, "local_draft": drafted}
    return {"preset": CUSTOM, "target": target.text or str(target), "draft": draft.text or str(draft)}


def new_decode_pair(prefix: str) -> dict[str, str] | None:
    """The Decode page's run's pair as this page's sidebar choices (`prefix`_preset, …) where it is a pair of the
    user's own (found on this computer, or typed) that this page has not followed yet; marked followed, so a pair
    chosen here after it stays. None otherwise."""
    if (chosen := decode_choice()) is None:
        return None
    wanted = {f"{prefix}_{key}": value for key, value in pair_keys(chosen[0], chosen[1]).items()}
    mark = f"{chosen[0]}\n{chosen[1]}"
    if wanted[f"{prefix}_preset"] in PRESETS or st.session_state.get(f"{prefix}_followed") == mark:
        return None
    st.session_state[f"{prefix}_followed"] = mark
    return wanted


def follow_decode(prefix: str) -> None:
    """Before the sidebar's pair: after a Step on Decode with a pair of the user's own, this page's pair becomes that
    one (once per pair stepped); where this page's pair is another, a button brings the Decode page's here."""
    if (wanted := new_decode_pair(prefix)) is not None:
        st.session_state.update(wanted)
        return
    if (chosen := decode_choice()) is None:
        return
    wanted = {f"{prefix}_{key}": value for key, value in pair_keys(chosen[0], chosen[1]).items()}
    if any(st.session_state.get(key) != value for key, value in wanted.items()):
        st.button(
            "Use the Decode page's pair here",
            key=f"{prefix}_use_decode",
            icon=":material/sync_alt:",
            on_click=st.session_state.update,
            args=(wanted,),
            width="stretch",
            help=f"Target {decode_names()[0]}, draft {decode_names()[1]}: the pair of the Decode page's run",
        )


def decode_names() -> tuple[str, str]:
    """The Decode run's target and draft as every page names them (a GGUF file by the user's own file name)."""
    pair = held_stepper(st.session_state).decoder.pair
    return pair.target.name, pair.draft.name


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
    target_name, draft_name = decode_names()
    return your_race(
        target=target, draft=draft, prompt=prompt, tau=tau, chat=chat, draft_name=draft_name, target_name=target_name
    )
