"""A serving engine's own speculative-decoding numbers, read back: the other direction of
specviz.analysis.engine_logs. Each format is read as the engine writes it, from the engine's own source and the
versions that print it (tests/fixtures/engine_logs/ holds real pasted output of each, its source in its header):

- vLLM V1 log lines, `vllm/v1/spec_decode/metrics.py` (`SpecDecodingLogging.log`), one line per log interval:
  `Speculative metrics: Draft acceptance rate: 1.000, Number of accepted tokens: …, Number of draft tokens: …, `
  (the first V1 layout, vllm-project/vllm#15151, v0.8.2); `SpecDecoding metrics: Draft acceptance rate: …%,
  Accepted: … tokens, Drafted: … tokens` (#15902, v0.8.3–v0.8.4: an acceptance rate only); the same with `Mean
  acceptance length` and `Per-position acceptance rate` (#16665, v0.8.5); and `SpecDecoding metrics: Mean
  acceptance length: …, Accepted throughput: …, Drafted throughput: …, Accepted: …, Drafted: …, Per-position
  acceptance rate: …, Avg Draft acceptance rate: …%` (later; newer builds add fields such as `Current speculative
  depth`, which are skipped).
- vLLM V0 log lines, `vllm/engine/metrics.py` with `vllm/spec_decode/metrics.py` (`SpecDecodeWorkerMetrics`, up to
  v0.9): `Speculative metrics: Draft acceptance rate: …, System efficiency: …, Number of speculative tokens: k,
  Number of accepted tokens: …, Number of draft tokens: …, Number of emitted tokens: ….` Running totals since the
  engine started; the steps are draft tokens / k, the mean length emitted / steps. V0's accepted tokens count every
  draft token the rejection sampler kept, also after the first rejection; the tokens a step keeps are emitted − steps.
- vLLM Prometheus text, `vllm:spec_decode_num_drafts`, `…_num_draft_tokens`, `…_num_accepted_tokens`,
  `…_num_accepted_tokens_per_pos{position="i"}` (and `…_num_draft_tokens_per_pos` where exported), each with the
  `_total` suffix a scrape shows — `vllm/v1/spec_decode/metrics.py`, `SpecDecodingProm`; counts since start-up.
- vLLM per-request statistics, a response's `speculative_decoding_stats` (`num_spec_steps`,
  `num_accepted_draft_tokens`, `num_draft_tokens`, `num_spec_tokens`, `acceptance_histogram`) —
  `docs/features/speculative_decoding/acceptance_metrics.md` (`--per-request-spec-decode-stats summary`; an older
  spelling puts the same object under `metrics.speculative_decoding`, its histogram a list).
- SGLang decode-batch log lines, `Decode batch, #running-req: B, …, accept len: L, accept rate: R, …` (`Decode
  batch.` in older builds), and the bare `accept len: …, accept rate: …` —
  `python/sglang/srt/managers/scheduler_metrics_mixin.py`, `log_decode_stats`: accept len = Σ (accepted + 1) / Σ
  batch size over the last `--decode-log-interval` batches (40 by default). The accept rate changed meaning with
  sgl-project/sglang#23530 (2026-04-23): before, accept len / speculative_num_draft_tokens (τ + 1 for a chain);
  after, accepted draft tokens / proposed ones, (accept len − 1) / τ. Both are tried on every line; the τ every line
  agrees on is taken, and where the two disagree the newer is, and said. A `server_args=ServerArgs(…)` line (or the
  launch command's flags) in the same paste gives speculative_num_steps, _eagle_topk and _num_draft_tokens exactly.
- SGLang gauges `sglang:spec_accept_length`, `sglang:spec_accept_rate` (and `sglang:spec_num_draft_tokens`,
  `sglang:spec_num_steps` where exported) — `python/sglang/srt/metrics/collector.py`.
- SGLang per-request `meta_info` — `python/sglang/srt/managers/tokenizer_manager.py`,
  `_calculate_spec_decoding_metrics`: `spec_verify_ct` with `spec_accept_token_num`, `spec_draft_token_num`,
  `spec_accept_histogram` (to 2026-04), then `spec_num_correct_drafts`, `spec_num_proposed_drafts`,
  `spec_correct_drafts_histogram` (sgl-project/sglang#24081: drafts only, the bonus token not counted; the histogram
  has τ + 1 buckets, index = draft tokens a step kept), with the older names kept as aliases.
- llama.cpp server, per request, `tools/server/server-context.cpp` (`print_timings`): `draft acceptance rate = R
  (A accepted / G generated)` (to 2026-05), `draft acceptance = R (A accepted / G generated), mean len = L` (MTP, from
  ggml-org/llama.cpp#22673), and `…, mean acceptance length = L, acceptance rate per position = (…)`
  (ggml-org/llama.cpp#24536, 2026-06); the JSON response's `timings.draft_n`, `timings.draft_n_accepted`.
- llama.cpp `statistics <impl>: #calls = N, #gen drafts = …, #acc drafts = …, #gen tokens = …, #acc tokens = …`
  (2026-01 to 04, llama.cpp's speculative-decoding document) and `statistics <impl>: #calls(b,g,a) = b g a, …,
  #mean acc len = …, #acc rate/pos = (…)` (from ggml-org/llama.cpp#24536) — `common/speculative.cpp`,
  `common_speculative_print_stats`: one line per implementation (`--spec-type draft-dflash,ngram-mod` prints two),
  running totals since the server started.
  The rates it prints cover the first positions only where it drafts more (ngram-mod: 2 rates for drafts of ~30):
  such a line's counts are a prefix, said, and its mean length stays exact.
- llama.cpp Prometheus text (`--metrics`, ggml-org/llama.cpp#26389, 2026-08): `llamacpp:spec_decode_num_drafts`,
  `…_num_draft_tokens`, `…_num_accepted_tokens`, `…_num_accepted_tokens_per_pos{position="N"}` — counts since start-up.
- `llama-speculative` and `llama-speculative-simple`: `n_draft = …`, `n_predict = …`, `n_drafted = …`,
  `n_accept = …`, `accept = …%` — `examples/speculative/speculative.cpp`, `examples/speculative-simple/…`.
- The llama.cpp build the log was printed by: `build: NNNN (hash)` (common_init, to 2026-04), `build_info: bNNNN-hash`
  (server, ggml-org/llama.cpp#21460), `version: NNNN (hash)` (`--version`), a response's `system_fingerprint`
  `bNNNN-hash`; vLLM's `vLLM API server version X.Y.Z`. The settings are written in that build's spelling
  (specviz.analysis.engine_flags).

A paste is read into sources (`read`): a log with two implementations, two runs (a running total that falls: the
server restarted), per-request lines beside running totals, or two formats of one engine is several sources, each
with its own numbers, best first (engine-given counts, then counts rebuilt from printed rates, then a mean length,
then a rate only); `parse` returns the first. Every per-position rate here is unconditional: steps that accepted at
least i draft tokens over all steps (docs/algorithm.md, "Glossary: the same numbers in the serving engines").
Anything that cannot be read raises EngineLogError naming the line; nothing is half-read."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from specviz.errors import EngineLogError

MAX_CHARS = 1_000_000  # a paste or a file: some 3,000 vLLM log lines; more is a whole log, not its numbers
MAX_LINES = 20_000
MAX_JSON_DEPTH = 64  # nesting a response never needs; deeper is refused before it is walked
SGLANG_LOG_INTERVAL = 40  # SGLang's --decode-log-interval default: decode batches per logged line
SGLANG_MAX_TAU = 64  # τ candidates an SGLang accept rate is tried against
VLLM, SGLANG, LLAMACPP = "vLLM", "SGLang", "llama.cpp"
GRADES = (
    "counts given by the engine",
    "counts rebuilt from printed rates or a mean length",
    "a mean length only",
    "an acceptance rate only",
)


@dataclass(frozen=True)
class Format:
    """One way an engine reports its numbers."""

    engine: str
    name: str  # in words
    source: str  # the engine's file that writes it
    gives: str  # what it gives, in words


FORMATS = {
    "vllm-log": Format(
        VLLM,
        "vLLM's SpecDecoding metrics log lines",
        "vllm/v1/spec_decode/metrics.py (SpecDecodingLogging.log)",
        "per log interval: accepted and drafted tokens, and from v0.8.5 the mean acceptance length (bonus token "
        "included) and the unconditional per-position rates to three decimals; the steps (num_drafts) follow from "
        "them. v0.8.2–v0.8.4 print an acceptance rate only",
    ),
    "vllm-v0": Format(
        VLLM,
        "vLLM V0's Speculative metrics log lines",
        "vllm/engine/metrics.py, vllm/spec_decode/metrics.py (SpecDecodeWorkerMetrics)",
        "running totals since the engine started: k, draft tokens (k per step, so the steps), tokens emitted (the "
        "kept draft tokens and one of the target's per step) and every draft token kept, also after a rejection",
    ),
    "vllm-prom": Format(
        VLLM,
        "vLLM's Prometheus counters",
        "vllm/v1/spec_decode/metrics.py (SpecDecodingProm)",
        "exact counts since start-up: drafts, drafted and accepted tokens, accepted tokens per position",
    ),
    "vllm-request": Format(
        VLLM,
        "vLLM's per-request acceptance statistics",
        "docs/features/speculative_decoding/acceptance_metrics.md (speculative_decoding_stats)",
        "exact counts per request: steps, drafted and accepted tokens, and the histogram of accepted lengths, "
        "from which the per-position rates follow exactly",
    ),
    "sglang-log": Format(
        SGLANG,
        "SGLang's decode-batch log lines",
        "python/sglang/srt/managers/scheduler_metrics_mixin.py (log_decode_stats)",
        "only a mean length: accept len = (accepted + bonus) / steps over the last 40 batches, two decimals; with "
        "the accept rate it gives τ (speculative_num_draft_tokens − 1 for a chain)",
    ),
    "sglang-prom": Format(
        SGLANG,
        "SGLang's speculative-decoding gauges",
        "python/sglang/srt/metrics/collector.py (sglang:spec_accept_length, sglang:spec_accept_rate)",
        "only a mean length, over the last logged interval (a gauge: no step count)",
    ),
    "sglang-request": Format(
        SGLANG,
        "SGLang's per-request meta_info",
        "python/sglang/srt/managers/tokenizer_manager.py (_calculate_spec_decoding_metrics)",
        "per request: verify steps, correct (accepted) and proposed draft tokens, and, where present, the histogram "
        "of accepted lengths (exact per-position rates); without it only a mean length",
    ),
    "llamacpp-server": Format(
        LLAMACPP,
        "llama.cpp server's per-request draft acceptance",
        "tools/server/server-context.cpp (print_timings)",
        "per request: accepted and drafted tokens; current builds add the mean acceptance length and the "
        "unconditional per-position rates (three decimals), older ones only the acceptance rate",
    ),
    "llamacpp-stats": Format(
        LLAMACPP,
        "llama.cpp's speculative statistics",
        "common/speculative.cpp (common_speculative_print_stats)",
        "running totals per drafting implementation since the server started: verify steps (#gen drafts), drafted "
        "and accepted tokens and, from mid-2026, the mean acceptance length and the first per-position rates",
    ),
    "llamacpp-prom": Format(
        LLAMACPP,
        "llama.cpp server's Prometheus counters",
        "tools/server/server-context.cpp (/metrics: llamacpp:spec_decode_*)",
        "exact counts since start-up: drafts, drafted and accepted tokens, accepted tokens per position",
    ),
    "llamacpp-example": Format(
        LLAMACPP,
        "llama-speculative's summary",
        "examples/speculative/speculative.cpp, examples/speculative-simple/speculative-simple.cpp",
        "n_draft (the τ it ran at), accepted and drafted tokens and the tokens emitted, so the steps and the mean "
        "length; no per-position rates",
    ),
    "llamacpp-json": Format(
        LLAMACPP,
        "llama.cpp server's response timings",
        "tools/server/server-context.cpp (timings.draft_n, timings.draft_n_accepted)",
        "only accepted and drafted tokens: an acceptance rate, no steps",
    ),
}
CUMULATIVE = ("vllm-v0", "llamacpp-stats")  # lines that are running totals: the last of each run counts
RUNNING_TOTALS = (*CUMULATIVE, "vllm-prom", "llamacpp-prom")  # counts since the server started


@dataclass(frozen=True)
class Record:
    """One reading: a log line, a scrape, a request's statistics."""

    key: str  # its format, a key of FORMATS
    line: int  # where it starts, 1-based
    steps: int | None = None  # verify steps (target passes that checked a draft); None: not said
    drafted: int | None = None
    accepted: int | None = None  # draft tokens kept by the steps (a step keeps a prefix of its draft)
    counts: tuple[int, ...] | None = None  # counts[i]: steps that accepted at least i + 1 draft tokens
    mean_length: float | None = None  # as the engine gives it, the target's token included
    positions: int | None = None  # the draft positions the engine ran (its τ); None: not said
    nodes: int | None = None  # SGLang's speculative_num_draft_tokens (the root counted)
    weight: float | None = None  # steps estimated where none are given (SGLang: 40 × #running-req)
    exact: bool = True  # counts exact; False: rebuilt from rates printed to three decimals
    group: str = ""  # a running total's series (llama.cpp: the implementation): the last of each run counts
    guessed: bool = False  # `positions` taken as a chain's: a tree of that many nodes is shallower
    given: bool = False  # the steps printed by the engine (not rebuilt from rates or a mean)
    partial: bool = False  # counts cover the first positions only: the engine drafted further
    tree: bool = False  # the engine ran a tree (SGLang's speculative_eagle_topk > 1)
    taus: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)  # SGLang: τ by (old, new) rate
    note: str = ""  # what this reading says about itself

    @property
    def engine(self) -> str:
        return FORMATS[self.key].engine


@dataclass(frozen=True)
class EngineImport:
    """One source of numbers in a paste (an implementation, a run, a format), pooled over its records."""

    format: Format
    records: tuple[Record, ...]
    ignored: int  # lines with no speculative-decoding numbers (the rest of a log), and superseded running totals
    steps: int | None
    drafted: int | None
    accepted: int | None
    counts: tuple[int, ...] | None
    mean_length: float | None
    positions: int | None
    nodes: int | None
    weight: float | None  # the steps behind the numbers where none are given, estimated (SGLang)
    exact: bool
    notes: tuple[str, ...]
    guessed: bool = False  # the τ read as a chain's from the nodes verified: a tree (topk > 1) is shallower
    label: str = ""  # this source in words (its format, implementation, run)
    cumulative: bool = False  # running totals since the server started
    partial: bool = False  # the per-position counts cover the first positions only
    tree: bool = False  # the engine's own settings say it ran a tree
    grade: int = 0  # index into GRADES: what kind of numbers these are (lower is better)

    @property
    def engine(self) -> str:
        return self.format.engine

    @property
    def rates(self) -> tuple[float, ...] | None:
        """The unconditional per-position acceptance rates: steps that accepted at least i / steps."""
        if self.counts is None or not self.steps:
            return None
        return tuple(c / self.steps for c in self.counts)

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted over drafted draft tokens (vLLM's Avg Draft acceptance rate / 100, llama.cpp's)."""
        return self.accepted / self.drafted if self.drafted else None

    def summary(self) -> list[str]:
        """The numbers read, in words (numbers and fixed words only: nothing copied from the paste)."""
        n = len(self.records)
        kind = "reading" if n == 1 else "readings"
        said = [
            f"{self.label or self.format.name}: {n} {kind}"
            + (f", {self.ignored} other lines skipped" if self.ignored else "")
        ]
        said.append(f"what these are: {GRADES[self.grade]}")
        if self.cumulative:
            said.append("running totals since the server started: the last line of each run counts, not their sum")
        if self.steps is not None:
            said.append(f"{self.steps:,} verify steps" + ("" if self.exact else " (rebuilt from printed numbers)"))
        elif self.weight:
            said.append(f"about {self.weight:,.0f} verify steps (estimated: {SGLANG_LOG_INTERVAL} batches per line)")
        if self.accepted is not None and self.drafted:
            said.append(f"{self.accepted:,} of {self.drafted:,} draft tokens accepted ({self.acceptance_rate:.1%})")
        if self.mean_length is not None:
            said.append(f"mean acceptance length {self.mean_length:.3f} (the target's token included)")
        if self.rates is not None:
            said.append("per-position rates " + ", ".join(f"{r:.3f}" for r in self.rates))
        if self.partial and self.counts:
            said.append(
                f"the engine printed rates for the first {len(self.counts)} positions only, and drafted further: the "
                "rest of its accepted tokens lie beyond them"
            )
        if self.positions is not None:
            chain = " if a chain (speculative_num_draft_tokens − 1; a tree is shallower)" if self.guessed else ""
            said.append(f"ran at τ = {self.positions}{chain}" + (" (a tree this deep)" if self.tree else ""))
        if self.nodes is not None:
            said.append(f"speculative_num_draft_tokens = {self.nodes}")
        return said


@dataclass(frozen=True)
class Reading:
    """Everything a paste holds: its sources, best first, and what it says about the engine's build."""

    sources: tuple[EngineImport, ...]
    ignored: int
    build: int | None = None  # the llama.cpp build number the log printed (release bNNNN)
    commit: str | None = None  # its commit, as printed
    version: tuple[int, ...] | None = None  # vLLM's version, as printed
    notes: tuple[str, ...] = field(default=())

    @property
    def best(self) -> EngineImport:
        return self.sources[0]

    @property
    def engine(self) -> str:
        return self.best.engine

    def labels(self) -> list[str]:
        """One line per source, for a choice: what it is and its main number."""
        out = []
        for s in self.sources:
            length = f", mean length {s.mean_length:.2f}" if s.mean_length is not None else ""
            rate = f", {s.acceptance_rate:.1%} accepted" if s.mean_length is None and s.acceptance_rate else ""
            steps = f", {s.steps:,} steps" if s.steps is not None else ""
            out.append(f"{s.label}{steps}{length}{rate} ({GRADES[s.grade]})")
        return out


def read_upload(data: bytes) -> str:
    """An uploaded file's text, bounded before it is decoded."""
    if len(data) > MAX_CHARS:
        raise EngineLogError(
            f"The file has {len(data):,} bytes; at most {MAX_CHARS:,} are read. Keep only the lines with the numbers "
            "(for example grep 'SpecDecoding metrics', 'accept len', 'draft acceptance' or 'spec_decode')."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EngineLogError(f"The file is not UTF-8 text (byte {exc.start:,} cannot be read).") from None


def parse(text: str) -> EngineImport:
    """The best source in `text` (`read(text).best`); the others are named in its notes."""
    reading = read(text)
    return replace(reading.best, notes=reading.notes + reading.best.notes)


def read(text: str) -> Reading:
    """Every source in `text`, each checked and pooled, best first; EngineLogError naming the line for anything
    unreadable (then nothing is read)."""
    if len(text) > MAX_CHARS:
        raise EngineLogError(
            f"The paste has {len(text):,} characters; at most {MAX_CHARS:,} are read. Keep only the lines with the "
            "numbers (for example grep 'SpecDecoding metrics', 'accept len', 'draft acceptance' or 'spec_decode')."
        )
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > MAX_LINES:
        raise EngineLogError(f"The paste has {len(lines):,} lines; at most {MAX_LINES:,} are read.")
    if not text.strip():
        raise EngineLogError("Nothing to read: paste an engine's log lines, its /metrics text or a response's JSON.")
    head = text.lstrip("\ufeff \t\n\r")
    is_json = head.startswith("{") or re.match(r"\[\s*[\[{\]]", head) is not None  # not "[2025-…] Decode batch"
    context: dict = {}
    records, ignored = _json_records(text, lines, context) if is_json else _line_records(lines, context)
    if not records:
        raise EngineLogError(
            "No speculative-decoding numbers found: looked for vLLM's 'SpecDecoding metrics' or 'Speculative "
            "metrics' lines and vllm:spec_decode_* counters, SGLang's 'accept len' or sglang:spec_accept_length, "
            "llama.cpp's 'draft acceptance', 'statistics … #gen drafts', llamacpp:spec_decode_* or 'n_accept =' "
            "lines, and JSON with speculative_decoding_stats, meta_info.spec_verify_ct or timings.draft_n."
        )
    _one_engine(records)
    if records[0].engine == SGLANG:
        records = _sglang_taus(records, context)
    sources = [_pool(group, ignored + superseded, label) for label, group, superseded in _sources(records)]
    sources.sort(key=lambda s: (s.grade, -(s.steps or s.weight or 0)))
    notes = []
    if len(sources) > 1:
        notes.append(
            f"This paste holds {len(sources)} sources, each read on its own (listed best first: counts the engine "
            f"gave, then counts rebuilt from printed rates, then a mean length, then a rate): "
            + "; ".join(s.label for s in sources)
            + ". The first is used unless another is picked."
        )
    build, commit = context.get("build", (None, None))
    if build is not None:
        notes.append(f"The log was printed by llama.cpp build {build}" + (f" ({commit})." if commit else "."))
    return Reading(tuple(sources), ignored, build, commit, context.get("version"), tuple(notes))


# --- lines ------------------------------------------------------------------------------------------------------

NUMBER = r"\d+(?:\.\d+)?"
RATES = r"(?:nan|\d+\.\d+)(?:, (?:nan|\d+\.\d+))*"
VLLM_FIELDS = {
    "accepted tokens": re.compile(r"Accepted: (\d+) tokens"),
    "drafted tokens": re.compile(r"Drafted: (\d+) tokens"),
    "draft acceptance rate": re.compile(r"Draft acceptance rate: (nan|" + NUMBER + r")%"),
}
VLLM_LENGTH = re.compile(r"Mean acceptance length: (nan|inf|" + NUMBER + r")(?:,|$)")
VLLM_RATES = re.compile(r"Per-position acceptance rate: (" + RATES + r")(?:,|$)")
VLLM_V0 = {  # vllm/engine/metrics.py's "Speculative metrics" line, V0 and the first V1 layout
    "draft acceptance rate": re.compile(r"Draft acceptance rate: (nan|" + NUMBER + r")(?!%)(?:,|$)"),
    "number of accepted tokens": re.compile(r"Number of accepted tokens: (\d+)"),
    "number of draft tokens": re.compile(r"Number of draft tokens: (\d+)"),
}
VLLM_V0_ONLY = {
    "system efficiency": re.compile(r"System efficiency: (nan|" + NUMBER + r")(?:,|$)"),
    "number of speculative tokens": re.compile(r"Number of speculative tokens: (\d+)"),
    "number of emitted tokens": re.compile(r"Number of emitted tokens: (\d+)"),
}
SGLANG_LEN = re.compile(r"accept len: (\d+\.\d\d)(?!\d)")
SGLANG_RATE = re.compile(r"accept rate: (\d+\.\d\d)(?!\d)")
SGLANG_BATCH = re.compile(r"#running-req: (\d+)")
SGLANG_ARGS = re.compile(
    r"(?:\bspeculative_|--speculative-)(num[_-]steps|eagle[_-]topk|num[_-]draft[_-]tokens)[= ](\d+)"
)
LLAMA_SERVER = re.compile(r"draft acceptance(?: rate)? = (\d+\.\d+) \(\s*(\d+) accepted /\s*(\d+) generated\)")
LLAMA_LENGTH = re.compile(r"\), mean (?:acceptance length|len) =\s*(" + NUMBER + r")(?!\.)")
LLAMA_POSITION = re.compile(r"acceptance rate per position = \((" + RATES + r")\)")
LLAMA_STATS = re.compile(
    r"statistics\s+([A-Za-z0-9_.-]{1,40}):\s*#calls(?:\(b,g,a\))?\s*=\s*(\d+)(?:\s+(\d+)\s+(\d+))?, "
    r"#gen drafts =\s*(\d+), #acc drafts =\s*(\d+), #gen tokens =\s*(\d+), #acc tokens =\s*(\d+)"
)
LLAMA_STATS_TAIL = re.compile(r"#mean acc len =\s*(" + NUMBER + r"), #acc rate/pos = \((" + RATES + r")\)")
LLAMA_BUILD = (
    re.compile(r"\bbuild: (\d{3,6}) \(([0-9a-f]{6,40})\)"),
    re.compile(r"\bbuild_info: b(\d{3,6})-([0-9a-f]{6,40})\b"),
    re.compile(r"\bversion: (\d{3,6}) \(([0-9a-f]{6,40})\)"),
)
VLLM_VERSION = re.compile(r"vLLM API server version (\d+)\.(\d+)(?:\.(\d+))?")
EXAMPLE = re.compile(r"(?:^|\s)(n_draft|n_predict|n_drafted|n_accept)\s*=\s*(\d+)\s*$")
EXAMPLE_ACCEPT = re.compile(r"(?:^|\s)accept\s*=\s*(" + NUMBER + r"|-?nan|inf)%\s*$")
PROM = re.compile(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$")
PROM_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')
PROM_PREFIXES = ("vllm:spec_decode", "sglang:spec_", "llamacpp:spec_decode")


def _line_records(lines: Sequence[str], context: dict) -> tuple[list[Record], int]:
    records: list[Record] = []
    prom: list[tuple[int, str]] = []
    block: dict[str, tuple[int, int | float]] = {}
    ignored = 0
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#") and any(p in stripped for p in PROM_PREFIXES):
            continue  # a metric's HELP or TYPE comment
        if stripped.startswith(PROM_PREFIXES):
            prom.append((n, stripped))
            continue
        _context(line, n, context)
        found = _one_line(line, n, block)
        if found is None:
            ignored += 1
        elif isinstance(found, Record):
            records.append(found)
    if block:
        first = min(at for at, _ in block.values())
        missing = ", ".join(k for k in ("n_draft", "n_predict", "n_drafted", "n_accept", "accept") if k not in block)
        raise EngineLogError(f"Line {first}: llama-speculative's summary is cut off: {missing} missing.", first)
    if prom:
        records += _prometheus(prom)
    return records, ignored


def _context(line: str, n: int, context: dict) -> None:
    """What a log line says about the engine besides its numbers: llama.cpp's build, vLLM's version, SGLang's
    speculative settings (the last of each wins: the latest start)."""
    for pattern in LLAMA_BUILD:
        if m := pattern.search(line):
            context["build"] = (int(m.group(1)), m.group(2))
    if m := VLLM_VERSION.search(line):
        context["version"] = tuple(int(g) for g in m.groups() if g is not None)
    found = SGLANG_ARGS.findall(line)
    if found and ("ServerArgs(" in line or "sglang" in line or "--speculative-" in line):
        args = {name.replace("-", "_"): int(value) for name, value in found}
        context["sglang"] = (n, args)


def _one_line(line: str, n: int, block: dict) -> Record | bool | None:
    """A record, True where the line is part of a multi-line record (llama-speculative's summary), None where it
    holds no speculative-decoding number."""
    if "SpecDecoding metrics:" in line:
        return _vllm_line(line, n)
    if "Speculative metrics:" in line:
        return _vllm_v0_line(line, n)
    if "accept len:" in line:
        return _sglang_line(line, n)
    if "#gen drafts" in line:
        return _llama_stats(line, n)
    if "draft acceptance" in line:
        return _llama_server(line, n)
    if (m := EXAMPLE.search(line)) or (m := EXAMPLE_ACCEPT.search(line)):
        return _example_line(m, n, block)
    return None


def _cut(n: int, what: str, line: str, missing: str) -> EngineLogError:
    shown = line.strip()
    shown = shown if len(shown) <= 160 else "…" + shown[-157:]  # its end: where a line is cut
    return EngineLogError(
        f"Line {n}: a {what} line without {missing}: cut off or not as the engine prints it: {shown}", n
    )


def _contradiction(n: int, what: str) -> EngineLogError:
    return EngineLogError(f"Line {n}: the counts contradict each other: {what}.", n)


def _rates(text: str | None, n: int) -> tuple[float, ...] | None:
    """Per-position rates as printed; unconditional, so in [0, 1] and never rising."""
    if text is None:
        return None
    rates = tuple(float(r) for r in text.split(", "))
    if any(not 0.0 <= r <= 1.0 for r in rates):
        raise _contradiction(n, f"a per-position rate outside 0 to 1 ({text})")
    for i in range(1, len(rates)):
        if rates[i] > rates[i - 1]:
            raise _contradiction(
                n,
                f"the per-position rate rises from {rates[i - 1]:.3f} at position {i} to {rates[i]:.3f} at "
                f"position {i + 1}, but a step that accepts position {i + 1} has accepted position {i}",
            )
    return rates


def _steps_from(accepted: int, rates: tuple[float, ...] | None, length: float | None) -> int | None:
    """The steps behind printed numbers: accepted / Σ rates, else accepted / (mean length − 1)."""
    if rates and sum(rates) > 0:
        return max(1, round(accepted / sum(rates)))
    if length is not None and math.isfinite(length) and length > 1.0:
        return max(1, round(accepted / (length - 1.0)))
    return None


def _counts_from(
    rates: tuple[float, ...], steps: int, accepted: int, n: int, prefix: bool = False
) -> tuple[tuple[int, ...], bool, bool]:
    """(counts, exact, partial): counts rebuilt from rates printed to three decimals: exact below 1,000 steps (then
    they sum to the accepted tokens), within 0.05% of the steps above. With `prefix` the rates may cover the first
    positions only (their counts then sum to less than the accepted tokens: `partial`)."""
    counts = tuple(round(r * steps) for r in rates)
    exact = steps < 1000
    slack = 0 if exact else 0.0005 * steps * len(rates) + len(rates)
    short = accepted - sum(counts)
    if prefix and short > slack:
        return counts, exact, True
    if abs(short) > slack:
        raise _contradiction(
            n,
            f"the per-position rates ({', '.join(f'{r:.3f}' for r in rates)}) over {steps} steps give {sum(counts)} "
            f"accepted tokens, the line says {accepted}",
        )
    return counts, exact, False


def _check_length(length: float | None, accepted: int, steps: int | None, n: int, places: int) -> None:
    if length is None or steps is None or not math.isfinite(length):
        return
    if abs(1.0 + accepted / steps - length) > 0.5 * 10.0**-places + 1e-9:
        raise _contradiction(
            n,
            f"mean acceptance length {length} is not 1 + {accepted} accepted / {steps} steps = "
            f"{1.0 + accepted / steps:.{places + 2}f}",
        )


def _check_totals(accepted: int, drafted: int, steps: int | None, positions: int | None, n: int) -> None:
    if accepted > drafted:
        raise _contradiction(n, f"{accepted} tokens accepted but only {drafted} drafted")
    if steps is not None and drafted < steps:
        raise _contradiction(n, f"{drafted} tokens drafted over {steps} steps, but every step drafts at least one")
    if steps is not None and positions and drafted > steps * positions:
        raise _contradiction(n, f"{drafted} tokens drafted over {steps} steps of at most {positions} tokens each")


def _vllm_line(line: str, n: int) -> Record | bool:
    body = line.split("SpecDecoding metrics:", 1)[1]
    found = {name: pattern.search(body) for name, pattern in VLLM_FIELDS.items()}
    if missing := [name for name, m in found.items() if m is None]:
        raise _cut(n, "vLLM SpecDecoding metrics", line, "its " + " and ".join(missing))
    accepted, drafted, percent = (found[k].group(1) for k in VLLM_FIELDS)
    accepted, drafted = int(accepted), int(drafted)
    if "Mean acceptance length" in body and not VLLM_LENGTH.search(body):
        raise _cut(n, "vLLM SpecDecoding metrics", line, "a readable mean acceptance length")
    if "Per-position acceptance rate:" in body and not VLLM_RATES.search(body):
        raise _cut(n, "vLLM SpecDecoding metrics", line, "readable per-position rates")
    if drafted == 0:
        return False  # an interval in which nothing was drafted: nothing to read (vLLM prints nan)
    rates = _rates(m.group(1) if (m := VLLM_RATES.search(body)) else None, n)
    _check_totals(accepted, drafted, None, None, n)
    if abs(100.0 * accepted / drafted - float(percent)) > 0.05 + 1e-9:
        named = "Avg Draft acceptance rate" if "Avg Draft acceptance rate" in body else "Draft acceptance rate"
        raise _contradiction(n, f"{named} {percent}% is not {accepted} / {drafted}")
    mean = float(m.group(1)) if (m := VLLM_LENGTH.search(body)) else None
    if mean is None and rates is None:  # v0.8.3–v0.8.4: the acceptance rate only
        return Record("vllm-log", n, drafted=drafted, accepted=accepted)
    steps, guessed = _steps_from(accepted, rates, mean), False
    if steps is None and rates:  # nothing accepted: at least drafted / τ drafts (every draft as long as it can be)
        steps, guessed = math.ceil(drafted / len(rates)), True
    _check_length(mean, accepted, steps, n, 2)
    _check_totals(accepted, drafted, steps, len(rates) if rates else None, n)
    counts, exact, _ = _counts_from(rates, steps, accepted, n) if rates and steps else (None, True, False)
    k = len(rates) if rates else None
    return Record("vllm-log", n, steps, drafted, accepted, counts, mean, k, exact=exact and not guessed)


def _vllm_v0_line(line: str, n: int) -> Record | bool:
    """V0's running totals, or the first V1 layout (the same words without System efficiency: one interval)."""
    body = line.split("Speculative metrics:", 1)[1]
    found = {name: pattern.search(body) for name, pattern in VLLM_V0.items()}
    if missing := [name for name, m in found.items() if m is None]:
        raise _cut(n, "vLLM Speculative metrics", line, "its " + " and ".join(missing))
    rate, accepted, drafted = (found[k].group(1) for k in VLLM_V0)
    accepted, drafted = int(accepted), int(drafted)
    if "System efficiency" not in body:  # vllm-project/vllm#15151's V1 line: one interval's rate
        if drafted == 0:
            return False
        _check_totals(accepted, drafted, None, None, n)
        if abs(accepted / drafted - float(rate)) > 0.0005 + 1e-9:
            raise _contradiction(n, f"the Draft acceptance rate {rate} is not {accepted} / {drafted}")
        return Record("vllm-log", n, drafted=drafted, accepted=accepted)
    more = {name: pattern.search(body) for name, pattern in VLLM_V0_ONLY.items()}
    if missing := [name for name, m in more.items() if m is None]:
        raise _cut(n, "vLLM V0 Speculative metrics", line, "its " + " and ".join(missing))
    efficiency, k, emitted = (more[name].group(1) for name in VLLM_V0_ONLY)
    k, emitted = int(k), int(emitted)
    if drafted == 0:
        return False  # nothing speculated yet
    if k < 1 or drafted % k:
        raise _contradiction(n, f"{drafted} draft tokens are not a whole number of steps of k = {k} tokens each")
    steps = drafted // k
    kept = emitted - steps  # every step emits its kept draft tokens and one of the target's
    if kept < 0:
        raise _contradiction(n, f"{emitted} tokens emitted over {steps} steps, but every step emits at least one")
    if kept > accepted:
        raise _contradiction(n, f"{kept} draft tokens emitted beyond the target's, more than the {accepted} accepted")
    if rate != "nan" and abs(accepted / drafted - float(rate)) > 0.0005 + 1e-9:
        raise _contradiction(n, f"the Draft acceptance rate {rate} is not {accepted} / {drafted}")
    if efficiency != "nan" and abs(emitted / (steps * (k + 1)) - float(efficiency)) > 0.0005 + 1e-9:
        raise _contradiction(n, f"System efficiency {efficiency} is not {emitted} / ({steps} steps × {k + 1})")
    note = (
        f"vLLM V0's Draft acceptance rate ({float(rate):.3f}) counts every draft token the rejection sampler kept, "
        "also after a step's first rejection; the tokens the steps kept are the emitted ones less one per step"
        if kept != accepted
        else ""
    )
    return Record("vllm-v0", n, steps, drafted, kept, None, emitted / steps, k, given=True, group="vllm-v0", note=note)


def _sglang_line(line: str, n: int) -> Record:
    length = SGLANG_LEN.search(line)
    if length is None or ("accept rate:" in line and not SGLANG_RATE.search(line)):
        raise _cut(n, "SGLang accept len", line, "'accept len: X.XX' and its 'accept rate: X.XX'")
    mean = float(length.group(1))
    if mean < 1.0:
        raise _contradiction(n, f"accept len {mean:.2f} is below 1, but it counts the target's own token every step")
    taus: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)
    if rate := SGLANG_RATE.search(line):
        value = float(rate.group(1))
        if value > 1.0 or (value <= 0.0 and mean > 1.0):
            raise _contradiction(n, f"accept rate {value:.2f} is not in (0, 1]")
        taus = _tau_candidates(mean, value)
        if taus == ((), ()):
            raise _contradiction(
                n, f"accept len {mean:.2f} and accept rate {value:.2f} fit no draft length (either of SGLang's rates)"
            )
    batch = int(m.group(1)) if (m := SGLANG_BATCH.search(line)) else None
    weight = float(SGLANG_LOG_INTERVAL * batch) if batch else None
    return Record("sglang-log", n, mean_length=mean, weight=weight, exact=False, guessed=True, taus=taus)


def _tau_candidates(length: float, rate: float) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """The chains a printed (accept len, accept rate) fits, both to two decimals: (before sgl-project/sglang#23530,
    rate = len / (τ + 1); after, rate = (len − 1) / τ). None: the line says nothing (nothing accepted)."""
    if rate <= 0.0:
        return None, None
    lo_l, hi_l = length - 0.005, length + 0.005
    lo_r, hi_r = max(rate - 0.005, 1e-9), min(rate + 0.005, 1.0)
    least = max(1, math.ceil(lo_l - 1.0 - 1e-9))  # a step keeps at most τ draft tokens
    old = range(max(least, math.ceil(lo_l / hi_r - 1.0 - 1e-9)), min(SGLANG_MAX_TAU, math.floor(hi_l / lo_r - 1.0)) + 1)
    new = range(
        max(least, math.ceil((lo_l - 1.0) / hi_r - 1e-9)), min(SGLANG_MAX_TAU, math.floor((hi_l - 1.0) / lo_r)) + 1
    )
    return tuple(old), tuple(new)


def _llama_server(line: str, n: int) -> Record | bool:
    head = LLAMA_SERVER.search(line)
    if head is None:
        raise _cut(n, "llama.cpp draft acceptance", line, "'= R (A accepted / G generated)'")
    ratio, accepted, drafted = float(head.group(1)), int(head.group(2)), int(head.group(3))
    tail = line[head.end() - 1 :]
    length = LLAMA_LENGTH.search(tail)
    if ("mean acceptance length" in tail or "mean len" in tail) and length is None:
        raise _cut(n, "llama.cpp draft acceptance", line, "a readable mean acceptance length")
    position = LLAMA_POSITION.search(tail)
    if "acceptance rate per position" in tail and position is None:
        raise _cut(n, "llama.cpp draft acceptance", line, "a closed '(…)' of per-position rates")
    if drafted == 0:
        return False  # no draft in this request
    _check_totals(accepted, drafted, None, None, n)
    if abs(accepted / drafted - ratio) > 5e-6 + 1e-9:
        raise _contradiction(n, f"draft acceptance {ratio} is not {accepted} / {drafted}")
    rates = _rates(position.group(1) if position else None, n)
    mean = float(length.group(1)) if length else None
    steps = _steps_from(accepted, rates, mean) if mean is not None or rates else None
    _check_length(mean, accepted, steps, n, 2)
    _check_totals(accepted, drafted, steps, len(rates) if rates else None, n)
    counts, exact, _ = _counts_from(rates, steps, accepted, n) if rates and steps else (None, True, False)
    if steps is not None and rates is None:  # steps from a two-decimal mean length: fitted, not counted
        exact = False
    k = len(rates) if rates else None
    return Record("llamacpp-server", n, steps, drafted, accepted, counts, mean, k, exact=exact)


def _llama_stats(line: str, n: int) -> Record | bool:
    head = LLAMA_STATS.search(line)
    if head is None:
        raise _cut(n, "llama.cpp statistics", line, "'#calls… = …, #gen drafts = …, … #acc tokens = …'")
    impl = head.group(1)
    steps, hit, drafted, accepted = (int(head.group(i)) for i in (5, 6, 7, 8))
    tail = line[head.end() :]
    more = LLAMA_STATS_TAIL.search(tail)
    if "#mean acc len" in tail and more is None:
        raise _cut(n, "llama.cpp statistics", line, "a readable '#mean acc len = …, #acc rate/pos = (…)'")
    if steps == 0 or drafted == 0:
        return False
    rates = _rates(more.group(2) if more else None, n)
    mean = float(more.group(1)) if more else None
    _check_totals(accepted, drafted, steps, None, n)
    if hit > steps:
        raise _contradiction(n, f"#acc drafts = {hit} of only {steps} drafts")
    _check_length(mean, accepted, steps, n, 2)
    counts, exact, partial = (None, True, False)
    k = None
    if rates:
        counts, exact, partial = _counts_from(rates, steps, accepted, n, prefix=True)
        if abs(rates[0] * steps - hit) > 0.0005 * steps + 0.5:
            raise _contradiction(n, f"#acc drafts = {hit} of {steps}, but the rate at position 1 is {rates[0]:.3f}")
        if not partial and drafted <= steps * len(rates):
            k = len(rates)
    return Record(
        "llamacpp-stats", n, steps, drafted, accepted, counts, mean, k, exact=exact, group=impl, given=True,
        partial=partial,
    )  # fmt: skip


def _example_line(m: re.Match, n: int, block: dict) -> Record | bool:
    """One line of llama-speculative's summary; the record once all five are read."""
    key, value = (m.group(1), m.group(2)) if m.re is EXAMPLE else ("accept", m.group(1))
    if key in block:
        have = ", ".join(sorted(block))
        raise EngineLogError(f"Line {n}: {key} again before llama-speculative's summary ({have}) was complete.", n)
    block[key] = (n, float(value) if key == "accept" else int(value))
    if len(block) < 5:
        return True
    first = min(at for at, _ in block.values())
    k, emitted, drafted, accepted, percent = (
        block[x][1] for x in ("n_draft", "n_predict", "n_drafted", "n_accept", "accept")
    )
    block.clear()
    steps = emitted - accepted  # every step emits its accepted tokens and one of the target's
    if steps < 1:
        raise _contradiction(first, f"n_predict = {emitted} is not more than n_accept = {accepted}")
    _check_totals(accepted, drafted, steps, None, first)
    if drafted and abs(100.0 * accepted / drafted - percent) > 0.0005 + 1e-9:
        raise _contradiction(first, f"accept = {percent}% is not {accepted} / {drafted}")
    if k and accepted > steps * k:
        raise _contradiction(first, f"{accepted} accepted over {steps} steps of n_draft = {k}")
    return Record("llamacpp-example", first, steps, drafted, accepted, None, emitted / steps, k or None, given=True)


# --- Prometheus --------------------------------------------------------------------------------------------------

COUNTERS = {
    VLLM: {
        "vllm:spec_decode_num_drafts": "drafts",
        "vllm:spec_decode_num_draft_tokens": "drafted",
        "vllm:spec_decode_num_accepted_tokens": "accepted",
        "vllm:spec_decode_num_accepted_tokens_per_pos": "per_pos",
        "vllm:spec_decode_num_draft_tokens_per_pos": "drafted_per_pos",
    },
    LLAMACPP: {
        "llamacpp:spec_decode_num_drafts": "drafts",
        "llamacpp:spec_decode_num_draft_tokens": "drafted",
        "llamacpp:spec_decode_num_accepted_tokens": "accepted",
        "llamacpp:spec_decode_num_accepted_tokens_per_pos": "per_pos",
    },
}
VLLM_COUNTERS = COUNTERS[VLLM]
SGLANG_GAUGES = {
    "sglang:spec_accept_length": "length",
    "sglang:spec_accept_rate": "rate",
    "sglang:spec_num_draft_tokens": "nodes",
    "sglang:spec_num_steps": "steps",
}


def _prometheus(samples: Sequence[tuple[int, str]]) -> list[Record]:
    """Every sample of a scrape, summed over engines and ranks (vLLM, llama.cpp) or averaged over ranks (SGLang)."""
    seen: dict[tuple[str, tuple], int] = {}
    counters: dict[str, dict] = {VLLM: {}, LLAMACPP: {}}
    sglang: dict[str, list[float]] = {}
    first = {VLLM: 0, SGLANG: 0, LLAMACPP: 0}
    for n, text in samples:
        m = PROM.match(text)
        if m is None:
            raise _cut(n, "Prometheus", text, "a 'name{labels} value' sample")
        name, labels, value = m.group(1), _labels(m.group(2) or "", n, text), m.group(3)
        if name.endswith("_created"):
            continue
        base = name.removesuffix("_total")
        if (base, tuple(sorted(labels.items()))) in seen:
            other = seen[(base, tuple(sorted(labels.items())))]
            raise EngineLogError(
                f"Line {n}: {base} with the same labels as line {other}: two scrapes pasted together. Paste one "
                "(counters count since start-up).",
                n,
            )
        seen[(base, tuple(sorted(labels.items())))] = n
        number = _sample_value(value, n, text)
        for engine, names in COUNTERS.items():
            if base in names:
                first[engine] = first[engine] or n
                _counter_sample(counters[engine], names[base], labels, number, n)
        if base in SGLANG_GAUGES and labels.get("engine_type") != "draft":
            first[SGLANG] = first[SGLANG] or n
            sglang.setdefault(SGLANG_GAUGES[base], []).append(number)
    records = []
    for engine, key in ((VLLM, "vllm-prom"), (LLAMACPP, "llamacpp-prom")):
        if counters[engine]:
            records.append(_scrape(counters[engine], first[engine], key))
    if sglang:
        records.append(_sglang_scrape(sglang, first[SGLANG]))
    return records


def _labels(text: str, n: int, line: str) -> dict[str, str]:
    labels, at = {}, 0
    text = text.strip().rstrip(",")
    while at < len(text):
        m = PROM_LABEL.match(text, at)
        if m is None:
            raise _cut(n, "Prometheus", line, "readable labels")
        labels[m.group(1)] = m.group(2)
        at = m.end()
    return labels


def _sample_value(text: str, n: int, line: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _cut(n, "Prometheus", line, "a number as its value") from None
    if not math.isfinite(value) or value < 0:
        raise _contradiction(n, f"a count of {text}")
    return value


def _counter_sample(into: dict, kind: str, labels: dict, value: float, n: int) -> None:
    """Add one sample to the running sums; `into["lines"]` keeps the last line of each sum, to name it."""
    if abs(value - round(value)) > 1e-6:
        raise _contradiction(n, f"a counter of tokens or drafts that is not a whole number ({value})")
    lines = into.setdefault("lines", {})
    if kind in ("per_pos", "drafted_per_pos"):
        if not labels.get("position", "").isdigit():
            raise EngineLogError(f"Line {n}: a per-position counter without a numeric position label.", n)
        table, position = into.setdefault(kind, {}), int(labels["position"])
        table[position] = table.get(position, 0) + round(value)
        lines[(kind, position)] = n
    else:
        into[kind] = into.get(kind, 0) + round(value)
        lines[kind] = n


def _scrape(c: dict, n: int, key: str) -> Record:
    names = {v: k for k, v in COUNTERS[FORMATS[key].engine].items()}
    if missing := [k for k in ("drafts", "drafted", "accepted") if k not in c]:
        raise EngineLogError(f"Line {n}: {FORMATS[key].name} without {', '.join(names[k] for k in missing)}.", n)
    steps, drafted, accepted = c["drafts"], c["drafted"], c["accepted"]
    if steps == 0:
        raise EngineLogError(f"Line {n}: {names['drafts']} is 0: no step has drafted yet.", n)
    counts = None
    if per_pos := c.get("per_pos"):
        k = max(per_pos) + 1
        shift = 0
        if key == "llamacpp-prom" and min(per_pos) == 1:  # a count from position 1 (vLLM's start at 0)
            per_pos, shift = {p - 1: v for p, v in per_pos.items()}, 1
            k -= 1
        if sorted(per_pos) != list(range(k)):
            raise EngineLogError(
                f"Line {n}: per-position counters for positions {sorted(p + shift for p in per_pos)}, not "
                f"{shift} to {k - 1 + shift}.",
                n,
            )
        counts = tuple(per_pos[i] for i in range(k))
        for i in range(1, k):
            if counts[i] > counts[i - 1]:
                said = f"{counts[i]} drafts accepted position {i + 1} but only {counts[i - 1]} position {i}"
                raise _contradiction(c["lines"][("per_pos", i + shift)], said)
        if sum(counts) != accepted:
            said = f"the per-position counters sum to {sum(counts)}, the accepted tokens are {accepted}"
            raise _contradiction(c["lines"]["accepted"], said)
        if counts[0] > steps:
            said = f"{counts[0]} drafts accepted position 1 of only {steps} drafts"
            raise _contradiction(c["lines"][("per_pos", shift)], said)
    _check_totals(accepted, drafted, steps, len(counts) if counts else None, n)
    if drafted_per_pos := c.get("drafted_per_pos"):
        reached = [drafted_per_pos.get(i, 0) for i in range(len(counts or ()))]
        if any(a > d for a, d in zip(counts or (), reached, strict=True)):
            raise _contradiction(n, "more tokens accepted at a position than drafted there")
    k = len(counts) if counts else None
    return Record(key, n, steps, drafted, accepted, counts, 1.0 + accepted / steps, k, given=True)


def _sglang_scrape(g: dict[str, list[float]], n: int) -> Record:
    if "length" not in g:
        raise EngineLogError(f"Line {n}: SGLang's gauges without sglang:spec_accept_length.", n)
    mean = sum(g["length"]) / len(g["length"])
    if mean < 1.0:
        raise EngineLogError(
            f"Line {n}: sglang:spec_accept_length is {mean:.2f}: below 1, so no decode batch has speculated yet "
            "(or speculation is off).",
            n,
        )
    nodes = round(sum(g["nodes"]) / len(g["nodes"])) if g.get("nodes") else None
    depth = round(sum(g["steps"]) / len(g["steps"])) if g.get("steps") else None
    taus: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)
    if nodes is None and depth is None and g.get("rate") and (rate := sum(g["rate"]) / len(g["rate"])) > 0:
        taus = _tau_candidates(round(mean, 2), round(rate, 2))
    positions = depth or (nodes - 1 if nodes else None)
    guessed = depth is None
    return Record(
        "sglang-prom", n, mean_length=mean, positions=positions, nodes=nodes, exact=False, guessed=guessed, taus=taus
    )


# --- JSON --------------------------------------------------------------------------------------------------------


def _json_records(text: str, lines: Sequence[str], context: dict) -> tuple[list[Record], int]:
    """A JSON document (a response, a list of them) or JSON lines (one object per line)."""
    try:
        documents = [(1, json.loads(text))]
    except RecursionError:
        raise EngineLogError("The JSON nests too deep to be a response.") from None
    except ValueError as exc:
        if not all(line.lstrip().startswith("{") for line in lines if line.strip()):
            raise EngineLogError(
                f"Line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}).", exc.lineno
            ) from None
        documents = [(n, _json_line(line, n)) for n, line in enumerate(lines, 1) if line.strip()]
    records: list[Record] = []
    for n, doc in documents:
        for path, found in _stats_objects(doc, "", 0, n, context):
            if (record := _json_record(found, path, n)) is not None:
                records.append(record)
    return records, 0


def _json_line(line: str, n: int) -> object:
    try:
        return json.loads(line)
    except RecursionError:
        raise EngineLogError(f"Line {n}: the JSON nests too deep to be a response.", n) from None
    except ValueError as exc:
        raise EngineLogError(f"Line {n}: not valid JSON ({exc.msg}, column {exc.colno}).", n) from None


def _stats_objects(doc: object, path: str, depth: int, n: int, context: dict) -> Iterable[tuple[str, tuple[str, dict]]]:
    """(path, (format, the statistics object)) for every statistics object in a document, in order; a llama.cpp
    response's system_fingerprint (bNNNN-hash) goes into `context`."""
    if depth > MAX_JSON_DEPTH:
        raise EngineLogError(f"Line {n}: the JSON nests more than {MAX_JSON_DEPTH} levels.", n)
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _stats_objects(item, f"{path}[{i}]", depth + 1, n, context)
        return
    if not isinstance(doc, dict):
        return
    fingerprint = doc.get("system_fingerprint")
    if isinstance(fingerprint, str) and (m := re.fullmatch(r"b(\d{3,6})-([0-9a-f]{6,40})", fingerprint)):
        context["build"] = (int(m.group(1)), m.group(2))
    if "num_spec_steps" in doc and "acceptance_histogram" in doc:
        yield path or "the object", ("vllm-request", doc)
        return
    if "spec_verify_ct" in doc:
        yield path or "the object", ("sglang-request", doc)
        return
    if "draft_n" in doc and "draft_n_accepted" in doc:
        yield path or "the object", ("llamacpp-json", doc)
        return
    for key, value in doc.items():
        yield from _stats_objects(value, f"{path}.{key}" if path else str(key), depth + 1, n, context)


def _whole(obj: dict, key: str, where: str, n: int, required: bool = True) -> int | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != int(value):
        raise EngineLogError(f"Line {n}: {where}.{key} is {json.dumps(value)[:40]}, not a count.", n)
    return int(value)


def _histogram(raw: object, where: str, n: int) -> dict[int, int]:
    """{accepted draft tokens: steps}: a sparse map of strings or a list indexed by the count."""
    items = raw.items() if isinstance(raw, dict) else enumerate(raw) if isinstance(raw, list) else None
    if items is None:
        raise EngineLogError(f"Line {n}: {where} is not a histogram (a map or a list of counts).", n)
    hist = {}
    for key, count in items:
        if not str(key).isdigit() or isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise EngineLogError(f"Line {n}: {where} has {json.dumps(key)}: {json.dumps(count)[:20]}, not a count.", n)
        hist[int(key)] = hist.get(int(key), 0) + count
    return hist


def _json_record(found: tuple[str, dict], path: str, n: int) -> Record | None:
    key, obj = found
    if key == "vllm-request":
        return _vllm_request(obj, path, n)
    if key == "sglang-request":
        return _sglang_request(obj, path, n)
    drafted, accepted = _whole(obj, "draft_n", path, n), _whole(obj, "draft_n_accepted", path, n)
    _check_totals(accepted, drafted, None, None, n)
    return Record("llamacpp-json", n, drafted=drafted, accepted=accepted)


def _from_histogram(hist: dict[int, int], k: int) -> tuple[int, ...]:
    """counts[i]: steps that accepted at least i + 1 (the sum of the histogram from i + 1 on)."""
    return tuple(sum(c for j, c in hist.items() if j > i) for i in range(k))


def _vllm_request(obj: dict, path: str, n: int) -> Record:
    steps, accepted, drafted, k = (
        _whole(obj, name, path, n)
        for name in ("num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens", "num_spec_tokens")
    )
    hist = _histogram(obj["acceptance_histogram"], f"{path}.acceptance_histogram", n)
    if sum(hist.values()) != steps:
        raise _contradiction(n, f"{path}: the histogram counts {sum(hist.values())} steps, num_spec_steps is {steps}")
    if sum(j * c for j, c in hist.items()) != accepted:
        total = sum(j * c for j, c in hist.items())
        raise _contradiction(
            n, f"{path}: the histogram accepts {total} tokens, num_accepted_draft_tokens is {accepted}"
        )
    if hist and max(hist) > k:
        raise _contradiction(n, f"{path}: a step accepted {max(hist)} of at most num_spec_tokens = {k}")
    _check_totals(accepted, drafted, steps, k, n)
    mean = obj.get("mean_acceptance_length")
    if isinstance(mean, int | float) and steps and abs(mean - (1 + accepted / steps)) > 1e-6:
        raise _contradiction(n, f"{path}: mean_acceptance_length {mean} is not 1 + {accepted} / {steps}")
    return Record("vllm-request", n, steps, drafted, accepted, _from_histogram(hist, k), None, k, given=True)


def _first_key(obj: dict, names: Sequence[str]) -> str | None:
    return next((name for name in names if obj.get(name) is not None), None)


def _sglang_request(obj: dict, path: str, n: int) -> Record | None:
    """meta_info's counters under either spelling (sgl-project/sglang#24081 renamed them; both may be present)."""
    steps = _whole(obj, "spec_verify_ct", path, n)
    if steps == 0:
        return None  # a request that never speculated (too short): nothing to read
    accepted_key = _first_key(obj, ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num"))
    drafted_key = _first_key(obj, ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num"))
    accepted = _whole(obj, accepted_key, path, n) if accepted_key else None
    drafted = _whole(obj, drafted_key, path, n) if drafted_key else None
    counts, k = None, None
    if drafted and steps and drafted % steps == 0:
        k = drafted // steps  # proposed draft tokens = verify steps × τ (a chain)
    hist_key = _first_key(obj, ("spec_correct_drafts_histogram", "spec_accept_histogram"))
    if hist_key is not None:
        raw = obj[hist_key]
        hist = _histogram(raw, f"{path}.{hist_key}", n)
        if sum(hist.values()) != steps:
            raise _contradiction(
                n, f"{path}: the histogram counts {sum(hist.values())} steps, spec_verify_ct is {steps}"
            )
        total = sum(j * c for j, c in hist.items())
        if accepted is not None and total != accepted:
            raise _contradiction(n, f"{path}: the histogram accepts {total} tokens, {accepted_key} is {accepted}")
        accepted = total
        if isinstance(raw, list) and raw and k is not None and len(raw) - 1 not in (k, max(hist or {0: 0})):
            raise _contradiction(n, f"{path}: a histogram of {len(raw)} buckets for drafts of {k} tokens")
        k = k or (len(raw) - 1 if isinstance(raw, list) and len(raw) > 1 else max(hist) if hist else None)
        counts = _from_histogram(hist, k) if k else None
    if accepted is not None and drafted is not None:
        _check_totals(accepted, drafted, steps, k, n)
    mean = None
    if accepted is not None:
        mean = 1.0 + accepted / steps  # exact; the engine's spec_accept_length counts the prefill's token too
    elif isinstance(length := obj.get("spec_accept_length"), int | float) and not isinstance(length, bool):
        mean = float(length) if length > 0 else None
    given = accepted is not None
    return Record("sglang-request", n, steps, drafted, accepted, counts, mean, k, given=given, exact=given)


# --- sources -----------------------------------------------------------------------------------------------------


def _one_engine(records: list[Record]) -> None:
    """EngineLogError naming the first line of a second engine: one engine's numbers at a time."""
    first = records[0]
    for r in records:
        if r.engine != first.engine:
            raise EngineLogError(
                f"Line {r.line} is {r.engine}'s ({FORMATS[r.key].name}), line {first.line} was {first.engine}'s: "
                "paste one engine's numbers at a time.",
                r.line,
            )


def _sources(records: list[Record]) -> list[tuple[str, list[Record], int]]:
    """(label, records, superseded running totals) for each source: a format, and within it an implementation or a
    run of running totals (a new run where a total falls: the server restarted), or a τ (vLLM's log lines)."""
    out: list[tuple[str, list[Record], int]] = []
    keys = list(dict.fromkeys(r.key for r in records))
    for key in keys:
        mine = [r for r in records if r.key == key]
        name = FORMATS[key].name
        if key in CUMULATIVE:
            for group in dict.fromkeys(r.group for r in mine):
                runs = _runs([r for r in mine if r.group == group])
                for i, run in enumerate(runs, 1):
                    what = f"{name}, {group}" if key == "llamacpp-stats" else name
                    where = f", run {i} of {len(runs)}" if len(runs) > 1 else ""
                    label = f"{what} (running totals since the server started{where})"
                    out.append((label, [run[-1]], len(run) - 1))
        elif key == "llamacpp-example":
            for i, r in enumerate(mine, 1):
                out.append((f"{name}, run {i} of {len(mine)}" if len(mine) > 1 else name, [r], 0))
        elif key == "vllm-log" and len({r.positions for r in mine}) > 1:
            for k in dict.fromkeys(r.positions for r in mine):
                group = [r for r in mine if r.positions == k]
                tau = f"τ = {k}" if k is not None else "no per-position rates"
                out.append((f"{name} ({tau}, {len(group)} intervals)", group, 0))
        else:
            many = {"vllm-log": "intervals", "llamacpp-server": "requests", "sglang-log": "lines"}.get(key, "")
            out.append((f"{name} ({len(mine)} {many})" if many and len(mine) > 1 else name, mine, 0))
    return out


def _runs(series: list[Record]) -> list[list[Record]]:
    """Running totals split where one falls (a restart counts from zero again)."""
    runs: list[list[Record]] = [[series[0]]]
    for r in series[1:]:
        last = runs[-1][-1]
        if (r.steps or 0) < (last.steps or 0) or (r.drafted or 0) < (last.drafted or 0):
            runs.append([r])
        else:
            runs[-1].append(r)
    return runs


def _sglang_taus(records: list[Record], context: dict) -> list[Record]:
    """SGLang's τ: from its server_args where the paste has them (exact), else the chain every accept rate agrees on
    (under either meaning of SGLang's accept rate); EngineLogError where the settings contradict a line."""
    if "sglang" in context:
        at, args = context["sglang"]
        topk = args.get("eagle_topk", 1)
        nodes = args.get("num_draft_tokens")
        depth = args.get("num_steps")
        tree = topk > 1
        tau = depth if tree or nodes is None else nodes - 1
        if not tau or tau < 1:
            return records
        out = []
        for r in records:
            if r.mean_length is not None and r.mean_length > (tau if not tree else depth) + 1 + 0.005:
                raise _contradiction(
                    r.line,
                    f"accept len {r.mean_length:.2f} is more than the {tau + 1} tokens line {at}'s settings verify",
                )
            if r.key == "sglang-request" and r.positions is not None and not tree:
                out.append(r)
                continue
            out.append(replace(r, positions=tau, nodes=nodes, guessed=False, tree=tree))
        return out
    constrained = [r for r in records if r.key in ("sglang-log", "sglang-prom") and r.taus != (None, None)]
    if not constrained:
        return records
    picks, words = _pick_tau(constrained)
    out = []
    for r in records:
        if r.key not in ("sglang-log", "sglang-prom") or r.positions is not None:
            out.append(r)
            continue
        out.append(replace(r, positions=picks, nodes=picks + 1 if picks else None, note=words))
    return out


def _pick_tau(records: list[Record]) -> tuple[int | None, str]:
    """The τ all lines fit under one meaning of SGLang's accept rate (the newer where both fit, and said)."""
    found = []
    for meaning in (1, 0):  # after #23530 first
        common: set[int] | None = None
        for r in records:
            if r.taus[meaning] is not None:
                common = set(r.taus[meaning]) if common is None else common & set(r.taus[meaning])
        found.append(sorted(common) if common else [])
    new, old = found
    if not new and not old:
        return None, "SGLang's accept len and accept rate fit no one draft length over these lines: give τ"
    pick = new[len(new) // 2] if new else old[len(old) // 2]
    if new and old and new[len(new) // 2] != old[len(old) // 2]:
        other = old[len(old) // 2]
        return pick, (
            f"SGLang's accept rate changed meaning with sgl-project/sglang#23530 (2026-04-23): as (accept len − 1) / τ "
            f"these lines give τ = {pick}, as accept len / (τ + 1) (older servers) τ = {other}; the newer is taken — "
            "give τ, or paste the server_args line, if the server is older"
        )
    if len(new or old) > 1:
        return pick, f"the accept rates, to two decimals, fit τ = {', '.join(map(str, new or old))}: the middle taken"
    return pick, ""


# --- pooling -----------------------------------------------------------------------------------------------------


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(values)


def _pool(records: list[Record], ignored: int, label: str = "") -> EngineImport:
    fmt = FORMATS[records[0].key]
    notes = []
    steps, drafted, accepted = (_sum([getattr(r, f) for r in records]) for f in ("steps", "drafted", "accepted"))
    ks = {r.positions for r in records if r.positions is not None}
    positions = max(ks) if ks else None
    if len(ks) > 1:
        notes.append(
            f"The engine ran at τ = {', '.join(map(str, sorted(ks)))} across these readings: the rates are pooled up "
            f"to {positions}, where the shorter drafts count as not accepted."
        )
    counts = None
    partial = any(r.partial for r in records)
    if records and all(r.counts is not None for r in records) and steps:
        width = max(len(r.counts) for r in records)
        if partial and len({len(r.counts) for r in records}) > 1:
            width = min(len(r.counts) for r in records)  # prefixes: only the positions every reading printed
        counts = tuple(sum(r.counts[i] if i < len(r.counts) else 0 for r in records) for i in range(width))
    weights = [r.weight for r in records]
    weight = sum(weights) if all(w is not None for w in weights) else None
    if steps is not None and accepted is not None:
        mean = 1.0 + accepted / steps
    else:  # a mean of the lengths, weighted by the steps behind each where known
        known = [r for r in records if r.mean_length is not None]
        w = [r.steps or r.weight or 1.0 for r in known]
        mean = sum(r.mean_length * x for r, x in zip(known, w, strict=True)) / sum(w) if known else None
    nodes = {r.nodes for r in records if r.nodes is not None}
    if len(nodes) > 1:
        notes.append(f"SGLang verified {', '.join(map(str, sorted(nodes)))} tokens per step across these lines.")
    exact = all(r.exact for r in records)
    if steps is not None and drafted is not None and positions and drafted < steps * positions:
        notes.append(
            f"{drafted:,} tokens drafted over {steps:,} steps at τ = {positions}: some steps drafted fewer, and "
            "a position not drafted counts as not accepted in the per-position rates."
        )
    notes += list(dict.fromkeys(r.note for r in records if r.note))
    given = all(r.given for r in records)
    if steps is not None and given and (counts is None or exact):
        grade = 0
    elif steps is not None:
        grade = 1
    elif mean is not None:
        grade = 2
    else:
        grade = 3
    return EngineImport(
        format=fmt,
        records=tuple(records),
        ignored=ignored,
        steps=steps,
        drafted=drafted,
        accepted=accepted,
        counts=counts,
        mean_length=mean,
        positions=positions,
        nodes=max(nodes) if nodes else None,
        weight=weight,
        exact=exact,
        guessed=any(r.guessed for r in records),
        notes=tuple(notes),
        label=label or fmt.name,
        cumulative=records[0].key in RUNNING_TOTALS,
        partial=partial,
        tree=any(r.tree for r in records),
        grade=grade,
    )
