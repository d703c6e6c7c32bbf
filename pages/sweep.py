"""τ sweep: how the accepted length and the speedup change with τ, theory beside measurement."""

import streamlit as st

import specviz
from pages._present import COMPACT_CSS
from pages._shared import (
    LIMITS,
    compute_turn,
    downloads,
    ensure_shell,
    in_turns,
    load_pair,
    model_picker,
    sampling_widgets,
    share_link,
)
from specviz.analysis.sweep import Sweep, SweepSettings, verify_timing
from specviz.analysis.trees import compare as compare_trees
from specviz.viz import charts
from specviz.viz.tree_chart import chain_tree_chart

ensure_shell()
with st.sidebar:
    st.header("Models")
    target, draft = model_picker("sweep")
    st.header("Prompts")
    prompts_text = st.text_area("One prompt per line", key="sweep_prompts", height=110)
    chat = st.toggle("Chat template", key="sweep_chat", help="Wrap each prompt as a user message (Instruct models)")
    st.header("Sweep")
    low, high = st.slider("τ range", *LIMITS["sweep_taus"], key="sweep_taus")
    max_new = st.number_input("Tokens per run", *LIMITS["sweep_max_new"], key="sweep_max_new")
    seeds = st.number_input("Seeds per τ and prompt", *LIMITS["sweep_seeds"], key="sweep_seeds")
    sampling = sampling_widgets("sweep")
    st.header("τ policies")
    policies = tuple(
        name for name, on in (
            ("heuristic", st.toggle("Heuristic: +2 after all accepted, −1 after a rejection", key="sweep_heuristic")),
            ("confidence", st.toggle("Confidence: stop drafting when the draft is unsure", key="sweep_confidence")),
        ) if on
    )  # fmt: skip
    policy_tau = st.number_input("Policy τ: the start (heuristic) or the cap (confidence)", *LIMITS["sweep_policy_tau"],
                                 key="sweep_policy_tau", disabled=not policies)  # fmt: skip
    threshold = st.slider("Confidence threshold (top probability of q)", *LIMITS["sweep_threshold"], step=0.05,
                          key="sweep_threshold", disabled="confidence" not in policies)  # fmt: skip

st.html(COMPACT_CSS)
st.title("Acceptance length and speedup against τ")
prompts = tuple(line.strip() for line in prompts_text.splitlines() if line.strip())
pair = load_pair(target, draft)
if pair is None:
    st.stop()
try:
    settings = SweepSettings(
        taus=tuple(range(low, high + 1)), prompts=prompts, seeds=tuple(range(seeds)), max_new_tokens=max_new,
        chat=None if chat else False, policies=policies, policy_tau=policy_tau, confidence=threshold, **sampling,
    )  # fmt: skip
    sweep = Sweep(pair, settings, st.session_state.setdefault("sweep_cache", {}))
except specviz.SpecvizError as exc:
    st.error(f"**Cannot sweep.** {exc}", icon=":material/error:")
    st.stop()

total, pending = len(sweep.units()), len(sweep.pending())
cols = st.columns([1.6, 1, 4])
run_clicked = cols[0].button(
    f"Run {pending} of {total} units" if pending else "All finished", type="primary", key="sweep_run",
    disabled=not pending, icon=":material/play_arrow:",
)  # fmt: skip
cols[1].button("Stop", key="sweep_stop", icon=":material/stop:", help="Keeps every finished run")
cols[2].caption(
    f"{len(prompts)} prompt(s) × τ {low}–{high} × {seeds} seed(s), {max_new} tokens each, plus one target-only "
    "baseline per prompt. Finished runs are cached: revisiting costs nothing."
)
if run_clicked:
    bar = st.progress(0.0, text="Starting…")
    for done, _, unit in in_turns(sweep.advance()):
        what = "target-only baseline" if unit.kind == "baseline" else f"τ = {unit.tau}, seed {unit.seed}"
        bar.progress(done / total, text=f"{done} / {total}: {what}, prompt {unit.prompt_index + 1}")
    st.rerun()  # redraw the buttons and results from the finished cache

with st.expander("Why verify in one pass? One target pass over τ + 1 tokens against τ + 1 one-token passes"):
    if st.button(f"Measure at τ = {high} on the first prompt", key="sweep_verify", icon=":material/timer:"):
        with compute_turn(), st.spinner("Timing both ways…"):
            timing = verify_timing(pair, prompts[0], high, settings.chat)
        cols = st.columns(3)
        cols[0].metric(f"one pass over {timing.tokens} tokens", f"{timing.parallel_ms:.1f} ms")
        cols[1].metric(f"{timing.tokens} one-token passes", f"{timing.sequential_ms:.1f} ms")
        cols[2].metric("the pass costs", f"{timing.ratio:.2f} one-token passes")
        st.caption(
            "Medians of 7. Scoring all draft tokens at once reads the weights once; one at a time reads them "
            "τ + 1 times. Whether the pass costs more than one token depends on the runtime: on llama.cpp "
            "a CPU's cores run out of compute past one token; torch-kernels keeps them busy on several rows."
        )

with st.expander("Chain against tree: the same verification budget (4, 8 and 16 nodes per target pass)"):
    st.markdown(
        "A **chain** of τ = B draft tokens and a **token tree** of `num_draft_tokens` = B nodes (`topk` children per "
        "expanded node, `steps` levels: 2×3, 3×4, 4×5) cost the target one pass each. The tree spends the budget on "
        "second and third guesses where the draft is unsure. Greedy, on the prompts and models above, "
        f"{max_new} tokens each, with the target alone as the reference."
    )
    if st.button("Compare chain and tree", key="sweep_trees_run", icon=":material/account_tree:"):
        bar = st.progress(0.0, text="Starting…")
        with compute_turn():
            st.session_state["sweep_trees_result"] = compare_trees(
                pair, prompts, max_new_tokens=max_new, chat=settings.chat,
                progress=lambda done, total, what: bar.progress(done / total, text=f"{done} / {total}: {what}"),
            )  # fmt: skip
        bar.empty()
    trees = st.session_state.get("sweep_trees_result")
    if trees is not None:
        st.success(trees.verdict(), icon=":material/account_tree:")
        left, right = st.columns(2)
        left.plotly_chart(chain_tree_chart(trees, "tokens per step"), key="sweep_trees_tokens_chart")
        right.plotly_chart(chain_tree_chart(trees, "speedup"), key="sweep_trees_speedup_chart")
        st.table(trees.to_frame())
        st.caption("v(budget + 1): the verify pass over the target-only token, both measured in these runs.")

result = sweep.result()
if not result.runs:
    st.info("Press **Run** to measure. A sweep of τ 1–8 over two prompts takes a few minutes on a laptop CPU.")
    share_link("sweep")
    st.stop()
if not result.complete:
    st.warning(f"Stopped with {result.pending} of {total} units left; the charts show what finished. Run to go on.")
best = next((s for s in result.by_tau() if s.tau == result.best_tau_measured()), None)
(st.success if best is not None and best.speedup > 1 else st.warning)(result.verdict(), icon=":material/insights:")

left, right = st.columns(2)
left.markdown("**Speedup over the target alone: measured, S(τ) with v = 1, S_v(τ) with the measured v**")
left.plotly_chart(charts.sweep_speedup_chart(result), key="sweep_speedup_chart")
right.markdown("**Mean acceptance length: measured and (1 − α^(τ+1)) / (1 − α)**")
right.plotly_chart(charts.sweep_acceptance_chart(result), key="sweep_acceptance_chart")
st.caption(charts.THEORY_NOTE)
left.markdown("**Accepted draft tokens per step**")
left.plotly_chart(charts.sweep_length_chart(result), key="sweep_length_chart")
right.markdown("**Per-position acceptance rate (of all steps) against a^i**")
right.plotly_chart(charts.sweep_position_chart(result), key="sweep_position_chart")

if result.by_policy():
    st.subheader("τ policies beside the best fixed τ")
    st.dataframe(result.policy_frame(), hide_index=True)
    st.caption("mean_tau: draft tokens per step as the policy chose them. A policy's trace records its τ per step.")

st.subheader("Results")
table = result.to_frame()
st.dataframe(table, hide_index=True)
downloads(
    "sweep", "specviz-sweep", lambda: result.to_json(indent=1), lambda: table.to_csv(index=False),
    ("Download JSON", "Download CSV"),
)  # fmt: skip
share_link("sweep")
