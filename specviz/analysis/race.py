"""A race: the same prompt decoded by the target alone and by speculative decoding, side by side.

Both lanes run in one process on the same runtime, interleaved: a step of speculation, then the target
alone decodes as many tokens as that step emitted, then the next step, so the two alternate every few
tens of milliseconds and a load that comes and goes falls on both alike (issue 47: run one after the other,
a busy minute slowed only the target alone and the race claimed many times the real speedup; docs/app.md,
"The pages in detail"). A lane's clock counts only the
wall time of its own pieces, sampling and the engine's bookkeeping included (the prompt's reading excluded on
both sides, as for the sweep's baseline), as if each ran on a machine of its own; `at_race_time` shows both
lanes as they stood at the same moment of those clocks. In greedy mode both lanes emit the same tokens
(docs/algorithm.md) where a target pass over τ + 1 tokens gives the p of one-token passes: the race checks it, and
specviz.analysis.batchvar says where and why they part where the runtime's kernels round otherwise (batch variance).

The result says why the faster lane is faster (docs/algorithm.md, "Verify cost"): tokens per target pass on
one side, and what a target pass over τ + 1 tokens cost in one-token passes on the other; a result that no
runtime could give is refused (specviz.analysis.measure.check_bounds), never stated. Whatever the clocks say, the
work is counted (tokens, target passes and the tokens in each, draft forwards): at the pair's kept costs it gives the
speed a busy machine cannot clock (`RaceResult.costed`, specviz.analysis.counted).
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from specviz.analysis import clock
from specviz.analysis.counted import Costed, Work
from specviz.analysis.measure import (
    DISTURBED_MAX,
    BusyMachine,
    MeasurementError,
    Spread,
    TargetAlone,
    check_bounds,
    point,
    rate_ratio,
)
from specviz.analysis.pairtimes import PairTimings
from specviz.analysis.theory import ceiling
from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.models.pair import ModelPair
from specviz.pieces import piece as work_piece
from specviz.specs import ModelSpec


@dataclass(frozen=True)
class RacePreset:
    label: str
    draft: str | ModelSpec  # a draft spec for load_pair (the Decode page's pair: its parsed specs)
    prompt: str
    tau: int
    note: str  # what it shows, in one line
    target: str | ModelSpec = "embedded"  # a target spec for load_pair
    chat: bool | None = None  # the prompt wrapped as a user message (None: where the target has a chat template)
    draft_name: str = ""  # the draft as the pages name it, where it is known before the race loads it
    target_name: str = ""  # the target as the pages name it (a GGUF file by its file's name), where known
    # the prompt was answered once before in this session: the race asks it first, untimed (`ask_before`), so a
    # suffix draft's history (specviz.drafts.suffix) holds that answer when the race asks the same question again
    asked_before: bool = False


PRESETS: tuple[RacePreset, ...] = (
    RacePreset(
        "Prompt lookup: repeat a text",
        "prompt-lookup",
        "Repeat the text below.\n\nThe quick brown fox jumps over the lazy dog. It was a sunny day and the fox was "
        "very happy. The dog did not mind, because it was sleeping under a big tree.",
        6,
        "Where it pays on a CPU: the answer copies long runs of the prompt (not all of it: the 135M target drops "
        "a clause), so a draft that copies runs of it is often right for several tokens at once.",
    ),
    RacePreset(
        "Prompt lookup: answer with a quote",
        "prompt-lookup",
        "Read the text and answer with a quote from it. Text: The Eiffel Tower was built for the 1889 World's Fair in "
        "Paris. It was designed by the engineer Gustave Eiffel's company and is 330 metres tall. Question: Why was "
        "the Eiffel Tower built?",
        4,
        "Quote and answer: the answer is a sentence of the prompt, so a draft that copies it is right for runs "
        "of tokens.",
    ),
    RacePreset(
        "Prompt lookup: edit code",
        "prompt-lookup",
        "Add type hints to this function:\n\n```python\ndef scale(values, factor):\n    result = []\n"
        "    for value in values:\n        result.append(value * factor)\n    return result\n```",
        4,
        "Editing code: a small target rewrites the code in its own words, so only some runs can be copied, and a "
        "step that finds nothing to copy is a target pass for one token.",
    ),
    RacePreset(
        "The learned draft on predictable text",
        "embedded",
        "Write a Python function that reverses a list.",
        3,
        "The shipped one-layer draft on a short coding answer: right about half the time, and cheap.",
    ),
    RacePreset(
        "An untrained draft: where it does not pay",
        "early-exit:8",
        "Write a Python function that reverses a list.",
        3,
        "The target's own first 8 layers, untrained (they run on torch): rarely right, so nearly every step "
        "wastes its drafts and a target pass for one token.",
    ),
    RacePreset(
        "The target in 8 bits drafting for itself",
        "embedded:Q8_0",
        "Write a Python function that reverses a list.",
        4,
        "A real second model on llama.cpp: the target's own weights in 8 bits, right almost every time, but on a "
        "CPU a pass of it costs a good part of a target pass: the race measures that cost, c, on this machine.",
    ),
    RacePreset(
        "The target in 2 bits drafting for itself",
        "embedded:Q2_K",
        "Write a Python function that reverses a list.",
        4,
        "The same weights in 2 bits: a smaller file than 8 bits, and wrong far more often; the race measures "
        "whether its pass is cheaper here.",
    ),
    RacePreset(
        "Suffix decoding: the same question again",
        "suffix",
        "Write a Python function that reverses a list.",
        8,
        "The question was asked once before in this session: suffix decoding matches the answer as it grows against "
        "the earlier answer and proposes what followed there, up to as many tokens as the match is long, so a "
        "target pass keeps long runs of tokens at no model's cost.",
        asked_before=True,
    ),
)
BY_LABEL = {p.label: p for p in PRESETS}
YOURS = "Your pair: the Decode page's models, prompt and τ"


def your_race(
    target: str | ModelSpec,
    draft: str | ModelSpec,
    prompt: str,
    tau: int,
    chat: bool | None,
    draft_name: str = "",
    target_name: str = "",
) -> RacePreset:
    """A race of the pair, prompt and τ the user chose elsewhere (a GGUF pair of their own, say)."""
    note = (
        "The pair, prompt and τ of your Decode run: the race says whether that draft pays on this machine, and why "
        "(its cost c and the verify pass v(τ + 1) beside the tokens a step keeps)."
    )
    return RacePreset(
        YOURS, draft, prompt, tau, note, target=target, chat=chat, draft_name=draft_name, target_name=target_name
    )


def ask_before(pair: ModelPair, preset: RacePreset, config: SpecConfig) -> None:
    """A preset's question that was asked before (`asked_before`), asked once on `pair`, untimed: a suffix draft
    handed a history (SuffixDrafter.remembering) keeps its answer there, and the race that follows is the same
    question again. Nothing for any other preset."""
    if preset.asked_before:
        Decoder(pair, preset.prompt, config, chat=preset.chat).run()


@dataclass(frozen=True)
class Lane:
    tokens: tuple[int, ...]
    seconds: float  # its own compute time so far
    passes: int  # target forward passes
    done: bool
    pieces: tuple[tuple[float, int], ...] = ()  # (seconds, tokens) of each piece of work, in order
    disturbed: tuple[bool, ...] = ()  # per piece: it waited for a core (specviz.analysis.clock); () where not read

    @property
    def tokens_per_second(self) -> float:
        return len(self.tokens) / self.seconds if self.seconds else 0.0

    def clean_pieces(self) -> tuple[tuple[float, int], ...]:
        """The pieces that ran with the cores they needed."""
        flags = self.disturbed or (False,) * len(self.pieces)
        return tuple(piece for piece, busy in zip(self.pieces, flags, strict=False) if not busy)

    @property
    def disturbed_count(self) -> int:
        return sum(self.disturbed)

    def upto(self, seconds: float) -> Lane:
        """The lane as it stood when its own clock read `seconds`: the pieces finished by then (one target pass
        each: a token of the target alone, a step of speculation)."""
        clock, count, made = 0.0, 0, 0
        for spent, tokens in self.pieces:
            if clock + spent > seconds * (1 + 1e-12):
                break
            clock, count, made = clock + spent, count + 1, made + tokens
        if count == len(self.pieces):
            return self
        return Lane(self.tokens[:made], clock, count, False, self.pieces[:count], self.disturbed[:count])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lane:
        return cls(
            tuple(data["tokens"]),
            float(data["seconds"]),
            int(data["passes"]),
            bool(data["done"]),
            tuple((float(a), int(b)) for a, b in data["pieces"]),
            tuple(bool(x) for x in data.get("disturbed", ())),
        )


@dataclass(frozen=True)
class RaceResult:
    alone: Lane
    speculative: Lane
    verify_ms: float  # mean verify pass of the speculative lane
    draft_ms_per_token: float  # mean draft forward
    tau: int
    same_text: bool  # both lanes emitted the same tokens (in greedy mode, unless batch variance flipped a near tie)
    mode: str = field(default="greedy")
    pass_tokens: tuple[int, ...] = ()  # counted: the tokens in each of speculation's target passes (drafted + 1)
    drafted: int = 0  # counted: speculation's draft forwards (a chain's draft tokens, a tree's levels)

    @property
    def work(self) -> Work:
        """Speculation's work, counted (no clock in it)."""
        return Work(tokens=len(self.speculative.tokens), pass_tokens=self.pass_tokens, drafted=self.drafted)

    def costed(self, timings: PairTimings) -> Costed:
        """The counted work at the pair's kept costs: a speed whatever the load while the race ran."""
        return Costed(work=self.work, timings=timings)

    @property
    def speedup(self) -> float:
        """Tokens per second of speculation over the target alone, over the pieces that ran with the cores they
        needed (every piece, where a lane has no pieces)."""
        if self.alone.pieces and self.speculative.pieces:
            rate = lambda pieces: sum(t for _, t in pieces) / max(sum(s for s, _ in pieces), 1e-12)  # noqa: E731
            alone, spec = self.alone.clean_pieces(), self.speculative.clean_pieces()
            if alone and spec:
                return rate(spec) / rate(alone)
        base = self.alone.tokens_per_second
        return self.speculative.tokens_per_second / base if base else 0.0

    def speedup_spread(self) -> Spread:
        """The speedup with its 95% interval, each lane's clean pieces resampled (a lane without its pieces: the
        number alone)."""
        if not self.alone.pieces or not self.speculative.pieces:
            return point(self.speedup)
        return rate_ratio(self.speculative.clean_pieces(), self.alone.clean_pieces())

    def check_quiet(self) -> None:
        """BusyMachine where more than DISTURBED_MAX of either lane's pieces waited for a core: the race is void."""
        for name, lane in (("the target alone", self.alone), ("speculation", self.speculative)):
            if lane.pieces and lane.disturbed_count > DISTURBED_MAX * len(lane.pieces):
                why = f"{lane.disturbed_count} of {len(lane.pieces)} pieces of {name} waited for a core"
                raise BusyMachine(clock.busy_message("This race", [why]))

    @property
    def tokens_per_pass(self) -> float:
        return len(self.speculative.tokens) / self.speculative.passes if self.speculative.passes else 0.0

    @property
    def one_token_ms(self) -> float:
        return 1000.0 * self.alone.seconds / max(len(self.alone.tokens), 1)

    @property
    def verify_cost(self) -> float:
        """v(τ + 1): a verify pass over the target alone's time per token, both measured here."""
        return self.verify_ms / self.one_token_ms if self.one_token_ms else 0.0

    def ceiling(self, timings: PairTimings | None = None) -> str:
        """The ceiling at the race's τ and its speedup split into what α and c cost, in words (Ceiling.words, E its
        counted tokens per pass), with whose v and c: the pair's kept calibration where one is kept quietly, else
        this race's own where its clocks are right; "" where neither."""
        if timings is not None and timings.quiet:
            v, c, whose = timings.v(self.tau + 1), timings.c, f" (v and c from {timings.label()})"
        elif not self.void() and self.verify_cost > 0:
            v, c, whose = self.verify_cost, self.draft_ms_per_token / self.one_token_ms, " (v and c from this race)"
        else:
            return ""
        return ceiling(self.tau, v, c, tokens_per_pass=self.tokens_per_pass).words("this draft's") + whose

    def void(self) -> str:
        """Why no speed can be shown from this race (`check`'s refusal, in words), "" where one can."""
        try:
            self.check()
        except MeasurementError as exc:
            return str(exc)
        return ""

    def check(self) -> None:
        """Refuse what no runtime could give (specviz.analysis.measure.check_bounds): a verify pass over τ + 1
        tokens cheaper than V_FLOOR single-token passes, or a speedup above tokens per pass / v. Raises
        MeasurementError."""
        self.check_quiet()
        typical = statistics.median(t for t, _ in self.alone.pieces) * 1000.0 if self.alone.pieces else None
        check_bounds(self.speedup, self.tokens_per_pass, self.verify_cost, self.tau + 1, typical)

    def bounded_spread(self, v: float) -> tuple[Spread, str]:
        """The speedup's interval inside what its passes allow, tokens per pass ÷ v (a pass cost v single-token
        passes: no run is faster), and where its top was clipped there, that in words; "" where not. The speedup
        itself is inside it wherever `check` passed with this v."""
        spread = self.speedup_spread()
        if v <= 0 or spread.high * v <= self.tokens_per_pass:
            return spread, ""
        bound = self.tokens_per_pass / v
        clipped = Spread(min(spread.value, bound), min(spread.low, bound), bound, spread.n, spread.how)
        return clipped, (
            f"; its top clipped at {self.tokens_per_pass:.1f} tokens per pass ÷ {v:.1f} = {bound:.1f}×, the most "
            "its passes allow"
        )

    def summary(self, timings: PairTimings | None = None) -> str:
        """The result in words: how much faster (or slower) with its interval, said only where the interval
        says it; and why: with the pair's `timings` (specviz.analysis.pairtimes: the costs every page reads) where
        given, else the race's own. Raises MeasurementError where the timings cannot be right (`check`)."""
        self.check()
        v, c = self.verify_cost, self.draft_ms_per_token / self.one_token_ms if self.one_token_ms else 0.0
        whose = ""
        if timings is not None:
            kept = timings.v(self.tau + 1)
            if self.speedup * kept <= self.tokens_per_pass * (1 + 1e-9):
                v, c, whose = kept, timings.c, " (the pair's costs)"
            else:  # the pair's kept v allows less than this race ran: its own costs, which allow it (`check`)
                most = self.tokens_per_pass / kept
                whose = f" (this race's own: the pair's kept v = {kept:.1f} allows no more than {most:.1f}×)"
        spread, clipped = self.bounded_spread(v)
        if spread.above(1.0):
            outcome = f"{spread.value:.1f}× faster than the target alone ({spread.range_text(1)}{clipped})"
        elif spread.below(1.0):
            outcome = (
                f"{1 / spread.value:.1f}× slower than the target alone ({spread.range_text(2)} its speed{clipped})"
            )
        else:
            outcome = f"within noise of the target alone ({spread.range_text(2)} its speed{clipped})"
        return (
            f"Speculative decoding was {outcome}: {self.speculative.tokens_per_second:.1f} against "
            f"{self.alone.tokens_per_second:.1f} tokens/s, {self.tokens_per_pass:.1f} tokens per target "
            f"pass; each pass cost {v:.1f} single-token passes, and each of up to τ = {self.tau} "
            f"draft tokens {c:.2f} of one{whose}."
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RaceResult:
        return cls(
            **{
                **data,
                "alone": Lane.from_dict(data["alone"]),
                "speculative": Lane.from_dict(data["speculative"]),
                "pass_tokens": tuple(int(k) for k in data.get("pass_tokens", ())),
            }
        )


def stop_reason(lane: Lane, eos: int | None, asked: int) -> str:
    """Why a lane stopped where it did, in words: the target ended its answer, or the tokens asked for."""
    if lane.tokens and eos is not None and lane.tokens[-1] == eos:
        return (
            f"stopped at {len(lane.tokens)} tokens: the target ended its answer (its end-of-text token) before the "
            f"{asked} asked for"
        )
    if len(lane.tokens) >= asked:
        return f"stopped at the {asked} tokens asked for"
    return f"stopped at {len(lane.tokens)} tokens: the model's context is full"


def at_race_time(alone: Lane, spec: Lane) -> tuple[float, Lane, Lane]:
    """(t, target alone, speculation) as both stood at the same moment t of their own clocks: the latest moment
    both are known up to, the clock that is behind (`finish` shows the rest once the race has run)."""
    t = min(alone.seconds, spec.seconds)
    return t, alone.upto(t), spec.upto(t)


def finish(alone: Lane, spec: Lane, since: float) -> Iterator[tuple[float, Lane, Lane]]:
    """After the race ran, the rest of it as the clocks saw it: (t, alone, speculation) at the end of every piece
    either lane finished after `since`, in time order (the slower lane's last tokens, at its own pace)."""
    ends = sorted(
        {
            end
            for lane in (alone, spec)
            for end in itertools.accumulate(seconds for seconds, _ in lane.pieces)
            if end > since * (1 + 1e-12)  # as `upto` rounds: a piece that ended at `since` was shown then
        }
    )
    for t in ends:
        yield t, alone.upto(t), spec.upto(t)


class Race:
    """Both lanes on one pair; `frames()` advances them interleaved: a step of speculation, then the target alone
    up to as many tokens. `order` records which lane each piece was ("speculative" or "alone"), in order."""

    def __init__(
        self,
        pair: ModelPair,
        prompt: str,
        config: SpecConfig,
        chat: bool | None = None,
        timer: clock.Timer | None = None,
    ) -> None:
        self.config, self.timer = config, timer or clock.default()
        self.target = pair.target
        self.alone = TargetAlone(pair, prompt, config, chat, timer=self.timer)
        self.spec = Decoder(pair, prompt, config, chat=chat)
        self.spec_pieces: list[tuple[float, int]] = []  # whole steps, wall time: drafting, verifying, the engine
        self.spec_disturbed: list[bool] = []
        self.order: list[str] = []

    @property
    def spec_seconds(self) -> float:
        return sum(seconds for seconds, _ in self.spec_pieces)

    def _lane(self, speculative: bool) -> Lane:
        if speculative:
            return Lane(
                tuple(self.spec.new_tokens),
                self.spec_seconds,
                len(self.spec.steps),
                self.spec.done,
                tuple(self.spec_pieces),
                tuple(self.spec_disturbed),
            )
        return Lane(
            tuple(self.alone.tokens),
            self.alone.seconds,
            len(self.alone.tokens),
            self.alone.done,
            tuple((t, 1) for t in self.alone.times),
            tuple(bool(why) for why in self.alone.disturbed),
        )

    def _spec_moves(self) -> bool:
        """Speculation's turn: the target alone has caught up with its tokens (or has finished)."""
        return not self.spec.done and (self.alone.done or len(self.alone.tokens) >= len(self.spec.new_tokens))

    def frames(self) -> Iterator[tuple[Lane, Lane]]:
        """(target alone, speculative) after every piece of work, until both are done: a step of speculation, then
        the target alone's tokens until it has as many, then the next step."""
        while not (self.alone.done and self.spec.done):
            with work_piece():  # one piece of work, in a server's turn where it hands them: never a wait timed
                if self._spec_moves():
                    threads = clock.threads_of(self.target, self.config.tau + 1)  # its verify pass's
                    step, timed = self.timer.time(self.spec.step, what="step", tokens=self.config.tau, threads=threads)
                    self.spec_pieces.append((timed.ms / 1000.0, len(step.emitted)))
                    self.spec_disturbed.append(bool(timed.disturbed()))
                    self.order.append("speculative")
                else:
                    self.alone.step()
                    self.order.append("alone")
            yield self._lane(False), self._lane(True)

    def result(self) -> RaceResult:
        alone, spec = self._lane(False), self._lane(True)
        steps = self.spec.steps
        drafted = sum(s.draft_passes for s in steps)  # forwards: c is one forward's cost
        timed = [self.timer.step_parts(s) for s in steps]
        return RaceResult(
            alone=alone,
            speculative=spec,
            tau=self.config.tau,
            mode=self.config.mode,
            verify_ms=sum(parts[1] for parts in timed) / max(len(steps), 1),
            draft_ms_per_token=sum(parts[0] for parts in timed) / max(drafted, 1),
            same_text=alone.tokens == spec.tokens,
            pass_tokens=tuple(s.nodes + 1 for s in steps),
            drafted=drafted,
        )

    def run(self) -> RaceResult:
        for _ in self.frames():
            pass
        return self.result()
