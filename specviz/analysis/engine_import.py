"""A serving engine's own speculative-decoding numbers, read back: the other direction of
specviz.analysis.engine_logs. Each format is read as the engine writes it, from the engine's own source:

- vLLM log lines, `SpecDecoding metrics: Mean acceptance length: …, Accepted: … tokens, Drafted: … tokens,
  Per-position acceptance rate: …, Avg Draft acceptance rate: …%` — `vllm/v1/spec_decode/metrics.py`,
  `SpecDecodingLogging.log` (one line per log interval; older builds print no per-position rates).
- vLLM Prometheus text, `vllm:spec_decode_num_drafts`, `…_num_draft_tokens`, `…_num_accepted_tokens`,
  `…_num_accepted_tokens_per_pos{position="i"}` (and `…_num_draft_tokens_per_pos` where exported), each with the
  `_total` suffix a scrape shows — `vllm/v1/spec_decode/metrics.py`, `SpecDecodingProm`; counts since start-up.
- vLLM per-request statistics, a response's `speculative_decoding_stats` (`num_spec_steps`,
  `num_accepted_draft_tokens`, `num_draft_tokens`, `num_spec_tokens`, `acceptance_histogram`) —
  `docs/features/speculative_decoding/acceptance_metrics.md` (`--per-request-spec-decode-stats summary`; an older
  spelling puts the same object under `metrics.speculative_decoding`, its histogram a list).
- SGLang decode-batch log lines, `Decode batch, #running-req: B, …, accept len: L, accept rate: R, …`, and the
  bare `accept len: …, accept rate: …` — `python/sglang/srt/managers/scheduler_metrics_mixin.py`,
  `log_decode_stats`: accept len = Σ (accepted + 1) / Σ batch size over the last `--decode-log-interval` batches
  (40 by default), accept rate = accepted and bonus tokens / (steps · speculative_num_draft_tokens).
- SGLang gauges `sglang:spec_accept_length`, `sglang:spec_accept_rate` (and `sglang:spec_num_draft_tokens`,
  `sglang:spec_num_steps` where exported) — `python/sglang/srt/metrics/collector.py`.
- SGLang per-request `meta_info` (`spec_verify_ct`, `spec_accept_token_num`, `spec_draft_token_num`,
  `spec_accept_length`, `spec_accept_histogram`) — `python/sglang/srt/managers/tokenizer_manager.py`,
  `_calculate_spec_decoding_metrics`.
- llama.cpp server, per request: `draft acceptance = R (A accepted / G generated), mean acceptance length = L,
  acceptance rate per position = (…)` (ggml-org/llama.cpp#24536), the interim `…, mean len = L` and the older
  `draft acceptance rate = R (A accepted / G generated)` — `tools/server/server-context.cpp`; the JSON response's
  `timings.draft_n`, `timings.draft_n_accepted`.
- llama.cpp `statistics <impl>: #calls(b,g,a) = …, #gen drafts = …, #acc drafts = …, #gen tokens = …, #acc tokens =
  …, #mean acc len = …, #acc rate/pos = (…)` — `common/speculative.cpp`, `common_speculative_print_stats`
  (running totals per implementation).
- `llama-speculative` and `llama-speculative-simple`: `n_draft = …`, `n_predict = …`, `n_drafted = …`,
  `n_accept = …`, `accept = …%` — `examples/speculative/speculative.cpp`, `examples/speculative-simple/…`.

What each gives is in FORMATS (`gives`): exact per-position counts, per-position rates as printed (three decimals:
counts rebuilt from them are exact below 1,000 steps), or only a mean length or an acceptance rate (then
specviz.analysis.engine_advice fits an i.i.d. α to it, and says so). Every per-position rate here is
unconditional: steps that accepted at least i draft tokens over all steps (docs/algorithm.md, "Glossary: the same
numbers in the serving engines"). Anything that cannot be read raises EngineLogError naming the line; nothing is
half-read."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from specviz.errors import EngineLogError

MAX_CHARS = 1_000_000  # a paste or a file: some 3,000 vLLM log lines; more is a whole log, not its numbers
MAX_LINES = 20_000
MAX_JSON_DEPTH = 64  # nesting a response never needs; deeper is refused before it is walked
SGLANG_LOG_INTERVAL = 40  # SGLang's --decode-log-interval default: decode batches per logged line
VLLM, SGLANG, LLAMACPP = "vLLM", "SGLang", "llama.cpp"


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
        "per log interval: accepted and drafted tokens, the mean acceptance length (bonus token included) and the "
        "unconditional per-position rates to three decimals; the steps (num_drafts) follow from them",
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
        "only a mean length: accept len = (accepted + bonus) / steps over the last 40 batches, two decimals; "
        "accept len / accept rate gives speculative_num_draft_tokens (the root counted)",
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
        "per request: verify steps and accepted tokens, and, where present, the histogram of accepted lengths "
        "(exact per-position rates); without it only a mean length",
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
        "running totals per drafting implementation: verify steps, drafted and accepted tokens, the mean "
        "acceptance length and the per-position rates (three decimals)",
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


@dataclass(frozen=True)
class Record:
    """One reading: a log line, a scrape, a request's statistics."""

    key: str  # its format, a key of FORMATS
    line: int  # where it starts, 1-based
    steps: int | None = None  # verify steps (target passes that checked a draft); None: not said
    drafted: int | None = None
    accepted: int | None = None
    counts: tuple[int, ...] | None = None  # counts[i]: steps that accepted at least i + 1 draft tokens
    mean_length: float | None = None  # as the engine gives it, the target's token included
    positions: int | None = None  # the draft positions the engine ran (its τ); None: not said
    nodes: int | None = None  # SGLang's speculative_num_draft_tokens (the root counted)
    weight: float | None = None  # steps estimated where none are given (SGLang: 40 × #running-req)
    exact: bool = True  # counts exact; False: rebuilt from rates printed to three decimals
    group: str = ""  # a running total's series (llama.cpp: the implementation): the last of each counts
    guessed: bool = False  # `positions` taken as a chain's (nodes − 1): a tree of that many nodes is shallower

    @property
    def engine(self) -> str:
        return FORMATS[self.key].engine


@dataclass(frozen=True)
class EngineImport:
    """What a paste holds, pooled over its records."""

    format: Format
    records: tuple[Record, ...]
    ignored: int  # lines with no speculative-decoding numbers (the rest of a log)
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
        said = [f"{self.format.name}: {n} {kind}" + (f", {self.ignored} other lines skipped" if self.ignored else "")]
        if self.steps is not None:
            said.append(f"{self.steps:,} verify steps" + ("" if self.exact else " (rebuilt from printed rates)"))
        elif self.weight:
            said.append(f"about {self.weight:,.0f} verify steps (estimated: {SGLANG_LOG_INTERVAL} batches per line)")
        if self.accepted is not None and self.drafted:
            said.append(f"{self.accepted:,} of {self.drafted:,} draft tokens accepted ({self.acceptance_rate:.1%})")
        if self.mean_length is not None:
            said.append(f"mean acceptance length {self.mean_length:.3f} (the target's token included)")
        if self.rates is not None:
            said.append("per-position rates " + ", ".join(f"{r:.3f}" for r in self.rates))
        if self.positions is not None:
            chain = " if a chain (speculative_num_draft_tokens − 1; a tree is shallower)" if self.guessed else ""
            said.append(f"ran at τ = {self.positions}{chain}")
        if self.nodes is not None:
            said.append(f"speculative_num_draft_tokens = {self.nodes}")
        return said


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
    """Every record in `text`, checked and pooled; EngineLogError naming the line for anything unreadable."""
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
    records, ignored = _json_records(text, lines) if is_json else _line_records(lines)
    if not records:
        raise EngineLogError(
            "No speculative-decoding numbers found: looked for vLLM's 'SpecDecoding metrics' lines or "
            "vllm:spec_decode_* counters, SGLang's 'accept len' or sglang:spec_accept_length, llama.cpp's 'draft "
            "acceptance', 'statistics … #gen drafts' or 'n_accept =' lines, and JSON with speculative_decoding_stats, "
            "meta_info.spec_verify_ct or timings.draft_n."
        )
    used = _one_engine(records)
    notes = ()
    if {r.key for r in records} == {"llamacpp-server", "llamacpp-stats"}:
        notes = ("llama.cpp's running statistics lines were skipped: its per-request lines count the same steps.",)
    pooled = _pool(used, ignored + len(records) - len(used))  # readings not used (earlier running totals) skipped
    return replace(pooled, notes=notes + pooled.notes)


# --- lines ------------------------------------------------------------------------------------------------------

NUMBER = r"\d+(?:\.\d+)?"
RATES = r"(?:nan|\d+\.\d+)(?:, (?:nan|\d+\.\d+))*"
VLLM_FIELDS = {
    "mean acceptance length": re.compile(r"Mean acceptance length: (nan|inf|" + NUMBER + r")(?:,|$)"),
    "accepted tokens": re.compile(r"Accepted: (\d+) tokens"),
    "drafted tokens": re.compile(r"Drafted: (\d+) tokens"),
    "draft acceptance rate": re.compile(r"Draft acceptance rate: (nan|" + NUMBER + r")%"),
}
VLLM_RATES = re.compile(r"Per-position acceptance rate: (" + RATES + r")(?:,|$)")
SGLANG_LEN = re.compile(r"accept len: (\d+\.\d\d)(?!\d)")
SGLANG_RATE = re.compile(r"accept rate: (\d+\.\d\d)(?!\d)")
SGLANG_BATCH = re.compile(r"#running-req: (\d+)")
LLAMA_SERVER = re.compile(r"draft acceptance(?: rate)? = (\d+\.\d+) \(\s*(\d+) accepted /\s*(\d+) generated\)")
LLAMA_LENGTH = re.compile(r"\), mean (?:acceptance length|len) =\s*(" + NUMBER + r")(?!\.)")
LLAMA_POSITION = re.compile(r"acceptance rate per position = \((" + RATES + r")\)")
LLAMA_STATS = re.compile(
    r"statistics\s+(\S+):\s*#calls\(b,g,a\) =\s*(\d+)\s+(\d+)\s+(\d+), #gen drafts =\s*(\d+), #acc drafts =\s*(\d+), "
    r"#gen tokens =\s*(\d+), #acc tokens =\s*(\d+)"
)
LLAMA_STATS_TAIL = re.compile(r"#mean acc len =\s*(" + NUMBER + r"), #acc rate/pos = \((" + RATES + r")\)")
EXAMPLE = re.compile(r"(?:^|\s)(n_draft|n_predict|n_drafted|n_accept)\s*=\s*(\d+)\s*$")
EXAMPLE_ACCEPT = re.compile(r"(?:^|\s)accept\s*=\s*(" + NUMBER + r"|-?nan|inf)%\s*$")
PROM = re.compile(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$")
PROM_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def _line_records(lines: Sequence[str]) -> tuple[list[Record], int]:
    records: list[Record] = []
    prom: list[tuple[int, str]] = []
    block: dict[str, tuple[int, int | float]] = {}
    ignored = 0
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#") and ("vllm:spec_decode" in stripped or "sglang:spec_" in stripped):
            continue  # a metric's HELP or TYPE comment
        if stripped.startswith(("vllm:spec_decode", "sglang:spec_")):
            prom.append((n, stripped))
            continue
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


def _one_line(line: str, n: int, block: dict) -> Record | bool | None:
    """A record, True where the line is part of a multi-line record (llama-speculative's summary), None where it
    holds no speculative-decoding number."""
    if "SpecDecoding metrics:" in line:
        return _vllm_line(line, n)
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


def _counts_from(rates: tuple[float, ...], steps: int, accepted: int, n: int) -> tuple[tuple[int, ...], bool]:
    """Counts rebuilt from rates printed to three decimals: exact below 1,000 steps (then they must sum to the
    accepted tokens), within 0.05% of the steps above."""
    counts = tuple(round(r * steps) for r in rates)
    exact = steps < 1000
    off = abs(sum(counts) - accepted)
    if (exact and off) or off > 0.0005 * steps * len(rates) + len(rates):
        raise _contradiction(
            n,
            f"the per-position rates ({', '.join(f'{r:.3f}' for r in rates)}) over {steps} steps give {sum(counts)} "
            f"accepted tokens, the line says {accepted}",
        )
    return counts, exact


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
    length, accepted, drafted, percent = (found[k].group(1) for k in VLLM_FIELDS)
    accepted, drafted = int(accepted), int(drafted)
    if "Per-position acceptance rate:" in body and not VLLM_RATES.search(body):
        raise _cut(n, "vLLM SpecDecoding metrics", line, "readable per-position rates")
    if drafted == 0:
        return False  # an interval in which nothing was drafted: nothing to read (vLLM prints nan)
    rates = _rates(m.group(1) if (m := VLLM_RATES.search(body)) else None, n)
    _check_totals(accepted, drafted, None, None, n)
    if abs(100.0 * accepted / drafted - float(percent)) > 0.05 + 1e-9:
        raise _contradiction(n, f"Avg Draft acceptance rate {percent}% is not {accepted} / {drafted}")
    mean = float(length)
    steps, guessed = _steps_from(accepted, rates, mean), False
    if steps is None and rates:  # nothing accepted: at least drafted / τ drafts (every draft as long as it can be)
        steps, guessed = math.ceil(drafted / len(rates)), True
    _check_length(mean, accepted, steps, n, 2)
    _check_totals(accepted, drafted, steps, len(rates) if rates else None, n)
    counts, exact = _counts_from(rates, steps, accepted, n) if rates and steps else (None, True)
    k = len(rates) if rates else None
    return Record("vllm-log", n, steps, drafted, accepted, counts, mean, k, exact=exact and not guessed)


def _sglang_line(line: str, n: int) -> Record:
    length = SGLANG_LEN.search(line)
    if length is None or ("accept rate:" in line and not SGLANG_RATE.search(line)):
        raise _cut(n, "SGLang accept len", line, "'accept len: X.XX' and its 'accept rate: X.XX'")
    mean = float(length.group(1))
    if mean < 1.0:
        raise _contradiction(n, f"accept len {mean:.2f} is below 1, but it counts the target's own token every step")
    nodes = None
    if rate := SGLANG_RATE.search(line):
        value = float(rate.group(1))
        if value > 1.0 or value <= 0.0:
            raise _contradiction(n, f"accept rate {value:.2f} is not in (0, 1]")
        nodes = max(2, round(mean / value))  # accept len / accept rate = speculative_num_draft_tokens
    batch = int(m.group(1)) if (m := SGLANG_BATCH.search(line)) else None
    weight = float(SGLANG_LOG_INTERVAL * batch) if batch else None
    positions = nodes - 1 if nodes else None
    if positions is not None and mean > positions + 1 + 0.005:
        raise _contradiction(n, f"accept len {mean:.2f} is more than the {nodes} tokens a step verifies")
    return Record("sglang-log", n, None, None, None, None, mean, positions, nodes, weight, False, guessed=True)


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
    counts, exact = _counts_from(rates, steps, accepted, n) if rates and steps else (None, True)
    k = len(rates) if rates else None
    return Record("llamacpp-server", n, steps, drafted, accepted, counts, mean, k, exact=exact)


def _llama_stats(line: str, n: int) -> Record | bool:
    head = LLAMA_STATS.search(line)
    if head is None:
        raise _cut(n, "llama.cpp statistics", line, "'#calls(b,g,a) = …, #gen drafts = …, … #acc tokens = …'")
    impl = head.group(1)
    steps, drafted, accepted, hit = (int(head.group(i)) for i in (4, 7, 8, 6))
    tail = line[head.end() :]
    more = LLAMA_STATS_TAIL.search(tail)
    if "#mean acc len" in tail and more is None:
        raise _cut(n, "llama.cpp statistics", line, "a readable '#mean acc len = …, #acc rate/pos = (…)'")
    if steps == 0 or drafted == 0:
        return False
    rates = _rates(more.group(2) if more else None, n)
    mean = float(more.group(1)) if more else None
    _check_totals(accepted, drafted, steps, len(rates) if rates else None, n)
    _check_length(mean, accepted, steps, n, 2)
    counts, exact = (None, True)
    if rates:
        counts, exact = _counts_from(rates, steps, accepted, n)
        if abs(rates[0] * steps - hit) > 0.0005 * steps + 0.5:
            raise _contradiction(n, f"#acc drafts = {hit} of {steps}, but the rate at position 1 is {rates[0]:.3f}")
    k = len(rates) if rates else None
    return Record("llamacpp-stats", n, steps, drafted, accepted, counts, mean, k, exact=exact, group=impl)


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
    return Record("llamacpp-example", first, steps, drafted, accepted, None, emitted / steps, k or None)


# --- Prometheus --------------------------------------------------------------------------------------------------

VLLM_COUNTERS = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "drafted",
    "vllm:spec_decode_num_accepted_tokens": "accepted",
    "vllm:spec_decode_num_accepted_tokens_per_pos": "per_pos",
    "vllm:spec_decode_num_draft_tokens_per_pos": "drafted_per_pos",
}
SGLANG_GAUGES = {
    "sglang:spec_accept_length": "length",
    "sglang:spec_accept_rate": "rate",
    "sglang:spec_num_draft_tokens": "nodes",
    "sglang:spec_num_steps": "steps",
}


def _prometheus(samples: Sequence[tuple[int, str]]) -> list[Record]:
    """Every sample of a scrape, summed over engines and ranks (vLLM) or averaged over ranks (SGLang gauges)."""
    seen: dict[tuple[str, tuple], int] = {}
    vllm: dict[str, dict] = {}
    sglang: dict[str, list[float]] = {}
    first = {VLLM: 0, SGLANG: 0}
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
        if base in VLLM_COUNTERS:
            first[VLLM] = first[VLLM] or n
            _vllm_sample(vllm, VLLM_COUNTERS[base], labels, number, n)
        elif base in SGLANG_GAUGES and labels.get("engine_type") != "draft":
            first[SGLANG] = first[SGLANG] or n
            sglang.setdefault(SGLANG_GAUGES[base], []).append(number)
    records = []
    if vllm:
        records.append(_vllm_scrape(vllm, first[VLLM]))
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


def _vllm_sample(into: dict, kind: str, labels: dict, value: float, n: int) -> None:
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


def _vllm_scrape(c: dict, n: int) -> Record:
    if missing := [k for k in ("drafts", "drafted", "accepted") if k not in c]:
        names = {v: k for k, v in VLLM_COUNTERS.items()}
        raise EngineLogError(f"Line {n}: vLLM's counters without {', '.join(names[k] for k in missing)}.", n)
    steps, drafted, accepted = c["drafts"], c["drafted"], c["accepted"]
    if steps == 0:
        raise EngineLogError(f"Line {n}: vllm:spec_decode_num_drafts is 0: no step has drafted yet.", n)
    counts = None
    if per_pos := c.get("per_pos"):
        k = max(per_pos) + 1
        if sorted(per_pos) != list(range(k)):
            raise EngineLogError(
                f"Line {n}: per-position counters for positions {sorted(per_pos)}, not 0 to {k - 1}.", n
            )
        counts = tuple(per_pos[i] for i in range(k))
        for i in range(1, k):
            if counts[i] > counts[i - 1]:
                said = f"{counts[i]} drafts accepted position {i + 1} but only {counts[i - 1]} position {i}"
                raise _contradiction(c["lines"][("per_pos", i)], said)
        if sum(counts) != accepted:
            said = f"the per-position counters sum to {sum(counts)}, the accepted tokens are {accepted}"
            raise _contradiction(c["lines"]["accepted"], said)
        if counts[0] > steps:
            said = f"{counts[0]} drafts accepted position 1 of only {steps} drafts"
            raise _contradiction(c["lines"][("per_pos", 0)], said)
    _check_totals(accepted, drafted, steps, len(counts) if counts else None, n)
    if drafted_per_pos := c.get("drafted_per_pos"):
        reached = [drafted_per_pos.get(i, 0) for i in range(len(counts or ()))]
        if any(a > d for a, d in zip(counts or (), reached, strict=True)):
            raise _contradiction(n, "more tokens accepted at a position than drafted there")
    return Record(
        "vllm-prom", n, steps, drafted, accepted, counts, 1.0 + accepted / steps, len(counts) if counts else None
    )


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
    if nodes is None and g.get("rate") and (rate := sum(g["rate"]) / len(g["rate"])) > 0:
        nodes = max(2, round(mean / rate))
    depth = round(sum(g["steps"]) / len(g["steps"])) if g.get("steps") else None
    positions = depth or (nodes - 1 if nodes else None)
    guessed = depth is None and positions is not None
    return Record("sglang-prom", n, mean_length=mean, positions=positions, nodes=nodes, exact=False, guessed=guessed)


# --- JSON --------------------------------------------------------------------------------------------------------


def _json_records(text: str, lines: Sequence[str]) -> tuple[list[Record], int]:
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
        for path, found in _stats_objects(doc, "", 0, n):
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


def _stats_objects(doc: object, path: str, depth: int, n: int) -> Iterable[tuple[str, tuple[str, dict]]]:
    """(path, (format, the statistics object)) for every statistics object in a document, in order."""
    if depth > MAX_JSON_DEPTH:
        raise EngineLogError(f"Line {n}: the JSON nests more than {MAX_JSON_DEPTH} levels.", n)
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _stats_objects(item, f"{path}[{i}]", depth + 1, n)
        return
    if not isinstance(doc, dict):
        return
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
        yield from _stats_objects(value, f"{path}.{key}" if path else str(key), depth + 1, n)


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
    return Record("vllm-request", n, steps, drafted, accepted, _from_histogram(hist, k), None, k)


def _sglang_request(obj: dict, path: str, n: int) -> Record | None:
    steps = _whole(obj, "spec_verify_ct", path, n)
    if steps == 0:
        return None  # a request that never speculated (too short): nothing to read
    accepted = _whole(obj, "spec_accept_token_num", path, n, required=False)
    drafted = _whole(obj, "spec_draft_token_num", path, n, required=False)
    mean = obj.get("spec_accept_length")
    mean = float(mean) if isinstance(mean, int | float) and not isinstance(mean, bool) and mean > 0 else None
    counts, k = None, None
    if drafted and steps and drafted % steps == 0:
        k = drafted // steps  # spec_draft_token_num = verify steps × (speculative_num_draft_tokens − 1)
    if (raw := obj.get("spec_accept_histogram")) is not None:
        hist = _histogram(raw, f"{path}.spec_accept_histogram", n)
        if sum(hist.values()) != steps:
            raise _contradiction(
                n, f"{path}: the histogram counts {sum(hist.values())} steps, spec_verify_ct is {steps}"
            )
        total = sum(j * c for j, c in hist.items())
        if accepted is not None and total != accepted:
            raise _contradiction(
                n, f"{path}: the histogram accepts {total} tokens, spec_accept_token_num is {accepted}"
            )
        accepted = total
        k = k or (max(hist) if hist else None)
        counts = _from_histogram(hist, k) if k else None
    if accepted is not None and drafted is not None:
        _check_totals(accepted, drafted, steps, k, n)
    if accepted is not None:
        mean = 1.0 + accepted / steps  # exact; the engine's spec_accept_length counts the prefill's token too
    return Record("sglang-request", n, steps, drafted, accepted, counts, mean, k)


# --- pooling -----------------------------------------------------------------------------------------------------


def _one_engine(records: list[Record]) -> list[Record]:
    """The records of one engine and one format (llama.cpp's per-request lines over its running statistics);
    EngineLogError naming the first line of a second engine or format."""
    first = records[0]
    for r in records:
        if r.engine != first.engine:
            raise EngineLogError(
                f"Line {r.line} is {r.engine}'s ({FORMATS[r.key].name}), line {first.line} was {first.engine}'s: "
                "paste one engine's numbers at a time.",
                r.line,
            )
    keys = {r.key for r in records}
    if keys == {"llamacpp-server", "llamacpp-stats"}:
        return [r for r in records if r.key == "llamacpp-server"]
    if len(keys) > 1:
        other = next(r for r in records if r.key != first.key)
        raise EngineLogError(
            f"Line {other.line} is {FORMATS[other.key].name}, line {first.line} {FORMATS[first.key].name}: they count "
            "the same steps twice. Paste one of them.",
            other.line,
        )
    if first.key == "llamacpp-stats":  # running totals: the last line of each implementation
        last = {r.group: r for r in records}
        return list(last.values())
    return records


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(values)


def _pool(records: list[Record], ignored: int) -> EngineImport:
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
    if records and all(r.counts is not None for r in records) and steps:
        width = max(len(r.counts) for r in records)
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
    )
