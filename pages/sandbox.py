"""Sandbox: one speculative step on hand-made distributions. Edit q and p, set every draw, see the rule."""

import streamlit as st

from pages._decode_step import step_table
from pages._shared import LIMITS, ensure_shell, share_link
from specviz import MODES, ConfigError
from specviz.analysis.theory import expected_accepted
from specviz.classroom import sandbox as sb
from specviz.core.rules import VERIFICATIONS
from specviz.viz import charts
from specviz.viz.plain import plain
from specviz.viz.render import run_html

ensure_shell()
st.title("Sandbox: one step by hand")
state = st.session_state

cols = st.columns([3, 2.2, 1.6, 0.8])
preset = cols[0].selectbox("Exercise", list(sb.PRESETS), key="sandbox_preset")
mode = cols[1].radio("Mode", MODES, key="sandbox_mode", horizontal=True)
lossless = mode == "lossless"
rule = cols[2].selectbox(
    "Verification (lossless)",
    VERIFICATIONS,
    key="sandbox_rule",
    disabled=not lossless,
    help="token: r ≤ p/q.  one-hot: r ≤ p(ŷ), as vLLM and SGLang verify EAGLE, MTP and n-gram "
    "drafts.  block: the last position whose r ≤ h (Sun et al.)",
)
if state.get("sandbox_loaded") != preset:  # a new exercise: its table, τ and draws
    case = sb.PRESETS[preset]
    state.update({"sandbox_loaded": preset, "sandbox_tau": case.tau, "sandbox_case": case, **sb.draw_values(case)})
tau = cols[3].number_input("τ", *LIMITS["sandbox_tau"], key="sandbox_tau")
case = sb.resize(state["sandbox_case"], tau)  # the edited table, resized: no edit is lost when τ changes
st.caption(
    f"**Rule shown — {sb.rule_of(mode, rule)}.** Edit q and p (one column per draft position; the last p is "
    "the target at position τ+1, where the bonus token comes from) and every draw."
)

edited = st.data_editor(
    sb.case_frame(case),
    key=f"sandbox_table_{preset}_{tau}",
    hide_index=True,
    num_rows="dynamic",
    column_config={"token": st.column_config.TextColumn("token", required=True)},
)
for name, total in sb.column_sums(edited).items():
    st.warning(f"Column **{name}** sums to {total:.3f}, not 1: it is used divided by {total:.3f}.", icon="⚖️")
for key, value in sb.draw_values(case).items():  # positions added by a larger τ start at the case's draws
    state.setdefault(key, value)
draw = {"format": "%.3f", "step": 0.01}
r_cols = st.columns(tau + 1)
for t in range(tau):
    r_cols[t].number_input(
        f"r{t + 1}", *LIMITS[f"sandbox_r{t}"], key=f"sandbox_r{t}", help="the acceptance draw", **draw
    )
seed = r_cols[tau].number_input("seed", *LIMITS["sandbox_seed"], key="sandbox_seed")
if lossless:  # the draft samples from q, and the next token is sampled: each draw on screen
    u_cols = st.columns(tau + 1)
    for t in range(tau):
        u_cols[t].number_input(
            f"u{t + 1}",
            *LIMITS[f"sandbox_u{t}"],
            key=f"sandbox_u{t}",
            **draw,
            help="the draft's draw: it proposes the token whose interval of q holds u",
        )
    u_cols[tau].number_input(
        "s",
        *LIMITS["sandbox_s"],
        key="sandbox_s",
        **draw,
        help="the draw that samples the next token from its distribution",
    )
if r_cols[tau].button("Draw", key="sandbox_draw", icon=":material/casino:", help="new draws from the seed"):
    r, u, s = sb.draw_all(tau, seed)
    state.update({f"sandbox_r{t}": r[t] for t in range(tau)})
    state.update({f"sandbox_u{t}": u[t] for t in range(tau)} | {"sandbox_s": s} if lossless else {})
    st.rerun()

try:
    draws = [state[k] for k in sb.draw_keys(tau)]
    case = sb.case_from_frame(edited, draws[:tau], draws[tau : 2 * tau], draws[-1])
    step = sb.sandbox_step(case, mode, rule)
except ConfigError as exc:
    st.error(f"**Check the table.** {plain(exc)}", icon=":material/error:")
    st.stop()
state["sandbox_case"] = case  # every edit kept, through τ changes and other pages
share_link("sandbox", {"sandbox_table": sb.case_to_json(case)})

rejected = f"position {step.n_accepted + 1} is the first rejected" if step.n_accepted < step.tau else "none rejected"
st.success(
    f"**n = {step.n_accepted}** of {step.tau} accepted ({rejected}); the target then adds "
    f"**'{plain(step.next_text)}'** by rule **{step.next_rule}**.",
    icon=":material/check_circle:",
)
for note in sb.explain(step, case, mode):  # computed from the table on screen, never a note written for another
    st.info(note, icon=":material/lightbulb:")
if lossless:  # what each rule keeps on average on this table, exactly (every draft q can sample, every draw)
    lengths = {name: expected_accepted(case.q, case.p, name) for name in VERIFICATIONS}
    st.markdown(
        "**Expected accepted draft tokens on this table** (exact, over every draft and every draw): "
        + ", ".join(
            f"{name} {'too many drafts to enumerate' if v is None else f'{v:.3f}'}" for name, v in lengths.items()
        )
    )
st.html(run_html("", [step], words=True, legend=True))
st.plotly_chart(charts.step_chart(step), key="sandbox_step_chart")
numbers, source = st.columns([3, 2])
with numbers:
    step_table(step, mode == "greedy", hidden=False, draws=False)
source.plotly_chart(charts.next_token_chart(step, height=300), key="sandbox_next_chart")
position = step.n_accepted if step.n_accepted < step.tau else step.tau - 1
st.markdown(
    f"**Position {position + 1}: q and p"
    + (" and the residual that lossless mode resampled from**" if step.residual_top else "**")
)
st.plotly_chart(charts.top_chart(step, position), key="sandbox_top_chart")
