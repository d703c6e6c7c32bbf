"""What the Decode page draws of the run as a whole: before its first step, what a step can yield; then the running
metrics and the run's charts up to the step shown, and the run as the serving engines log it. Widgets and calls; the
step shown itself: pages/_decode/drawing.py (whose `chart` builds each chart once per session for the same trace)."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._common.widgets import lazy_expander, limits
from pages._decode.drawing import chart
from pages._serving.busy import busy_notice
from specviz.analysis.engine_logs import GLOSSARY, engine_report
from specviz.viz import run_charts
from specviz.viz import view as view_of
from specviz.viz.tree_chart import tree_run_chart


def before_first_step(tau: int) -> None:
    """Before the first Step: what to do, and what a step can yield. Drawn now, the chart also loads the browser's
    chart code, which made the first Step take seconds longer than the next ones."""
    st.info(
        "Press **Step**: the draft proposes τ tokens, the target scores them all in one pass, and each is "
        "accepted or rejected. Hover the marked tokens for q, p, p/q and r.",
        icon=":material/info:",
    )
    st.markdown(view_of.expectation(tau))
    st.plotly_chart(run_charts.theory_chart([0.5, 0.7, 0.9], max_tau=max(8, tau)), key="decode_expect_chart")


def draw_run(run: specviz.RunTrace, view: specviz.StepTrace, hidden: bool, live: bool = True) -> None:
    """The running metrics up to the step shown (until a quiz's Reveal, the step before), the accepted length of
    every step, the per-position (per-depth) rates and, for trees, depth against nodes verified. `live`: timed on
    this server just now (not a replayed trace), so a busy server's notice goes above its times."""
    shown = run.steps[:-1] if hidden else run.steps  # until Reveal, nothing counts the current step
    counted = shown if hidden else run.steps[: view.index + 1]
    m, upto = view_of.metrics_upto(run, counted)
    st.subheader("Running metrics" + (" (up to the previous step until Reveal)" if hidden else f": {upto}"))
    if live:
        busy_notice()
    metrics_row(m, run.target_top_k, run.config.tree, counted)
    if cost := view_of.lossy_cost(run.config, m, counted[-1] if counted else view, upto):  # a lossy rule's price
        st.warning(cost, icon=":material/balance:")
    elif run.config.lossy:  # SGLang's thresholds on a tree: walked as its kernel does, its exact cost a chain's only
        st.warning(view_of.LOSSY_TREE, icon=":material/balance:")
    left, right = st.columns(2)
    left.markdown("**Accepted length per step** (the whole run; the step shown is marked)")
    left.plotly_chart(
        chart(run_charts.history_chart, shown, None if hidden else view.index), key="decode_history_chart"
    )
    where = "depth" if run.config.tree else "position"
    right.markdown(f"**Per-{where} acceptance rate** ({upto})", help=GLOSSARY["per-position acceptance rate"] + ".")
    rates = (m.per_position_acceptance_rate, m.conditional_per_position_acceptance_rate, run.config.tree)
    right.plotly_chart(chart(run_charts.per_position_chart, *rates), key="decode_position_chart")
    if run.config.tree and not hidden:
        st.markdown("**Tree steps**: the depth each step accepted, against the nodes its one pass verified")
        st.plotly_chart(chart(tree_run_chart, shown), key="decode_tree_run_chart")
    if not hidden:
        engine_logs_panel(run)


def metrics_row(m: specviz.Metrics, target_top_k: int | None = None, tree: bool = False, steps=()) -> None:
    """The running metrics, one tile each (specviz.viz.view.metric_tiles), in two rows of three: no
    label is cut at 1280 px. A timing tile's note (its spread over `steps`, or "one step") under its value."""
    tiles = view_of.metric_tiles(m, target_top_k, tree, steps)
    for column, tile in zip([*st.columns(3), *st.columns(3)], tiles, strict=True):
        column.metric(tile.label, tile.value, tile.note or None, "off", help=tile.help, delta_arrow="off")


def engine_logs_panel(run: specviz.RunTrace) -> None:
    """The run as vLLM, SGLang and llama.cpp would log it (specviz.analysis.engine_logs), to read beside an
    engine's own log; the formulas are in docs/algorithm.md, "Glossary: the same numbers in the serving engines"."""
    with lazy_expander("This run as vLLM, SGLang and llama.cpp log it", "decode_logs_open") as box:
        if not box.open:
            return
        label = "Steps per vLLM log interval (0: the whole run in one line)"
        every = st.columns([1, 2])[0].number_input(label, *limits()["decode_log_every"], key="decode_log_every")
        report = engine_report(run, int(every))
        st.code(report, language=None, wrap_lines=True)
        st.caption(
            "vLLM's mean acceptance length is specviz's (1 + accepted / steps that drafted); its per-position rate "
            "is specviz's unconditional rate. SGLang's accept rate counts the bonus token and the tree's root: it "
            "is not a draft acceptance rate."
        )
        name, key = "specviz-engine-logs.txt", "decode_logs_download"
        st.download_button("Download as a log", report, name, "text/plain", key=key, on_click="ignore")
