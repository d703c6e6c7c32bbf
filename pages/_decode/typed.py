"""Decode's "Your draft" panel (the textbook's presets above the prompt: pages/_decode/sidebar.py): type the draft as
words, see them as tokens, and take the next Step with them on the real target (specviz.drafts.typed): p of each
typed token, the draft model's q for it, the mode's decisions and the target's next token. Widgets and calls; the
typed draft itself is specviz.drafts.typed."""

from __future__ import annotations

import contextlib

import streamlit as st

import specviz
from pages._common.shell import TYPED_LINK as LINK
from specviz.classroom import typed as texts
from specviz.drafts.typed import GUARANTEE, MAX_CHARS, TypedDraft, typed_to_link, typed_tokens
from specviz.server.stepper import Stepper, session_stepper
from specviz.viz.plain import plain

WORDS = "decode_typed"  # the text box
NEXT = "decode_typed_next"  # the words the next Step proposes (a click on "Step with your draft")
BOOK = "decode_typed_steps"  # step index → (the words typed for it, their tokens), in the run on screen


def run_pair(pair: specviz.ModelPair | None, config) -> specviz.ModelPair | None:
    """The pair a Decode run starts with: a chain's draft wrapped so that a step can be given a typed draft (the
    shared models are not changed; the wrapper is the run's own)."""
    if pair is None or not isinstance(config, specviz.SpecConfig) or config.tree:
        return pair
    if pair.draft.capabilities.runtime == "model-free":
        return pair
    return specviz.ModelPair(pair.target, TypedDraft(pair.draft), pair.codec)


def context_text(dec: specviz.Decoder) -> str:
    """The text a typed draft continues: the prompt as encoded, and everything emitted so far."""
    return dec.prompt_text + dec.pair.codec.decode(list(dec.new_tokens))


@contextlib.contextmanager
def typed_step(dec: specviz.Decoder):
    """Around one step of `dec`: the typed draft it was asked to propose (a click on "Step with your draft", or a
    link's typed step), if any, given to the run's draft; the run's record of its typed steps kept up to date."""
    state = st.session_state
    index = len(dec.steps)
    words = state.pop(NEXT, None)
    if words is None:
        words = state.get(LINK, {}).pop(index, None)
    book = state.setdefault(BOOK, {})
    book.pop(index, None)
    draft = dec.pair.draft
    if not words:
        yield
        return
    if not isinstance(draft, TypedDraft):
        raise specviz.ConfigError(texts.refusal(bool(dec.config.tree), dec.pair.draft.name))
    tokens = typed_tokens(dec.pair.codec, words, context_text(dec))
    with draft.proposing(tokens):
        yield
    book[index] = (words, len(tokens))


def typed_words(step: specviz.StepTrace | None) -> tuple[str, int] | None:
    """(the words typed for `step` of the live run on screen, how many tokens they made), or None: the draft model
    proposed it."""
    return None if step is None else st.session_state.get(BOOK, {}).get(step.index)


def link_value(steps: int) -> dict:
    """What a link carries of the run's typed drafts (the first `steps` steps)."""
    book = {i: words for i, (words, _) in st.session_state.get(BOOK, {}).items() if i < steps}
    return {"decode_drafts": typed_to_link(book)} if book else {}


def _stepper() -> Stepper:
    return session_stepper(st.session_state)  # the page's: every click queued, none lost


def _press() -> None:
    """A click on "Step with your draft": the words for the next step, and a Step queued like any other."""
    st.session_state[NEXT] = st.session_state.get(WORDS, "")
    _stepper().press("step")


def sidebar_panel(off: bool, prompt: str, chat: bool) -> None:
    """The sidebar's "Your draft": the words, "Step with your draft", and the tokens the words make as they would
    continue the text of the run on screen."""
    st.header("Your draft")
    words = st.text_input(
        "Words the next Step proposes instead of the draft model's own",
        key=WORDS,
        max_chars=MAX_CHARS,
        placeholder="mat and then slept",
        disabled=off,
        help="Type the draft yourself: p is then the target's probability of each typed token and q the draft "
        "model's; the mode's rule decides. " + GUARANTEE,
    ).strip()
    st.button(
        "Step with your draft",
        key="decode_typed_step",
        icon=":material/edit:",
        on_click=_press,
        disabled=off or not words,
        width="stretch",
    )
    dec = _stepper().decoder
    if not words or off:
        return
    if dec is None or dec.prompt != prompt or dec.chat != chat:  # no run yet, or another text: tokens with the Step
        st.caption("A space goes before the words unless the text ends with one. " + GUARANTEE)
        return
    try:
        tokens = typed_tokens(dec.pair.codec, words, context_text(dec))
    except specviz.ConfigError as exc:
        st.caption(plain(exc))
        return
    st.caption(texts.tokens_caption([dec.pair.codec.token_text(t) for t in tokens]))


def present_row() -> None:
    """On a projector (no sidebar), once words are typed: one button that steps with them."""
    words = st.session_state.get(WORDS, "").strip()
    if words:
        st.button(
            f"Step with your draft: \u201c{plain(words)}\u201d",
            key="decode_typed_present_step",
            icon=":material/edit:",
            on_click=_press,  # no tooltip: once pressed, it covered the row of Step, Run to end, Back and Reset
        )


def note(step: specviz.StepTrace, tau: int, brief: bool = False) -> str | None:
    """Beside a typed step's chart: what was proposed, and what the numbers are (`brief`, a projector: why it was
    kept or rejected, where the words are the textbook's)."""
    typed = typed_words(step)
    return None if typed is None else texts.step_note(typed[0], typed[1], step, tau, brief)
