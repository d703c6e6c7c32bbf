"""The Decode page's step, taken and drawn: the clicks taken in turn, the step picked, its charts and table, the
target's next token (the running metrics and the run's charts: pages/_decode_panels.py). Widgets and calls; what
to show is decided in specviz.viz."""

from __future__ import annotations

import contextlib

import streamlit as st

import specviz
from pages._decode_panels import chart, draw_run, rules_panel  # noqa: F401 (draw_run, rules_panel: the page)
from pages._shared import compute_turn, heavy_job, heavy_turn, pacer
from pages._typed import typed_step
from specviz.viz import charts
from specviz.viz import view as view_of
from specviz.viz.plain import plain, plain_cells
from specviz.viz.render import next_token_source, sentence, step_frame, token_label
from specviz.viz.tree_chart import tree_chart


def step_table(view: specviz.StepTrace, greedy: bool, hidden: bool, draws: bool) -> None:
    """The step's numbers as a plain table: every column whole at 1280 px (a data grid cut `decision`
    to "deci")."""
    st.table(plain_cells(step_frame(view, greedy, hidden, draws)))  # st.table reads its cells as markdown


def step(dec: specviz.Decoder, turn) -> bool:
    """One step in a compute turn, with the typed draft asked for, if any (pages/_typed.py); a failure (a remote server
    down mid-run) is a message, the run kept."""
    try:
        with turn(), typed_step(dec):
            dec.step()
    except specviz.SpecvizError as exc:
        st.error(
            f"**The step failed.** {plain(sentence(exc))} The run so far is kept: press **Step** to try again.",
            icon=":material/error:",
        )
        return False
    return True


def _pace():
    return st.session_state.setdefault("decode_pacer", pacer()).wait  # class mode: the session's Steps a second


def open_link(stepper, settings, steps: int, start_run) -> None:
    """A link's steps, priced as clicks: each paced by the session's Steps a second; more than one (in class mode) are
    a heavy job: a slot of the server's and this address's share, each step a heavy turn (the lecturer's: no slot)."""
    one = steps <= 1 or bool(st.session_state.get("specviz_lecturer"))
    with contextlib.nullcontext() if one else heavy_job():
        turn = compute_turn if one else heavy_turn
        stepper.open_link(settings, steps, start_run, lambda d: step(d, turn), _pace())


def take_clicks(stepper, settings, start_run, replay, turn) -> None:
    """The queued clicks taken in order (specviz.server.stepper): Steps in the class's turns, paced in class
    mode; Run to end a heavy job's turns, one a step, with its progress; what happened in a note or a toast."""
    taking = st.empty()  # while the clicks are taken; gone once they are (the toast says what happened)
    if len(stepper.queue) > 1:
        taking.caption(f"Taking your {len(stepper.queue)} clicks in turn…")
    bar = st.progress(0.0, text="Decoding…") if "run" in stepper.queue else None

    def progress(done: int, limit: int) -> None:
        bar.progress(min(1.0, done / limit), text=f"{done} / {limit} tokens")

    heavy = contextlib.nullcontext if replay else heavy_turn
    notes = stepper.process(
        settings, start_run, lambda d: step(d, turn), replay, progress, lambda d: step(d, heavy), _pace()
    )
    taking.empty()
    if bar is not None:
        bar.empty()
    for note in notes:
        st.info(note.text) if note.kind == "info" else st.toast(note.text)


def step_picker(steps: tuple[specviz.StepTrace, ...], hidden: bool) -> specviz.StepTrace:
    """The step the page draws: by default specviz.viz.view.default_step; a slider picks any earlier
    step. Before a quiz's Reveal: the newest."""
    if hidden or len(steps) == 1:
        return steps[-1]
    pick = st.select_slider(
        "Step shown" if st.session_state.get("decode_present") else "Step shown (text, chart and metrics run up to it)",
        options=list(range(1, len(steps) + 1)),
        value=view_of.default_step(steps),
        key=f"decode_show_{len(steps)}",  # a new run's length: its default again
    )
    if note := view_of.default_step_note(steps, pick):
        st.caption(note)
    return steps[pick - 1]


def next_token_panel(step: specviz.StepTrace, brief: bool = False, **size: int) -> None:
    """The target's token: its rule and probability in a sentence, the distribution it came from
    (`brief`, on a projector: only in the chart's title), and why, when it is the rejected draft token itself."""
    source, note = next_token_source(step)
    label = token_label(step.next_text)
    where = "" if brief else f" {source}."
    st.markdown(
        f"Next token **{plain(repr(label))}** by rule **{step.next_rule}**, probability {step.next_prob:.4f}.{where}"
    )
    st.plotly_chart(chart(charts.next_token_chart, step, **size), key="decode_next_chart")
    if note:  # below the chart: on a projector the chart stays on screen
        st.info(note, icon=":material/lightbulb:")


def draw_step(
    view: specviz.StepTrace,
    greedy: bool,
    hidden: bool,
    draws: bool,
    marks: tuple,
    present: bool,
    beside: list | None,
    names: tuple[str, str] = ("", ""),
    typed: str | None = None,
) -> None:
    """The step shown: its tree (a tree step), q against p with every decision, the target's next token,
    the top-10 of q and p at a position, and the step's numbers. `beside`: a projector's two columns. `names`: the
    draft's and the target's (a GGUF file's quantization labels q and p). `typed` (a typed draft): what it was, said
    under the chart, whose ticks name the draft model's own first choice under each token that is not it."""
    size = {"height": 390, "font_size": 20} if present else {"height": 420}  # a projector: chart and next token
    if view.tree is not None and not hidden:  # the whole tree first; the chart below reads its main line
        tree_size = {"height": 560, "font_size": 18} if present else {"height": 520}
        st.plotly_chart(chart(tree_chart, view, **tree_size), key="decode_tree_chart")
        st.caption(
            "Below: the tree's main line, the accepted path, then the first child tried where the walk "
            "stopped and its first descendants (hover a node for q, p, r and the tops of q and p)."
        )
    with beside[0] if beside else st.container():
        st.plotly_chart(
            chart(charts.step_chart, view, hidden, draws, marks=marks, names=names, own=typed is not None, **size),
            key="decode_step_chart",
        )
        if typed:
            st.info(typed, icon=":material/keyboard:")
    if beside and not hidden:
        with beside[1]:
            next_token_panel(view, brief=True, height=330, font_size=18, rows=6)
    position = st.segmented_control(
        "Top-10 at draft position", list(range(1, view.tau + 1)), default=1, key="decode_position"
    )
    st.plotly_chart(chart(charts.top_chart, view, (position or 1) - 1, hidden, names=names), key="decode_top_chart")
    left, right = st.columns([2, 3]) if not hidden and not present else (None, st.container())
    if left:  # where the next token came from (docs/algorithm.md, step 5); it tells n
        with left:
            next_token_panel(view)
    with right:
        step_table(view, greedy, hidden, draws)
