"""Reading a trace (the current run or a replayed one): where the time went and the bottleneck."""

import streamlit as st

from specviz.analysis.diagnosis import diagnose
from specviz.core.trace import RunTrace


def trace_reading(run: RunTrace) -> None:
    d = diagnose(run)
    title = f"Reading this trace (the whole run, {len(run.steps)} steps): where the time went, and the bottleneck"
    with st.expander(title, icon=":material/troubleshoot:"):
        shares = d.shares()
        cols = st.columns(4)
        cols[0].metric("drafting", f"{shares['draft']:.0%}", help=f"{d.draft_ms:.0f} ms, all draft phases")
        cols[1].metric("verifying", f"{shares['verify']:.0%}", help=f"{d.verify_ms:.0f} ms, all target passes")
        cols[2].metric("reading the prompt", f"{shares['prefill']:.0%}", help=f"{d.prefill_ms:.0f} ms, both models")
        predicted = "–" if d.predicted_speedup is None else f"{d.predicted_speedup:.2f}×"
        cols[3].metric(f"S(τ = {d.tau}) from α and c", predicted, help="(1 − α^(τ+1)) / ((1 − α)(τc + 1))")
        st.markdown(f"**Bottleneck.** {d.bottleneck}")
        alpha = "–" if d.alpha is None else f"{d.alpha:.3f}"
        c = "–" if d.c is None else f"{d.c:.3f}"
        approx = (f" — approximate (top-{run.target_top_k}): the remote target returned only its top "
                  f"{run.target_top_k} probabilities" if run.target_top_k else "")  # fmt: skip
        st.caption(f"α = {alpha} (mean Σ min(p, q) over draft positions{approx}); c = {c} (one draft forward over "
                   "one target pass, as recorded in this trace).")  # fmt: skip
