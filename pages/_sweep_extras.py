"""The τ sweep's side questions, each in an expander: one verify pass against τ + 1 one-token passes, chain against
tree at the same verification budget, and what each verification rule keeps (specviz.analysis: passes, trees,
rules_compare)."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._shared import cached_pair, heavy_job, heavy_turn
from specviz import policy
from specviz.analysis.draft_sweep import GRADED, summarize, sweep_drafts
from specviz.analysis.passes import verify_timing
from specviz.analysis.rules_compare import compare_rules
from specviz.analysis.sweep import SweepSettings
from specviz.analysis.trees import compare as compare_trees
from specviz.viz.plain import plain
from specviz.viz.sweep_charts import draft_sweep_chart, rules_acceptance_chart
from specviz.viz.tree_chart import chain_tree_chart


def verify_timing_panel(pair: specviz.ModelPair, prompts: tuple[str, ...], tau: int, chat: bool | None) -> None:
    with st.expander("Why verify in one pass? One target pass over τ + 1 tokens against τ + 1 one-token passes"):
        if not st.button(f"Measure at τ = {tau} on the first prompt", key="sweep_verify", icon=":material/timer:"):
            return
        try:
            with heavy_job(), heavy_turn(), st.spinner("Timing both ways, alternating…"):
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
                    turn=heavy_turn,
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
                policy.current().check_sweep((high - low + 1) * len(prompts))  # class mode: bounded runs
                with heavy_job():  # each step a heavy turn of its own
                    st.session_state["sweep_rules_result"] = compare_rules(
                        pair,
                        prompts,
                        range(low, high + 1),
                        max_new_tokens=max_new,
                        chat=chat,
                        progress=lambda done, total, what: bar.progress(done / total, text=f"{done} / {total}: {what}"),
                        turn=heavy_turn,
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
