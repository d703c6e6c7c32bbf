"""Decode: step through speculative decoding and see q against p for every draft token."""

import json

import streamlit as st

import specviz
from pages._common import own_settings
from pages._common import snapshot as snapshots
from pages._common.shell import ensure_shell
from pages._common.widgets import downloads, share_link
from pages._decode import drawing, run_drawing, sidebar
from pages._decode import quiz as quiz_ui
from pages._decode import step as stepping
from pages._decode import typed as typed_ui
from pages._decode.keys import keyboard_stepping
from pages._decode.reading import trace_reading
from pages._serving.compute import compute_turn
from pages._serving.pairs import codec_for, load_pair
from specviz.classroom.settings import BROKEN_HELP
from specviz.viz.plain import plain
from specviz.viz.render import LEGEND, run_html, sentence

ensure_shell()
upload = st.session_state.get("decode_upload")  # read first: while a trace replays, settings are off
frozen = snapshots.opened("reading")  # a snapshot for slides: its run replays, its reading is shown as it was
replay, upload_error = None, None
if upload or frozen:
    data, name = (
        (upload.getvalue(), upload.file_id)
        if upload
        else (json.dumps(frozen.data["trace"]).encode(), f"snapshot {frozen.created}")
    )
    replay, upload_error = snapshots.replay(data, name, st.session_state.get("decode_replay"), codec_for)
    st.session_state["decode_replay"] = replay
off = replay is not None
with st.sidebar:
    target, draft, prompt, chat, config, tau, broken = sidebar.inputs(off)
    keyboard_stepping()  # → / PageDown = Step, ← / PageUp = Back (a presenter's clicker)


# Everything below the sidebar is one fragment: a Step, Back, a step picked, a quiz answer or a toggle reruns only
# this function (with the sidebar's values of the last whole run), not the sidebar, the menu and the settings kept
# across pages, which a class server cannot afford for 80 students.
# (docs/performance.md, "A class under load: N students over Streamlit's own protocol")
# A changed setting in the sidebar reruns the whole page, and this with it.
@st.fragment
def run_view(replay, frozen, upload_error, target, draft, prompt, chat, config, tau, broken) -> None:
    present, cols, quiz_on, kind = quiz_ui.decode_header()  # the title and toggles, or a projector's one row
    if st.session_state.get("decode_tau") != tau and not replay:  # τ changed on the projector's row: the whole page
        st.rerun()  # again, its sidebar building the settings with it
    if upload_error:
        st.error(
            f"**This file is not a specviz trace that can be replayed:** {plain(upload_error)}", icon=":material/error:"
        )
    if isinstance(config, specviz.ConfigError):
        st.error(f"**These settings do not make a run.** {plain(sentence(config))}", icon=":material/error:")
        st.stop()
    if broken:
        st.warning(f"**Broken draft, on purpose.** {BROKEN_HELP}", icon=":material/bug_report:")
    if target is None and not replay:  # the sidebar says why: a text not well formed, no GGUF file found
        st.warning(
            "**No pair to run.** The sidebar says why: choose a preset pair, or correct the models written there. "
            "**Step** starts a run once the pair can be read.",
            icon=":material/warning:",
        )
    pair = None if replay or target is None else load_pair(target, draft)
    cols = stepping.buttons(cols if present else None)  # Step, Run to end, Back, Reset: each click queued
    if present:  # no sidebar: a button that steps with the typed words, once there are some
        typed_ui.present_row()
    dec, stale = stepping.take(pair, replay, target, draft, prompt, chat, config)  # the link's steps, every click
    link_steps = {"decode_steps": len(dec.steps) if dec and not stale and not replay else 0}
    link_steps |= typed_ui.link_value(link_steps["decode_steps"])  # the run's typed drafts, for its steps
    if dec is None or not dec.steps:
        share_link("decode", link_steps, show=not present)
        run_drawing.before_first_step(tau)
        st.stop()
    if stale:
        st.warning("Settings changed: the next **Step** starts a new run with them. The run below used the old ones.")

    run = dec.trace()
    last = run.steps[-1]
    if replay:
        st.info(replay.describe(), icon=":material/replay:")
    text_box = st.container()  # the marked text heads the page, whatever is drawn first
    beside = st.columns([2, 1]) if present and last.tau > 0 else None  # a projector: chart | next token or quiz
    with beside[1] if beside and quiz_on else st.container():  # on a projector the quiz sits beside the chart
        hidden = quiz_on and last.tau > 0 and not quiz_ui.panel(last, kind, compact=present)
    draws = hidden and kind == "rule"  # the quiz on the rule shows r and p/q, never the decisions
    with cols[-1] if not (present and quiz_on) else st.container():  # in the row of buttons, where there is room
        view = drawing.step_picker(run.steps, hidden)  # the step drawn: the newest, or one picked
    upto = run.steps[: view.index + 1]
    marks = quiz_ui.marks(view) if quiz_on else ()  # after Reveal: the class right or wrong, per token
    brief = {"figures": bool(st.session_state.get("decode_figures")), "recent": 24} if present else {}  # projector
    shown = run.prompt if run.chat else run.prompt_text  # (a projector: q, p, r under tokens; the prompt and the step)
    text = run_html(shown, upto, run.chat, hide_last=hidden, show_draws=draws, marks=marks, **brief)
    text_box.html(f'{"" if hidden else LEGEND}<div class="sv-box">{text}</div>')  # on short screens: the newest lines
    if view.tau == 0:
        st.info(
            f"No draft at step {view.index + 1} (the drafter found no match, or the end was near): the target "
            f"alone chose '{plain(view.next_text)}'."
        )
    else:
        names = (run.draft_name, run.target_name)  # a GGUF file's quantization labels q and p
        typed = None if replay else typed_ui.note(view, run.config.tau, present)  # a step that proposed your draft
        greedy = run.config.mode == "greedy"
        drawing.draw_step(view, greedy, hidden, draws, tuple(marks), present, beside, names, typed)
        if not hidden:  # what token-wise, one-hot and block make of this step's draft and draws
            drawing.rules_panel(view, None if replay else dec.under_each_rule(view.index), pair, run.config.mode)
            drawing.slide_panel(run, view, names, typed is not None)  # the step as one 16:9 picture for a slide
    run_drawing.draw_run(run, view, hidden, live=replay is None)
    if not hidden:
        trace_reading(run, None if replay else pair, compute_turn, frozen.data["reading"] if frozen else None)
        if replay is None:  # your own GGUF files: llama-server's and LM Studio's lines at the run's τ
            own_settings.panel(run.config.tau, "the Decode run's")
    if quiz_on:
        quiz_ui.reset_button()
    if not hidden:  # a saved trace holds r and every decision
        columns = ["step", "position", "draft_tokens", "draft_text", "q", "p", "ratio", "r", "decision"]
        csv = lambda: run.positions_frame()[columns].to_csv(index=False)  # noqa: E731  (made on click)
        downloads("decode", "specviz-trace", lambda: run.to_json(indent=1), csv, ("Trace as JSON", "Steps as CSV"))
    share_link("decode", link_steps, show=not present)


run_view(replay, frozen, upload_error, target, draft, prompt, chat, config, tau, broken)
