"""τ sweep: how the accepted length and the speedup change with τ, theory beside measurement."""

import streamlit as st

import specviz
from pages._common import snapshot as snapshots
from pages._common.picker import follow_decode, model_picker
from pages._common.present import COMPACT_CSS, presentation_toggle
from pages._common.shell import ensure_shell
from pages._common.widgets import (
    downloads,
    knob_widgets,
    limits,
    prompt_chars,
    rule_widget,
    sampling_widgets,
    share_link,
)
from pages._serving import config as _server
from pages._serving import timings as timings_ui
from pages._serving.compute import heavy_job
from pages._serving.pairs import load_pair
from pages._sweep import drafts as sweep_drafts
from pages._sweep import extras, view
from specviz.analysis.snapshot import freeze, runtime_of
from specviz.analysis.sweep import Sweep, SweepSettings
from specviz.analysis.sweep_summary import SweepSummary
from specviz.viz.plain import plain

ensure_shell()
with st.sidebar:
    st.header("Models")
    follow_decode("sweep")  # after a Step on Decode with a pair of your own: that pair; else a button brings it
    chosen = model_picker("sweep")  # None: no pair to load (the sidebar says why)
    st.header("Prompts")
    prompts_text = st.text_area("One prompt per line", key="sweep_prompts", height=110, max_chars=prompt_chars())
    chat = st.toggle("Chat template", key="sweep_chat", help="Wrap each prompt as a user message (Instruct models)")
    st.header("Sweep")
    low, high = st.slider("τ range", *limits()["sweep_taus"], key="sweep_taus")
    max_new = st.number_input("Tokens per run", *limits()["sweep_max_new"], key="sweep_max_new")
    seeds = st.number_input("Seeds per τ and prompt", *limits()["sweep_seeds"], key="sweep_seeds")
    sampling = sampling_widgets("sweep")
    rule = rule_widget("sweep", sampling["mode"])
    knobs = knob_widgets("sweep", rule)  # a lossy rule's settings
    policies, policy_tau, threshold = view.policy_widgets()  # τ policies beside the fixed τ

top = st.columns([3, 1.4], vertical_alignment="bottom")
top[0].html(COMPACT_CSS)
with top[1]:
    present = presentation_toggle("sweep_present")
top[0].title("Speedup against τ" if present else "Acceptance length and speedup against τ")
if frozen := snapshots.opened("sweep"):  # a snapshot for slides: its numbers, drawn as they were
    view.draw(SweepSummary.from_dict(frozen.data), present)
    snapshots.panel("sweep", frozen)
    st.stop()
prompts = tuple(line.strip() for line in prompts_text.splitlines() if line.strip())
pair = load_pair(*chosen) if chosen else None
if pair is None:
    st.stop()
try:
    settings = SweepSettings(
        taus=tuple(range(low, high + 1)),
        prompts=prompts,
        seeds=tuple(range(seeds)),
        max_new_tokens=max_new,
        chat=None if chat else False,
        policies=policies,
        policy_tau=policy_tau,
        confidence=threshold,
        verification=rule,
        knobs=tuple(knobs.items()),
        **sampling,
    )
    kept = timings_ui.book().get(pair)  # the pair's calibration kept on this machine: each τ's counts costed with it
    sweep = Sweep(pair, settings, st.session_state.setdefault("sweep_cache", {}), timings=kept)
    _server.class_policy().check_sweep(len(sweep.units()))  # class mode: a sweep's runs are bounded
except specviz.SpecvizError as exc:
    st.error(f"**Cannot sweep.** {plain(exc)}", icon=":material/error:")
    st.stop()

view.refused(sweep.drop_impossible(busy=False))  # impossible timings are timed again; a busy τ keeps its counts
total, pending = len(sweep.units()), len(sweep.pending())
cols = st.columns([1.6, 1, 4])
run_clicked = cols[0].button(
    f"Run {pending} of {total} units" if pending else "All finished",
    type="primary",
    key="sweep_run",
    disabled=not pending,
    icon=":material/play_arrow:",
)
cols[1].button("Stop", key="sweep_stop", icon=":material/stop:", help="Keeps every finished run")
if not present:
    cols[2].caption(
        f"{len(prompts)} prompt(s) × τ {low}–{high} × {seeds} seed(s), {max_new} tokens each; each step timed beside "
        "the target alone decoding the same tokens. Finished runs are cached: revisiting costs nothing."
    )
if run_clicked:
    bar = st.progress(0.0, text="Starting…")
    with heavy_job():  # class mode: a few heavy jobs at once, each run in a turn of its own
        for done, _, unit in sweep.advance():  # a heavy turn a step: the class's Steps go between
            bar.progress(
                done / total, text=f"{done} / {total}: τ = {unit.tau}, seed {unit.seed}, prompt {unit.prompt_index + 1}"
            )
    st.rerun()  # redraw the buttons and results from the finished cache
if not present:
    extras.verify_timing_panel(pair, prompts, high, settings.chat)
    extras.chain_tree_panel(pair, prompts, max_new, settings.chat)
    extras.rules_panel(pair, prompts, (low, high), max_new, settings.chat, sampling)
    sweep_drafts.drafts_panel(pair, *chosen, settings)

result = sweep.result()
if not result.runs:
    st.info("Press **Run** to measure. A sweep of τ 1–8 over two prompts takes a minute or two on a laptop CPU.")
    share_link("sweep", show=not present)
    st.stop()
if not result.complete:
    st.warning(f"Stopped with {result.pending} of {total} units left; the charts show what finished. Run to go on.")
summary = result.summary()
names = {"runtime": pair.runtime, "target": pair.target.name, "draft": pair.draft.name}
st.session_state["pay_sweep"] = {**names, "summary": summary}  # what "Would it pay there?" carries over
view.conditions(runtime_of(pair), len(prompts), pair, high)
view.draw(summary, present)
downloads(
    "sweep",
    "specviz-sweep",
    lambda: result.to_json(indent=1),
    lambda: summary.to_frame().to_csv(index=False),
    ("Download JSON", "Download CSV"),
)
snapshots.panel("sweep", freeze("sweep", runtime_of(pair), summary.to_dict()))
share_link("sweep", show=not present)
