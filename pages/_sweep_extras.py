"""The τ sweep's two side questions, each in an expander: one verify pass against τ + 1 one-token passes,
and chain against tree at the same verification budget (specviz.analysis.sweep, specviz.analysis.trees)."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._shared import compute_turn
from specviz.analysis.passes import verify_timing
from specviz.analysis.trees import compare as compare_trees
from specviz.viz.tree_chart import chain_tree_chart


def verify_timing_panel(pair: specviz.ModelPair, prompts: tuple[str, ...], tau: int, chat: bool | None) -> None:
    with st.expander("Why verify in one pass? One target pass over τ + 1 tokens against τ + 1 one-token passes"):
        if not st.button(f"Measure at τ = {tau} on the first prompt", key="sweep_verify", icon=":material/timer:"):
            return
        try:
            with compute_turn(), st.spinner("Timing both ways, alternating…"):
                timing = verify_timing(pair, prompts[0], tau, chat)
        except specviz.SpecvizError as exc:
            st.error(f"**Cannot time it.** {exc}", icon=":material/error:")
            return
        cols = st.columns(3)
        cols[0].metric(f"one pass over {timing.tokens} tokens", timing.parallel_ms.text(1, " ms"))
        cols[1].metric(f"{timing.tokens} one-token passes", timing.sequential_ms.text(1, " ms"))
        cols[2].metric("the pass costs", timing.ratio.text(2, "") + " one-token passes")
        st.caption(
            f"Medians of {timing.ratio.n} rounds, the two ways alternating, with their interquartile ranges. Scoring "
            "all draft tokens at once reads the weights once; one at a time reads them τ + 1 times. Whether the pass "
            "costs more than one token depends on the runtime: on llama.cpp a CPU's cores run out of compute past "
            "one token; torch-kernels keeps them busy on several rows."
        )


def chain_tree_panel(pair: specviz.ModelPair, prompts: tuple[str, ...], max_new: int, chat: bool | None) -> None:
    with st.expander("Chain against tree: the same verification budget (4, 8 and 16 nodes per target pass)"):
        st.markdown(
            "A **chain** of τ = B draft tokens and a **token tree** of `num_draft_tokens` = B nodes (`topk` children "
            "per expanded node, `steps` levels: 2×3, 3×4, 4×5) cost the target one pass each. The tree spends the "
            "budget on second and third guesses where the draft is unsure. Greedy, on the prompts and models above, "
            f"{max_new} tokens each; every step timed beside the target alone decoding the same tokens."
        )
        if st.button("Compare chain and tree", key="sweep_trees_run", icon=":material/account_tree:"):
            bar = st.progress(0.0, text="Starting…")
            with compute_turn():
                st.session_state["sweep_trees_result"] = compare_trees(
                    pair,
                    prompts,
                    max_new_tokens=max_new,
                    chat=chat,
                    progress=lambda done, total, what: bar.progress(done / total, text=f"{done} / {total}: {what}"),
                )
            bar.empty()
        trees = st.session_state.get("sweep_trees_result")
        if trees is None:
            return
        st.success(trees.verdict(), icon=":material/account_tree:")
        left, right = st.columns(2)
        left.plotly_chart(chain_tree_chart(trees, "tokens per step"), key="sweep_trees_tokens_chart")
        right.plotly_chart(chain_tree_chart(trees, "speedup"), key="sweep_trees_speedup_chart")
        st.table(trees.to_frame())
        st.caption("Speedups and v(budget + 1) with their 95% bootstrap intervals over steps; tokens per step counted.")
