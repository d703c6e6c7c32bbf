"""Would it pay there? The acceptance measured here, carried to other hardware, model pairs and batch sizes with
the roofline cost model of specviz.analysis.costmodel (docs/algorithm.md, "The cost of a pass on other
hardware"): S_v against τ for the chain and for trees, the best τ, the batch past which even the best τ loses,
and why, in words: whether the verify pass is memory-bound (extra tokens nearly free) or compute-bound.

"This machine, measured": the hardware's numbers fitted to the target's passes timed here (`calibrate`), with
the fit's error stated, and the draft's cost c as measured beside the target alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from specviz.analysis.costmodel import (
    CONTEXT,
    HARDWARE,
    MODELS,
    Fit,
    Hardware,
    Model,
    draft_cost,
    fit_hardware,
    pass_bytes,
    pass_flops,
    pass_time,
    tokens_per_step,
    tree_speedup,
)
from specviz.analysis.measure import Spread
from specviz.analysis.passes import pass_times
from specviz.analysis.trees import TREE_SHAPES
from specviz.errors import ConfigError
from specviz.models.gguf import GGUFInfo, read_info
from specviz.models.pair import ModelPair

# model pairs a lecturer asks about: (target preset, draft preset), each in specviz.analysis.costmodel.MODELS
PAIRS: dict[str, tuple[str, str]] = {
    "the embedded pair (SmolLM2-135M + its draft)": ("SmolLM2-135M (fp32)", "SmolLM2-135M embedded draft (fp32)"),
    "Llama-3.1-8B + EAGLE-3 head": ("Llama-3.1-8B", "EAGLE-3 head for Llama-3.1-8B"),
    "Llama-3.1-8B + Llama-3.2-1B": ("Llama-3.1-8B", "Llama-3.2-1B"),
    "Llama-3.1-70B + Llama-3.2-1B": ("Llama-3.1-70B", "Llama-3.2-1B"),
    "Llama-3.1-70B + Llama-3.1-8B": ("Llama-3.1-70B", "Llama-3.1-8B"),
    "Vicuna-7B + EAGLE head": ("Vicuna-7B v1.3", "EAGLE head for Vicuna-7B"),
    "Vicuna-7B + vicuna-68m": ("Vicuna-7B v1.3", "vicuna-68m"),
}
HERE = "this machine, measured"  # the hardware choice fitted to this machine's own passes
YOUR_PAIR = "your GGUF pair (Decode page)"  # a Model pair choice beside PAIRS: sized from the files' headers
SOURCES = ("the Decode run", "the τ sweep", "α by hand")  # where the acceptance carried over comes from
EMBEDDED_TARGET = MODELS["SmolLM2-135M (fp32)"]
EMBEDDED_NAME = "SmolLM2-135M-Instruct"  # the embedded target's name as specviz.load_pair gives it
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_TAU = 16
CALIBRATION_KS = (1, 2, 3, 4, 5, 6, 8, 12, 16)


@dataclass(frozen=True)
class Acceptance:
    """What a step accepts, from a run or by hand: i.i.d. α, or the measured unconditional per-position rates
    (the share of steps that accept position i), which carry runs of easy tokens that α misses."""

    source: str  # in words, for the page: where the numbers come from
    alpha: float | None = None
    rates: tuple[float, ...] | None = None
    tree_tokens: Mapping[int, float] | None = None  # measured tokens per step of the app's trees, by nodes

    def __post_init__(self) -> None:
        if (self.alpha is None) == (self.rates is None):
            raise ConfigError("give the acceptance as α or as per-position rates, one of them")
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"α is a probability in [0, 1]; got {self.alpha}")
        if self.rates is not None and (not self.rates or any(not 0.0 <= r <= 1.0 for r in self.rates)):
            raise ConfigError("per-position rates are probabilities in [0, 1], at least one")

    @property
    def max_tau(self) -> int:
        return MAX_TAU if self.rates is None else min(MAX_TAU, len(self.rates))

    @classmethod
    def from_rates(cls, rates: Sequence[float | None], source: str) -> Acceptance:
        """The measured unconditional per-position rates, up to the first position no step drafted."""
        known = []
        for rate in rates:
            if rate is None:
                break
            known.append(float(rate))
        if not known:
            raise ConfigError(f"{source} has no per-position rate yet: no step drafted a token")
        return cls(source, rates=tuple(known))

    def with_trees(self, tree_tokens: Mapping[int, float] | None) -> Acceptance:
        """The same acceptance, with the measured tokens per step of the app's trees (by nodes)."""
        return dataclasses.replace(self, tree_tokens=tree_tokens)

    def words(self) -> str:
        if self.rates is not None:
            shown = ", ".join(f"{r:.2f}" for r in self.rates[:6]) + (", …" if len(self.rates) > 6 else "")
            return f"{self.source}: per-position rates {shown} (τ up to {len(self.rates)})"
        return f"{self.source}: α = {self.alpha:.2f}, each position accepted independently (τ up to {MAX_TAU})"

    def tokens(self, tau: int) -> float:
        return tokens_per_step(tau, self.alpha, self.rates)


@dataclass(frozen=True)
class Outlook:
    """One hardware, pair, batch and acceptance: the chain's S_v per τ, the trees', the best τ per batch."""

    hardware: Hardware
    target: Model
    draft: Model
    batch: int
    context: int
    acceptance: Acceptance
    c: float  # the draft's cost in target passes at this batch (measured on this machine, else modelled)
    c_measured: bool
    taus: tuple[int, ...]
    chain: tuple[float, ...]  # S_v(τ) for each τ
    verify: tuple[float, ...]  # v(τ + 1) for each τ
    trees: dict[int, float]  # nodes → S_v of the app's tree of that many nodes (where its tokens were measured)
    batches: tuple[int, ...]
    best_by_batch: tuple[tuple[int, float], ...]  # (best τ, its S_v) at each batch

    @property
    def best(self) -> tuple[int, float]:
        i = max(range(len(self.taus)), key=self.chain.__getitem__)
        return self.taus[i], self.chain[i]

    @property
    def break_even(self) -> int | None:
        """The smallest batch shown at which even the best τ is slower than the target alone (None: none)."""
        return next((b for b, (_, s) in zip(self.batches, self.best_by_batch, strict=True) if s < 1.0), None)

    def at_batch(self, batch: int) -> tuple[int, float]:
        return self.best_by_batch[self.batches.index(batch)]

    def bound(self, tau: int | None = None, batch: int | None = None) -> dict[str, float]:
        """The verify pass over τ + 1 tokens per sequence, its parts (`pass_parts`)."""
        tau = self.best[0] if tau is None else tau
        return pass_parts(self.target, self.hardware, tau + 1, self.batch if batch is None else batch, self.context)

    def memory_needed(self) -> float:
        """Bytes the pair and the batch's KV caches take (both models' weights, every sequence's cache)."""
        weights = self.target.params * self.target.bytes_per_weight + self.draft.params * self.draft.bytes_per_weight
        kv = self.batch * self.context * (self.target.kv_bytes_per_token + self.draft.kv_bytes_per_token)
        return weights + kv

    def fits(self) -> str | None:
        """None where the pair and its caches fit the device's memory; else what they need, in a sentence."""
        need, have = self.memory_needed(), self.hardware.memory
        if not have or need <= have:
            return None
        return (
            f"The pair and batch {self.batch}'s caches need {need / 1e9:.0f} GB; one {self.hardware.name} holds "
            f"{have / 1e9:.0f} GB: it takes {-(-need // have):.0f} of them, and the link between them (not modelled) "
            "adds to every pass."
        )

    def why(self) -> str:
        """Why it pays or not, in terms of the verify pass: memory-bound, compute-bound or fixed-cost-bound."""
        tau, speed = self.best
        parts = self.bound(tau)
        v = self.verify[self.taus.index(tau)]
        read, compute, fixed = (parts[k] * 1000 for k in ("read", "compute", "fixed"))
        pass_words = f"A target pass over {tau + 1} tokens per sequence (batch {self.batch}) costs {v:.2f} one-token "
        pass_words += "passes"
        if fixed > max(read, compute):
            kind = (
                f"its fixed cost ({fixed:.2f} ms: kernel launches, operator dispatch) outweighs reading the weights "
                f"({read:.2f} ms) and the arithmetic ({compute:.2f} ms), so extra tokens are nearly free but so is "
                "little else"
            )
        elif read >= compute:
            kind = (
                f"it is memory-bound: reading {pass_bytes(self.target, tau + 1, self.batch, self.context) / 1e9:.2f} "
                f"GB takes {read:.2f} ms and the arithmetic only {compute:.2f} ms, so the extra tokens ride along"
            )
        else:
            kind = (
                f"it is compute-bound: the arithmetic takes {compute:.2f} ms, more than reading the weights "
                f"({read:.2f} ms), so every drafted token costs time whether it is kept or not"
            )
        draft = f"the draft costs c = {self.c:.3f} target passes a token" + (" (measured)" if self.c_measured else "")
        verdict = f"speculation pays, {speed:.2f}× at τ = {tau}" if speed > 1.0 else f"no τ pays (best {speed:.2f}×)"
        return f"{pass_words}: {kind}; {draft}. So {verdict}."

    def summary(self) -> str:
        """The answer to "would it pay there, at batch 1 and at a busy server's batch?" in one paragraph."""
        (t1, s1), (t64, s64) = self.at_batch(1), self.at_batch(64)
        here = f"{self.hardware.name}, {self.target.name} drafted by {self.draft.name}"
        said = f"At batch 1: {s1:.2f}× (τ = {t1}). At batch 64: {s64:.2f}× (τ = {t64})."
        ends = self.break_even
        tail = f" From batch {ends} on, even the best τ is slower than the target alone." if ends else ""
        return f"{here}. {said}{tail}"


def pass_parts(model: Model, hw: Hardware, k: int, batch: int = 1, context: int = CONTEXT) -> dict[str, float]:
    """A pass over k tokens for each of `batch` sequences, its parts in seconds: reading (weights and KV cache),
    computing, and the fixed cost per pass; the pass costs the larger of the first two plus the third."""
    return {
        "read": pass_bytes(model, k, batch, context) / hw.bandwidth,
        "compute": pass_flops(model, k, batch, context) / hw.flops,
        "fixed": hw.overhead + model.layers * hw.layer_overhead,
    }


BOUND_WORDS = {"read": "reading the weights", "compute": "the arithmetic", "fixed": "the fixed cost (launches)"}


def bound_by(model: Model, hw: Hardware, k: int, batch: int = 1, context: int = CONTEXT) -> str:
    """What limits a pass over k tokens, in words (`BOUND_WORDS`)."""
    parts = pass_parts(model, hw, k, batch, context)
    return BOUND_WORDS[max(parts, key=parts.__getitem__)]


def outlook(
    target: Model,
    draft: Model,
    hw: Hardware,
    acceptance: Acceptance,
    batch: int = 1,
    context: int = CONTEXT,
    c: float | None = None,
) -> Outlook:
    """The prediction for one setting. `c`: the draft's cost measured on this machine (its modelled value
    otherwise); a measured c is held at every batch (the draft batches as the target does)."""
    if batch < 1 or context < 1:
        raise ConfigError(f"batch and context are at least 1; got batch {batch}, context {context}")
    taus = tuple(range(1, acceptance.max_tau + 1))

    def speed(tau: int, b: int) -> float:
        step = tau * cost(b) * pass_time(target, hw, 1, b, context) + pass_time(target, hw, tau + 1, b, context)
        return acceptance.tokens(tau) * pass_time(target, hw, 1, b, context) / step

    def cost(b: int) -> float:
        return c if c is not None else draft_cost(draft, target, hw, b, context)

    trees = {}
    for nodes, tokens in (acceptance.tree_tokens or {}).items():
        topk, depth = TREE_SHAPES[nodes]
        if c is None:  # modelled: `depth` draft passes over topk tokens each, one verify pass over nodes + 1
            trees[nodes] = tree_speedup(target, draft, hw, nodes, depth, tokens, topk, batch, context)
        else:  # measured c: a draft pass over a level taken to cost what one over a token does
            one = pass_time(target, hw, 1, batch, context)
            trees[nodes] = tokens * one / (depth * c * one + pass_time(target, hw, nodes + 1, batch, context))
    best = []
    for b in BATCHES:
        speeds = {t: speed(t, b) for t in taus}
        top = max(speeds, key=speeds.__getitem__)
        best.append((top, speeds[top]))
    one = pass_time(target, hw, 1, batch, context)
    return Outlook(
        hardware=hw,
        target=target,
        draft=draft,
        batch=batch,
        context=context,
        acceptance=acceptance,
        c=cost(batch),
        c_measured=c is not None,
        taus=taus,
        chain=tuple(speed(t, batch) for t in taus),
        verify=tuple(pass_time(target, hw, t + 1, batch, context) / one for t in taus),
        trees=trees,
        batches=BATCHES,
        best_by_batch=tuple(best),
    )


@dataclass(frozen=True)
class Calibration:
    """This machine's roofline, fitted to the target's passes timed here on one runtime."""

    runtime: str
    measured_ms: dict[int, Spread]  # k → T(k), median and interquartile range
    fit: Fit
    context: int  # tokens in the cache while the passes were timed
    model: Model = EMBEDDED_TARGET  # the target timed, as the cost model sees it

    @property
    def hardware(self) -> Hardware:
        return self.fit.hardware

    def predicted_ms(self, k: int) -> float:
        return pass_time(self.model, self.hardware, k, 1, self.context) * 1000.0

    def error_at(self, k: int) -> float:
        """|fitted − measured| / measured at k where k was timed; the fit's largest error elsewhere."""
        if k in self.measured_ms:
            return abs(self.predicted_ms(k) / self.measured_ms[k].value - 1)
        return self.fit.max_rel_error

    def rows(self) -> list[dict[str, float | int | str]]:
        """Per k: T(k) measured and fitted, v(k) measured and fitted, the error."""
        one, fitted_one = self.measured_ms[1].value, self.predicted_ms(1)
        return [
            {
                "k": k,
                "T(k) measured, ms": f"{spread.value:.2f} ({spread.low:.2f}–{spread.high:.2f})",
                "T(k) fitted, ms": f"{self.predicted_ms(k):.2f}",
                "v(k) measured": f"{spread.value / one:.2f}",
                "v(k) fitted": f"{self.predicted_ms(k) / fitted_one:.2f}",
                "error": f"{(self.predicted_ms(k) / spread.value - 1):+.1%}",
            }
            for k, spread in sorted(self.measured_ms.items())
        ]

    def sentence(self) -> str:
        hw, bound = self.hardware, self.fit.compute_bound_from
        roof = f"compute-bound from k = {bound} on" if bound else "memory-bound (or fixed-cost-bound) at every k timed"
        return (
            f"Fitted on {self.runtime}: {hw.bandwidth / 1e9:.1f} GB/s effective, "
            f"{hw.flops / 1e9:.0f} GFLOP/s, {hw.layer_overhead * 1e6:.0f} µs fixed per layer; the pass is {roof}. "
            f"The fit is within {self.fit.max_rel_error:.1%} of every T(k) timed."
        )


def against_measured(
    calibration: Calibration, c: float, measured: Sequence[tuple[int, float, Spread]], context: int | None = None
) -> list[dict[str, float | int | str | bool]]:
    """The measured speedups of runs on this machine (τ, their tokens per step, speedup with its interval) beside
    S_v(τ) predicted from the same tokens per step, the measured c and the fitted passes. A prediction agrees when
    it lies in the measured interval widened by the fit's own error at τ + 1 tokens."""
    hw = calibration.hardware
    at = calibration.context if context is None else context
    one = pass_time(calibration.model, hw, 1, 1, at)
    rows = []
    for tau, tokens, speed in measured:
        predicted = tokens / (tau * c + pass_time(calibration.model, hw, tau + 1, 1, at) / one)
        err = calibration.error_at(tau + 1)
        low, high = speed.low * (1 - err), speed.high * (1 + err)
        rows.append(
            {
                "τ": tau,
                "tokens per step": round(tokens, 2),
                "measured speedup": speed.text(2),
                "predicted S_v": f"{predicted:.2f}×",
                "agrees": bool(low <= predicted <= high),
            }
        )
    return rows


def gguf_model(info: GGUFInfo, name: str | None = None) -> Model:
    """A GGUF file as the cost model sees it, from its header: the weights a pass reads at the file's own bytes per
    weight (its size over its elements: the quantization's, scales included), its layers, its KV cache per token and
    its attention width (the hidden size). `name`: as the pages name it (else the header's name and quantization)."""
    if not (info.n_layer and info.n_embd and info.kv_bytes_per_token):
        raise ConfigError(
            f"the header of {info.path.name} does not give its layers, hidden size and attention heads: the cost "
            "model cannot size its passes"
        )
    return Model(
        name=name or f"{info.name} ({info.quantization})",
        params=info.read_per_pass,
        bytes_per_weight=info.file_bytes / info.parameters,
        layers=info.n_layer,
        kv_bytes_per_token=info.kv_bytes_per_token,
        attn_width=info.n_embd,
        source=f"the GGUF header of {info.path.name}",
    )


def target_model(pair: ModelPair) -> Model:
    """The pair's target as the cost model sees it: the embedded target's sizes, or a GGUF file's from its header
    (on llama.cpp); ConfigError for any other (a hub model's or a served one's sizes are not known here)."""
    if pair.target.name == EMBEDDED_NAME:
        return EMBEDDED_TARGET
    path = getattr(pair.target, "path", None)  # a llama.cpp model's file
    if isinstance(path, Path) and path.suffix == ".gguf":
        return gguf_model(read_info(path), pair.target.name)
    raise ConfigError(
        f"this machine is calibrated on the embedded target or a GGUF file, whose sizes the model reads; the target "
        f"is {pair.target.name}: choose one of those"
    )


def header_pair(
    target: GGUFInfo, draft: GGUFInfo | None, names: tuple[str, str], lookup: bool = False
) -> tuple[Model, Model]:
    """A GGUF pair as the cost model sees it, from the headers alone (nothing loaded): the target, and the draft file
    (None: the target drafting for itself, or with `lookup` prompt lookup, which reads no weights). `names`: as the
    pages name the two."""
    model = gguf_model(target, names[0])
    if draft is not None:
        return model, gguf_model(draft, names[1])
    if lookup:
        return model, weightless(names[1], "prompt lookup: no weights, only a search of the text")
    return model, model


def weightless(name: str, source: str) -> Model:
    """A draft the cost model reads no weights for (prompt lookup, or one whose sizes are not known here)."""
    return Model(name=name, params=0, bytes_per_weight=0, layers=1, kv_bytes_per_token=0, attn_width=0, source=source)


def draft_model(pair: ModelPair, target: Model) -> Model:
    """The pair's draft as the cost model sees it: the target itself, a GGUF file's sizes from its header, the
    embedded draft's; any other draft by its name alone (its cost is the c measured beside the target)."""
    if pair.draft is pair.target:
        return target
    path = getattr(pair.draft, "path", None)  # a llama.cpp model's file
    if isinstance(path, Path) and path.suffix == ".gguf":
        return gguf_model(read_info(path), pair.draft.name)
    if pair.target.name == EMBEDDED_NAME and pair.draft.name == f"{EMBEDDED_NAME} distilled draft":
        return MODELS["SmolLM2-135M embedded draft (fp32)"]
    return weightless(pair.draft.name, "no sizes known here: its cost is the c measured beside the target")


def calibrate(pair: ModelPair, ids: Sequence[int], ks: Sequence[int] = CALIBRATION_KS, repeats: int = 5) -> Calibration:
    """Time the target's passes over k tokens here (interleaved, at one cache length) and fit the roofline to
    them: the target's sizes (target_model), this runtime's numbers."""
    target_model(pair)  # a target whose sizes are not known here is refused before anything is timed
    return fitted(pair, pass_times(pair, ids, ks, repeats), len(ids) - max(ks))


def fitted(pair: ModelPair, measured: Mapping[int, Spread], context: int) -> Calibration:
    """The roofline fitted to passes over k tokens timed at `context` tokens (pass_times', or the pair's kept
    timings: specviz.analysis.pairtimes)."""
    model = target_model(pair)
    seconds = [s.value / 1000.0 for s in measured.values()]
    name = f"this machine ({pair.runtime})"
    fit = fit_hardware(list(measured), seconds, model, context, name=name, single_row=True)
    return Calibration(pair.runtime, dict(measured), fit, context, model)


def draft_cost_of(timings) -> Spread:
    """c from the pair's kept timings (specviz.analysis.pairtimes.PairTimings): a draft forward's median and
    interquartile range over the target's median one-token pass."""
    return timings.draft_ms.scaled(1.0 / timings.one_token_ms.value)


def preset_tables() -> tuple[list[dict], list[dict]]:
    """The hardware and model presets as a room reads them, each with its source."""
    hardware = [
        {
            "hardware": h.name,
            "memory bandwidth, GB/s": round(h.bandwidth / 1e9, 1),
            "dense TFLOP/s": round(h.flops / 1e12, 1),
            "memory, GB": round(h.memory / 1e9) if h.memory else "–",
            "source": h.source,
        }
        for h in HARDWARE.values()
    ]
    models = [
        {
            "model": m.name,
            "weights a pass reads, billions": round(m.params / 1e9, 3),
            "bytes per weight": m.bytes_per_weight,
            "layers": m.layers,
            "source": m.source,
        }
        for m in MODELS.values()
    ]
    return hardware, models
