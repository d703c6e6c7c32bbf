"""What every lesson shares: the Lesson and its Evidence, the lesson prompt, and the helpers that run and
time a lesson's run (docs/algorithm.md). Each lesson is a module of its own beside this one, its text
beside its code."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go

from specviz.analysis.counted import Work, uncosted
from specviz.analysis.diagnosis import Diagnosis, diagnose, diagnose_counted
from specviz.analysis.measure import MeasurementError, PairedRun, paired_run
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
    # where its speeds come from counted work at a pair's kept calibration (its clocks waited for a core): the
    # calibration, in words (PairTimings.label); "" where they were clocked
    calibration: str = ""
    # a speedup's ceiling at its τ and what α and c cost of it, in words with whose v and c (theory.Ceiling.words;
    # `ceiling_words`); "" where the lesson shows no speedup, or its speedups sit in its table beside a ceiling column
    ceiling: str = ""

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


def measured_run(pair: ModelPair, timings: Timings | None = None, **settings) -> tuple[PairedRun, Diagnosis]:
    """A run on the lesson prompt timed step by step beside the target alone on the same tokens, and its
    reading: c over a one-token pass, v, the measured speedup, each with its interval. Where its clocks waited for
    a core (or cannot be right) and `timings` are handed in: the reading of its counted work at the pair's kept
    calibration instead (diagnose_counted: `Diagnosis.calibration` says which). MeasurementError where neither can
    be had, saying what was counted and what a quiet minute would add. A quiet run with `timings` handed in keeps the
    pair's calibration where none is kept yet (its pairs are often the lesson's own: the self-draft, the roles
    swapped, a quantized draft), so that the same lesson answers from kept costs on a busy machine later."""
    measured = paired_run(pair, PROMPT, SpecConfig(**{"max_new_tokens": 32, **settings}))
    try:
        reading = diagnose(measured.trace, measured, size_ratio(pair))
    except MeasurementError as clocked:
        if timings is None:
            raise
        try:
            kept = timings(pair)
        except MeasurementError as exc:
            counted = uncosted(Work.of_steps(measured.trace.steps))
            raise MeasurementError(f"{clocked} {counted} ({exc})") from exc
        return measured, diagnose_counted(measured.trace, kept)
    if timings is not None:  # a quiet run: the pair's costs kept now where none are, for a run on a busy machine later
        with contextlib.suppress(MeasurementError):
            timings(pair)
    return measured, reading


def ceiling_words(reading: Diagnosis) -> str:
    """The reading's ceiling at its τ and what α and c cost of it, in words, with whose v and c; "" without them."""
    split = reading.ceiling()
    if split is None:
        return ""
    return split.words("this draft's") + f" (v and c from {reading.calibration or 'this run, measured'})"


def time_chart(measured: PairedRun, reading: Diagnosis | None = None) -> go.Figure:
    """Time per emitted token: the target alone against this run's drafting and verifying, stacked (the
    same tokens, measured step by step). Where the `reading` is from the pair's kept calibration (its clocks
    waited): the same bars in one-token target passes per emitted token, from the counted work at those costs."""
    m, alone = measured.trace.metrics, measured.one_token_ms
    unit = "ms per emitted token"
    if reading is not None and reading.calibration:
        steps, emitted = m.steps, m.emitted_tokens
        alone, unit = 1.0, "one-token target passes per emitted token (kept costs)"
        drafting = reading.c_one_token.value * m.drafted_tokens / emitted
        verifying = reading.verify_cost.value * steps / emitted
    else:
        drafting, verifying = m.draft_ms / m.emitted_tokens, m.verify_ms / m.emitted_tokens
    figure = go.Figure()
    figure.add_bar(name="target alone", x=["target alone", "speculative"], y=[alone, 0], marker_color=charts.P_COLOR)
    figure.add_bar(
        name="drafting",
        x=["target alone", "speculative"],
        y=[0, drafting],
        marker_color=charts.Q_COLOR,
    )
    figure.add_bar(
        name="verifying",
        x=["target alone", "speculative"],
        y=[0, verifying],
        marker_color="#2a9d8f",
    )
    figure.update_layout(barmode="stack", yaxis={"title": unit}, legend={"orientation": "h"})
    return charts.sized(figure, charts.FONT["size"])


STORY = "Write a short story about a robot who learns to paint."  # open text: the draft is often unsure
