"""Lesson: What your engine does (one-hot q, as vLLM and SGLang verify EAGLE, MTP and n-gram drafts)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import torch

from specviz.classroom.lessons.common import Evidence, Lesson, Load, decode
from specviz.core.sampling import logits_to_probs
from specviz.models.pair import ModelPair
from specviz.viz import charts


def acceptance_by_rule(pair: ModelPair, ids: list[int], start: int) -> pd.DataFrame:
    """At every position of `ids` from `start` on, the chance that the first draft token there is kept
    (docs/algorithm.md, "Verification as serving engines run it"), exactly, from the two models' full
    distributions p and q (temperature 1): token-wise with a sampled draft Σ min(p, q); one-hot with a sampled
    draft Σ q·p; one-hot with a greedy draft p(argmax q)."""
    target, draft = pair.new_sessions()
    count = len(ids) - start
    p = logits_to_probs(target.extend(ids[:-1], keep=count))  # the target first: a feature draft reads it
    q = logits_to_probs(draft.extend(ids[:-1], keep=count))
    return pd.DataFrame(
        {
            "position": range(1, count + 1),
            "token-wise, sampled draft: Σ min(p, q)": torch.minimum(p, q).sum(-1).tolist(),
            "one-hot, sampled draft: Σ q·p": (p * q).sum(-1).tolist(),
            "one-hot, greedy draft: p(argmax q)": p.gather(-1, q.argmax(-1, keepdim=True))[:, 0].tolist(),
        }
    )


def your_engine(pair: ModelPair, load: Load) -> Evidence:
    run = decode(pair, mode="lossless", tau=4, seed=0).trace()  # a text with the target's own distribution
    ids = [*run.prompt_ids, *run.new_tokens]
    table = acceptance_by_rule(pair, ids, len(run.prompt_ids))
    token, sampled, greedy = (table[c] for c in table.columns[1:])
    gains, losses = int((greedy > token).sum()), int((greedy < token).sum())
    colors = (charts.P_COLOR, charts.Q_COLOR, charts.RESIDUAL_COLOR)
    bars = [
        go.Bar(name=name.split(":")[0], x=table["position"], y=table[name], marker_color=color)
        for name, color in zip(table.columns[1:], colors, strict=True)
    ]
    layout = {
        "barmode": "group",
        "yaxis": {"title": "chance the draft token is kept", "range": [0, 1.05]},
        "xaxis": {"title": "position in the answer"},
        "legend": {"orientation": "h", "y": -0.25},
    }
    figure = go.Figure(bars, layout=layout)
    return Evidence(
        f"Over the {len(table)} positions of a lossless answer: token-wise keeps a sampled draft token with "
        f"probability {token.mean():.2f} on average, one-hot only {sampled.mean():.2f} (never more, at any position: "
        f"{bool((sampled <= token + 1e-12).all())}). With a greedy draft one-hot keeps p(argmax q) = "
        f"{greedy.mean():.2f}: more than token-wise at {gains} positions, less at {losses}.",
        (charts.sized(figure, charts.FONT["size"]),),
        table.round(3),
    )


LESSON = Lesson(
    key="your-engine",
    title="What your engine does",
    question="vLLM and SGLang verify EAGLE, MTP and n-gram drafts as if q were one-hot: a draft token is kept with "
    "probability p(ŷ), not min(1, p/q). With a draft sampled from q, does that keep more draft tokens or fewer?",
    choices=(
        "More: it no longer divides by q",
        "Fewer or as many: on average Σ q·p ≤ Σ min(p, q)",
        "The same: both rules are lossless",
    ),
    right=1,
    takeaway="One-hot keeps p(ŷ): with a sampled draft never more, on average, than the textbook's min(1, p/q).\n"
    "Engines draft greedily and keep only the token: p(argmax q) can be above Σ min(p, q), or below it.",
    run=your_engine,
)
