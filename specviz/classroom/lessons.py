"""Lessons: a question a class can predict, answered live by the app's own engine and charts.

Each lesson has the question, a few choices (one right), a `run` that reproduces the situation
(on the embedded pair, or on hand-made tables where exact numbers matter) and returns the evidence:
figures, a table, and a finding in one sentence computed from what just ran. The right choice and
the takeaway are shown only after the run. No Streamlit here: pages/lessons.py draws them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go
import torch

from specviz.analysis.diagnosis import Diagnosis, diagnose
from specviz.analysis.lossless import check, first_tokens, reference
from specviz.analysis.measure import PairedRun, Spread, against_one, best_of, paired_run, pass_times
from specviz.analysis.race import PRESETS as RACES
from specviz.analysis.race import Race
from specviz.analysis.sweep import verify_timing
from specviz.analysis.theory import best_tau, expected_speedup, speedup_with_verify_cost
from specviz.classroom.sandbox import PRESETS as EXERCISES
from specviz.classroom.sandbox import sandbox_step
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.models.lm import TableModel
from specviz.models.pair import ModelPair
from specviz.models.text import WordCodec
from specviz.viz import charts
from specviz.viz.tree_chart import tree_chart, tree_run_chart

PROMPT = "Write a Python function that reverses a list."  # the first page's prompt (chat template on)
Load = Callable[..., ModelPair]  # (target spec, draft spec, runtime=None) → a pair, loaded once per process;
# runtime None: the runtime of the lesson's own pair


@dataclass(frozen=True)
class Evidence:
    finding: str  # what the run showed, in one sentence with its numbers
    figures: tuple[go.Figure, ...] = ()
    table: pd.DataFrame | None = None
    # a measured lesson's premise (what its question takes for granted), checked on the run it made: held
    # True or False only where the measurement separates the cases; None where there is nothing to measure
    premise: str = ""
    held: bool | None = None
    why_not: str = ""  # where the premise did not appear: why (runtime, load), in one sentence
    gates: bool = True  # whether the question's answer rests on the premise (else it is the takeaway's, and exact)


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    question: str
    choices: tuple[str, ...]
    right: int  # index of the right choice
    takeaway: str  # two lines
    run: Callable[[ModelPair, Load], Evidence] = field(repr=False)


def _decode(pair: ModelPair, count: int | None = None, **settings) -> Decoder:
    """A run on the lesson prompt: `count` steps (fewer if it ends first), or to the end."""
    dec = Decoder(pair, PROMPT, SpecConfig(**{"max_new_tokens": 32, **settings}))
    while not dec.done and (count is None or len(dec.steps) < count):
        dec.step()
    return dec


def _measured(pair: ModelPair, **settings) -> tuple[PairedRun, Diagnosis]:
    """A run on the lesson prompt timed step by step beside the target alone on the same tokens, and its
    reading: c over a one-token pass, v, the measured speedup, each with its interval."""
    measured = paired_run(pair, PROMPT, SpecConfig(**{"max_new_tokens": 32, **settings}))
    return measured, diagnose(measured.trace, measured)


def _time_chart(measured: PairedRun) -> go.Figure:
    """Time per emitted token: the target alone against this run's drafting and verifying, stacked (the
    same tokens, measured step by step)."""
    m, alone = measured.trace.metrics, measured.one_token_ms
    figure = go.Figure()
    figure.add_bar(name="target alone", x=["target alone", "speculative"], y=[alone, 0], marker_color=charts.P_COLOR)
    figure.add_bar(name="drafting", x=["target alone", "speculative"], y=[0, m.draft_ms / m.emitted_tokens],
                   marker_color=charts.Q_COLOR)  # fmt: skip
    figure.add_bar(name="verifying", x=["target alone", "speculative"], y=[0, m.verify_ms / m.emitted_tokens],
                   marker_color="#2a9d8f")  # fmt: skip
    figure.update_layout(barmode="stack", yaxis={"title": "ms per emitted token"}, legend={"orientation": "h"})
    return charts.sized(figure, charts.FONT["size"])


def next_token(pair: ModelPair, load: Load) -> Evidence:
    dec = _decode(pair, count=1, tau=4, seed=3)
    step = dec.steps[0]
    return Evidence(
        f"{step.n_accepted} of {step.tau} draft tokens were accepted; the next token '{step.next_text}' came from the "
        f"target's p at position {step.n_accepted + 1}, by rule {step.next_rule}.",
        (charts.step_chart(step), charts.next_token_chart(step)),
    )


def step_order(pair: ModelPair, load: Load) -> Evidence:
    step = _decode(pair, count=1, tau=4, seed=2).steps[0]
    kept = "".join(step.draft_text[: step.n_accepted])
    return Evidence(
        f"Draft: {step.tau} draft forwards, {step.draft_ms:.0f} ms. Verify: one target pass over {step.tau + 1} "
        f"positions, {step.verify_ms:.0f} ms. Decide: {', '.join(step.decision)}. Append: {kept!r} and the "
        f"target's '{step.next_text}'.",
        (charts.step_chart(step),),
    )


def low_speedup(pair: ModelPair, load: Load) -> Evidence:
    measured, d = _measured(pair, tau=4, mode="textbook", seed=0)
    run, speed = measured.trace, d.run_speedup
    held = speed.below(d.predicted_speedup)  # the question's situation: slower than parallel verification promises
    return Evidence(
        f"The trace says: {d.bottleneck} (α = {d.alpha:.2f}, c = {d.c:.2f}; S_v = {d.predicted_speedup_v.text()}; S(τ) "
        f"with v = 1, what a GPU engine would see: {d.predicted_speedup:.2f}×.)",
        (charts.history_chart(run.steps), _time_chart(measured)),
        premise=f"the speedup stays below what S(τ) promises with v = 1 ({d.predicted_speedup:.2f}×)", held=held,
        why_not=f"this run reached {speed.text()}: on {pair.runtime} a pass over 5 tokens cost v = "
        f"{d.verify_cost.text(unit='')} one-token passes and the draft was cheap, so the slowdown the question "
        "describes did not arise here; on a runtime or a load where v is large it does.",
    )  # fmt: skip


def how_many_kept(pair: ModelPair, load: Load) -> Evidence:
    case = EXERCISES["Five-token draft, the third rejected first"]
    step = sandbox_step(case)
    table = step.to_frame()[["position", "draft_text", "q", "p", "ratio", "r", "decision"]]
    first = step.decision.index("rejected") + 1
    return Evidence(
        f"n = {step.n_accepted}: position {first} fails its test (r = {step.r[first - 1]:.2f} > p/q = "
        f"{step.ratio[first - 1]:.2f}); later positions would pass theirs but come after it: discarded.",
        (charts.step_chart(step),), table.rename(columns={"draft_text": "token", "ratio": "p/q"}),
    )  # fmt: skip


def q_above_p(pair: ModelPair, load: Load) -> Evidence:
    case = EXERCISES["One token: q = 0.8, p = 0.6, r = 0.7"]
    draws = torch.rand(1000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    kept = sum(sandbox_step(dataclasses.replace(case, r=(float(r),))).n_accepted for r in draws)
    return Evidence(
        f"With q = 0.8 > p = 0.6 the token was kept in {kept} of 1000 draws ({kept / 1000:.3f}); p/q = 0.75.",
        (charts.step_chart(sandbox_step(case)),),
    )


def broken_draft(pair: ModelPair, load: Load) -> Evidence:
    rates = {}
    for broken in (False, True):
        run = _decode(pair, tau=4, mode="greedy", broken_draft=broken).trace()
        rates["broken" if broken else "correct"] = run.metrics.per_position_acceptance_rate
    figure = go.Figure()
    for name, values in rates.items():
        figure.add_bar(name=f"{name} draft", x=list(range(1, 5)), y=list(values), texttemplate="%{y:.2f}")
    axes = {"xaxis": {"title": "draft position", "dtick": 1}, "yaxis": {"title": "acceptance rate", "range": [0, 1.05]}}
    figure.update_layout(barmode="group", font=charts.FONT, **axes)
    c, b = rates["correct"], rates["broken"]
    return Evidence(
        f"Acceptance at positions 2–4: correct draft {', '.join(f'{x:.2f}' for x in c[1:])}; broken draft "
        f"{', '.join(f'{x:.2f}' for x in b[1:])}.",
        (figure,),
    )


def one_pass(pair: ModelPair, load: Load) -> Evidence:
    timing = verify_timing(pair, PROMPT, 4, repeats=5)
    table = pd.DataFrame({"how": [f"one pass over {timing.tokens} tokens", f"{timing.tokens} one-token passes"],
                          "ms (median, interquartile range)": [timing.parallel_ms.text(0, " ms"),
                                                               timing.sequential_ms.text(0, " ms")]})  # fmt: skip
    return Evidence(
        f"Scoring {timing.tokens} tokens in one pass took {timing.parallel_ms.text(0, ' ms')} against "
        f"{timing.sequential_ms.text(0, ' ms')} one at a time (the two alternating, {timing.ratio.n} rounds): the pass "
        f"costs {timing.ratio.text(2, '')} one-token passes.",
        (), table, premise=f"one pass over {timing.tokens} tokens costs less than {timing.tokens} one-token passes",
        held=timing.ratio.below(timing.tokens), why_not="the one pass cost as much as the separate passes in some "
        "rounds: the machine was busy while they were timed; run it again.",
    )  # fmt: skip


def verifier_output(pair: ModelPair, load: Load) -> Evidence:
    step = _decode(pair, count=1, tau=3, seed=1).steps[0]
    return Evidence(
        f"The target returned its whole distribution p over {pair.target.vocab_size:,} tokens at each of "
        f"{step.tau + 1} positions; the decision at position 1 came from p/q = {step.ratio[0]:.2f} and r.",
        (charts.top_chart(step, 0),),
    )


def slower(pair: ModelPair, load: Load) -> Evidence:
    self_pair = load("embedded", "self")
    measured, d = _measured(self_pair, tau=4, mode="greedy", max_new_tokens=24)
    run, speed = measured.trace, d.run_speedup
    return Evidence(
        f"The target drafting for itself: α = {d.alpha:.2f}, mean acceptance length "
        f"{run.metrics.mean_acceptance_length:.2f} tokens per step, but c = {d.c:.2f} (a draft forward costs a target "
        f"forward) and the verify pass costs v = {d.verify_cost.text(unit='')} one-token passes: a step costs "
        f"τc + v = {4 * d.c + d.verify_cost.value:.2f} one-token passes, so {speed.text()} the target alone.",
        (_time_chart(measured), charts.history_chart(run.steps)),
        premise="a draft that is always right but as slow as the target makes decoding slower", held=speed.below(1.0),
        why_not=f"this run measured {speed.text()}, an interval that reaches 1: the load on the machine moved the "
        "timings while it ran; run it again on a quieter machine.",
    )  # fmt: skip


def swapped_roles(pair: ModelPair, load: Load) -> Evidence:
    # target: the 30-layer model; draft: its first 8 layers. Both on torch: the early exit runs there only,
    # and the sizes compare (c) only when both models run on the same runtime
    small = load("embedded", "early-exit:8", runtime="torch")
    rows, speeds = [], {}
    for name, roles in (("8 layers draft for 30", small), ("30 layers draft for 8", small.swapped())):
        measured, d = _measured(roles, tau=4, mode="greedy", max_new_tokens=24)
        speeds[name] = d.run_speedup
        rows.append({"roles": name, "α": d.alpha, "c": d.c, "v(5)": d.verify_cost.value,
                     "mean acceptance length": measured.trace.metrics.mean_acceptance_length,
                     "speedup (95% interval)": d.run_speedup.text()})  # fmt: skip
    table = pd.DataFrame(rows)
    usual, big = rows
    big_speed = speeds["30 layers draft for 8"]
    return Evidence(
        f"With the 30-layer model drafting for its own first 8 layers: α = {big['α']:.2f} against c = {big['c']:.2f}, "
        f"mean acceptance length {big['mean acceptance length']:.2f}, {big_speed.text()} the small model alone. "
        f"The usual direction, its first 8 layers drafting for it, untrained: α = {usual['α']:.2f}, c = "
        f"{usual['c']:.2f}, {speeds['8 layers draft for 30'].text()} the big model alone: "
        f"{against_one(speeds['8 layers draft for 30'])}, because an untrained early exit is rarely right "
        f"(α well below what its cost c = {usual['c']:.2f} needs)."
        + ("" if pair.runtime == "torch" else " (Both models on torch here: the early exit runs only there, and the "
           "costs of two sizes compare only on one runtime.)"),
        (), table, premise="the big model drafting for the small one is slower than the small one alone",
        held=big_speed.below(1.0), why_not=f"its speedup, {big_speed.text()}, reaches 1: the timings moved with the "
        "load while it ran; run it again on a quieter machine.",
    )  # fmt: skip


def verify_budget(pair: ModelPair, load: Load) -> Evidence:
    rows = []
    for tau in (1, 2, 4, 6, 8):
        dec = _decode(pair, count=4, tau=tau, mode="greedy", max_new_tokens=64)
        rows.append({"τ": tau, "tokens in 4 target passes": len(dec.new_tokens),
                     "draft forwards": sum(s.tau for s in dec.steps)})  # fmt: skip
    table = pd.DataFrame(rows)
    best = table.loc[table["tokens in 4 target passes"].idxmax()]
    return Evidence(
        "Four target passes gave " + ", ".join(f"{r['tokens in 4 target passes']} tokens at τ = {r['τ']}" for r in rows)
        + f": the most at τ = {best['τ']}, paid for in draft forwards only.",
        (), table,
    )  # fmt: skip


STORY = "Write a short story about a robot who learns to paint."  # open text: the draft is often unsure


def why_tree(pair: ModelPair, load: Load) -> Evidence:
    chain = Decoder(pair, STORY, SpecConfig(tau=8, mode="greedy", max_new_tokens=32)).run()
    tree = Decoder(pair, STORY, SpecConfig(mode="greedy", max_new_tokens=32, topk=3, steps=4, num_draft_tokens=8)).run()
    per_step = [r.metrics.mean_acceptance_length or 0.0 for r in (chain, tree)]
    seconds = [s for s in tree.steps if any(tree_node.rank > 1 for tree_node in _accepted(s))]
    shown = max(seconds or tree.steps, key=lambda s: s.n_accepted)
    more = "more" if per_step[1] > per_step[0] else "fewer" if per_step[1] < per_step[0] else "as many"
    return Evidence(
        f"8 nodes per target pass: the chain kept {per_step[0]:.2f} tokens per pass, the tree {per_step[1]:.2f} "
        f"({more}); in {len(seconds)} of {len(tree.steps)} tree steps the walk took a second or third guess. Same "
        f"text: {chain.new_tokens == tree.new_tokens}.",
        (tree_chart(shown), tree_run_chart(tree.steps)),
    )


def _accepted(step):
    return [step.tree.nodes[i] for i in step.tree.path] if step.tree else []


def tree_knobs(pair: ModelPair, load: Load) -> Evidence:
    rows = []
    for topk, steps, num in ((3, 4, 8), (1, 4, 4), (3, 2, 8), (3, 4, 16)):
        run = _decode(pair, mode="greedy", max_new_tokens=24, topk=topk, steps=steps, num_draft_tokens=num).trace()
        rows.append({"topk": topk, "steps": steps, "num_draft_tokens": num,
                     "nodes verified per pass": sum(s.nodes for s in run.steps) / len(run.steps),
                     "tokens per pass": run.metrics.mean_acceptance_length,
                     "deepest accepted": max(s.n_accepted for s in run.steps)})  # fmt: skip
    table = pd.DataFrame(rows).round(2)
    capped = all(r["deepest accepted"] <= r["steps"] for r in rows)
    return Evidence(
        "Nodes verified per pass: " + ", ".join(f"{r['nodes verified per pass']:.1f} at num_draft_tokens = "
        f"{r['num_draft_tokens']}" for r in rows) + f"; the deepest accepted path never exceeded steps: {capped}.",
        (), table,
    )  # fmt: skip


def fast_but_wrong(pair: ModelPair, load: Load) -> Evidence:
    words = ("a", "b", "c")
    table = ModelPair(TableModel([0.5, 0.3, 0.2], "p"), TableModel([0.2, 0.2, 0.6], "q"), WordCodec(list(words)))
    checks = []
    for mode in ("textbook", "lossless"):
        config = SpecConfig(tau=2, mode=mode)
        checks.append(check(mode, list(first_tokens(table, "a", config, 3000)), reference(table, "a", config)))
    return Evidence(
        " ".join(c.verdict() for c in checks),
        tuple(charts.lossless_chart(c, lambda t: words[t]) for c in checks),
    )


def choose_tau(pair: ModelPair | None, load: Load) -> Evidence:
    alpha, c = 0.8, 0.1
    taus = list(range(1, 13))
    figure = go.Figure(
        go.Scatter(
            x=taus,
            y=[expected_speedup(alpha, t, c) for t in taus],
            mode="lines+markers",
            name="S(τ): a pass over τ + 1 tokens costs one (v = 1, what a GPU engine sees)",
        )
    )
    best = best_tau(alpha, c)
    finding = f"S(τ) peaks at τ = {best} ({expected_speedup(alpha, best, c):.2f}×) for α = 0.8, c = 0.1."
    if pair is None:
        return Evidence(finding, (charts.sized(figure, charts.FONT["size"]),))
    # the same α and c with the verify cost v(τ + 1) measured on this runtime's target, its passes interleaved
    ids = Decoder(pair, PROMPT, SpecConfig()).trace().prompt_ids
    times = pass_times(pair, ids, [1, *(t + 1 for t in taus)], repeats=3)
    one = times[1].value
    s_v = {t: Spread(*(speedup_with_verify_cost(alpha, t, c, x / one) for x in
                       (times[t + 1].value, times[t + 1].high, times[t + 1].low)), 3, "S_v over the IQR of T(τ + 1)")
           for t in taus}  # fmt: skip
    figure.add_scatter(x=taus + taus[::-1], y=[s_v[t].high for t in taus] + [s_v[t].low for t in taus[::-1]],
                       fill="toself", fillcolor="rgba(142,68,173,0.18)", line={"width": 0}, hoverinfo="skip",
                       name="S_v: range of the measured passes")  # fmt: skip
    figure.add_scatter(x=taus, y=[s_v[t].value for t in taus], mode="lines+markers",
                       name="S_v(τ): v(τ + 1) measured on this runtime")  # fmt: skip
    top, ties = best_of(s_v)
    finding += (f" With the verify cost measured here (v({top + 1}) = {times[top + 1].value / one:.2f}), S_v peaks at "
                f"τ = {top} ({s_v[top].value:.2f}×)")  # fmt: skip
    if len(ties) > 1:  # the curve is flat at its top: say which τ the measurement cannot tell apart
        finding += f"; τ = {', '.join(map(str, ties))} are within the range of the measured passes"
    figure.update_layout(xaxis={"title": "τ", "dtick": 1}, yaxis={"title": "speedup ×"}, legend={"orientation": "h"})
    held = True if max(ties) <= best else False if min(ties) > best else None  # None: the range straddles S's τ
    return Evidence(
        finding + ".", (charts.sized(figure, charts.FONT["size"]),), gates=False,
        premise=f"where a pass over more tokens costs more, S_v's best τ is no larger than S's (τ = {best})",
        held=held, why_not=f"S_v peaked at τ = {top}, above S's τ = {best}: on {pair.runtime} a pass over more tokens "
        "cost no more than one over fewer at these lengths, so v(τ + 1) did not grow with τ.",
    )  # fmt: skip


def race(pair: ModelPair, load: Load) -> Evidence:
    preset = RACES[0]  # prompt lookup on "repeat the text below"
    lookup = load("embedded", preset.draft)
    result = Race(lookup, preset.prompt, SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=48)).run()
    figure = go.Figure(go.Bar(
        x=["target alone", f"speculative, τ = {preset.tau}"],
        marker_color=[charts.P_COLOR, charts.DECISION_COLORS["accepted"]],
        y=[result.alone.tokens_per_second, result.speculative.tokens_per_second], texttemplate="%{y:.1f} tokens/s",
        textposition="outside", cliponaxis=False,
    ))  # fmt: skip
    figure.update_layout(yaxis={"title": "tokens per second", "rangemode": "tozero"})
    same = "the same text, token for token" if result.same_text else "DIFFERENT texts (a bug)"
    speed = result.speedup_spread()
    return Evidence(
        f"{result.summary()} Both wrote {same}.", (charts.sized(figure, charts.FONT["size"]),),
        premise="the copying draft is faster than the target alone", held=speed.above(1.0),
        why_not=f"its speedup, {speed.text()}, {'reaches' if not speed.below(1.0) else 'is below'} 1: each target pass "
        f"cost {result.verify_cost:.1f} single-token passes on {lookup.runtime} with the "
        "load of the moment; run it again on a quieter machine.",
    )  # fmt: skip


def tau_policy(pair: ModelPair, load: Load) -> Evidence:
    fixed = _decode(pair, tau=4, mode="greedy").trace()
    heuristic = _decode(pair, tau=4, mode="greedy", tau_policy="heuristic").trace()
    same = fixed.new_tokens == heuristic.new_tokens
    taus = [s.tau for s in heuristic.steps]
    return Evidence(
        f"The same {len(fixed.new_tokens)} tokens: {same}. The heuristic's τ per step: {taus}; fixed: 4 every step.",
        (charts.history_chart(heuristic.steps),),
    )


LESSONS: tuple[Lesson, ...] = (
    Lesson("race", "A race on a CPU",
           "A draft that only copies runs of the prompt (prompt lookup) races the target alone on \"repeat the text "
           "below\", greedy. What happens?",
           ("Slower: the draft is not even a model", "Faster: the answer repeats the prompt, so a target pass keeps "
            "several copied tokens", "The same speed: greedy output cannot change"), 1,
           "Speedup is tokens per step over the cost of a step, τc + v(τ+1), in one-token target passes.\n"
           "A free draft (c ≈ 0) right for runs of tokens wins, and greedy output stays the target's own.", race),
    Lesson("next-token", "Where the next token comes from",
           "After n draft tokens are accepted, where does the next token come from?",
           ("From the draft: q's next guess", "From the target: its p at position n + 1 (argmax p in textbook mode)",
            "From the target's p at position 1, whatever n is"), 1,
           "Every step ends with one token from the target, at the first rejected position (or after the last).\n"
           "So a step always makes progress, even when every draft token is rejected.", next_token),
    Lesson("step-order", "The order of a step",
           "In what order does one speculative step work?",
           ("Verify, then draft, then decide", "Draft τ tokens, verify them in one target pass, decide each in order, "
            "append the accepted run and one target token", "Draft one token, verify it, repeat τ times"), 1,
           "Drafting is sequential and cheap; verification is one pass over every draft token at once.\n"
           "The decisions then run left to right and stop at the first rejection.", step_order),
    Lesson("how-many-kept", "How many tokens are kept",
           "Draws r = 0.9, 0.3, 0.6, 0.1, 0.2 against p/q = 1.2, 0.75, 0.29, 1.0, 1.5: how many draft tokens are kept?",
           ("0", "2", "4", "5"), 1,
           "Tokens are kept up to the first rejection; later tokens are discarded even if they would pass.\n"
           "A first-token rejection keeps none.", how_many_kept),
    Lesson("q-above-p", "q greater than p",
           "A draft token has q = 0.8 and p = 0.6. Is it always rejected?",
           ("Yes, always", "No: it is kept with probability p/q = 0.75", "No: it is kept with probability p = 0.6"), 1,
           "q > p means the draft over-proposed the token, not that it is wrong.\n"
           "It is kept with probability p/q; the rejected mass goes to the residual.", q_above_p),
    Lesson("broken-draft", "What the draft conditions on",
           "An implementation forgets to feed the step's earlier draft tokens back into the draft. What happens?",
           ("Nothing changes", "Later draft positions are accepted far less often", "Every draft token is rejected"), 1,
           "Draft token t must condition on the prefix and draft tokens 1..t−1.\n"
           "Without them the draft repeats its first guess, and later positions collapse.", broken_draft),
    Lesson("one-pass", "Why one verification pass",
           "Why does the target score all τ draft tokens in one pass?",
           ("It reads its weights once instead of τ + 1 times", "It changes which tokens are accepted",
            "The draft cannot work otherwise"), 0,
           "One pass over τ + 1 positions costs far less than τ + 1 passes: that is where speedup comes from.\n"
           "Its cost depends on hardware and runtime: about one token on a GPU (here: torch-kernels), more "
           "where the cores run out of compute past one token (here: llama.cpp).", one_pass),
    Lesson("verifier-output", "What the verifier returns",
           "Does the target answer accept or reject for each draft token?",
           ("Yes: a yes/no per token", "No: it returns its distribution p; the rule compares p with q (and r)"), 1,
           "The target only scores; the acceptance rule decides from p, q and the draw r.\n"
           "That is why the same target pass serves every mode.", verifier_output),
    Lesson("slower", "Slower with speculation",
           "A deployment got slower with speculation. Which draft can do that?",
           ("One almost always right but as slow as the target", "A tiny draft that is often wrong",
            "Neither: speculation never slows decoding"), 0,
           "Speedup needs E > τc + v: tokens per step above the step's cost in one-token target passes.\n"
           "A perfect but slow draft (c near 1), or a costly verify pass (v > 1), makes each step cost more.", slower),
    Lesson("swapped-roles", "Roles swapped",
           "The big model drafts for the small one. What happens?",
           ("It is faster: the big model is right more often", "It is slower: a big draft is too dear for a small "
            "target, and they often disagree", "Nothing changes"), 1,
           "The draft must be much cheaper than the target (c well below 1) and agree with it (α well above c).\n"
           "A big model drafting for a small one fails both.", swapped_roles),
    Lesson("verify-budget", "A fixed verification budget",
           "Your target can afford only 4 passes for this answer (greedy). Which τ gives the most tokens?",
           ("The smallest τ: fewer rejections", "A large τ: a pass keeps up to τ + 1 tokens", "τ does not matter"), 1,
           "When target passes are the scarce resource, draft more per pass: each can keep up to τ + 1 tokens.\n"
           "The price is draft forwards, which is why c decides how far to go.", verify_budget),
    Lesson("low-speedup", "Parallel, yet slow",
           "Verification is parallel, yet the speedup stays low. What do you read first?",
           ("The trace: how many tokens each step keeps, and α against c", "The temperature",
            "Nothing: parallel verification guarantees a speedup"), 0,
           "Speedup is tokens kept per step over the cost of a step, τc + v(τ+1): read both off the trace.\n"
           "If α ≤ c, steps keep few tokens, or a pass over τ + 1 tokens costs v ≫ 1, no τ will help much.",
           low_speedup),
    Lesson("fast-but-wrong", "Fast but wrong",
           "Speculation made a deployment faster, but its answers changed. Which mode was it running?",
           ("lossless", "textbook with sampling", "greedy"), 1,
           "Textbook's correction takes argmax p, which biases sampled output towards the mode.\n"
           "Lossless resamples from norm(max(0, p − q)) and keeps the target's distribution exactly.", fast_but_wrong),
    Lesson("choose-tau", "Choosing τ",
           "α = 0.8 and c = 0.1. Which τ gives the best speedup?", ("1", "3", "6", "12"), 2,
           "Longer drafts help until their cost, τc + v(τ+1), outweighs the shrinking chance late tokens survive.\n"
           "S(τ) takes v = 1; where a pass over more tokens costs more (a CPU), S_v's best τ is smaller.", choose_tau),
    Lesson("why-tree", "Why a tree?",
           "A story, greedy; the target verifies 8 draft tokens per pass. A chain of 8, or a tree of 8 nodes (3 "
           "children per node, 4 levels): which keeps more tokens per pass?",
           ("The chain: it reaches deeper", "The tree: where the draft's first guess is wrong, its second or third may "
            "be right", "The same: the budget is the same"), 1,
           "At the same budget a tree spends nodes on alternatives where the draft is unsure, not on deep guesses.\n"
           "Greedy output is the target's own either way: the shape changes speed, never the answer.", why_tree),
    Lesson("tree-knobs", "The three knobs of a tree",
           "SGLang's --speculative-eagle-topk, --speculative-num-steps and --speculative-num-draft-tokens: which one "
           "sets how many nodes the target verifies per pass?", ("topk", "steps", "num_draft_tokens"), 2,
           "topk: alternatives per branch; steps: the deepest path (at most steps + 1 tokens per pass).\n"
           "num_draft_tokens: the nodes verified per pass, the best-scored kept: the verify cost v(num + 1).",
           tree_knobs),
    Lesson("tau-policy", "A τ policy",
           "A policy grows τ after fully accepted steps and shrinks it after rejections. In greedy mode, "
           "does it change the output?", ("Yes", "No: greedy output is the target's own, whatever τ"), 1,
           "A τ policy changes speed, never the output: every mode keeps its guarantee.\n"
           "It may use only the draft's numbers and earlier steps, never the target's for this step.", tau_policy),
)  # fmt: skip
BY_KEY = {lesson.key: lesson for lesson in LESSONS}
