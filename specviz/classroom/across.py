"""Across drafts for any target: the drafts that fit a target (the GGUF files found on this computer that pair with it,
the embedded target's quantized copies, its trained draft, early exit from a torch target's own layers, prompt
lookup, the pair's own draft), each draft that does not fit with its own reason; all of them run on the same held-out
prompts as one interleaved benchmark (specviz.analysis.draft_sweep), their costs c and v read from the pairs' book
of timings (specviz.analysis.pairtimes); one recommendation, and the settings to run it in the user's own engine
(specviz.analysis.engine_flags)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specviz import specs
from specviz.analysis import clock
from specviz.analysis.draft_sweep import (
    GRADED,
    DraftSweep,
    Recommendation,
    costs_of,
    recommend,
    summarize,
    sweep_drafts,
)
from specviz.analysis.engine_flags import Flag
from specviz.analysis.pairtimes import PairTimings, TimingBook
from specviz.analysis.sweep import SweepSettings
from specviz.analysis.theory import ceiling, ceiling_columns
from specviz.class_policy import ClassPolicy
from specviz.drafts import kinds
from specviz.drafts.kinds import EARLY, GGUF, LOOKUP, MODEL, TRAINED, EngineTarget
from specviz.errors import SpecvizError
from specviz.loading import (
    EARLY_EXIT,
    EMBEDDED_DRAFT_LAYERS,
    PRESETS,
    PROMPT_LOOKUP,
    QUANTIZED,
    SELF,
    check_allowed,
    gguf_path,
)
from specviz.models import embedded, gguf, llamacpp, quantize
from specviz.models.lm import HFModel
from specviz.models.pair import ModelPair

EMBEDDED_HUB = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the embedded target on the hub (what vLLM and SGLang load)
LOOKUP_LABEL = "prompt lookup"
HELD_OUT_KINDS = 4  # eval_prompts' kinds (stories, questions, code, facts), four prompts each


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """A draft that fits the target."""

    label: str  # as the page names it
    spec: str  # what load_pair takes
    kind: str  # what it is: its draft kind's `across` (GGUF, TRAINED, EARLY, LOOKUP, MODEL or a kind's own)
    file: str = ""  # what an engine loads: the GGUF file, or a hub id or folder (MODEL)
    name: str = ""  # as the user knows it (LM Studio's draft model)


@dataclass(frozen=True, kw_only=True)
class Unfit:
    """A draft that does not fit the target, and why."""

    label: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Drafts:
    """A target and its drafts: those that fit, those that do not."""

    target: str  # its spec
    gguf_file: str  # its GGUF file (llama.cpp's -m), "" where it has none
    model_id: str  # its hub id or folder (vLLM's and SGLang's), "" where it has none
    fit: tuple[Candidate, ...]
    unfit: tuple[Unfit, ...]

    def labels(self) -> list[str]:
        return [c.label for c in self.fit]

    def by_label(self) -> dict[str, Candidate]:
        return {c.label: c for c in self.fit}


def held_out(prompts: Sequence[tuple[str, bool]], kinds: int = HELD_OUT_KINDS) -> tuple[str, ...]:
    """One instruction of each kind from the held-out prompts (specviz.training.prompts.eval_prompts: `kinds` blocks of
    equal length, (text, written for the chat template) each): prompts no draft here was trained on."""
    size = len(prompts) // kinds if kinds else 0
    blocks = [prompts[i * size : (i + 1) * size] for i in range(kinds)] if size else []
    return tuple(next(text for text, chat in block if chat) for block in blocks if any(chat for _, chat in block))


def drafts_for(
    target: str | specs.ModelSpec,
    draft: str | specs.ModelSpec,
    found: Sequence[gguf.FoundModel],
    *,
    layers: int | None = None,
    rules: ClassPolicy | None = None,
    llama: bool | None = None,
    places: Sequence[gguf.Place] | None = None,
) -> Drafts:
    """Every draft that fits `target` and every one that does not, with why: for a GGUF target the found files that
    pair with it (gguf.pair_differences: vocabulary, special tokens, chat template; and smaller) and prompt lookup;
    for the embedded target its trained draft, its copies in 8, 4 and 2 bits, its first 8 layers, prompt lookup and
    the found files that pair with it; for another torch target (`layers`: its block count) its first quarter of
    layers, prompt lookup and the presets' drafts for it; for a served target its local draft. `draft`, the pair's own
    draft, is among them (unless it is the target itself). `rules`: a class's (a draft it does not allow does not
    fit); `llama`: whether llama.cpp is installed (default: asked); `places`: where a server finds GGUF files. A
    found GGUF target (specviz.specs.found) is read from what was found: its file is not looked for or read again."""
    llama = llamacpp.available() if llama is None else llama
    spec = specs.parse(target)
    known = spec.found if isinstance(spec, specs.GGUFFile) and spec.found and spec.found.info else None
    target, draft = str(spec), str(draft)
    if isinstance(spec, specs.Served):
        served = spec.served
        fit, unfit = _own(draft) if draft.strip() and draft != SELF else ([], [])
        why = "a served target drafts with a local model of its own tokenizer (a hub id or a folder)"
        unfit += [Unfit(label=LOOKUP_LABEL, reason=f"{why}: prompt lookup needs the target's weights here")]
        unfit += [Unfit(label=m.name, reason=f"{why}; a GGUF file drafts beside a GGUF target") for m in found]
        gguf_file, model_id = "", served.model or ""
    elif spec.is_gguf:
        path = known.path if known else gguf_path(spec, places=None if places is None else list(places))
        fit, unfit = _gguf_drafts(known.info if known else gguf.read_info(path), path, found, set())
        fit.append(Candidate(label=LOOKUP_LABEL, spec=PROMPT_LOOKUP, kind=LOOKUP))
        gguf_file, model_id = str(path), ""
    elif isinstance(spec, specs.Embedded):
        fit, unfit = _embedded_drafts(found, llama)
        gguf_file, model_id = str(embedded.cache_root() / embedded.F32_GGUF), EMBEDDED_HUB
    else:
        fit = [Candidate(label=p.draft, spec=p.draft, kind=MODEL, file=p.draft) for p in PRESETS if p.target == target]
        quarter = max(1, layers // 4) if layers else None
        if quarter is not None:
            fit.append(_early(quarter))
        fit.append(Candidate(label=LOOKUP_LABEL, spec=PROMPT_LOOKUP, kind=LOOKUP))
        why = f"a GGUF draft runs beside a GGUF target or the embedded one; {target} is a torch model here"
        unfit = [Unfit(label=m.name, reason=why) for m in found]
        gguf_file, model_id = "", target
    if draft.strip() and draft != SELF and draft != target and all(c.spec != draft for c in fit):
        own, own_unfit = _own(draft)
        fit[:0], unfit = own, [*own_unfit, *unfit]
    allowed = []
    for candidate in fit:
        try:
            check_allowed(target, candidate.spec, rules or ClassPolicy())
            allowed.append(candidate)
        except SpecvizError as exc:  # the class's rules: RefusedError
            unfit.append(Unfit(label=candidate.label, reason=str(exc)))
    return Drafts(target=target, gguf_file=gguf_file, model_id=model_id, fit=_unique(allowed), unfit=tuple(unfit))


def _own(spec: str) -> tuple[list[Candidate], list[Unfit]]:
    """The pair's own draft, as its kind names it (specviz.drafts.kinds): one candidate, or why it is none."""
    spec = spec.strip()
    label = f"the pair's draft ({spec})"
    try:
        kind = kinds.kind_of(specs.parse(spec))
        file = kind.engine_file(spec)
    except SpecvizError as exc:
        return [], [Unfit(label=label, reason=str(exc))]
    if not kind.across:
        return [], []
    name = spec if kind.across == GGUF else ""
    return [Candidate(label=kind.own_label(spec), spec=spec, kind=kind.across, file=file, name=name)], []


def _early(layers: int) -> Candidate:
    spec = f"{EARLY_EXIT}:{layers}"
    return Candidate(label=f"the first {layers} layers, untrained ({spec})", spec=spec, kind=EARLY)


def _embedded_drafts(found: Sequence[gguf.FoundModel], llama: bool) -> tuple[list[Candidate], list[Unfit]]:
    """The embedded target's drafts: GRADED, its first 8 layers, and the found GGUF files that pair with it (its own
    float32 file and the graded copies in specviz's cache are these already)."""
    f32 = embedded.cache_root() / embedded.F32_GGUF
    fit, unfit, own = [], [], {f32.resolve()}
    for label, spec in GRADED.items():
        if spec.startswith(QUANTIZED):
            kind = spec.removeprefix(QUANTIZED)
            copy = quantize.quantized_path(f32, kind, embedded.cache_root())
            own.add(copy.resolve())
            if not llama:
                unfit.append(Unfit(label=label, reason=f"llama.cpp makes and runs it: {llamacpp.INSTALL_HINT}"))
                continue
            fit.append(Candidate(label=label, spec=spec, kind=GGUF, file=str(copy), name=copy.name))
        else:
            kind = LOOKUP if spec == PROMPT_LOOKUP else TRAINED
            fit.append(Candidate(label=label, spec=spec, kind=kind))
    fit.insert(len(fit) - 1, _early(EMBEDDED_DRAFT_LAYERS))  # before prompt lookup
    if not found:
        return fit, unfit
    if not llama:
        return fit, unfit + [Unfit(label=m.name, reason=f"runs on llama.cpp: {llamacpp.INSTALL_HINT}") for m in found]
    package = gguf.read_info(embedded.gguf_path())  # the same vocabulary, specials and template as its float32 copy
    target = dataclasses.replace(package, file_bytes=package.parameters * 4)  # the float32 target it runs
    found_fit, found_unfit = _gguf_drafts(target, f32, found, own)
    return fit[:-1] + found_fit + fit[-1:], unfit + found_unfit


def _gguf_drafts(
    target: gguf.GGUFInfo, path: Path, found: Sequence[gguf.FoundModel], skip: set[Path]
) -> tuple[list[Candidate], list[Unfit]]:
    """The found files that draft for a GGUF target (`target`, in `path`), and each other one with its reason. The
    target's own file (under any name) and those in `skip` are neither; a file found twice is listed once."""
    fit, unfit, seen = [], [], {path.resolve(), *skip}
    for model in found:
        if model.info is None:
            unfit.append(Unfit(label=model.name, reason=f"could not be read: {model.error}"))
            continue
        where = model.path.resolve()
        if where in seen:
            continue
        seen.add(where)
        info, differences = model.info, gguf.pair_differences(target, model.info)
        if differences:
            more = len(differences) - gguf.SHOWN_DIFFERENCES
            reason = "; ".join(differences[: gguf.SHOWN_DIFFERENCES]) + (f"; and {more} more" if more > 0 else "")
            unfit.append(Unfit(label=model.name, reason=reason))
        elif info.parameters >= target.parameters and info.file_bytes >= target.file_bytes:
            unfit.append(
                Unfit(
                    label=model.name, reason=f"not smaller than the target: {_size(info)}, the target {_size(target)}"
                )
            )
        else:
            fit.append(Candidate(label=model.name, spec=model.spec, kind=GGUF, file=str(model.path), name=model.name))
    return fit, unfit


def unfit_files(target: gguf.FoundModel, found: Sequence[gguf.FoundModel]) -> list[Unfit]:
    """Each file of `found` that cannot draft for the GGUF `target`, with its own reason (another vocabulary, special
    tokens or chat template: the first differences; not smaller; unreadable)."""
    if target.info is None:
        return []
    return _gguf_drafts(target.info, target.path, found, set())[1]


def _size(info: gguf.GGUFInfo) -> str:
    count = f"{info.parameters / 1e9:.2f} B" if info.parameters >= 10_000_000 else f"{info.parameters:,}"
    return f"{count} parameters in {gguf.format_bytes(info.file_bytes)}"


def _unique(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """One candidate per spec; a label used twice gets its spec beside it."""
    out: dict[str, Candidate] = {}
    for c in candidates:
        if all(o.spec != c.spec for o in out.values()):
            label = c.label if c.label not in out else f"{c.label} ({c.spec})"
            out[label] = dataclasses.replace(c, label=label)
    return tuple(out.values())


# --- the benchmark -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Across:
    """What the benchmark across drafts found: every chosen draft's sweep, its costs from the book, the recommendation
    and the settings to run it."""

    drafts: Drafts
    chosen: tuple[str, ...]  # the drafts run, in order
    settings: SweepSettings
    result: DraftSweep
    timings: dict[str, PairTimings | None]  # label → the pair's timings from the book (None: not timed)
    untimed: dict[str, str]  # label → why its c and v could not be timed (a busy machine: its message)
    recommendation: Recommendation
    flags: tuple[Flag, ...]  # the settings to run the recommended draft
    note: str  # what the settings leave out, and why

    def table(self) -> list[dict[str, str]]:
        """One row per draft run: its best τ and speedup, α (as accepted), tokens per step, and c and v(τ + 1) from
        the pair's timings; every number as text ("–" where there is none)."""
        best, rows = self.result.best(), []
        for label in self.chosen:
            row = best.get(label)
            costs = None if row is None else costs_of(self.timings.get(label), row.tau)
            missing = "withheld" if label in self.result.withheld else "–"
            rows.append(
                {
                    "draft": label,
                    "best τ": "–" if row is None else str(row.tau),
                    "speedup (95% interval)": missing if row is None else row.speedup.text(),
                    "α (accepted)": "–" if row is None or row.accepted is None else f"{row.accepted:.2f}",
                    "tokens per step": "–" if row is None else f"{row.tokens_per_step:.2f}",
                    "c": "–" if costs is None else f"{costs[0]:.2f}",
                    "v(τ + 1)": "–" if costs is None else f"{costs[1]:.2f}",
                }
                | ceiling_columns(
                    None if costs is None else ceiling(row.tau, costs[1], costs[0], tokens_per_pass=row.tokens_per_step)
                )
            )
        return rows


def run(
    drafts: Drafts,
    chosen: Sequence[str],
    settings: SweepSettings,
    load: Callable[[str], ModelPair],
    book: TimingBook,
    caches: dict[str, dict],
    timer: clock.Timer | None = None,
    progress: Callable[[float, str], None] | None = None,
    finished_only: bool = False,
) -> Across:
    """Load each chosen draft's pair (`load(spec)`; one that fails is withheld with why), run them as one interleaved
    benchmark (sweep_drafts; `caches`: label → its units kept between calls), read each pair's costs from `book` (timed
    now where it has none: a measurement withheld as busy is kept as its message), close the pairs, and recommend. The
    runs and the timings are pieces of work (specviz.pieces: a server's turns where the caller runs this
    `in_pieces`). `progress(fraction, text)` is told after each piece of work. `finished_only`: no run is started, the
    recommendation is made from the runs `caches` hold (a benchmark cut short with Stop)."""
    say = progress or (lambda _fraction, _text: None)
    by_label = drafts.by_label()
    pairs: dict[str, ModelPair] = {}
    failed, timings, untimed = {}, {}, {}
    try:
        for i, label in enumerate(chosen):
            say(0.0, f"Loading {label} ({i + 1} of {len(chosen)})…")
            try:
                pairs[label] = load(by_label[label].spec)
            except SpecvizError as exc:
                failed[label] = f"could not be loaded: {exc}"
        planned = 0  # the runs planned: the one total said from start to end (τ values run again come after it)
        for done, total, label in () if finished_only else sweep_drafts(pairs, settings, caches, timer):
            planned = planned or total
            say(0.9 * min(done, planned) / planned, counted(done, total, planned, label))
        for i, (label, pair) in enumerate(pairs.items()):
            say(0.9 + 0.1 * i / len(pairs), f"Timing the passes of the target with {label} (the pair's c and v)…")
            timings[label] = book.get(pair)
            if timings[label] is None:
                try:
                    timings[label] = book.measure(pair, timer=timer)
                except SpecvizError as exc:  # BusyMachine, or timings that cannot be right: said, never shown
                    untimed[label] = str(exc)
        result = summarize(pairs, settings, caches)
    finally:
        for pair in pairs.values():
            pair.close()
    result = DraftSweep(summaries=result.summaries, withheld={**failed, **result.withheld})
    recommendation = recommend(result, timings)
    flags, note = ((), "")
    if recommendation.draft is not None:
        flags, note = run_settings(drafts, by_label[recommendation.draft], recommendation.tau)
    return Across(
        drafts=drafts,
        chosen=tuple(chosen),
        settings=settings,
        result=result,
        timings=timings,
        untimed=untimed,
        recommendation=recommendation,
        flags=flags,
        note=note,
    )


def counted(done: int, total: int, planned: int, label: str) -> str:
    """The benchmark's progress in words, counted one way: "23 / 160 runs, …" over the runs planned, then the τ values
    withheld as busy and run again as a count of their own (the 160 never becomes 320)."""
    if done <= planned:
        return f"{done} / {planned} runs, each beside the target alone: {label}"
    return f"{planned} / {planned} runs; the τ values withheld as busy, run again: {done - planned} / {total - planned}"


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """How long the benchmark takes on this machine: the runs planned, each at least and at most this long from a
    pair's kept timings (its T(1), c and v)."""

    runs: int
    fewest_s: float  # every draft token accepted: a step keeps τ + 1 tokens
    most_s: float  # none accepted: a step keeps one
    timings: PairTimings

    def words(self) -> str:
        """'160 runs: about 4–11 min on this machine (…)'."""
        span = _duration(self.fewest_s, self.most_s)
        return (
            f"{self.runs} runs: {span} on this machine, from the pair's kept timings (T(1) = "
            f"{self.timings.one_token_ms.value:.1f} ms, c = {self.timings.c:.2f}; each run its tokens beside the "
            "target alone, a step keeping between 1 and τ + 1 of them); the loading and the passes timed after come on "
            "top"
        )


def _duration(low: float, high: float) -> str:
    if high < 60:
        return "under a minute"
    lo, hi = max(1, round(low / 60)), max(1, round(high / 60))
    return f"about {lo} min" if lo == hi else f"about {lo}–{hi} min"


def estimate(settings: SweepSettings, drafts: int, timings: PairTimings) -> Estimate:
    """How long `drafts` drafts take over `settings` (every τ, prompt and seed) with the passes of `timings`: each run
    decodes max_new_tokens beside the target alone (one pass a token) in steps of τ·c + v(τ + 1) one-token passes
    (docs/algorithm.md, "Verify cost"), between max_new_tokens / (τ + 1) steps (all accepted) and max_new_tokens (none).
    The draft's c is the pair's, the same for every draft (a draft's own is timed after its runs)."""
    t1, n = timings.one_token_ms.value / 1000.0, settings.max_new_tokens
    each = len(settings.prompts) * len(settings.seeds) * drafts
    fewest = most = 0.0
    for tau in settings.taus:
        step = (tau * timings.c + timings.v(tau + 1)) * t1
        fewest += each * (n * t1 + -(-n // (tau + 1)) * step)
        most += each * (n * t1 + n * step)
    return Estimate(runs=each * len(settings.taus), fewest_s=fewest, most_s=most, timings=timings)


def run_settings(drafts: Drafts, candidate: Candidate, tau: int) -> tuple[tuple[Flag, ...], str]:
    """The settings that run `candidate` at τ for the target in the engines that can (engine_flags, current
    spellings), and a note on what is left out: its draft kind's (`DraftKind.engine_settings`; a GGUF draft of a GGUF
    target: llama-server and LM Studio's llama.cpp engine, p-min 0; prompt lookup, suffix decoding and a hub model as
    draft of a hub target: vLLM and SGLang; a trained draft or early exit: none)."""
    kind = kinds.of_class(candidate.kind)
    if kind is None:
        return (), f"No serving engine loads {candidate.label}: it shows what such a draft does, here."
    target = EngineTarget(gguf_file=drafts.gguf_file, model_id=drafts.model_id)
    return kind.engine_settings(
        target, label=candidate.label, spec=candidate.spec, file=candidate.file, name=candidate.name, tau=tau
    )


def target_layers(pair: ModelPair) -> int | None:
    """A torch target's transformer blocks (where early exit takes its first quarter); None for another runtime."""
    target = pair.target
    return getattr(target.model.config, "num_hidden_layers", None) if isinstance(target, HFModel) else None
