"""What reading an engine's numbers gives: the formats (FORMATS), one reading (Record), one source pooled over its
readings (EngineImport) and everything a paste holds (Reading), with the bounds a paste is read within."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    "vllm-example": Format(
        VLLM,
        "vLLM's spec_decode.py summary",
        "examples/offline_inference/spec_decode.py (its printed summary)",
        "exact counts from the engine's counters over the whole run: drafts (the steps), draft and accepted tokens; "
        "the mean acceptance length and the unconditional rate at each position to two decimals (older versions "
        "print only these two)",
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
    start: int = 0  # engine start-ups seen before it in the paste: running totals count again from each

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
        given = all(r.given for r in self.records)  # the steps printed by the engine, whatever the counts
        if self.steps is not None:
            rebuilt = "" if self.exact or given else " (rebuilt from printed numbers)"
            said.append(f"{self.steps:,} verify steps{rebuilt}")
        elif self.weight:
            said.append(f"about {self.weight:,.0f} verify steps (estimated: {SGLANG_LOG_INTERVAL} batches per line)")
        if self.accepted is not None and self.drafted:
            said.append(f"{self.accepted:,} of {self.drafted:,} draft tokens accepted ({self.acceptance_rate:.1%})")
        if self.mean_length is not None:
            said.append(f"mean acceptance length {self.mean_length:.3f} (the target's token included)")
        if self.rates is not None:
            rebuilt = " (counts rebuilt within the printed rates' rounding)" if given and not self.exact else ""
            said.append("per-position rates " + ", ".join(f"{r:.3f}" for r in self.rates) + rebuilt)
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
    spelling: str | None = None  # llama.cpp flags the log's own command line uses: "current" (--spec-draft-*), "old"
    types: tuple[str, ...] = ()  # the --spec-type list on the log's own command line

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
