"""Quiz mode on the Decode page: the class answers per draft token, Reveal scores. The scores live
in the session, one per step (specviz.classroom.quiz), so Back, Step and Reset never count a step twice."""

from __future__ import annotations

import zlib

import streamlit as st

import specviz
from pages._common.present import COMPACT_CSS, presentation_toggle
from pages._common.widgets import limits
from specviz.classroom import quiz
from specviz.viz.plain import plain
from specviz.viz.render import token_label

BOOK = "decode_quiz_book"
PER_ROW = 4  # answer columns per row: "not reached" must fit on a 1280-pixel screen


def widget_id(step: specviz.StepTrace) -> str:
    """A short id of one step of one run, for the keys of its answer widgets."""
    return f"{step.index}_{zlib.crc32(quiz.step_key(step).encode()):08x}"


def revealed(step: specviz.StepTrace) -> bool:
    return quiz.step_key(step) in st.session_state.get(BOOK, {})


def panel(step: specviz.StepTrace, kind: str, compact: bool = False) -> bool:
    """The answer widgets, Reveal and the running score; True once this step is revealed. `compact` (a
    projector, beside the chart): one row of answers per token."""
    book = st.session_state.setdefault(BOOK, {})
    key, wid = quiz.step_key(step), widget_id(step)
    done = key in book
    st.markdown(f"**Quiz: {(quiz.SHORT if compact else quiz.KINDS)[kind]}**")
    guesses: list[str | None] = []
    per_row = 1 if compact else PER_ROW  # compact: each token's answers in one row
    for row in range(0, step.tau, per_row):  # a choice per token: every answer readable
        cols = st.columns(per_row)
        for t in range(row, min(row + per_row, step.tau)):
            label = f"{t + 1}. {plain(token_label(step.draft_text[t]))}"  # a label is markdown
            widget = f"decode_guess_{wid}_{t}"
            guesses.append(
                cols[t - row].radio(label, quiz.ANSWERS, index=None, key=widget, disabled=done, horizontal=compact)
            )
    cols = st.columns([1, 1] if compact else [1, 1, 2])
    kept = None
    if kind == "rule":
        kept = cols[0].number_input(
            "Tokens kept (n)", 0, step.tau, value=None, key=f"decode_kept_{wid}", disabled=done, placeholder="n = ?"
        )
    if not done and cols[1].button("Reveal", type="primary", key="decode_reveal", icon=":material/visibility:"):
        book[key] = quiz.score(step, guesses, kept if kind == "rule" else None)
        done = True
    points, possible = quiz.running_total(book)
    if done:
        st.markdown(f"#### This step: {book[key].describe()}. Running score: {points} / {possible}.")
    elif possible:
        st.caption(f"Running score: {points} / {possible}. Blank answers are not scored.")
    return done


def marks(step: specviz.StepTrace) -> tuple[bool | None, ...]:
    """After Reveal: per draft token, the class right, wrong, or None (no answer); before it, nothing."""
    score = st.session_state.get(BOOK, {}).get(quiz.step_key(step))
    return score.marks if score is not None else ()


def reset_button() -> None:
    if st.session_state.get(BOOK) and st.button("Reset score", key="decode_quiz_reset", icon=":material/replay:"):
        st.session_state[BOOK] = {}
        st.rerun()


def kind_picker(where, on: bool, present: bool) -> str:
    """What the class guesses (quiz mode on), in `where`: a column of the projector's row or the page."""
    if not on:
        return ""
    labels = (quiz.SHORT if present else quiz.KINDS).get
    return where.radio("Quiz", list(quiz.KINDS), key="decode_quiz_kind", format_func=labels, horizontal=not present)


FIGURES_KEPT = "decode_figures_kept"


def _take_tau() -> None:
    st.session_state["decode_tau"] = st.session_state["decode_tau_present"]  # before the rerun: the sidebar reads it


def tau_control(where) -> None:
    """τ on a projector's row: the sidebar's own τ (decode_tau, kept across pages), shown and changed from here, so
    that a lecturer changes τ without leaving presentation view (and its toggles: issue 65.5). A change reruns the
    whole page (decode.py), whose sidebar then builds the settings with it."""
    st.session_state["decode_tau_present"] = st.session_state.get("decode_tau", limits()["decode_tau"][0])
    where.number_input(
        "τ", *limits()["decode_tau"], key="decode_tau_present", on_change=_take_tau, help="Draft tokens per step"
    )


def decode_header() -> tuple[bool, list, bool, str]:
    """The Decode page's head: the title beside the presentation and quiz toggles, or on a projector one row of
    controls (no title) whose columns the buttons and the step picker share. (present, columns, quiz on, the
    quiz's kind)."""
    present = bool(st.session_state.get("decode_present"))
    if present:
        # the buttons, τ, the toggles, the quiz, the step picker: τ in a column of its own, so the row is no taller
        # than its two toggles (under the quiz toggle it pushed the step chart's legend off a 1280×720 screen)
        cols = st.columns([1, 1.3, 1, 1, 1.0, 2.1, 1.5, 2.0], vertical_alignment="bottom")
        toggles = [st.container(), cols[5], cols[6]]
    else:  # the title shares its row with the toggles; on a short screen it shrinks (COMPACT_CSS)
        st.html(COMPACT_CSS)
        cols = []
        toggles = st.columns([3.6, 1.7, 1.2], vertical_alignment="center")
        toggles[0].title("Speculative decoding, step by step")
    with toggles[1]:
        presentation_toggle("decode_present")
        if present:  # a projector's option (under its toggle: a column of its own would cut the buttons' labels)
            # kept under a key of its own: a run without the toggle (presentation view off) forgets a widget's value,
            # and leaving presentation view to change τ turned it off (issue 65.5)
            state = st.session_state
            state["decode_figures"] = state.get(FIGURES_KEPT, state.get("decode_figures", False))
            st.toggle(  # read by the page where it draws the marked text
                "q, p, r under tokens",
                key="decode_figures",
                on_change=lambda: state.update({FIGURES_KEPT: state["decode_figures"]}),
                help="Each draft token's q, p and r in small type under it: readable on a projector without hovering",
            )
    quiz_on = toggles[2].toggle(
        "Quiz mode", key="decode_quiz", help="Hide r and the decisions until the class has guessed"
    )
    if present:  # the sidebar is hidden: τ on the projector's row, beside the buttons
        tau_control(cols[4])
    return present, cols, quiz_on, kind_picker(cols[-1] if present else st.container(), quiz_on, present)
