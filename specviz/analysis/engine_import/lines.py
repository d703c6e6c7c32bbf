"""Log lines, as each engine prints them: vLLM (V1 and V0), SGLang's decode batches, llama.cpp's server, statistics
and llama-speculative's summary; what a log says about the engine besides its numbers (build, version, settings).
Every number pattern matches ASCII digits only, `[0-9]`: a digit class would match any script's digits."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from specviz.analysis.engine_import.checks import (
    check_length,
    check_totals,
    contradiction,
    counts_from,
    cut_off,
    printed_rates,
    rebuild,
    tau_candidates,
)
from specviz.analysis.engine_import.prometheus import PROM_PREFIXES, prometheus_records
from specviz.analysis.engine_import.records import SGLANG_LOG_INTERVAL, Record
from specviz.errors import EngineLogError

NUMBER = r"[0-9]+(?:\.[0-9]+)?"
RATES = r"(?:nan|[0-9]+\.[0-9]+)(?:, (?:nan|[0-9]+\.[0-9]+))*"
VLLM_FIELDS = {
    "accepted tokens": re.compile(r"Accepted: ([0-9]+) tokens"),
    "drafted tokens": re.compile(r"Drafted: ([0-9]+) tokens"),
    "draft acceptance rate": re.compile(r"Draft acceptance rate: (nan|" + NUMBER + r")%"),
}
END = r"(?![0-9.])(?!,\s*(?:nan|[0-9]))"  # a printed list ends here: not mid-number, and no further rate follows
VLLM_LENGTH = re.compile(r"Mean acceptance length: (nan|inf|" + NUMBER + r")" + END)
VLLM_RATES = re.compile(r"Per-position acceptance rate: (" + RATES + r")" + END)
VLLM_V0 = {  # vllm/engine/metrics.py's "Speculative metrics" line, V0 and the first V1 layout
    "draft acceptance rate": re.compile(r"Draft acceptance rate: (nan|" + NUMBER + r")(?![0-9.%])"),
    "number of accepted tokens": re.compile(r"Number of accepted tokens: ([0-9]+)"),
    "number of draft tokens": re.compile(r"Number of draft tokens(?: tokens)?: ([0-9]+)"),  # "tokens tokens" to v0.5
}
VLLM_V0_ONLY = {
    "system efficiency": re.compile(r"System efficiency: (nan|" + NUMBER + r")(?![0-9.])"),
    "number of speculative tokens": re.compile(r"Number of speculative tokens: ([0-9]+)"),
    "number of emitted tokens": re.compile(r"Number of emitted tokens(?: tokens)?: ([0-9]+)"),
}
VLLM_EXAMPLE = re.compile(  # examples/offline_inference/spec_decode.py's printed summary
    r"^\s*(total_num_output_tokens|num_drafts|num_draft_tokens|num_accepted_tokens|mean acceptance length|"
    r"acceptance at token ([0-9]{1,3}))\s*:\s*(nan|" + NUMBER + r")\s*$"
)
STARTS = re.compile(  # an engine starting: running totals after it count from zero again
    r"Initializing an? (?:V1 )?LLM engine|vLLM API server version|\bbuild(?:_info)?: b?[0-9]{3,6}[ -]"
)
HEADS = (  # where one record begins: a line holding two was joined from several (its newlines lost)
    r"SpecDecoding metrics:|Speculative metrics:|Decode batch|draft acceptance(?: rate)? =|"
    r"statistics\s+[A-Za-z0-9_.-]{1,40}:\s*#calls|\bn_(?:draft|predict|drafted|accept)\s*=|\baccept\s*=\s*[0-9]|"
    r"# (?:HELP|TYPE) |(?<!# HELP )(?<!# TYPE )\b(?:vllm|sglang|llamacpp):[a-z_]+(?=[{ ])|"
    r"\b(?:total_num_output_tokens|num_drafts|num_draft_tokens|num_accepted_tokens):|\bmean acceptance length:|"
    r"\bacceptance at token [0-9]|(?<![0-9])-{50}(?!-)|Initializing an? (?:V1 )?LLM engine|vLLM API server version"
)
HEAD = re.compile(HEADS)
HEAD_SGLANG = re.compile(HEADS + r"|accept len:")  # bare 'accept len' lines, where no 'Decode batch' heads them
SGLANG_LEN = re.compile(r"accept len: ([0-9]+\.[0-9][0-9])(?![0-9])")
SGLANG_RATE = re.compile(r"accept rate: ([0-9]+\.[0-9][0-9])(?![0-9])")
SGLANG_BATCH = re.compile(r"#running-req: ([0-9]+)")
SGLANG_ARGS = re.compile(
    r"(?:\bspeculative_|--speculative-)(num[_-]steps|eagle[_-]topk|num[_-]draft[_-]tokens)[= ]([0-9]+)"
)
LLAMA_SERVER = re.compile(
    r"draft acceptance(?: rate)? = ([0-9]+\.[0-9]+) \(\s*([0-9]+) accepted /\s*([0-9]+) generated\)"
)
LLAMA_LENGTH = re.compile(r"\), mean (?:acceptance length|len) =\s*(" + NUMBER + r")(?!\.)")
LLAMA_POSITION = re.compile(r"acceptance rate per position = \((" + RATES + r")\)")
LLAMA_STATS = re.compile(
    r"statistics\s+([A-Za-z0-9_.-]{1,40}):\s*#calls(?:\(b,g,a\))?\s*=\s*([0-9]+)(?:\s+([0-9]+)\s+([0-9]+))?, "
    r"#gen drafts =\s*([0-9]+), #acc drafts =\s*([0-9]+), #gen tokens =\s*([0-9]+), #acc tokens =\s*([0-9]+)"
)
LLAMA_STATS_TAIL = re.compile(r"#mean acc len =\s*(" + NUMBER + r"), #acc rate/pos = \((" + RATES + r")\)")
LLAMA_BUILD = (
    re.compile(r"\bbuild: ([0-9]{3,6}) \(([0-9a-f]{6,40})\)"),
    re.compile(r"\bbuild_info: b([0-9]{3,6})-([0-9a-f]{6,40})\b"),
    re.compile(r"\bversion: ([0-9]{3,6}) \(([0-9a-f]{6,40})\)"),
)
LLAMA_CURRENT = re.compile(r"(?<![\w-])--spec-draft-(?:n-max|n-min|p-min|model)\b")  # the log's own command line
LLAMA_OLD = re.compile(r"(?<![\w-])--draft-(?:max|min)\b")
LLAMA_TYPES = re.compile(r"(?<![\w-])--spec-type[ =]([a-z0-9_,-]{1,200})")
VLLM_VERSION = re.compile(r"vLLM API server version ([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
EXAMPLE = re.compile(r"(?:^|\s)(n_draft|n_predict|n_drafted|n_accept)\s*=\s*([0-9]+)\s*$")
EXAMPLE_ACCEPT = re.compile(r"(?:^|\s)accept\s*=\s*(" + NUMBER + r"|-?nan|inf)%(?=\s|$)")


def line_records(lines: Sequence[str], context: dict) -> tuple[list[Record], int]:
    """Every record in a paste's lines; a line joined from several (its newlines lost) is read as its pieces. Lines
    whose engine had drafted nothing yet (or drafted with no token counted) go into context["empty"]."""
    records: list[Record] = []
    prom: list[tuple[int, str]] = []
    block: dict[str, tuple[int, int | float]] = {}
    summary: dict[str, tuple[int, float]] = {}
    ignored = 0
    for n, whole in enumerate(lines, 1):
        for line in pieces(whole):
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith("#") and any(p in stripped for p in PROM_PREFIXES):
                continue  # a metric's HELP or TYPE comment
            if stripped.startswith(PROM_PREFIXES):
                prom.append((n, stripped))
                continue
            _context(line, n, context)
            if m := VLLM_EXAMPLE.match(line):
                if (done := _vllm_example(m, n, summary)) is not None:
                    records.append(replace(done, start=context.get("starts", 0)))
                continue
            found = _one_line(line, n, block, context)
            if found is None:
                ignored += 1
            elif isinstance(found, Record):
                records.append(replace(found, start=context.get("starts", 0)))
    if summary and (done := _vllm_summary(summary)) is not None:
        records.append(replace(done, start=context.get("starts", 0)))
    if block:
        first = min(at for at, _ in block.values())
        missing = ", ".join(k for k in ("n_draft", "n_predict", "n_drafted", "n_accept", "accept") if k not in block)
        raise EngineLogError(f"Line {first}: llama-speculative's summary is cut off: {missing} missing.", first)
    if prom:
        records += prometheus_records(prom)
    return records, ignored


def pieces(line: str) -> list[str]:
    """A line as its records: one piece, or, where it holds the start of two or more records (a paste whose newlines
    were lost), one piece from each start to the next (the text before the first its own piece)."""
    head = HEAD if "Decode batch" in line or "accept len:" not in line else HEAD_SGLANG
    starts = [m.start() for m in head.finditer(line)]
    if len(starts) < 2:
        return [line]
    cuts = [0, *starts[1:]] if starts[0] == 0 or not line[: starts[0]].strip() else [0, *starts]
    return [line[a:b] for a, b in zip(cuts, [*cuts[1:], len(line)], strict=True)]


def _context(line: str, n: int, context: dict) -> None:
    """What a log line says about the engine besides its numbers: llama.cpp's build, vLLM's version, SGLang's
    speculative settings (the last of each wins: the latest start), and each engine start-up (running totals after
    it count from zero again)."""
    if STARTS.search(line):
        context["starts"] = context.get("starts", 0) + 1
    for pattern in LLAMA_BUILD:
        if m := pattern.search(line):
            context["build"] = (int(m.group(1)), m.group(2))
    if LLAMA_CURRENT.search(line):
        context["spelling"] = "current"
    elif LLAMA_OLD.search(line):
        context["spelling"] = "old"
    if m := LLAMA_TYPES.search(line):
        context["types"] = tuple(t for t in m.group(1).split(",") if t)
    if m := VLLM_VERSION.search(line):
        context["version"] = tuple(int(g) for g in m.groups() if g is not None)
    found = SGLANG_ARGS.findall(line)
    if found and ("ServerArgs(" in line or "sglang" in line or "--speculative-" in line):
        args = {name.replace("-", "_"): int(value) for name, value in found}
        context["sglang"] = (n, args)


def _one_line(line: str, n: int, block: dict, context: dict) -> Record | bool | None:
    """A record, True where the line is part of a multi-line record (llama-speculative's summary), False where it is
    an engine's line with nothing to read (nothing drafted), None where it holds no speculative-decoding number."""
    if "SpecDecoding metrics:" in line:
        found = _vllm_line(line, n)
    elif "Speculative metrics:" in line:
        found = _vllm_v0_line(line, n)
    elif "accept len:" in line:
        return _sglang_line(line, n)
    elif "#gen drafts" in line:
        found = _llama_stats(line, n)
    elif "draft acceptance" in line:
        found = _llama_server(line, n)
    elif (m := EXAMPLE.search(line)) or (m := EXAMPLE_ACCEPT.search(line)):
        return _example_line(m, n, block)
    else:
        return None
    if isinstance(found, str):  # nothing to read: said if nothing else is
        context.setdefault("empty", []).append((n, found))
        return False
    return found


def _vllm_line(line: str, n: int) -> Record | str:
    body = line.split("SpecDecoding metrics:", 1)[1]
    found = {name: pattern.search(body) for name, pattern in VLLM_FIELDS.items()}
    if missing := [name for name, m in found.items() if m is None]:
        raise cut_off(n, "vLLM SpecDecoding metrics", line, "its " + " and ".join(missing))
    accepted, drafted, percent = (found[k].group(1) for k in VLLM_FIELDS)
    accepted, drafted = int(accepted), int(drafted)
    if "Mean acceptance length" in body and not VLLM_LENGTH.search(body):
        raise cut_off(n, "vLLM SpecDecoding metrics", line, "a readable mean acceptance length")
    if "Per-position acceptance rate:" in body and not VLLM_RATES.search(body):
        raise cut_off(n, "vLLM SpecDecoding metrics", line, "readable per-position rates")
    if drafted == 0:  # nothing to read (vLLM prints nan%): drafts counted with no token (a mean length), or none
        length = VLLM_LENGTH.search(body)
        return "drafts" if length and length.group(1) not in ("nan", "inf") else "none"
    rates = printed_rates(m.group(1) if (m := VLLM_RATES.search(body)) else None, n)
    check_totals(accepted, drafted, None, None, n)
    if abs(100.0 * accepted / drafted - float(percent)) > 0.05 + 1e-9:
        named = "Avg Draft acceptance rate" if "Avg Draft acceptance rate" in body else "Draft acceptance rate"
        raise contradiction(n, f"{named} {percent}% is not {accepted} / {drafted}")
    mean = float(m.group(1)) if (m := VLLM_LENGTH.search(body)) else None
    if mean is None and rates is None:  # v0.8.3–v0.8.4: the acceptance rate only
        return Record("vllm-log", n, drafted=drafted, accepted=accepted)
    steps, counts, exact, note = _rebuilt(accepted, rates, mean, drafted, n)
    if steps is None and rates:  # nothing accepted: at least drafted / τ drafts (every draft as long as it can be)
        steps, counts, exact = math.ceil(drafted / len(rates)), (0,) * len(rates), False
    check_length(mean, accepted, steps, n, 2)
    check_totals(accepted, drafted, steps, len(rates) if rates else None, n)
    k = len(rates) if rates else None
    return Record("vllm-log", n, steps, drafted, accepted, counts, mean, k, exact=exact, note=note)


def _rebuilt(
    accepted: int, rates: tuple[float, ...] | None, mean: float | None, drafted: int, n: int, places: int = 3
) -> tuple[int | None, tuple[int, ...] | None, bool, str]:
    """The steps and counts printed numbers allow (checks.rebuild); a contradiction where none fit."""
    if rates is None and (mean is None or not math.isfinite(mean) or mean <= 1.0):
        return None, None, True, ""
    steps, counts, exact, note = rebuild(accepted, rates, mean, drafted, places)
    if steps is None and not exact:
        shown = f"the per-position rates ({', '.join(f'{r:.{places}f}' for r in rates)})" if rates else ""
        length = f"the mean acceptance length {mean}" if mean is not None else ""
        said = " and ".join(x for x in (shown, length) if x)
        raise contradiction(n, f"{said} fit no number of steps with {accepted} accepted of {drafted} drafted")
    return steps, counts, exact, f"Line {n}: {note}." if note else ""


def _vllm_v0_line(line: str, n: int) -> Record | str:
    """V0's running totals, or the first V1 layout (the same words without System efficiency: one interval)."""
    body = line.split("Speculative metrics:", 1)[1]
    found = {name: pattern.search(body) for name, pattern in VLLM_V0.items()}
    if missing := [name for name, m in found.items() if m is None]:
        raise cut_off(n, "vLLM Speculative metrics", line, "its " + " and ".join(missing))
    rate, accepted, drafted = (found[k].group(1) for k in VLLM_V0)
    accepted, drafted = int(accepted), int(drafted)
    if "System efficiency" not in body:  # vllm-project/vllm#15151's V1 line: one interval's rate
        if drafted == 0:
            return "none"
        check_totals(accepted, drafted, None, None, n)
        if abs(accepted / drafted - float(rate)) > 0.0005 + 1e-9:
            raise contradiction(n, f"the Draft acceptance rate {rate} is not {accepted} / {drafted}")
        return Record("vllm-log", n, drafted=drafted, accepted=accepted)
    more = {name: pattern.search(body) for name, pattern in VLLM_V0_ONLY.items()}
    if missing := [name for name, m in more.items() if m is None]:
        raise cut_off(n, "vLLM V0 Speculative metrics", line, "its " + " and ".join(missing))
    efficiency, k, emitted = (more[name].group(1) for name in VLLM_V0_ONLY)
    k, emitted = int(k), int(emitted)
    if drafted == 0:
        return "none"  # nothing speculated yet
    if k < 1 or drafted % k:
        raise contradiction(n, f"{drafted} draft tokens are not a whole number of steps of k = {k} tokens each")
    steps = drafted // k
    kept = emitted - steps  # every step emits its kept draft tokens and one of the target's
    if kept < 0:
        raise contradiction(n, f"{emitted} tokens emitted over {steps} steps, but every step emits at least one")
    if kept > accepted:
        raise contradiction(n, f"{kept} draft tokens emitted beyond the target's, more than the {accepted} accepted")
    if rate != "nan" and abs(accepted / drafted - float(rate)) > 0.0005 + 1e-9:
        raise contradiction(n, f"the Draft acceptance rate {rate} is not {accepted} / {drafted}")
    if efficiency != "nan" and abs(emitted / (steps * (k + 1)) - float(efficiency)) > 0.0005 + 1e-9:
        raise contradiction(n, f"System efficiency {efficiency} is not {emitted} / ({steps} steps × {k + 1})")
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
        raise cut_off(n, "SGLang accept len", line, "'accept len: X.XX' and its 'accept rate: X.XX'")
    mean = float(length.group(1))
    if mean < 1.0:
        raise contradiction(n, f"accept len {mean:.2f} is below 1, but it counts the target's own token every step")
    taus: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)
    if rate := SGLANG_RATE.search(line):
        value = float(rate.group(1))
        if value > 1.0 or (value <= 0.0 and mean > 1.0):
            raise contradiction(n, f"accept rate {value:.2f} is not in (0, 1]")
        taus = tau_candidates(mean, value)
        if taus == ((), ()):
            raise contradiction(
                n, f"accept len {mean:.2f} and accept rate {value:.2f} fit no draft length (either of SGLang's rates)"
            )
    batch = int(m.group(1)) if (m := SGLANG_BATCH.search(line)) else None
    weight = float(SGLANG_LOG_INTERVAL * batch) if batch else None
    return Record("sglang-log", n, mean_length=mean, weight=weight, exact=False, guessed=True, taus=taus)


def _llama_server(line: str, n: int) -> Record | str:
    head = LLAMA_SERVER.search(line)
    if head is None:
        raise cut_off(n, "llama.cpp draft acceptance", line, "'= R (A accepted / G generated)'")
    ratio, accepted, drafted = float(head.group(1)), int(head.group(2)), int(head.group(3))
    tail = line[head.end() - 1 :]
    length = LLAMA_LENGTH.search(tail)
    if ("mean acceptance length" in tail or "mean len" in tail) and length is None:
        raise cut_off(n, "llama.cpp draft acceptance", line, "a readable mean acceptance length")
    position = LLAMA_POSITION.search(tail)
    if "acceptance rate per position" in tail and position is None:
        raise cut_off(n, "llama.cpp draft acceptance", line, "a closed '(…)' of per-position rates")
    if drafted == 0:
        return "none"  # no draft in this request
    check_totals(accepted, drafted, None, None, n)
    if abs(accepted / drafted - ratio) > 5e-6 + 1e-9:
        raise contradiction(n, f"draft acceptance {ratio} is not {accepted} / {drafted}")
    rates = printed_rates(position.group(1) if position else None, n)
    mean = float(length.group(1)) if length else None
    steps, counts, exact, note = _rebuilt(accepted, rates, mean, drafted, n)
    check_length(mean, accepted, steps, n, 2)
    check_totals(accepted, drafted, steps, len(rates) if rates else None, n)
    k = len(rates) if rates else None  # steps from a two-decimal mean length alone: fitted, not counted (inexact)
    return Record("llamacpp-server", n, steps, drafted, accepted, counts, mean, k, exact=exact, note=note)


def _llama_stats(line: str, n: int) -> Record | str:
    head = LLAMA_STATS.search(line)
    if head is None:
        raise cut_off(n, "llama.cpp statistics", line, "'#calls… = …, #gen drafts = …, … #acc tokens = …'")
    impl = head.group(1)
    steps, hit, drafted, accepted = (int(head.group(i)) for i in (5, 6, 7, 8))
    tail = line[head.end() :]
    more = LLAMA_STATS_TAIL.search(tail)
    if "#mean acc len" in tail and more is None:
        raise cut_off(n, "llama.cpp statistics", line, "a readable '#mean acc len = …, #acc rate/pos = (…)'")
    if steps == 0 or drafted == 0:
        return "none"
    rates = printed_rates(more.group(2) if more else None, n)
    mean = float(more.group(1)) if more else None
    check_totals(accepted, drafted, steps, None, n)
    if hit > steps:
        raise contradiction(n, f"#acc drafts = {hit} of only {steps} drafts")
    check_length(mean, accepted, steps, n, 2)
    counts, exact, partial = (None, True, False)
    k = None
    if rates:
        counts, exact, partial = counts_from(rates, steps, accepted, n, prefix=True)
        if abs(rates[0] * steps - hit) > 0.0005 * steps + 0.5:
            raise contradiction(n, f"#acc drafts = {hit} of {steps}, but the rate at position 1 is {rates[0]:.3f}")
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
        raise contradiction(first, f"n_predict = {emitted} is not more than n_accept = {accepted}")
    check_totals(accepted, drafted, steps, None, first)
    if drafted and abs(100.0 * accepted / drafted - percent) > 0.0005 + 1e-9:
        raise contradiction(first, f"accept = {percent}% is not {accepted} / {drafted}")
    if k and accepted > steps * k:
        raise contradiction(first, f"{accepted} accepted over {steps} steps of n_draft = {k}")
    return Record("llamacpp-example", first, steps, drafted, accepted, None, emitted / steps, k or None, given=True)


EXAMPLE_KEYS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")


def _vllm_example(m: re.Match, n: int, summary: dict) -> Record | None:
    """One line of vLLM's spec_decode.py summary; the previous summary as a record where this line starts another
    (a key seen again)."""
    key = f"token {int(m.group(2))}" if m.group(2) is not None else m.group(1)
    done = _vllm_summary(summary) if key in summary else None
    if done is not None:
        summary.clear()
    summary[key] = (n, float(m.group(3)))
    return done


def _vllm_summary(summary: dict) -> Record | None:
    """examples/offline_inference/spec_decode.py's summary: num_drafts (the steps), num_draft_tokens,
    num_accepted_tokens (exact, from the engine's counters), the mean length and the rate at each position to two
    decimals (`acceptance at token i`, i from 0); older versions print the mean and the rates only."""
    if set(summary) == {"total_num_output_tokens"}:
        return None  # the tokens generated alone: nothing about speculation
    first = min(at for at, _ in summary.values())
    rates = [summary[f"token {i}"][1] for i in range(len(summary)) if f"token {i}" in summary]
    if len(rates) != sum(1 for k in summary if k.startswith("token ")):
        raise EngineLogError(f"Line {first}: vLLM's spec_decode.py summary skips a position's acceptance.", first)
    rate_text = ", ".join(f"{r:.2f}" for r in rates) if rates else None
    printed = printed_rates(rate_text, first)
    mean = summary["mean acceptance length"][1] if "mean acceptance length" in summary else None
    given = [k for k in EXAMPLE_KEYS if k in summary]
    if given and len(given) < len(EXAMPLE_KEYS):
        missing = " and ".join(k for k in EXAMPLE_KEYS if k not in summary)
        raise EngineLogError(f"Line {first}: vLLM's spec_decode.py summary is cut off: {missing} missing.", first)
    k = len(printed) if printed else None
    if not given:
        if mean is None or not math.isfinite(mean):
            raise EngineLogError(
                f"Line {first}: vLLM's spec_decode.py summary without its counts or mean length.", first
            )
        return Record("vllm-example", first, mean_length=mean, positions=k, exact=False)
    steps, drafted, accepted = (summary[name][1] for name in EXAMPLE_KEYS)
    if any(x != int(x) for x in (steps, drafted, accepted)):
        raise contradiction(first, "num_drafts, num_draft_tokens and num_accepted_tokens are counts, not fractions")
    steps, drafted, accepted = int(steps), int(drafted), int(accepted)
    check_totals(accepted, drafted, steps if steps else None, k, first)
    if steps == 0:
        raise EngineLogError(
            f"Line {first}: num_drafts is 0 in vLLM's spec_decode.py summary: nothing was drafted.", first
        )
    check_length(mean, accepted, steps, first, 2)
    counts, exact = None, True
    if printed:
        _, counts, exact, _ = rebuild(accepted, printed, mean, drafted, 2, steps=steps)
        if counts is None:
            raise contradiction(
                first, f"the acceptance at each token ({rate_text}) over {steps} drafts cannot sum to {accepted}"
            )
    return Record(
        "vllm-example", first, steps, drafted, accepted, counts, 1.0 + accepted / steps, k, exact=exact, given=True
    )
