"""A paste or an uploaded file read: bounded, told apart (JSON or lines), its readings gathered into sources, best
first."""

from __future__ import annotations

import re
from dataclasses import replace

from specviz.analysis.engine_import.lines import line_records
from specviz.analysis.engine_import.records import LLAMACPP, MAX_CHARS, MAX_LINES, SGLANG, EngineImport, Reading
from specviz.analysis.engine_import.responses import json_records, meta_records
from specviz.analysis.engine_import.sources import one_engine, pool, sglang_taus, sources_of
from specviz.errors import EngineLogError


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


def _nothing_drafted(empty: list[tuple[int, str]]) -> EngineLogError:
    """Engine lines that say there is nothing to read: drafts counted with no draft token (vLLM's nan%), or nothing
    drafted yet."""
    first = empty[0][0]
    lines = f"{len(empty)} line{'s' if len(empty) > 1 else ''}"
    if any(kind == "drafts" for _, kind in empty):
        return EngineLogError(
            f"Line {first}: the engine counted drafts ({lines} with a mean acceptance length) but no draft "
            "token ('Drafted: 0 tokens'), so its acceptance rate is nan% (0 accepted / 0 drafted): drafts seen, no "
            "acceptance to read. Paste lines from intervals that drafted tokens.",
            first,
        )
    return EngineLogError(
        f"Line {first}: the engine's speculative-decoding lines ({lines}) show nothing drafted yet (0 draft tokens, "
        "its rates printed as nan): paste lines from after it has drafted.",
        first,
    )


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
    if is_json:
        records, ignored = json_records(text, lines, context)
    else:
        records, ignored = line_records(lines, context)
        records = sorted(records + meta_records(text), key=lambda r: r.line)
    if not records and context.get("empty"):
        raise _nothing_drafted(context["empty"])
    if not records:
        raise EngineLogError(
            "No speculative-decoding numbers found: looked for vLLM's 'SpecDecoding metrics' or 'Speculative "
            "metrics' lines and vllm:spec_decode_* counters, SGLang's 'accept len' or sglang:spec_accept_length, "
            "llama.cpp's 'draft acceptance', 'statistics … #gen drafts', llamacpp:spec_decode_* or 'n_accept =' "
            "lines, vLLM spec_decode.py's 'num_drafts:' summary, and JSON (or a Python dict) with "
            "speculative_decoding_stats, meta_info's spec_verify_ct or timings.draft_n."
        )
    one_engine(records)
    if records[0].engine == SGLANG:
        records = sglang_taus(records, context)
    sources = [pool(group, ignored + superseded, label) for label, group, superseded in sources_of(records)]
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
    types = context.get("types", ())
    if len(types) > 1 and records[0].engine == LLAMACPP:
        notes.append(
            f"The server ran --spec-type {','.join(types)}: each implementation's statistics line is its own source "
            "here; its per-request 'draft acceptance' lines pool them all."
        )
    spelling = context.get("spelling")
    return Reading(tuple(sources), ignored, build, commit, context.get("version"), tuple(notes), spelling, types)
