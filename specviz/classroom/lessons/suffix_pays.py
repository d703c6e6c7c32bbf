"""Lesson: Where suffix decoding pays. The model-free suffix draft (specviz.drafts.suffix) on three prompts, greedy:
the same question asked a second time (its first answer in the draft's history), an edit whose answer copies the
prompt's text, and a new question it has seen nothing of. Counted, not timed: tokens per target pass and the share of
drafted tokens kept, which no machine's load changes."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from specviz.classroom.lessons.common import PROMPT, Evidence, Lesson, Load
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.drafts.suffix import SuffixDrafter, SuffixHistory
from specviz.models.pair import ModelPair
from specviz.viz import charts

EDIT = (
    "Fix the spelling mistakes and write the text out again: The quick brown fox jumps over the lazzy dog. It was a "
    "suny day and the fox was very hapy."
)
NEW = "Write a short poem about the sea."
CASES = ("the same question again", "an edit of the prompt's text", "a new question")
CONFIG = SpecConfig(tau=8, mode="greedy", max_new_tokens=32)


def _remembering(pair: ModelPair, history: SuffixHistory) -> ModelPair:
    if not isinstance(pair.draft, SuffixDrafter):
        raise TypeError(f"{pair.draft.name} is no suffix draft")
    return ModelPair(pair.target, pair.draft.remembering(history), pair.codec)


def runs(pair: ModelPair) -> dict[str, dict[str, float]]:
    """Each case's counts on `pair` (a suffix draft): the question asked twice on one history (the second run
    counted), the edit and the new question each on a history of their own (nothing asked before)."""
    shared = _remembering(pair, SuffixHistory(pair.draft.settings))
    Decoder(shared, PROMPT, CONFIG).run()  # asked before
    done = {
        CASES[0]: Decoder(shared, PROMPT, CONFIG).run(),
        CASES[1]: Decoder(_remembering(pair, SuffixHistory(pair.draft.settings)), EDIT, CONFIG).run(),
        CASES[2]: Decoder(_remembering(pair, SuffixHistory(pair.draft.settings)), NEW, CONFIG).run(),
    }
    counts = {}
    for case, trace in done.items():
        drafted = sum(s.tau for s in trace.steps)
        kept = sum(s.n_accepted for s in trace.steps)
        counts[case] = {
            "tokens": len(trace.new_tokens),
            "target passes": len(trace.steps),
            "tokens per target pass": round(len(trace.new_tokens) / max(len(trace.steps), 1), 2),
            "drafted per step": round(drafted / max(len(trace.steps), 1), 2),
            "drafted tokens kept": round(kept / drafted, 2) if drafted else 0.0,
        }
    return counts


def suffix_pays(pair: ModelPair, load: Load) -> Evidence:
    counts = runs(load("embedded", "suffix"))
    table = pd.DataFrame([{"case": case, **row} for case, row in counts.items()])
    per_pass = [counts[case]["tokens per target pass"] for case in CASES]
    figure = go.Figure(
        go.Bar(
            x=list(CASES),
            y=per_pass,
            marker_color=[charts.DECISION_COLORS["accepted"], charts.DECISION_COLORS["accepted"], charts.P_COLOR],
            texttemplate="%{y:.1f}",
            textposition="outside",
            cliponaxis=False,
        )
    )
    figure.update_layout(yaxis={"title": "tokens per target pass (counted)", "rangemode": "tozero"})
    again, edit, new = per_pass
    return Evidence(
        f"Counted on this run (τ = {CONFIG.tau}, greedy, {CONFIG.max_new_tokens} tokens): {again:.1f} tokens per "
        f"target pass on the same question again, {edit:.1f} on the edit, {new:.1f} on the new question; the suffix "
        f"draft proposed {counts[CASES[2]]['drafted per step']:.1f} tokens a step on the new question against "
        f"{counts[CASES[0]]['drafted per step']:.1f} on the repeated one. Each step costs one target pass and no "
        "model's forward, so tokens per pass is close to its speedup where a pass over τ + 1 tokens costs about one.",
        (charts.sized(figure, charts.FONT["size"]),),
        table,
        prompt=PROMPT,
    )


LESSON = Lesson(
    key="suffix-pays",
    title="Where suffix decoding pays",
    question="Suffix decoding drafts with no model at all: it matches the last tokens against the prompt and this "
    "session's earlier answers and proposes what followed there. Where does it keep the most tokens per target pass?",
    choices=(
        "A new question: its draft costs nothing, so it always pays the same",
        "The same question asked a second time: the earlier answer is matched and copied in long runs",
        "Nowhere: a draft without a model is never right",
    ),
    right=1,
    takeaway="Suffix decoding pays where the text repeats what was seen: the same question again, an edit that\n"
    "copies the prompt, an agent's repeated calls; on new text it finds nothing and a step is one target token.",
    run=suffix_pays,
)
