"""The τ sweep's side questions, each in an expander: one verify pass against τ + 1 one-token passes, chain against
tree at the same verification budget, and what each verification rule keeps (specviz.analysis: passes, trees,
rules_compare)."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._serving import config as _server
from pages._serving.compute import heavy_job
from specviz.analysis.passes import verify_timing
from specviz.analysis.rules_compare import compare_rules
from specviz.analysis.trees import compare as compare_trees
from specviz.viz.plain import plain
from specviz.viz.sweep_charts import rules_acceptance_chart
from specviz.viz.tree_chart import chain_tree_chart


def verify_timing_panel(pair: specviz.ModelPair, prompts: tuple[str, ...], tau: int, chat: bool | None) -> None:
    with st.expander("Why verify in one pass? One target pass over τ + 1 tokens against τ + 1 one-token passes"):
        if not st.button(f"Measure at τ = {tau} on the first prompt", key="sweep_verify", icon=":material/timer:"):
            return
        try:
            with heavy_job(), st.spinner("Timing both ways, alternating…"):  # a heavy turn a round
                timing = verify_timing(pair, prompts[0], tau, chat)
        except specviz.SpecvizError as exc:
            st.error(f"**Cannot time it.** {plain(exc)}", icon=":material/error:")
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
            with heavy_job():  # each step a heavy turn of its own, timed beside the target alone in that turn
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


def rules_panel(
    pair: specviz.ModelPair, prompts: tuple[str, ...], taus: tuple[int, int], max_new: int, chat, sampling: dict
) -> None:
    with st.expander("Verification rules: what token-wise, one-hot q (vLLM's default) and block keep at each τ"):
        low, high = taus
        st.markdown(
            f"Lossless runs at τ = {low}–{high} on the prompts above, {max_new} tokens each, every step's draft and "
            "draws judged by each rule: token-wise (r ≤ min(1, p/q)), one-hot q (r ≤ p(ŷ): what vLLM and SGLang "
            "run for EAGLE, MTP and n-gram drafts) and block (thresholds from the whole draft, the last pass kept). "
            "All three keep the target's distribution; they differ in how many draft tokens a target pass keeps."
        )
        if st.button("Compare the rules", key="sweep_rules_run", icon=":material/rule:"):
            bar = st.progress(0.0, text="Starting…")
            sampled = {k: v for k, v in sampling.items() if k != "mode"}
            try:
                _server.class_policy().check_sweep((high - low + 1) * len(prompts))  # class mode: bounded runs
                with heavy_job():  # each step a heavy turn of its own
                    st.session_state["sweep_rules_result"] = compare_rules(
                        pair,
                        prompts,
                        range(low, high + 1),
                        max_new_tokens=max_new,
                        chat=chat,
                        progress=lambda done, total, what: bar.progress(done / total, text=f"{done} / {total}: {what}"),
                        **sampled,
                    )
            except specviz.SpecvizError as exc:
                st.error(f"**Cannot compare the rules.** {plain(exc)}", icon=":material/error:")
            bar.empty()
        result = st.session_state.get("sweep_rules_result")
        if result is None:
            return
        st.success(result.verdict(), icon=":material/rule:")
        left, right = st.columns(2)
        left.plotly_chart(rules_acceptance_chart(result), key="sweep_rules_length_chart")
        right.plotly_chart(rules_acceptance_chart(result, "draft acceptance rate"), key="sweep_rules_rate_chart")
        st.table(result.to_frame().set_index("τ"))
        st.caption(
            "The same steps under each rule (the runs decode token-wise); 95% bootstrap intervals over steps, the "
            "differences paired. With a sampled draft one-hot keeps p(ŷ) where token-wise keeps min(1, p/q): "
            "Σ q·p ≤ Σ min(p, q). Block never keeps fewer in expectation, and the same at τ = 1."
        )
