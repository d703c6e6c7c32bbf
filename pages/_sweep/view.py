"""The τ sweep's results on the page, live or frozen: the verdict, the charts and the tables, all drawn
from one SweepSummary (specviz.analysis.sweep), so a snapshot looks exactly as the measurement did; and the
sidebar's τ policies."""

from __future__ import annotations

import streamlit as st

from pages._common.widgets import limits
from pages._serving import timings as timings_ui
from pages._serving.busy import busy_notice
from specviz.analysis.busy import where_measured
from specviz.analysis.sweep_summary import SweepSummary
from specviz.viz import sweep_charts as charts
from specviz.viz.plain import plain
from specviz.viz.render import sentence


def refused(dropped: list[tuple[int, str]]) -> None:
    """The τ whose timings could not be right (specviz.analysis.sweep.Sweep.drop_impossible): why, and that Run
    times them again."""
    for tau, why in dropped:
        st.warning(
            f"**τ = {tau} could not be measured:** {plain(sentence(why))} Its runs are taken out: **Run** times them "
            "again.",
            icon=":material/timer_off:",
        )


def conditions(runtime: str, prompts: int, pair=None, tau: int = 4) -> None:
    """Above live results: the busy server's notice, and where and on what the speedups were measured (so they
    are not read against the README's or a lesson's, measured on other prompts, machines or loads); the pair's
    costs at the sweep's largest τ where a page has measured them (the same on every page)."""
    load = busy_notice()
    st.caption(
        f"Measured: {where_measured(runtime, load)}, on the {prompts} prompt{'s' if prompts != 1 else ''} in the "
        "sidebar. A speedup depends on the prompt, the draft, the runtime, the machine and its load."
    )
    if pair is not None:
        timings_ui.costs(pair, tau, "sweep_measure_pair", measure=False)


def draw(summary: SweepSummary, present: bool) -> None:
    best = summary.best_tau_measured()
    faster = best is not None and summary.row(best).speedup.above(1.0)
    shown = st.success if faster else st.info if best is None else st.warning  # no clocked best: the counts' answer
    shown(summary.verdict(), icon=":material/insights:")
    if present:  # a projector: the two charts that answer the question, each full width in large type
        size = {"font_size": 20, "height": 500}
        st.plotly_chart(charts.sweep_speedup_chart(summary, **size, width=1200), key="sweep_speedup_chart")
        st.plotly_chart(charts.sweep_acceptance_chart(summary, **size), key="sweep_acceptance_chart")
        return
    left, right = st.columns(2)
    left.markdown(
        "**Speedup over the target alone: measured (95% intervals), S(τ) with v = 1, S_v(τ) with the measured v**"
    )
    left.plotly_chart(charts.sweep_speedup_chart(summary), key="sweep_speedup_chart")
    right.markdown("**Mean acceptance length: measured and (1 − α^(τ+1)) / (1 − α)**")
    right.plotly_chart(charts.sweep_acceptance_chart(summary), key="sweep_acceptance_chart")
    st.caption(charts.THEORY_NOTE)
    left.markdown("**Accepted draft tokens per step**")
    left.plotly_chart(charts.sweep_length_chart(summary), key="sweep_length_chart")
    right.markdown("**Per-position acceptance rate (of all steps) against a^i**")
    right.plotly_chart(charts.sweep_position_chart(summary), key="sweep_position_chart")
    if summary.policies:
        st.subheader("τ policies beside fixed τ")
        st.table(summary.policy_frame())
        st.caption("mean τ: draft tokens per step as the policy chose them. A policy's trace records its τ per step.")
    st.subheader("Results")
    st.table(summary.to_frame())


def policy_widgets() -> tuple[tuple[str, ...], int, float]:
    """The sidebar's τ policies (heuristic, confidence), run beside the fixed τ: (those on, the policy τ, the confidence
    threshold)."""
    st.header("τ policies")
    policies = tuple(
        name
        for name, on in (
            ("heuristic", st.toggle("Heuristic: +2 after all accepted, −1 after a rejection", key="sweep_heuristic")),
            ("confidence", st.toggle("Confidence: stop drafting when the draft is unsure", key="sweep_confidence")),
        )
        if on
    )
    policy_tau = st.number_input(
        "Policy τ: the start (heuristic) or the cap (confidence)",
        *limits()["sweep_policy_tau"],
        key="sweep_policy_tau",
        disabled=not policies,
    )
    threshold = st.slider(
        "Confidence threshold (top probability of q)",
        *limits()["sweep_threshold"],
        step=0.05,
        key="sweep_threshold",
        disabled="confidence" not in policies,
    )
    return policies, policy_tau, threshold
