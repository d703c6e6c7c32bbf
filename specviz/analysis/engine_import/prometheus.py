"""Prometheus text, a /metrics scrape: vLLM's and llama.cpp's spec_decode counters (summed over engines and ranks),
SGLang's spec_accept gauges (averaged over ranks)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from specviz.analysis.engine_import.checks import check_totals, contradiction, cut_off, is_number_text, tau_candidates
from specviz.analysis.engine_import.records import FORMATS, LLAMACPP, SGLANG, VLLM, Record
from specviz.errors import EngineLogError

PROM = re.compile(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)(?:\s+-?[0-9]+)?\s*$")
PROM_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')
PROM_PREFIXES = ("vllm:spec_decode", "sglang:spec_", "llamacpp:spec_decode")
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


def prometheus_records(samples: Sequence[tuple[int, str]]) -> list[Record]:
    """Every sample of a scrape, summed over engines and ranks (vLLM, llama.cpp) or averaged over ranks (SGLang)."""
    seen: dict[tuple[str, tuple], int] = {}
    counters: dict[str, dict] = {VLLM: {}, LLAMACPP: {}}
    sglang: dict[str, list[float]] = {}
    first = {VLLM: 0, SGLANG: 0, LLAMACPP: 0}
    for n, text in samples:
        m = PROM.match(text)
        if m is None:
            raise cut_off(n, "Prometheus", text, "a 'name{labels} value' sample")
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
            raise cut_off(n, "Prometheus", line, "readable labels")
        labels[m.group(1)] = m.group(2)
        at = m.end()
    return labels


def _sample_value(text: str, n: int, line: str) -> float:
    try:
        if not text.isascii():  # float() reads any script's digits ("٣" is 3.0)
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise cut_off(n, "Prometheus", line, "a number as its value") from None
    if not math.isfinite(value) or value < 0:
        raise contradiction(n, f"a count of {text}")
    return value


def _counter_sample(into: dict, kind: str, labels: dict, value: float, n: int) -> None:
    """Add one sample to the running sums; `into["lines"]` keeps the last line of each sum, to name it."""
    if abs(value - round(value)) > 1e-6:
        raise contradiction(n, f"a counter of tokens or drafts that is not a whole number ({value})")
    lines = into.setdefault("lines", {})
    if kind in ("per_pos", "drafted_per_pos"):
        if not is_number_text(labels.get("position", "")):
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
                raise contradiction(c["lines"][("per_pos", i + shift)], said)
        if sum(counts) != accepted:
            said = f"the per-position counters sum to {sum(counts)}, the accepted tokens are {accepted}"
            raise contradiction(c["lines"]["accepted"], said)
        if counts[0] > steps:
            said = f"{counts[0]} drafts accepted position 1 of only {steps} drafts"
            raise contradiction(c["lines"][("per_pos", shift)], said)
    check_totals(accepted, drafted, steps, len(counts) if counts else None, n)
    if drafted_per_pos := c.get("drafted_per_pos"):
        reached = [drafted_per_pos.get(i, 0) for i in range(len(counts or ()))]
        if any(a > d for a, d in zip(counts or (), reached, strict=True)):
            raise contradiction(n, "more tokens accepted at a position than drafted there")
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
        taus = tau_candidates(round(mean, 2), round(rate, 2))
    positions = depth or (nodes - 1 if nodes else None)
    guessed = depth is None
    return Record(
        "sglang-prom", n, mean_length=mean, positions=positions, nodes=nodes, exact=False, guessed=guessed, taus=taus
    )
