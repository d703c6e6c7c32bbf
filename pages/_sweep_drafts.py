"""The τ sweep's "Across drafts" panel: the sweep above once per draft of the embedded target
(specviz.analysis.draft_sweep)."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._shared import cached_pair, heavy_job, heavy_turn
from specviz import policy
from specviz.analysis.draft_sweep import GRADED, summarize, sweep_drafts
from specviz.analysis.sweep import SweepSettings
from specviz.viz.plain import plain
from specviz.viz.sweep_charts import draft_sweep_chart


def drafts_panel(pair: specviz.ModelPair, target: str, settings: SweepSettings) -> None:
    """The sweep above once per draft of the embedded target (specviz.analysis.draft_sweep): where each pays."""
    with st.expander("Across drafts: the same sweep for the distilled draft and the target in 8, 4 and 2 bits"):
        if target != "embedded":
            st.caption("Drafts of graded bits are made from the embedded target: choose an embedded pair above.")
            return
        chosen = st.multiselect("Drafts", list(GRADED), key="sweep_drafts", help="each one runs the whole sweep")
        runs = len(settings.taus) * len(settings.prompts) * len(settings.seeds) * len(chosen)
        st.caption(
            f"The sweep's τ values, prompts and seeds for each draft: {runs} runs, each step timed beside the target "
            "alone. The quantized drafts are llama.cpp's quantizer's copies of the target, made here on first use."
        )
        caches = st.session_state.setdefault("sweep_drafts_cache", {})
        if st.button("Sweep across drafts", key="sweep_drafts_run", icon=":material/stacked_line_chart:"):
            bar = st.progress(0.0, text="Loading the drafts…")
            try:
                policy.current().check_sweep(runs)  # class mode: bounded runs
                pairs = {label: cached_pair("embedded", GRADED[label], pair.runtime) for label in chosen}
                with heavy_job():  # each step a heavy turn of its own
                    for done, total, label in sweep_drafts(pairs, settings, caches, turn=heavy_turn):
                        bar.progress(done / total, text=f"{done} / {total}: {label}")
            except specviz.SpecvizError as exc:
                st.error(f"**Cannot sweep across drafts.** {plain(exc)}", icon=":material/error:")
                return
            finally:
                bar.empty()
        done = {label: caches[label] for label in chosen if caches.get(label)}
        if not done:
            return
        pairs = {label: cached_pair("embedded", GRADED[label], pair.runtime) for label in done}
        result = summarize(pairs, settings, caches)
        st.success(plain(result.verdict()), icon=":material/stacked_line_chart:")
        st.plotly_chart(draft_sweep_chart(result), key="sweep_drafts_chart")
        st.table(
            [
                {
                    "draft": row.draft,
                    "best τ": row.tau,
                    "speedup": row.speedup.text(),
                    "tokens per step": round(row.tokens_per_step, 2),
                    "α": "–" if row.alpha is None else round(row.alpha, 3),
                    "c": "–" if row.c is None else row.c.text(unit=""),
                }
                for row in result.best().values()
            ]
        )
