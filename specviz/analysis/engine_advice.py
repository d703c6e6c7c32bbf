"""From an engine's own numbers to its settings: the acceptance read by specviz.analysis.engine_import goes through
the cost model of "Would it pay there?" (specviz.analysis.outlook and costmodel: S_v(τ) = E / (τc + v(τ + 1)) with
every pass timed by the roofline) to give, on the chosen hardware, the best τ per batch, the batch from which
speculation loses, the speedup with its interval and what bounds the verify pass; and then the settings as each
engine takes them.

The acceptance (AcceptanceModel): measured unconditional per-position rates a_i up to the τ the engine ran at,
continued beyond it with the last measured conditional rate a_K / a_(K−1) (an extrapolation, marked as one); or,
where a format gives only a mean length L, the i.i.d. model of Leviathan et al. (2023): a_i = α^i with α the root of
α + α² + … + α^K = L − 1. E(τ) = 1 + Σ_{i≤τ} a_i. Its interval: min(n, τ) over N steps has mean Σ a_i and second
moment Σ (2i − 1) a_i, so E ± 1.96 √(var / N) (steps taken as independent: a lower bound on the uncertainty).

The settings (Flag), each in its engine's own spelling (specviz.analysis.engine_flags, which names the source of
each): vLLM's `--speculative-config` JSON with `num_speculative_tokens` and `num_speculative_tokens_per_batch_size`
([first batch, last batch, τ], τ = 0 off; docs/features/speculative_decoding/dynamic_speculative_decoding.md);
SGLang's `--speculative-num-steps`, `--speculative-eagle-topk`, `--speculative-num-draft-tokens` (the root counted:
τ + 1 for a chain); llama-server's `--spec-draft-n-max`, `--spec-draft-n-min`, `--spec-draft-p-min` with
`--spec-type` (or `--draft-max`, `--draft-min`, `--draft-p-min` for builds before b8955); LM Studio's
`maxTokensToDraft`, `minDraftLengthToConsider`, `minContinueDraftingProbability`; transformers'
`num_assistant_tokens`, `num_assistant_tokens_schedule`, `assistant_confidence_threshold`
(`transformers/generation/configuration_utils.py`).

Where a format gives only an acceptance rate r, E(τ) = 1 + r·τ takes every draft to be τ long: drafts that stop early
(llama.cpp's --spec-draft-p-min > 0, vLLM's n-gram proposals) kept the same share of fewer tokens, so the same r
over drafts of max(1, n-min) … τ tokens gives 1 + r·max(1, n-min) … 1 + r·τ; the model keeps the top and states
the bottom (`floor`) and how far above it the top lies. A llama.cpp statistics line that prints rates for its first
positions only (it drafted further) keeps them, and the exact mean length sets the rest: a geometric tail
a_m·q^j whose sum over the positions to τ is what the mean leaves."""

from __future__ import annotations

import math
from dataclasses import dataclass

from specviz.analysis import engine_flags as ef
from specviz.analysis import outlook as ol
from specviz.analysis.costmodel import CONTEXT, Hardware, Model, draft_cost, pass_bytes, pass_flops, pass_time
from specviz.analysis.engine_flags import Flag
from specviz.analysis.engine_import import VLLM, EngineImport
from specviz.errors import ConfigError

MAX_TAU = ol.MAX_TAU
MAX_BATCH = ol.BATCHES[-1]  # the schedule covers batches 1 to 512
Z = 1.96  # a 95% interval
BOUND = {"read": "memory-bound", "compute": "compute-bound", "fixed": "overhead-bound"}
FLAT = 0.10  # T(k) within 10% of the memory roof reads as that roof (a GPU's small k), not as a compute roof
HARDWARE_CHOICES = ("the hardware chosen above", "my own timings T(1), T(k)")  # the page's two ways
METHODS = ("eagle3", "eagle", "mtp", "draft_model", "ngram")  # vLLM's "method" values offered


@dataclass(frozen=True)
class AcceptanceModel:
    """What a step accepts, position by position, and how much of it was measured."""

    source: str  # in words
    rates: tuple[float, ...]  # a_1 … a_MAX_TAU: the unconditional per-position acceptance rates
    measured_upto: int  # positions the engine ran (its τ): beyond, the rates are extrapolated
    alpha: float | None  # the i.i.d. α where only a mean length was given
    steps: float | None  # the steps behind the numbers (for the interval); None: not known
    assumption: str  # the model, in words
    floor: float | None = None  # the lowest E(measured_upto) the numbers allow (a rate read over full drafts)

    def acceptance(self) -> ol.Acceptance:
        """The same rates as specviz.analysis.outlook takes them."""
        return ol.Acceptance(self.source, rates=self.rates)

    def tokens(self, tau: int) -> float:
        """E(τ) = 1 + Σ_{i≤τ} a_i: tokens per step with a chain of τ."""
        return 1.0 + sum(self.rates[:tau])

    def interval(self, tau: int) -> tuple[float, float] | None:
        """E(τ) ± 1.96 √(var / N), var of min(n, τ) from the rates; None where the steps are not known."""
        if not self.steps:
            return None
        mean = sum(self.rates[:tau])
        second = sum((2 * i + 1) * a for i, a in enumerate(self.rates[:tau]))
        half = Z * math.sqrt(max(0.0, second - mean * mean) / self.steps)
        return 1.0 + max(0.0, mean - half), 1.0 + min(float(tau), mean + half)


def solve_alpha(length: float, k: int) -> float:
    """The α with α + α² + … + α^k = length − 1 (bisection; the sum rises with α)."""
    goal = length - 1.0
    if goal <= 0.0:
        return 0.0
    if goal >= k:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if sum(mid**i for i in range(1, k + 1)) < goal else (low, mid)
    return (low + high) / 2


def from_import(
    imp: EngineImport, positions: int | None = None, tree: bool = False, p_min: float | None = None, n_min: int = 0
) -> AcceptanceModel:
    """The acceptance an engine reported; `positions`: the τ it ran at, where the paste does not say it (a tree's
    depth where `tree`: its tokens per step are then fitted as a chain of that depth, and said); `p_min`, `n_min`:
    the engine's --spec-draft-p-min and -n-min where known (a rate over drafts that may stop early)."""
    k = positions or imp.positions
    if not k:
        raise ConfigError(f"{imp.format.name} do not say the τ the engine ran at: give it (its draft length)")
    k = min(k, MAX_TAU)
    tree = tree or imp.tree
    steps = imp.steps if imp.steps is not None else imp.weight
    if steps is None and imp.drafted:
        steps = imp.drafted / k  # every step drafted k tokens (assumed)
    source = f"{imp.engine} ({imp.label or imp.format.name})"
    if imp.rates is not None and imp.partial and k > len(imp.rates) and imp.mean_length is not None:
        return _tail(imp, k, steps, source)
    if imp.rates is not None:
        return _extended(imp.rates[:k], steps, source)
    return _from_mean_length(imp, k, steps, source, tree, p_min, n_min)


def _extended(measured: tuple[float, ...], steps: float | None, source: str) -> AcceptanceModel:
    """Per-position rates measured up to m: beyond, each further position kept with the last measured conditional
    rate a_m / a_(m−1) (an extrapolation)."""
    m = len(measured)
    before = measured[-2] if m > 1 else 1.0
    q = measured[-1] / before if before > 0 else 0.0
    rates = measured + tuple(measured[-1] * q**j for j in range(1, MAX_TAU - m + 1))
    words = (
        f"measured per-position rates up to τ = {m}; beyond, each further position is kept with the last measured "
        f"conditional rate a{m} / a{m - 1} = {q:.3f} (an extrapolation)"
    )
    return AcceptanceModel(source, rates, m, None, steps, words)


def _from_mean_length(
    imp: EngineImport, k: int, steps: float | None, source: str, tree: bool, p_min: float | None, n_min: int
) -> AcceptanceModel:
    """Only a mean acceptance length (or a rate × τ): the α whose i.i.d. chain of τ = k gives it, with what the
    reading leaves open (drafts that stop early, a tree fitted as a chain) in words."""
    length = imp.mean_length
    how = "mean acceptance length"
    floor = None
    if length is None and imp.acceptance_rate is not None:
        rate = imp.acceptance_rate
        length, how = 1.0 + rate * k, f"acceptance rate {rate:.3f} × τ, every draft taken to be τ = {k} long"
        shortest = min(k, max(1, n_min))
        if p_min != 0.0 and shortest < k:
            floor = 1.0 + rate * shortest
    if length is None:
        raise ConfigError(f"{imp.format.name} give neither rates nor a mean length")
    if length - 1.0 > k + 0.005:
        raise ConfigError(
            f"a mean acceptance length of {length:.2f} needs at least {math.ceil(length - 1.0 - 0.005)} draft tokens "
            f"per step: the engine cannot have run at τ = {k}"
        )
    alpha = solve_alpha(length, k)
    words = (
        f"only a mean length ({how}: {length:.3f}); each draft token is taken to be kept independently with "
        f"α = {alpha:.3f}, the α for which 1 + α + … + α^{k} = {length:.3f} (τ = {k}): the rates α^i are a model, "
        f"and beyond τ = {k} an extrapolation"
    )
    if floor is not None:
        cause = "its n-gram proposals" if imp.engine == VLLM else "--spec-draft-p-min > 0"
        known = f"p-min {p_min:.2f}" if p_min is not None else "p-min not known"
        words += (
            f"; drafts that stop early ({cause}; {known}) kept the same share of fewer tokens: the same rate over "
            f"drafts of {min(k, max(1, n_min))} to {k} tokens gives a mean length of {floor:.2f} to {length:.2f}, "
            f"so this reading can overstate E({k}) by up to {length / floor - 1.0:.0%}"
        )
    elif p_min == 0.0 and how.startswith("acceptance rate"):
        words += "; with p-min 0 every draft is τ long (but the last of a reply), so the rate × τ holds"
    if tree:
        words += (
            f"; a tree's tokens per step fitted as a chain {k} deep, so α stands for a level of the tree (several "
            "tokens tried), above what a chain's single token would be kept with"
        )
    rates = tuple(alpha**i for i in range(1, MAX_TAU + 1))
    return AcceptanceModel(source, rates, k, alpha, steps, words, floor)


def _tail(imp: EngineImport, k: int, steps: float | None, source: str) -> AcceptanceModel:
    """Rates printed for the first m positions, the exact mean length for all k: positions m + 1 … k get
    a_m·q^j with Σ_{j≤k−m} a_m·q^j = (L − 1) − Σ_{i≤m} a_i (q by bisection, within [0, 1])."""
    measured = imp.rates
    m, last = len(measured), measured[-1]
    if imp.mean_length - 1.0 > k + 0.005:
        raise ConfigError(
            f"a mean acceptance length of {imp.mean_length:.2f} needs at least "
            f"{math.ceil(imp.mean_length - 1.0 - 0.005)} draft tokens per step: more than τ = {k} (this model goes to "
            f"τ = {MAX_TAU})"
        )
    goal = imp.mean_length - 1.0 - sum(measured)

    def tail_sum(q: float) -> float:
        return last * sum(q**j for j in range(1, k - m + 1))

    if goal <= 0.0 or last <= 0.0:
        q = 0.0
    elif goal >= tail_sum(1.0):
        q = 1.0
    else:
        low, high = 0.0, 1.0
        for _ in range(100):
            mid = (low + high) / 2
            low, high = (mid, high) if tail_sum(mid) < goal else (low, mid)
        q = (low + high) / 2
    rates = measured + tuple(last * q**j for j in range(1, MAX_TAU - m + 1))
    reached = 1.0 + sum(rates[:k])
    words = (
        f"per-position rates printed for positions 1–{m} only (the engine drafted further); its exact mean length "
        f"{imp.mean_length:.3f} sets positions {m + 1}–{k}: a geometric tail a{m}·q^j with q = {q:.3f}, so E({k}) = "
        f"{reached:.3f}"
        + ("" if abs(reached - imp.mean_length) < 1e-6 else f" (the most a tail no steeper than a{m} allows)")
        + f"; the tail and anything beyond τ = {k} are a model, not a count"
    )
    return AcceptanceModel(source, rates, k, None, steps, words)


def from_outlook(acc: ol.Acceptance) -> AcceptanceModel:
    """The app's own acceptance (a run's measured rates, or α by hand) in the same form, beside an engine's."""
    if acc.rates is not None:
        m = len(acc.rates)
        before = acc.rates[-2] if m > 1 else 1.0
        q = acc.rates[-1] / before if before > 0 else 0.0
        rates = acc.rates[:MAX_TAU] + tuple(acc.rates[-1] * q**j for j in range(1, MAX_TAU - m + 1))
        return AcceptanceModel(acc.source, rates[:MAX_TAU], min(m, MAX_TAU), None, None, "measured by this app")
    alpha = float(acc.alpha)
    rates = tuple(alpha**i for i in range(1, MAX_TAU + 1))
    return AcceptanceModel(acc.source, rates, MAX_TAU, alpha, None, f"i.i.d. α = {alpha:.2f}")


def typed_hardware(base: Hardware, target: Model, t1_ms: float, tk_ms: float, k: int, context: int = CONTEXT):
    """(hardware, words): the roofline of `base` fitted to a pass over 1 and over k tokens timed on the user's
    machine (batch 1, the target's sizes): the fixed cost per pass from T(1) (and the bandwidth, where T(1) is
    faster than the datasheet's bandwidth allows), the compute roof from T(k) where T(k) rises more than FLAT above
    the memory roof (then both timings are reproduced exactly); else the datasheet's compute roof is kept, since the
    timings do not reach the ridge: time a k past it (a few hundred tokens on a GPU) to see where it turns."""
    t1, tk = t1_ms / 1000.0, tk_ms / 1000.0
    if not (t1 > 0 and tk >= t1 and k >= 2):
        raise ConfigError(f"give T(1) > 0 and T(k) ≥ T(1) for some k ≥ 2; got T(1) = {t1_ms} ms, T({k}) = {tk_ms} ms")
    bandwidth = base.bandwidth
    b1, bk = pass_bytes(target, 1, 1, context), pass_bytes(target, k, 1, context)
    c1, ck = pass_flops(target, 1, 1, context), pass_flops(target, k, 1, context)
    overhead = t1 - b1 / bandwidth
    if overhead < 0:  # faster than the datasheet: the weights are smaller than the preset's (quantized, say)
        overhead, bandwidth = 0.0, b1 / t1
    room = tk - overhead
    if room > bk / bandwidth * (1 + FLAT):  # above the memory roof: the compute roof explains T(k)
        flops = ck / room
        if c1 / flops > b1 / bandwidth:  # compute-bound at k = 1 as well (a CPU): both on the compute roof
            flops = (ck - c1) / (tk - t1)
            overhead = max(0.0, t1 - c1 / flops)
        words = f"compute roof {flops / 1e12:.2f} TFLOP/s fitted to T({k})"
    else:
        flops = base.flops
        words = (
            f"T({k}) within the memory roof: the datasheet's {flops / 1e12:.0f} TFLOP/s kept (the ridge not reached)"
        )
    name = f"{base.name}, your timings"
    source = f"T(1) = {t1_ms:g} ms, T({k}) = {tk_ms:g} ms typed in"
    hw = Hardware(name, bandwidth, flops, overhead, source, 0.0, base.memory)
    said = (
        f"Fitted to your T(1) = {t1_ms:g} ms and T({k}) = {tk_ms:g} ms: fixed cost {overhead * 1000:.2f} ms a pass, "
        f"{bandwidth / 1e9:,.0f} GB/s, {words}. The fit gives T(1) = {pass_time(target, hw, 1, 1, context) * 1000:.2f} "
        f"ms and T({k}) = {pass_time(target, hw, k, 1, context) * 1000:.2f} ms."
    )
    return hw, said


@dataclass(frozen=True)
class BatchAdvice:
    """The best chain at one batch."""

    batch: int
    tau: int  # the fastest τ allowed (the least slow where none pays)
    speedup: float  # S_v at that τ
    interval: tuple[float, float] | None  # its 95% interval from the acceptance's; None: not known
    bound: str  # what bounds its verify pass: memory-bound, compute-bound or overhead-bound
    extrapolated: bool  # τ beyond what the engine ran

    @property
    def pays(self) -> bool:
        return self.speedup > 1.0


@dataclass(frozen=True)
class Advice:
    """One acceptance on one hardware and pair: the best τ at every batch up to MAX_BATCH."""

    acceptance: AcceptanceModel
    hardware: Hardware
    target: Model
    draft: Model
    context: int
    c: float | None  # the draft's cost measured here (None: modelled)
    extrapolate: bool  # τ beyond the measured positions allowed
    rows: tuple[BatchAdvice, ...]  # at specviz.analysis.outlook.BATCHES
    schedule: tuple[tuple[int, int, int], ...]  # (first batch, last batch, τ), τ = 0: off, over 1 … MAX_BATCH

    @property
    def break_even(self) -> int | None:
        """The smallest batch from which no τ pays (None: it pays up to MAX_BATCH)."""
        return next((first for first, _, tau in self.schedule if tau == 0), None)

    def at(self, batch: int) -> BatchAdvice:
        return next(r for r in self.rows if r.batch == batch) if batch in ol.BATCHES else self.row(batch)

    def speed(self, tau: int, batch: int) -> float:
        """S_v(τ) at this batch, as specviz.analysis.outlook computes it."""
        return _speed(self, tau, batch)

    def row(self, batch: int) -> BatchAdvice:
        top = self.acceptance.measured_upto if not self.extrapolate else MAX_TAU
        speeds = {t: self.speed(t, batch) for t in range(1, top + 1)}
        tau = max(speeds, key=speeds.__getitem__)
        found = self.acceptance.interval(tau)
        ratio = speeds[tau] / self.acceptance.tokens(tau)
        interval = (found[0] * ratio, found[1] * ratio) if found else None
        parts = ol.pass_parts(self.target, self.hardware, tau + 1, batch, self.context)
        bound = BOUND[max(parts, key=parts.__getitem__)]
        return BatchAdvice(batch, tau, speeds[tau], interval, bound, tau > self.acceptance.measured_upto)

    def why(self, batch: int) -> str:
        """The answer at one batch in a sentence, with what bounds the verify pass."""
        row = self.at(batch)
        parts = ol.pass_parts(self.target, self.hardware, row.tau + 1, batch, self.context)
        read, compute, fixed = (parts[k] * 1000 for k in ("read", "compute", "fixed"))
        gain = f"{row.speedup:.2f}×" + (f" ({row.interval[0]:.2f}–{row.interval[1]:.2f})" if row.interval else "")
        beyond = " (τ beyond what ran: extrapolated)" if row.extrapolated else ""
        verdict = f"τ = {row.tau}{beyond} gives {gain}" if row.pays else f"no τ pays (the best, τ = {row.tau}: {gain})"
        return (
            f"Batch {batch}: {verdict}. Its verify pass over {row.tau + 1} tokens per sequence is {row.bound}: reading "
            f"weights and caches {read:.2f} ms, arithmetic {compute:.2f} ms, fixed cost {fixed:.2f} ms."
        )


def _speed(advice: Advice, tau: int, batch: int) -> float:
    """specviz.analysis.outlook's S_v: E(τ) · T(1) / (τ · c · T(1) + T(τ + 1)), c modelled where not measured."""
    target, hw, context = advice.target, advice.hardware, advice.context
    one = pass_time(target, hw, 1, batch, context)
    cost = advice.c if advice.c is not None else draft_cost(advice.draft, target, hw, batch, context)
    return advice.acceptance.tokens(tau) * one / (tau * cost * one + pass_time(target, hw, tau + 1, batch, context))


def advise(
    acceptance: AcceptanceModel,
    hardware: Hardware,
    target: Model,
    draft: Model,
    context: int = CONTEXT,
    c: float | None = None,
    extrapolate: bool = False,
) -> Advice:
    """The best τ at every batch 1 … MAX_BATCH (τ up to what the engine ran unless `extrapolate`), the schedule of
    τ against the batch (0 where no τ pays) and the rows at outlook's batches."""
    if context < 1:
        raise ConfigError(f"the context is at least 1 token; got {context}")
    advice = Advice(acceptance, hardware, target, draft, context, c, extrapolate, (), ())
    chosen = []
    for batch in range(1, MAX_BATCH + 1):
        row = advice.row(batch)
        chosen.append(row.tau if row.pays else 0)
    schedule: list[tuple[int, int, int]] = []
    for batch, tau in enumerate(chosen, 1):
        if schedule and schedule[-1][2] == tau:
            schedule[-1] = (schedule[-1][0], batch, tau)
        else:
            schedule.append((batch, batch, tau))
    rows = tuple(advice.row(b) for b in ol.BATCHES)
    return Advice(acceptance, hardware, target, draft, context, c, extrapolate, rows, tuple(schedule))


def table(mine: Advice, theirs: Advice | None = None, mine_name: str = "your engine", theirs_name: str = "this app"):
    """Rows per batch: the engine's best τ, speedup, interval and bound, beside the app's own run's."""
    rows = []
    for row in mine.rows:
        gain = f"{row.speedup:.2f}×" + (f" ({row.interval[0]:.2f}–{row.interval[1]:.2f})" if row.interval else "")
        entry = {
            "batch": row.batch,
            f"{mine_name}: best τ": f"{row.tau}{' (extrapolated)' if row.extrapolated else ''}" if row.pays else "off",
            f"{mine_name}: speedup": gain,
            "verify pass": row.bound,
        }
        if theirs is not None:
            other = theirs.at(row.batch)
            entry[f"{theirs_name}: best τ"] = str(other.tau) if other.pays else "off"
            entry[f"{theirs_name}: speedup"] = f"{other.speedup:.2f}×"
        rows.append(entry)
    return rows


def vllm_schedule(advice: Advice) -> list[list[int]]:
    """num_speculative_tokens_per_batch_size: [first batch, last batch, τ] over 1 … MAX_BATCH, τ = 0 off."""
    return [[first, last, tau] for first, last, tau in advice.schedule]


def _drafting(advice: Advice, tau: int, batch: int) -> tuple[int, float]:
    """(draft-min, draft-p-min) for a chain of at most τ at this batch. draft-min: the shortest draft that pays
    verified alone (S_v(n) ≥ 1). draft-p-min: the τ-th token is worth drafting when kept with probability p above
    S_v(τ − 1) · δ / a_(τ−1), δ = c + v(τ + 1) − v(τ) its cost in one-token passes (adding it raises E by
    a_(τ−1) · p and the step's cost by δ); the draft's own probability is taken for p (a calibrated draft)."""
    n_min = next((n for n in range(1, tau + 1) if advice.speed(n, batch) >= 1.0), tau)
    target, hw, ctx = advice.target, advice.hardware, advice.context
    one = pass_time(target, hw, 1, batch, ctx)
    cost = advice.c if advice.c is not None else draft_cost(advice.draft, target, hw, batch, ctx)
    delta = cost + (pass_time(target, hw, tau + 1, batch, ctx) - pass_time(target, hw, tau, batch, ctx)) / one
    before = 1.0 if tau == 1 else advice.speed(tau - 1, batch)
    kept = 1.0 if tau == 1 else advice.acceptance.rates[tau - 2]
    return n_min, min(1.0, before * delta / kept) if kept > 0 else 1.0


def flags(
    advice: Advice,
    batch: int = 1,
    method: str = "eagle3",
    model: str = "",
    target: str = "",
    build: int | None = None,
    version: tuple[int, ...] | None = None,
    sampling: str | None = None,
    spelling: str | None = None,
    types: tuple[str, ...] = (),
) -> tuple[Flag, ...]:
    """vLLM's --speculative-config (τ per batch), SGLang's, llama.cpp's (in the spelling of `build`, or of the log's
    own command line: `spelling`, `types`), LM Studio's and transformers' settings, each with its reason; `batch` is
    the batch for the engines that take one setting for all; `model` the draft and `target` the target model, as the
    user names them; `sampling` the draft's (greedy: the one-hot rule, probabilistic: the token-wise rule)."""
    row, first = advice.at(batch), advice.at(1)
    return (
        _vllm_flag(advice, method, model, target, version, sampling),
        _sglang_flag(row, batch, method, model, target, sampling),
        _llamacpp_flag(advice, row, batch, method, model, target, build, sampling, spelling, types),
        *_lmstudio_flags(advice, first, model),
        _transformers_flag(advice, first),
    )


def _vllm_flag(
    advice: Advice, method: str, model: str, target: str, version: tuple[int, ...] | None, sampling: str | None
) -> Flag:
    schedule = vllm_schedule(advice)
    top = max(t for _, _, t in schedule)
    if top == 0:
        return Flag("vLLM", "# no --speculative-config: no τ pays at any batch up to 512", "Speculation loses here.")
    flag = ef.vllm(target, model, top, method, schedule, version, sampling)
    off = advice.break_even
    paying = [f"τ = {t} for batches {a}–{b}" for a, b, t in schedule if t]
    reason = "; ".join(paying[:4]) + ("; …" if len(paying) > 4 else "")
    reason += f"; off from batch {off} on" if off else "; it pays up to batch 512"
    reason += (
        " (num_speculative_tokens_per_batch_size: dynamic speculative decoding, over batches 1–512; tested with "
        "EAGLE, EAGLE-3 and DFlash, not with data parallelism)"
        if len(schedule) > 1
        else ""
    )
    if not model and method not in ("ngram", "mtp"):
        reason += "; put your draft where it says draft-model"
    if sampling is not None:
        written = "written" if sampling == "probabilistic" else "its default, not written"
        reason += f"; draft_sample_method {sampling} ({written}): this app's {ef.RULE_OF_SAMPLING[sampling]} rule"
    return Flag("vLLM", flag.text, reason)


def _sglang_flag(row: BatchAdvice, batch: int, method: str, model: str, target: str, sampling: str | None) -> Flag:
    if not row.pays:
        return Flag(
            "SGLang", "# leave --speculative-algorithm out", f"At batch {batch} no τ pays ({row.speedup:.2f}×)."
        )
    flag = ef.sglang(target, model, row.tau, method if method in ef.SGLANG_ALGORITHMS else "draft_model", sampling)
    one_hot = "; it verifies one-hot only: the draft stays greedy" if sampling == "probabilistic" else ""
    return Flag(
        "SGLang",
        flag.text,
        f"A chain of {row.tau} at batch {batch} ({row.speedup:.2f}×); SGLang takes one setting for every batch, and "
        f"--speculative-num-draft-tokens counts the root (τ + 1){one_hot}.",
    )


def _llamacpp_flag(
    advice: Advice,
    row: BatchAdvice,
    batch: int,
    method: str,
    model: str,
    target: str,
    build: int | None,
    sampling: str | None = None,
    spelling: str | None = None,
    types: tuple[str, ...] = (),
) -> Flag:
    if not row.pays:
        return Flag("llama.cpp", "# leave --spec-draft-model out", f"At batch {batch} no τ pays ({row.speedup:.2f}×).")
    n_min, p_min = _drafting(advice, row.tau, batch)
    kind = ef.LLAMACPP_TYPES.get(method, "draft-simple")
    flag = ef.llamacpp_server(target, model, row.tau, n_min, p_min, build, kind, sampling, spelling, types)
    return Flag(
        "llama.cpp",
        flag.text,
        f"At most {row.tau} tokens at batch {batch}; {n_min}: the shortest draft that pays on its own (S_v ≥ 1); stop "
        f"drafting when the draft is less sure than {p_min:.2f}, where token {row.tau} stops paying "
        f"(S_v(τ − 1) · δ / a_(τ−1)). Spelled for {flag.reason.split(': ', 1)[1]}",
    )


def _lmstudio_flags(advice: Advice, row: BatchAdvice, model: str) -> tuple[Flag, ...]:
    if not row.pays:
        return (Flag("LM Studio", "# no Draft Model", "At batch 1 no τ pays."),)
    n_min, p_min = _drafting(advice, row.tau, 1)
    return (ef.lmstudio(model, row.tau, n_min, p_min), ef.lmstudio(model, row.tau, mlx=True))


def _transformers_flag(advice: Advice, row: BatchAdvice) -> Flag:
    if not row.pays:
        return Flag("transformers", "# generate without assistant_model", "At batch 1 no τ pays.")
    _, p_min = _drafting(advice, row.tau, 1)
    text = (
        f'num_assistant_tokens={row.tau}, num_assistant_tokens_schedule="constant", '
        f"assistant_confidence_threshold={p_min:.2f}"
    )
    return Flag(
        "transformers",
        text,
        f"Keyword arguments of generate(..., assistant_model=draft): τ = {row.tau} at batch 1 "
        "(assisted generation decodes one sequence), held constant; the threshold as llama.cpp's --spec-draft-p-min.",
    )
