"""A paste's readings into sources (a format, an implementation, a run, a τ), SGLang's τ settled, and each source's
readings pooled into one EngineImport."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specviz.analysis.engine_import.checks import contradiction
from specviz.analysis.engine_import.records import CUMULATIVE, FORMATS, RUNNING_TOTALS, EngineImport, Record
from specviz.errors import EngineLogError


def one_engine(records: list[Record]) -> None:
    """EngineLogError naming the first line of a second engine: one engine's numbers at a time."""
    first = records[0]
    for r in records:
        if r.engine != first.engine:
            raise EngineLogError(
                f"Line {r.line} is {r.engine}'s ({FORMATS[r.key].name}), line {first.line} was {first.engine}'s: "
                "paste one engine's numbers at a time.",
                r.line,
            )


def sources_of(records: list[Record]) -> list[tuple[str, list[Record], int]]:
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
        elif key in ("llamacpp-example", "vllm-example"):
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
    """Running totals split where one falls (a restart counts from zero again), where the paste shows the engine
    starting again between them (its totals may already be above the last run's), or where vLLM V0's k changes."""
    runs: list[list[Record]] = [[series[0]]]
    for r in series[1:]:
        last = runs[-1][-1]
        fell = (r.steps or 0) < (last.steps or 0) or (r.drafted or 0) < (last.drafted or 0)
        if fell or r.start != last.start or (r.key == "vllm-v0" and r.positions != last.positions):
            runs.append([r])
        else:
            runs[-1].append(r)
    return runs


def sglang_taus(records: list[Record], context: dict) -> list[Record]:
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
                raise contradiction(
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


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(values)


def pool(records: list[Record], ignored: int, label: str = "") -> EngineImport:
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
