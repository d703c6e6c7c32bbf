"""Reading a trace (the current run or a replayed one): where the time went and the bottleneck."""

import contextlib

import streamlit as st

import specviz
from specviz.analysis.diagnosis import diagnose, one_token_time
from specviz.core.trace import RunTrace


@st.cache_resource(show_spinner=False, max_entries=64)
def _one_token_ms(_pair: specviz.ModelPair, target: str, ids: tuple[int, ...], _turn=None) -> float:
    """The target's one-token time after the prompt, once per process for a target and prompt
    (shared: timing it costs a few target passes, in a compute turn; a cached value takes none)."""
    with _turn() if _turn else contextlib.nullcontext():
        return one_token_time(_pair, ids)


def trace_reading(run: RunTrace, pair: specviz.ModelPair | None = None, turn=None) -> None:
    """With the live `pair`, the target's one-token time is measured (in a compute `turn`) so that the
    reading can name the verify cost v; a replayed trace has no model to time."""
    one_token_ms = None
    if pair is not None and run.steps:
        one_token_ms = _one_token_ms(pair, run.target_name, tuple(run.prompt_ids), turn)
    d = diagnose(run, one_token_ms)
    title = f"Reading this trace (the whole run, {len(run.steps)} steps): where the time went, and the bottleneck"
    with st.expander(title, icon=":material/troubleshoot:"):
        shares = d.shares()
        cols = st.columns(3)
        cols[0].metric("drafting", f"{shares['draft']:.0%}", help=f"{d.draft_ms:.0f} ms, all draft phases")
        cols[1].metric("verifying", f"{shares['verify']:.0%}", help=f"{d.verify_ms:.0f} ms, all target passes")
        cols[2].metric("reading the prompt", f"{shares['prefill']:.0%}", help=f"{d.prefill_ms:.0f} ms, both models")
        cols = st.columns(3)
        predicted = "–" if d.predicted_speedup is None else f"{d.predicted_speedup:.2f}×"
        cols[0].metric(f"S(τ = {d.tau}), v = 1", predicted, help="(1 − α^(τ+1)) / ((1 − α)(τc + 1)): Leviathan et "
                       "al., who take a pass over τ + 1 tokens to cost one over a single token")  # fmt: skip
        with_v = "–" if d.predicted_speedup_v is None else f"{d.predicted_speedup_v:.2f}×"
        cols[1].metric(f"S_v(τ = {d.tau}), measured v", with_v,
                       help="E / (τc + v(τ+1)), with v the verify cost measured on this runtime (SPEC.md)")  # fmt: skip
        achieved = "–" if d.run_speedup is None else f"{d.run_speedup:.2f}×"
        per_step = "its tokens per step over the cost of a step, τc + v, in one-token target passes"
        cols[2].metric("this run vs the target alone", achieved, help=per_step)
        st.markdown(f"**Bottleneck.** {d.bottleneck}")
        alpha = "–" if d.alpha is None else f"{d.alpha:.3f}"
        c = "–" if d.c is None else f"{d.c:.3f}"
        approx = (f" — approximate (top-{run.target_top_k}): the remote target returned only its top "
                  f"{run.target_top_k} probabilities" if run.target_top_k else "")  # fmt: skip
        if d.verify_cost is None:
            timing = ("c = one draft forward over one verify pass, as recorded in this trace; a replayed trace has no "
                      "model to time a one-token pass, so v is not known and S(τ) may promise too much.")  # fmt: skip
        else:
            timing = (f"c = one draft forward over a one-token target pass ({one_token_ms:.0f} ms, timed on this "
                      f"runtime); v(τ + 1) = {d.verify_cost:.2f}: this run's verify passes over that "
                      "time.")  # fmt: skip
        st.caption(f"α = {alpha} (mean Σ min(p, q) over draft positions{approx}); c = {c}: {timing}")
