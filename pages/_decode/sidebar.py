"""The Decode page's sidebar: the models, the prompt and every decoding setting, as one SpecConfig."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

import specviz
from pages._common import widgets as ui
from pages._common.picker import model_picker
from pages._decode import typed as typed_ui
from specviz.classroom.settings import BROKEN_HELP, POLICY_HELP, TREE_HELP
from specviz.classroom.settings import TYPED_EXERCISE as EXERCISE
from specviz.classroom.settings import TYPED_STORY as STORY
from specviz.specs import ModelSpec
from specviz.viz import view as view_of


class Inputs(NamedTuple):
    target: ModelSpec | None  # the pair's specs, parsed once; None when the sidebar has no pair to load (it says why)
    draft: ModelSpec | None
    prompt: str
    chat: bool
    config: specviz.SpecConfig | specviz.ConfigError  # the settings, or why they do not make a run
    tau: int
    broken: bool


PRESETS = (  # (label, key, icon, the settings it sets, help)
    (
        "The textbook's exercise",
        "decode_exercise_start",
        ":material/menu_book:",
        EXERCISE,
        "'The cat sat on the' as the book writes it: chat off, textbook mode, T = 1, and the draft 'mat and then "
        'slept\' typed for "Step with your draft"',
    ),
    (
        "The cat sat on the…, as a story",
        "decode_story_start",
        ":material/auto_stories:",
        STORY,
        "'Continue the story: The cat sat on the': chat on, lossless, temperature 0.7, so the live text reads "
        "well (the bare sentence at T = 1 writes junk on this small pair)",
    ),
)


def prompt_presets(disabled: bool) -> None:
    """Two buttons above the prompt: the textbook's exercise, and the same sentence as a story that reads well."""
    for label, key, icon, settings, help_text in PRESETS:
        st.button(
            label,
            key=key,
            icon=icon,
            on_click=st.session_state.update,
            args=(settings,),
            disabled=disabled,
            width="stretch",
            help=help_text,
        )


def inputs(off: bool) -> Inputs:
    """The sidebar's widgets (`off`: a saved trace replays, so they are not in use)."""
    if off:
        st.warning("A saved trace is replaying: the settings below are not in use.", icon=":material/pause:")
    st.header("Models")
    target, draft = model_picker("decode", disabled=off) or (None, None)
    st.header("Prompt")
    prompt_presets(off)  # the textbook's exercise, and the sentence as a story that reads well
    prompt = st.text_area("Prompt", key="decode_prompt", height=90, disabled=off, max_chars=ui.prompt_chars())
    chat = st.toggle("Chat template", key="decode_chat", help="Wrap the prompt as a user message", disabled=off)
    typed_ui.sidebar_panel(off, prompt, chat)  # "Your draft": the words the next Step proposes
    st.header("Decoding")
    tau = st.slider("τ — draft tokens per step", *ui.limits()["decode_tau"], key="decode_tau", disabled=off)
    sampling = ui.sampling_widgets("decode", disabled=off)
    lossless = sampling["mode"] == "lossless"
    rule = ui.rule_widget("decode", sampling["mode"], disabled=off)
    knobs = ui.knob_widgets("decode", rule, disabled=off)  # a lossy rule's thresholds
    seed = st.number_input("Seed", *ui.limits()["decode_seed"], key="decode_seed", disabled=off)
    max_new = st.number_input("Max new tokens", *ui.limits()["decode_max_new"], key="decode_max_new", disabled=off)
    st.header("Variants")
    tree_on = st.toggle(
        "Token tree (as SGLang and EAGLE run it)",
        key="decode_tree",
        disabled=off,
        help="Draft a tree of continuations, verify it in one target pass; τ is unused",
    )
    shape = [
        st.number_input(
            name,
            *ui.limits()[f"decode_tree_{key}"],
            key=f"decode_tree_{key}",
            help=TREE_HELP[name],
            disabled=off or not tree_on,
        )
        for name, key in (("topk", "topk"), ("steps", "steps"), ("num_draft_tokens", "nodes"))
    ]
    policy = st.selectbox(
        "τ policy", ui.limits()["decode_policy"], key="decode_policy", disabled=off or tree_on, help=POLICY_HELP
    )
    threshold = st.slider(
        "Confidence threshold",
        *ui.limits()["decode_threshold"],
        step=0.05,
        key="decode_threshold",
        disabled=off or tree_on or policy != "confidence",
    )
    broken = st.toggle(
        "Broken draft (a deliberate bug)", key="decode_broken", disabled=off or tree_on, help=BROKEN_HELP
    )
    st.header("Replay")
    st.file_uploader(
        "A saved trace (JSON): replayed without any model",
        type="json",
        key="decode_upload",
        max_upload_size=ui.upload_mb(),
    )
    try:
        config = view_of.decode_config(
            tuple(shape) if tree_on else None,
            policy,
            threshold,
            broken,
            tau=tau,
            seed=seed,
            max_new_tokens=max_new,
            verification=rule if lossless else "token",
            **knobs,
            **sampling,
        )
    except specviz.ConfigError as exc:
        config = exc
    return Inputs(target, draft, prompt, chat, config, tau, broken and not tree_on)
