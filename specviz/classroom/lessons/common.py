"""What every lesson shares: the Lesson and its Evidence, the lesson prompt, and the helpers that run and
time a lesson's run (docs/algorithm.md). Each lesson is a module of its own beside this one, its text
beside its code."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go

from specviz.analysis.diagnosis import Diagnosis, diagnose
from specviz.analysis.measure import PairedRun, paired_run
from specviz.analysis.pairtimes import PairTimings, size_ratio
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.models.pair import ModelPair
from specviz.viz import charts

PROMPT = "Write a Python function that reverses a list."  # the first page's prompt (chat template on)
Load = Callable[..., ModelPair]  # (target spec, draft spec, runtime=None) → a pair, loaded once per process;
# runtime None: the runtime of the lesson's own pair
Timings = Callable[[ModelPair], PairTimings]  # the pair's kept timings, the same every page reads (the server's
# TimingBook, specviz.analysis.pairtimes): measured once where none are kept; MeasurementError where they cannot be


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
    prompt: str = PROMPT  # what a timed lesson decoded (the lesson prompt unless it names another), said with its times

    @property
    def timed(self) -> bool:
        """Whether the run timed something (a lesson that rests on a measurement states its premise): its numbers
        are this server's, just now, and a busy server makes them unreliable."""
        return bool(self.premise)


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    question: str
    choices: tuple[str, ...]
    right: int  # index of the right choice
    takeaway: str  # two lines
    run: Callable[..., Evidence] = field(repr=False)  # (pair, load) → Evidence; (pair, load, timings) where `timed`
    timed: bool = False  # its numbers are the pair's kept timings (T(k), v, c): the same as every other page's


def decode(pair: ModelPair, count: int | None = None, **settings) -> Decoder:
    """A run on the lesson prompt: `count` steps (fewer if it ends first), or to the end."""
    dec = Decoder(pair, PROMPT, SpecConfig(**{"max_new_tokens": 32, **settings}))
    while not dec.done and (count is None or len(dec.steps) < count):
        dec.step()
    return dec


def measured_run(pair: ModelPair, **settings) -> tuple[PairedRun, Diagnosis]:
    """A run on the lesson prompt timed step by step beside the target alone on the same tokens, and its
    reading: c over a one-token pass, v, the measured speedup, each with its interval."""
    measured = paired_run(pair, PROMPT, SpecConfig(**{"max_new_tokens": 32, **settings}))
    return measured, diagnose(measured.trace, measured, size_ratio(pair))


def time_chart(measured: PairedRun) -> go.Figure:
    """Time per emitted token: the target alone against this run's drafting and verifying, stacked (the
    same tokens, measured step by step)."""
    m, alone = measured.trace.metrics, measured.one_token_ms
    figure = go.Figure()
    figure.add_bar(name="target alone", x=["target alone", "speculative"], y=[alone, 0], marker_color=charts.P_COLOR)
    figure.add_bar(
        name="drafting",
        x=["target alone", "speculative"],
        y=[0, m.draft_ms / m.emitted_tokens],
        marker_color=charts.Q_COLOR,
    )
    figure.add_bar(
        name="verifying",
        x=["target alone", "speculative"],
        y=[0, m.verify_ms / m.emitted_tokens],
        marker_color="#2a9d8f",
    )
    figure.update_layout(barmode="stack", yaxis={"title": "ms per emitted token"}, legend={"orientation": "h"})
    return charts.sized(figure, charts.FONT["size"])


STORY = "Write a short story about a robot who learns to paint."  # open text: the draft is often unsure
