"""Lesson: Why did greedy speculation change my text? A greedy race on the embedded target in 4 bits on llama.cpp,
and its batch variance (specviz.analysis.batchvar) beside the float32 target's, on the race's own text."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from specviz.analysis.batchvar import BatchVariance, batch_variance, greedy_difference, race_variance
from specviz.analysis.race import Race
from specviz.classroom.lessons.common import Evidence, Lesson, Load
from specviz.core.config import SpecConfig
from specviz.models.pair import ModelPair
from specviz.viz import charts

QUANTIZED = "embedded:Q4_0"  # the target in 4 bits (llama.cpp's quantizer), drafted by itself in 2 bits
DRAFT = "embedded:Q2_K"
RUNTIME = "llama.cpp"
TAU, TOKENS = 4, 48
# the app's story prompt: on the 4-bit target its greedy texts part on some of llama.cpp's CPU variants and not on
# others (docs/performance.md, "Where greedy texts part"; the lesson says which it saw)
PROMPT = "Continue the story: The cat sat on the"


def _row(name: str, measured: BatchVariance) -> dict:
    return {
        "target": name,
        "largest |Δp|": f"{measured.largest:.2e}",
        "top token moved at": f"{measured.flips} of {measured.positions} positions",
        "smallest top-2 gap": f"{min(measured.gaps):.4f}" if measured.gaps else "–",
    }


def _chart(quantized: BatchVariance, exact: BatchVariance) -> go.Figure:
    """Per position of the race's text: how far p moved between the two kinds of pass on each target, and the 4-bit
    target's top-2 gap one token at a time (where a bar reaches the line, greedy's choice can flip)."""
    figure = go.Figure()
    x = list(range(2, quantized.positions + 2))  # position r is the p after new token r + 1: it predicts r + 2
    floor = 1e-12  # a log axis: a difference of exactly 0 drawn at the floor
    for name, measured, colour in (("4-bit", quantized, charts.P_COLOR), ("float32", exact, charts.Q_COLOR)):
        y = [max(v, floor) for v in measured.by_position]
        figure.add_bar(name=f"|Δp|, {name} target", x=x, y=y, marker_color=colour)
    gap = list(quantized.gaps)
    figure.add_scatter(name="top-2 gap, 4-bit target", x=x, y=gap, mode="lines", line={"color": "#444"})
    figure.update_layout(
        barmode="group",
        xaxis={"title": "the new token p predicts (its place in the race's text)"},
        yaxis={"title": "probability (log scale)", "type": "log"},
        legend={"orientation": "h"},
    )
    return charts.sized(figure, charts.FONT["size"])


def greedy_text(pair: ModelPair, load: Load) -> Evidence:
    quantized = load(QUANTIZED, DRAFT, RUNTIME)
    race = Race(quantized, PROMPT, SpecConfig(tau=TAU, mode="greedy", max_new_tokens=TOKENS))
    result = race.run()
    ids, alone = race.spec.prompt_ids, race.alone.tokens
    q4 = race_variance(quantized, ids, alone, TAU)
    why = greedy_difference(quantized, ids, alone, race.spec.steps, TAU, q4)
    exact_target = (pair if pair.runtime == RUNTIME else load("embedded", "embedded", RUNTIME)).target
    f32 = batch_variance(exact_target, [*ids, *alone], len(ids), TAU + 1)
    if why is not None:
        finding = f"{why.words()} On the float32 target, the same text: {f32.words()}."
    elif result.same_text:
        finding = (
            f"This time both sides wrote the same {len(alone)} tokens: no near tie fell where the two kinds of pass "
            f"disagree. Yet on the 4-bit target {q4.words()}; on the float32 target {f32.words()}."
        )
    else:
        finding = "The two lanes stopped at different lengths (one reached its end-of-text token first)."
    return Evidence(
        finding,
        (_chart(q4, f32),),
        pd.DataFrame([_row("float32 (F32)", f32), _row("4-bit (Q4_0)", q4)]),
        premise=f"on the 4-bit target a verify pass over {TAU + 1} tokens and one-token passes give different p",
        prompt=PROMPT,
        held=not q4.negligible,
        why_not=f"on this machine's llama.cpp they agreed to {q4.largest:.0e} on the 4-bit target, so this run shows "
        "no batch variance; another build or CPU (another kernel for several tokens) shows it.",
    )


LESSON = Lesson(
    key="greedy-text",
    title="Why did greedy speculation change my text?",
    question="Greedy speculative decoding must write the target's own greedy text, whatever the draft. On a 4-bit "
    "target on llama.cpp, a greedy race's two texts sometimes part at one token. Why?",
    choices=(
        "a bug: greedy speculation that writes another text is broken",
        "the target scores τ + 1 tokens in one pass with other kernels than one token at a time; on quantized weights "
        "they round differently, so where its top two tokens are nearly tied the greedy choice can flip",
        "the 2-bit draft's tokens slip through verification when both models are quantized",
        "greedy decoding still samples a little at temperature 1",
    ),
    right=1,
    takeaway="Greedy speculation equals greedy decoding only where a pass over τ + 1 tokens gives one-token p: batch\n"
    "variance flips near ties. Compare like with like: each side must take its own pass's most likely token.",
    run=greedy_text,
)
