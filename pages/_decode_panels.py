"""The Decode page's panels around a step: the same step under each verification rule, the running metrics and the
run's charts, and the run as the serving engines log it. Widgets and calls; what to say is decided in specviz.viz
and specviz.analysis."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._busy import busy_notice
from pages._shared import LIMITS, lazy_expander
from specviz.analysis.engine_logs import GLOSSARY, engine_report
from specviz.viz import charts, run_charts, slide
from specviz.viz import view as view_of
from specviz.viz.memo import FigureMemo
from specviz.viz.render import rule_sentence
from specviz.viz.tree_chart import tree_run_chart


def chart(build, *args, **kwargs):
    """`build(*args, **kwargs)`, built once per session for the same traces (specviz.viz.memo)."""
    return st.session_state.setdefault("specviz_figures", FigureMemo())(build, *args, **kwargs)


def rules_panel(view: specviz.StepTrace, outcomes, pair: specviz.ModelPair | None, mode: str) -> None:
    """The same step under each verification rule: the same draft and the same draws r, decided by token-wise,
    one-hot and block verification (docs/algorithm.md, "Verification as serving engines run it")."""
    if view.tree is not None or view.tau == 0:
        return
    title = "The same step under each rule: token-wise, one-hot q (vLLM's default), block"
    with lazy_expander(title, "decode_rules_open") as box:
        if not box.open:
            return
        if mode != "lossless":
            st.caption("The verification rules decide lossless steps: choose **lossless** mode to compare them.")
        elif outcomes is None:
            st.caption("A saved trace keeps the rule it ran, not the step's full distributions: step a live run.")
        else:
            st.plotly_chart(chart(charts.rules_chart, view, outcomes), key="decode_rules_chart")
            st.markdown("\n".join(f"- {rule_sentence(view, o, pair.codec.token_text)}" for o in outcomes))
            st.caption(
                "The same draft tokens and the same draws r for every rule. h is not the chance that a token "
                "is kept, and block's passes need not run in a row: it keeps everything up to its last pass."
            )


def engine_logs_panel(run: specviz.RunTrace) -> None:
    """The run as vLLM, SGLang and llama.cpp would log it (specviz.analysis.engine_logs), to read beside an
    engine's own log; the formulas are in docs/algorithm.md, "Glossary: the same numbers in the serving engines"."""
    with lazy_expander("This run as vLLM, SGLang and llama.cpp log it", "decode_logs_open") as box:
        if not box.open:
            return
        label = "Steps per vLLM log interval (0: the whole run in one line)"
        every = st.columns([1, 2])[0].number_input(label, *LIMITS["decode_log_every"], key="decode_log_every")
        report = engine_report(run, int(every))
        st.code(report, language=None, wrap_lines=True)
        st.caption(
            "vLLM's mean acceptance length is specviz's (1 + accepted / steps that drafted); its per-position rate "
            "is specviz's unconditional rate. SGLang's accept rate counts the bonus token and the tree's root: it "
            "is not a draft acceptance rate."
        )
        name, key = "specviz-engine-logs.txt", "decode_logs_download"
        st.download_button("Download as a log", report, name, "text/plain", key=key, on_click="ignore")


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


def slide_panel(run: specviz.RunTrace, view: specviz.StepTrace, names: tuple[str, str], own: bool = False) -> None:
    """The step shown as one 16:9 picture for a slide (specviz.viz.slide): the marked text above q against p and every
    decision, saved by the chart's own camera button at 1920×1080 (made in the browser: nothing runs here). `own`: a
    typed draft, whose draft model's own first choices are named."""
    with lazy_expander(
        "This step as a 16:9 picture for a slide", "decode_slide_open", icon=":material/slideshow:"
    ) as box:
        if not box.open:
            return
        before = "".join(slide.emitted_text(s) for s in run.steps[: view.index])
        context = (f"{run.prompt}\n" if run.chat else run.prompt_text) + before
        st.plotly_chart(
            chart(slide.slide_figure, context, view, names, own=own),
            key="decode_slide_chart",
            config=slide.slide_config(slide.slide_name(view)),
            width="content",
        )
        st.caption(
            "Hover the picture and press the camera at its top right: it saves a 1920×1080 PNG (16:9), drawn by your "
            "browser."
        )


def metrics_row(m: specviz.Metrics, target_top_k: int | None = None, tree: bool = False, steps=()) -> None:
    """The running metrics, one tile each (specviz.viz.view.metric_tiles), in two rows of three: no
    label is cut at 1280 px. A timing tile's note (its spread over `steps`, or "one step") under its value."""
    tiles = view_of.metric_tiles(m, target_top_k, tree, steps)
    for column, tile in zip([*st.columns(3), *st.columns(3)], tiles, strict=True):
        column.metric(tile.label, tile.value, tile.note or None, "off", help=tile.help, delta_arrow="off")


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
