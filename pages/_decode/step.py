"""The Decode page's step controller: the buttons (Step, Run to end, Back, Reset), each click queued in the session's
Stepper (specviz.server.stepper), the queue taken in order, each step in the server's compute turn
(pages/_serving/compute.py) with the typed draft asked for, if any (pages/_decode/typed.py), and the run kept in the
session. What the page then draws of the run: pages/_decode/drawing.py. Widgets and calls."""

from __future__ import annotations

import contextlib
import functools

import streamlit as st

import specviz
from pages._decode import typed as typed_ui
from pages._serving import history as history_ui
from pages._serving import share as _share
from pages._serving.compute import compute_turn, heavy_job, heavy_turn, pacer
from specviz.core.prompt import toggled_chat
from specviz.server.stepper import LiveRun, ReplayRun, RunSettings, Stepper, session_stepper
from specviz.specs import ModelSpec
from specviz.viz import view as view_of
from specviz.viz.plain import plain
from specviz.viz.render import sentence


def stepper() -> Stepper:
    """This session's run and its clicks (every click queued by on_click, none lost)."""
    return session_stepper(st.session_state)


def buttons(cols: list | None) -> list:
    """Step, Run to end, Back and Reset in `cols` (a projector's row) or in a row of their own; a click queues its
    action (on_click runs first on the next run, before anything can stop it). The columns, the last one free."""
    press = stepper().press
    if cols is None:
        cols = st.columns([1, 1.3, 1, 1, 4], vertical_alignment="bottom")
    for col, (action, label, key, icon) in zip(cols, view_of.CONTROLS, strict=False):
        col.button(
            label,
            key=key,
            icon=icon,
            on_click=press,
            args=(action,),
            type="primary" if action == "step" else "secondary",
        )
    return cols


def new_run(pair, prompt: str, chat: bool, config) -> specviz.Decoder | None:
    """A new run with the current settings; None (the reason shown, the old run kept) on failure."""
    if pair is None:
        return None
    undo = None
    try:
        undo = _share.start_run(stepper(), pair, prompt, chat, config)  # class mode: the student's runs and memory
        with st.spinner(f"Reading the prompt into both models ({len(prompt):,} characters)…"), compute_turn():
            # a chain's draft can then be given a typed draft; a suffix draft matches this session's earlier answers
            mine = typed_ui.run_pair(history_ui.remembered(pair), config)
            run = specviz.Decoder(mine, prompt, config, chat=toggled_chat(mine, chat), compare_rules=True)
        _share.opened()  # what its sessions allocated is the models' count now, no longer the run's
        return run
    except specviz.SpecvizError as exc:
        if undo is not None:  # counted, then failed to start: the session holds the run it keeps
            undo()
        st.error(f"**Cannot start a new run.** {plain(sentence(exc))} The run below is kept.", icon=":material/error:")
        return None


def step(dec: specviz.Decoder, turn) -> bool:
    """One step in a compute turn, with the typed draft asked for, if any (pages/_decode/typed.py); a failure (a remote
    server down mid-run) is a message, the run kept."""
    try:
        with turn(), typed_ui.typed_step(dec):
            dec.step()
        _share.touch()  # in use: not given back as idle
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
        stepper.open_link(
            LiveRun(settings=settings, start=start_run, step=lambda d: step(d, turn), pace=_pace()), steps
        )


def take_clicks(stepper, settings, start_run, replay) -> None:
    """The queued clicks taken in order (specviz.server.stepper): Steps in the class's turns, paced in class
    mode; Run to end a heavy job's turns, one a step, with its progress; what happened in a note or a toast."""
    taking = st.empty()  # while the clicks are taken; gone once they are (the toast says what happened)
    if len(stepper.queue) > 1:
        taking.caption(f"Taking your {len(stepper.queue)} clicks in turn…")
    bar = st.progress(0.0, text="Decoding…") if "run" in stepper.queue else None

    def progress(done: int, limit: int) -> None:
        bar.progress(min(1.0, done / limit), text=f"{done} / {limit} tokens")

    live = LiveRun(
        settings=settings,
        start=start_run,
        step=lambda d: step(d, compute_turn),
        run_step=lambda d: step(d, heavy_turn),
        pace=_pace(),
    )
    notes = stepper.process(ReplayRun(trace=replay) if replay else live, progress)
    taking.empty()
    if bar is not None:
        bar.empty()
    for note in notes:
        st.info(note.text) if note.kind == "info" else st.toast(note.text)


def take(pair, replay, target: ModelSpec | None, draft: ModelSpec | None, prompt: str, chat: bool, config):
    """A link's steps (on a session's first run) and then every queued click, in order, on the replay if one is loaded,
    else on the live run (a new one when the settings changed). (the run to draw, whether its settings are old). The
    settings hold the pair's specs, which compare by value (a found file's spec equals the same file written out)."""
    settings = RunSettings(target, draft, pair.runtime if pair else None, prompt, chat, config)
    start_run = functools.partial(new_run, pair, prompt, chat, config)
    mine = stepper()
    if mine.given_back:  # a class server took this tab's idle run back for another run's memory
        mine.given_back = False
        st.info(
            "Your run was given back to make room on the server (it had not stepped for a while, or the lecturer "
            "needed the memory). Press **Step** to start a new one.",
            icon=":material/memory:",
        )
    if (autostep := st.session_state.pop("decode_autostep", 0)) and pair is not None:  # opened from a link
        with st.spinner(f"Opening the shared run: {autostep} steps with the link's settings…"):
            open_link(mine, settings, autostep, start_run)  # paced, queued and priced like clicks
    take_clicks(mine, settings, start_run, replay)  # every click queued, in order (a replay computes nothing)
    return replay or mine.decoder, replay is None and mine.stale(settings)
