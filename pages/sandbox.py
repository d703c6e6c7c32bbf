"""Sandbox: one speculative step on hand-made distributions. Edit q and p, set every draw, see the rule."""

import streamlit as st

from pages._common.present import COMPACT_CSS, presentation_toggle
from pages._common.shell import ensure_shell
from pages._common.widgets import knob_widgets, limits, rule_widget, share_link
from pages._decode import drawing as _drawing
from pages._serving import compute as _compute
from specviz import MODES, ConfigError
from specviz.classroom import sandbox as sb
from specviz.viz import charts, step_chart
from specviz.viz.plain import plain
from specviz.viz.render import argmax_ties, next_token_source, run_html

ensure_shell()
state = st.session_state
present = bool(state.get("sandbox_present"))  # a projector: one row of controls, the verdict and chart first
if present:  # no title; the mode's three choices on one line
    cols = st.columns([2.5, 2.7, 1.9, 0.7, 2.2], vertical_alignment="bottom")
    toggle_at = cols[4]
else:
    st.html(COMPACT_CSS)
    head = st.columns([4, 1.4], vertical_alignment="center")
    head[0].title("Sandbox: one step by hand")
    toggle_at = head[1]
    cols = st.columns([3, 2.2, 1.6, 0.8], vertical_alignment="bottom")
preset = cols[0].selectbox("Exercise", [*sb.PRESETS, sb.CUSTOM], key="sandbox_preset")
mode = cols[1].radio("Mode", MODES, key="sandbox_mode", horizontal=True)
lossless = mode == "lossless"
with cols[2]:  # the lossless rules, and the engines' lossy ones with their settings (labelled lossy)
    rule = rule_widget("sandbox", mode)
knobs = knob_widgets("sandbox", rule)  # a lossy rule's settings, as SpecConfig names them
with toggle_at:
    presentation_toggle("sandbox_present")
state.setdefault("sandbox_case", next(iter(sb.PRESETS.values())))
if state.get("sandbox_loaded") != preset:  # a new exercise: its table, context, τ and draws (custom: the table kept)
    case = state["sandbox_case"] if preset == sb.CUSTOM else sb.PRESETS[preset]
    state.update({"sandbox_loaded": preset, "sandbox_tau": case.tau, "sandbox_case": case})
    if preset != sb.CUSTOM:
        state.update({"sandbox_context": case.context, **sb.draw_values(case)})
tau = cols[3].number_input("τ", *limits()["sandbox_tau"], key="sandbox_tau")
case = sb.resize(state["sandbox_case"], tau)  # the edited table, resized: no edit is lost when τ changes
results = st.container()  # the verdict, the marked text and the chart: first on screen, drawn once the table is read

st.markdown("**The worksheet**: the text before the draft, q and p per position, and every draw")
context = st.text_input(
    "Context: the confirmed text before the draft (shown as the book writes it)",
    key="sandbox_context",
    max_chars=200,
    placeholder="The cat sat on the",
)
st.caption(
    f"**Rule shown — {sb.rule_of(mode, rule)}.** Edit q and p (one column per draft position; the last p is "
    "the target at position τ+1, where the bonus token comes from) and every draw."
)
editor, base = f"sandbox_table_{preset}_{tau}", state.get("sandbox_base", {})
if editor not in state or editor not in base:  # a new grid starts from the table as typed; its edits stay its own
    base = state["sandbox_base"] = {editor: sb.case_frame(case)}  # (fed its own output, the grid dropped edits)
edited = st.data_editor(
    base[editor],
    key=editor,
    hide_index=True,
    num_rows="dynamic",
    column_config={c: st.column_config.TextColumn(c, **sb.cell_config(c)) for c in base[editor]},  # text, read by sb
)
for name, total in sb.column_sums(edited).items():
    st.warning(f"Column **{name}** sums to {total:.6g}, not 1: it is used divided by {total:.6g}.", icon="⚖️")
for key, value in sb.draw_values(case).items():  # positions added by a larger τ start at the case's draws
    state.setdefault(key, value)
draw = {"format": "%.3f", "step": 0.01}
r_cols = st.columns(tau + 1)
for t in range(tau):
    r_cols[t].number_input(
        f"r{t + 1}", *limits()[f"sandbox_r{t}"], key=f"sandbox_r{t}", help="the acceptance draw", **draw
    )
seed = r_cols[tau].number_input("seed", *limits()["sandbox_seed"], key="sandbox_seed")
if lossless:  # the draft samples from q, and the next token is sampled: each draw on screen
    u_cols = st.columns(tau + 1)
    for t in range(tau):
        u_cols[t].number_input(
            f"u{t + 1}",
            *limits()[f"sandbox_u{t}"],
            key=f"sandbox_u{t}",
            **draw,
            help="the draft's draw: it proposes the token whose interval of q holds u",
        )
    u_cols[tau].number_input(
        "s",
        *limits()["sandbox_s"],
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
    case = sb.case_from_frame(edited, draws[:tau], draws[tau : 2 * tau], draws[-1], context)
    step = sb.sandbox_step(case, mode, rule, knobs)
except ConfigError as exc:
    results.error(f"**Check the table.** {plain(exc)}", icon=":material/error:")
    st.stop()
state["sandbox_case"] = case  # every edit kept, through τ changes and other pages
share_link("sandbox", {"sandbox_table": sb.case_to_json(case)}, show=not present)

with results:
    rejected = (
        f"position {step.n_accepted + 1} is the first rejected" if step.n_accepted < step.tau else "none rejected"
    )
    name = sb.table_name(preset, case, mode)  # on a projector the menu names an exercise: said only when it is not one
    named = "" if present and name == f"Exercise '{preset}'" else f"{plain(name)}: "
    st.success(
        f"{named}**n = {step.n_accepted}** of {step.tau} accepted ({rejected}); the target then adds "
        f"**'{plain(step.next_text)}'** by rule **{step.next_rule}**.",
        icon=":material/check_circle:",
    )
    before = f"{context.rstrip()} |" if context.strip() else ""  # where the draft starts, as the book marks it
    st.html(run_html(before, [step], words=True, legend=True, figures=present))
    chart_col, next_col = st.columns([2, 1]) if present else (st.container(), None)
    size = {"height": 380, "font_size": 20} if present else {"height": 380}
    chart_col.plotly_chart(step_chart.step_chart(step, **size), key="sandbox_step_chart")
    if next_col is not None:
        next_col.plotly_chart(charts.next_token_chart(step, height=380, font_size=18, rows=6), key="sandbox_next_chart")
same = next_token_source(step)[1]  # the rejected token chosen again by argmax, and a tie: why, as Decode says it
for note in [*sb.explain(step, case, mode), *([same] if same else []), *argmax_ties(step, mode)]:
    st.info(note, icon=":material/lightbulb:")  # each computed from the table on screen, never another's
if lossless:  # what each rule keeps on average on this table (as the step uses it), exactly
    with _compute.compute_turn():  # priced before it starts (capped), and queued like a click
        st.markdown(sb.expected_lengths(sb.normalised(case)))
numbers, source = st.columns([3, 2]) if next_col is None else (st.container(), None)
with numbers:
    _drawing.step_table(step, mode == "greedy", hidden=False, draws=False)
if source is not None:
    source.plotly_chart(charts.next_token_chart(step, height=300), key="sandbox_next_chart")
position = step.n_accepted if step.n_accepted < step.tau else step.tau - 1
st.markdown(
    f"**Position {position + 1}: q and p"
    + (" and the residual that lossless mode resampled from**" if step.residual_top else "**")
)
st.plotly_chart(charts.top_chart(step, position), key="sandbox_top_chart")
