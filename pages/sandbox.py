"""Sandbox: one speculative step on hand-made distributions. Edit q and p, set r, see the rule."""

import streamlit as st

from pages._shared import LIMITS, ensure_shell, share_link, step_table
from specviz import MODES, ConfigError
from specviz.classroom.sandbox import (
    PRESETS,
    case_frame,
    case_from_frame,
    case_to_json,
    column_sums,
    draw_r,
    explain,
    resize,
    sandbox_step,
)  # fmt: skip
from specviz.viz import charts
from specviz.viz.render import run_html

ensure_shell()
st.title("Sandbox: one step by hand")
state = st.session_state

cols = st.columns([3, 2, 1])
preset = cols[0].selectbox("Exercise", list(PRESETS), key="sandbox_preset")
mode = cols[1].radio("Mode", MODES, key="sandbox_mode", horizontal=True)
if state.get("sandbox_loaded") != preset:  # a new exercise: its table, τ and draws
    case = PRESETS[preset]
    state.update({"sandbox_loaded": preset, "sandbox_tau": case.tau, "sandbox_case": case})
    state.update({f"sandbox_r{t}": case.r[t] for t in range(case.tau)})
tau = cols[2].number_input("τ", *LIMITS["sandbox_tau"], key="sandbox_tau")
case = resize(state["sandbox_case"], tau)  # the edited table, resized: no edit is lost when τ changes
st.caption(
    "Edit q and p (one column per draft position; the last p is the target at position τ+1, where the bonus "
    "token comes from) and type each draw r. The draft proposes the most likely token of q."
)

edited = st.data_editor(
    case_frame(case), key=f"sandbox_table_{preset}_{tau}", hide_index=True, num_rows="dynamic",
    column_config={"token": st.column_config.TextColumn("token", required=True)},
)  # fmt: skip
for name, total in column_sums(edited).items():
    st.warning(f"Column **{name}** sums to {total:.3f}, not 1: it is used divided by {total:.3f}.", icon="⚖️")
r_cols = st.columns(tau + 1)
for t in range(tau):
    state.setdefault(f"sandbox_r{t}", 0.5)
    r_cols[t].number_input(f"r{t + 1}", *LIMITS[f"sandbox_r{t}"], step=0.01, format="%.3f", key=f"sandbox_r{t}")
seed = r_cols[tau].number_input("seed", *LIMITS["sandbox_seed"], key="sandbox_seed")
if r_cols[tau].button("Draw r", key="sandbox_draw", icon=":material/casino:"):
    state.update({f"sandbox_r{t}": r for t, r in enumerate(draw_r(tau, seed))})
    st.rerun()

try:
    case = case_from_frame(edited, [state[f"sandbox_r{t}"] for t in range(tau)])
    step = sandbox_step(case, mode, seed)
except ConfigError as exc:
    st.error(f"**Check the table.** {exc}", icon=":material/error:")
    st.stop()
state["sandbox_case"] = case  # every edit kept, through τ changes and other pages
share_link("sandbox", {"sandbox_table": case_to_json(case)})

rejected = f"position {step.n_accepted + 1} is the first rejected" if step.n_accepted < step.tau else "none rejected"
st.success(
    f"**n = {step.n_accepted}** of {step.tau} accepted ({rejected}); the target then adds "
    f"**'{step.next_text}'** by rule **{step.next_rule}**.",
    icon=":material/check_circle:",
)
for note in explain(step):  # computed from the table on screen, never a note written for another table
    st.info(note, icon=":material/lightbulb:")
st.html(run_html("", [step], words=True, legend=True))
st.plotly_chart(charts.step_chart(step), key="sandbox_step_chart")
numbers, source = st.columns([3, 2])
with numbers:
    step_table(step, mode == "greedy", hidden=False, draws=False)
source.plotly_chart(charts.next_token_chart(step, height=300), key="sandbox_next_chart")
position = step.n_accepted if step.n_accepted < step.tau else step.tau - 1
st.markdown(
    f"**Position {position + 1}: q and p"
    + (" and the residual norm(max(0, p − q)) that lossless mode resampled from**" if step.residual_top else "**")
)
st.plotly_chart(charts.top_chart(step, position), key="sandbox_top_chart")
