"""Decode: step through speculative decoding and see q against p for every draft token."""

import streamlit as st

import specviz
from pages import _shared as ui
from specviz import charts
from specviz.render import run_html
from specviz.replay import Replay

ui.ensure_shell()
with st.sidebar:
    st.header("Models")
    target, draft = ui.model_picker("decode")
    st.header("Prompt")
    prompt = st.text_area("Prompt", key="decode_prompt", height=90)
    chat = st.toggle("Chat template", key="decode_chat", help="Wrap the prompt as a user message (Instruct models)")
    st.header("Decoding")
    tau = st.slider("τ — draft tokens per step", *ui.LIMITS["decode_tau"], key="decode_tau")
    sampling = ui.sampling_widgets("decode")
    seed = st.number_input("Seed", *ui.LIMITS["decode_seed"], key="decode_seed")
    max_new = st.number_input("Max new tokens", *ui.LIMITS["decode_max_new"], key="decode_max_new")
    st.header("Replay")
    upload = st.file_uploader("A saved trace (JSON): replayed without any model", type="json", key="decode_upload")

st.title("Speculative decoding, step by step")
top = st.columns([1, 1, 3])
with top[0]:
    ui.presentation_toggle("decode_present")
quiz_on = top[1].toggle("Quiz mode", key="decode_quiz", help="Hide r and the decisions until the class has guessed")
config = specviz.SpecConfig(tau=tau, seed=seed, max_new_tokens=max_new, **sampling)
settings = (target, draft, prompt, chat, config)
replay = st.session_state.get("decode_replay") if upload else None
if upload and (replay is None or replay.name != upload.file_id):
    try:
        replay = Replay(specviz.RunTrace.from_json(upload.getvalue().decode("utf-8")), upload.file_id)
    except (ValueError, KeyError, TypeError) as exc:  # JSON, missing fields, wrong types
        st.error(f"**This file is not a specviz trace** ({type(exc).__name__}: {exc}).", icon=":material/error:")
    st.session_state["decode_replay"] = replay
pair = None if replay else ui.load_pair(target, draft)


def start_run() -> specviz.Decoder | None:
    if pair is None:
        return None
    try:
        decoder = specviz.Decoder(pair, prompt, config, chat=None if chat else False)
    except specviz.SpecvizError as exc:
        st.error(f"**Cannot start.** {exc}", icon=":material/error:")
        return None
    st.session_state["decode_state"] = {"decoder": decoder, "settings": settings}
    return decoder


cols = st.columns([1, 1.3, 1, 1, 4])
step_clicked = cols[0].button("Step", type="primary", key="decode_step", icon=":material/skip_next:")
run_clicked = cols[1].button("Run to end", key="decode_run_all", icon=":material/fast_forward:")
back_clicked = cols[2].button("Back", key="decode_back", icon=":material/undo:")
reset_clicked = cols[3].button("Reset", key="decode_reset", icon=":material/restart_alt:")

state = st.session_state.get("decode_state")
stale = state is not None and state["settings"] != settings and replay is None
dec = replay or (state["decoder"] if state else None)
if replay and reset_clicked:
    replay.cursor = 0
elif reset_clicked or ((step_clicked or run_clicked) and (dec is None or stale)):
    dec = start_run()
if (autostep := st.session_state.pop("decode_autostep", 0)) and pair is not None:  # opened from a link
    dec = start_run()
    while dec is not None and len(dec.steps) < autostep and not dec.done:
        dec.step()
if dec is not None and (step_clicked or run_clicked) and dec.done:
    st.info(f"This run has finished ({dec.stop_reason}). Press **Reset** to start again.")
elif dec is not None and step_clicked:
    dec.step()
elif dec is not None and run_clicked:
    bar = st.progress(0.0, text="Decoding…")
    while not dec.done:
        dec.step()
        done, limit = len(dec.new_tokens), dec.config.max_new_tokens
        bar.progress(min(1.0, done / limit), text=f"{done} / {limit} tokens")
    bar.empty()
elif dec is not None and back_clicked and dec.undo() is None:
    st.toast("Already at the start of the run.")
stale = stale and not (reset_clicked or step_clicked or run_clicked or autostep)
ui.share_link("decode", {"decode_steps": len(dec.steps) if dec and not stale and not replay else 0})

if dec is None or not dec.steps:
    st.info(
        "Press **Step**: the draft proposes τ tokens, the target scores them all in one pass, and each is "
        "accepted or rejected. Hover the marked tokens for q, p, p/q and r.",
        icon=":material/info:",
    )
    st.stop()
if stale:
    st.warning("Settings changed: the next **Step** starts a new run with them. The run below used the old ones.")

run = dec.trace()
last = run.steps[-1]
hidden = quiz_on and last.tau > 0 and not ui.quiz_panel(last)
if replay:
    where = f"step {len(run.steps)} of {len(replay.run_trace.steps)}, {run.target_name} with draft {run.draft_name}"
    st.info(f"Replaying a saved trace: {where}. No model is loaded; remove the file to decode live.")
st.html(run_html(run.prompt if run.chat else run.prompt_text, run.steps, chat=run.chat, hide_last=hidden))
with st.expander("Exact text the target read (after the chat template)" if run.chat else "Prompt token ids"):
    st.code(run.prompt_text if run.chat else str(list(run.prompt_ids)))

if last.tau == 0:
    st.info(f"No draft this step ({'the drafter found no match' if not dec.done else 'the end was near'}): "
            f"the target alone chose '{last.next_text}'.")  # fmt: skip
else:
    st.plotly_chart(charts.step_chart(last, hide_decisions=hidden), key="decode_step_chart")
    left, right = st.columns([3, 2])
    with left:
        position = st.segmented_control(
            "Top-10 at draft position", list(range(1, last.tau + 1)), default=1, key="decode_position"
        )
        st.plotly_chart(charts.top_chart(last, (position or 1) - 1), key="decode_top_chart")
    with right:
        table = last.to_frame()[["position", "draft_text", "q", "p", "ratio", *([] if hidden else ["r", "decision"])]]
        st.dataframe(
            table.rename(columns={"draft_text": "token", "ratio": "p/q"}),
            hide_index=True,
            column_config={c: st.column_config.NumberColumn(format="%.4f") for c in ("q", "p", "p/q", "r")},
        )
        if not hidden:
            label = charts.token_label(last.next_text)
            st.markdown(f"Next token **{label!r}** by rule **{last.next_rule}**, probability {last.next_prob:.4f}.")

m = run.metrics
st.subheader("Running metrics")
row = st.columns(6)
row[0].metric("mean acceptance length", f"{m.mean_acceptance_length:.2f}", help="1 + accepted / steps")
row[1].metric("draft acceptance rate", f"{(m.draft_acceptance_rate or 0):.0%}", help="accepted / drafted")
row[2].metric("α", f"{(m.alpha or 0):.3f}", help="mean over draft positions of Σ min(p, q)")
row[3].metric("target forward passes", m.target_forward_passes, help=f"for {m.emitted_tokens} tokens")
row[4].metric("tokens/s", f"{(m.tokens_per_second or 0):.1f}")
share = m.draft_ms / (m.draft_ms + m.verify_ms) if m.draft_ms + m.verify_ms else 0
row[5].metric("time: draft / verify", f"{share:.0%} / {1 - share:.0%}", help=f"c = {m.c or 0:.2f}")
left, right = st.columns(2)
left.markdown("**Accepted length per step**")
left.plotly_chart(charts.history_chart(run.steps), key="decode_history_chart")
right.markdown("**Per-position acceptance rate**")
right.plotly_chart(charts.per_position_chart(m.per_position_acceptance_rate), key="decode_position_chart")
cols = st.columns(4)
cols[0].download_button(
    "Trace as JSON", run.to_json(indent=1), "specviz-trace.json", "application/json", key="decode_json"
)
table = run.positions_frame()[["step", "position", "draft_tokens", "draft_text", "q", "p", "ratio", "r", "decision"]]
cols[1].download_button("Steps as CSV", table.to_csv(index=False), "specviz-trace.csv", "text/csv", key="decode_csv")
