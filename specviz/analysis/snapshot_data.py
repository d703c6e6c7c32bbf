"""What a snapshot's `data` must hold, kind by kind, checked field by field before any page reads it: every
key present (and no other), every value of its type and in its range, lists as long as their τ says, counts
that add up. A snapshot arrives from a file or a link, written by anyone: whatever passes here is drawn by
the same code as a live measurement without an error, and anything else is one SnapshotError that names
the field ("data.taus[2].lengths has 4 entries; τ = 2 needs 3")."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from specviz.analysis.diagnosis import Diagnosis
from specviz.analysis.race import Lane, RaceResult
from specviz.analysis.sweep import SweepSettings
from specviz.analysis.sweep_summary import PolicySummary, TauSummary
from specviz.bounded import is_number
from specviz.core.config import MODES, TAU_POLICIES, Knobs
from specviz.core.trace import RunTrace
from specviz.errors import SnapshotError, SpecvizError
from specviz.limits import MAX_TAU

TEXT = 200  # characters of a name or a description (a runtime, how an interval was made)
LONG_TEXT = 100_000  # characters of a race lane's text or a sentence of the reading
RACE_TOKENS = 4096  # tokens of a race lane (the page races at most 256): its interval resamples each piece
SWEEP_STEPS = 1_000_000  # steps of a sweep, all τ together: its chart draws one point per step
LIST = 1000  # prompts or seeds of a sweep (the page runs up to 10 seeds)


def check(kind: str, data: Any) -> None:
    """Raise a SnapshotError naming the first field of `data` that a `kind` snapshot cannot have."""
    {"sweep": _sweep, "race": _race, "reading": _reading}[kind](data)


# --- the kinds ---------------------------------------------------------------------------------------


def _sweep(data: Any) -> None:
    """specviz.analysis.sweep_summary.SweepSummary.to_dict()."""
    names = ("settings", "runtime", "taus", "policies", "alpha", "acceptance_probability", "c", "pending")
    d = _fields(data, "data", names, ["calibration"])  # saved before calibrations were kept: none
    settings = _sweep_settings(d["settings"])
    _text(d["runtime"], "data.runtime")
    _probability(d["alpha"], "data.alpha", none=True)
    _probability(d["acceptance_probability"], "data.acceptance_probability", none=True)
    _spread(d["c"], "data.c", none=True)
    _number(d["pending"], "data.pending", 0, 10**9, whole=True)
    _text(d.get("calibration", ""), "data.calibration", LONG_TEXT)
    rows = _list(d["taus"], "data.taus", most=len(settings.taus))
    taus = [_tau_row(row, f"data.taus[{i}]", settings) for i, row in enumerate(rows)]
    _need(len(set(taus)) == len(taus), "data.taus", "holds a τ twice")
    steps = sum(row["steps"] for row in rows)
    _need(steps <= SWEEP_STEPS, "data.taus", f"count {steps:,} steps in all, more than a sweep's {SWEEP_STEPS:,}")
    policies = _list(d["policies"], "data.policies", most=len(settings.policies))
    names = [_policy_row(row, f"data.policies[{i}]", settings) for i, row in enumerate(policies)]
    _need(len(set(names)) == len(names), "data.policies", "holds a policy twice")


KNOBS = tuple(f.name for f in dataclasses.fields(Knobs))  # a lossy rule's settings, by name


def _sweep_settings(value: Any) -> SweepSettings:
    """The sweep's settings (SweepSettings), each of its type, then checked as the sweep checks its own."""
    where = "data.settings"
    known = {f.name: f for f in dataclasses.fields(SweepSettings)}
    required = [n for n, f in known.items() if f.default is dataclasses.MISSING]
    d = _fields(value, where, required, [n for n in known if n not in required])
    values = {}
    for name, raw in d.items():
        at = f"{where}.{name}"
        if name in ("taus", "seeds"):
            most = MAX_TAU if name == "taus" else LIST
            values[name] = tuple(_number(x, f"{at}[{i}]", whole=True) for i, x in enumerate(_list(raw, at, most=most)))
        elif name in ("prompts", "policies"):
            most = LIST if name == "prompts" else len(TAU_POLICIES)
            values[name] = tuple(_text(x, f"{at}[{i}]", LONG_TEXT) for i, x in enumerate(_list(raw, at, most=most)))
        elif name in ("mode", "verification"):
            values[name] = _text(raw, at)
        elif name in ("temperature", "top_p", "confidence"):
            values[name] = _number(raw, at)
        elif name in ("top_k", "max_new_tokens", "policy_tau"):
            values[name] = _number(raw, at, whole=True)
        elif name == "chat":
            values[name] = _flag(raw, at, none=True)
        elif name == "knobs":  # a lossy rule's settings: (name, value) pairs of Knobs' names, SpecConfig checks values
            pairs = [_list(x, f"{at}[{i}]", length=2) for i, x in enumerate(_list(raw, at, most=len(KNOBS)))]
            names = [_text(k, f"{at}[{i}][0]") for i, (k, _) in enumerate(pairs)]
            for i, k in enumerate(names):
                _need(
                    k in KNOBS, f"{at}[{i}][0]", f"is {k!r}, not one of the lossy rules' settings ({', '.join(KNOBS)})"
                )
            values[name] = tuple(
                (k, _number(v, f"{at}[{i}][1]")) for i, (k, (_, v)) in enumerate(zip(names, pairs, strict=True))
            )
        else:  # a setting added after this check: the sweep's own check below reads it
            values[name] = raw
    try:  # the sweep's own checks: every τ, seed and policy a run could have
        settings = SweepSettings(**values)
    except SpecvizError as exc:
        raise SnapshotError(f"this snapshot's {where} do not make a sweep: {exc}") from exc
    _need(len(set(settings.taus)) == len(settings.taus), f"{where}.taus", "holds a τ twice")
    _need(len(set(settings.policies)) == len(settings.policies), f"{where}.policies", "holds a policy twice")
    return settings


def _tau_row(value: Any, where: str, settings: SweepSettings) -> int:
    """One fixed τ's row (TauSummary); returns its τ."""
    later = ("withheld", "costed_speedup", "ceiling", "ceiling_alpha", "ceiling_c")  # older snapshots lack them
    lossy = ("tv_mean", "tv_max", "lossy_tokens_per_pass", "baseline_tokens_per_pass")  # and a lossy rule's cost
    optional = later + lossy
    d = _fields(value, where, [f.name for f in dataclasses.fields(TauSummary) if f.name not in optional], optional)
    tau = _number(d["tau"], f"{where}.tau", whole=True)
    _need(tau in settings.taus, f"{where}.tau", f"is {tau}, not one of the sweep's τ ({_few(settings.taus)})")
    runs = _number(d["runs"], f"{where}.runs", 1, len(settings.prompts) * len(settings.seeds), whole=True)
    steps = _number(d["steps"], f"{where}.steps", 0, runs * settings.max_new_tokens, whole=True)
    drafted = _number(d["drafted"], f"{where}.drafted", 0, steps * tau, whole=True)
    _number(d["accepted"], f"{where}.accepted", 0, drafted, whole=True)
    _number(d["emitted"], f"{where}.emitted", 0, steps * (tau + 1), whole=True)
    for name in ("mean_acceptance_length", "mean_acceptance_length_low", "mean_acceptance_length_high"):
        _number(d[name], f"{where}.{name}", 0, tau + 1)
    _need(
        d["mean_acceptance_length_low"] <= d["mean_acceptance_length_high"],
        f"{where}.mean_acceptance_length_low",
        "is above mean_acceptance_length_high",
    )
    _probability(d["draft_acceptance_rate"], f"{where}.draft_acceptance_rate")
    for name in ("per_position_acceptance_rate", "conditional_per_position_acceptance_rate"):
        rates = _list(d[name], f"{where}.{name}", length=tau, why=f"τ = {tau}")
        for i, rate in enumerate(rates):
            _probability(rate, f"{where}.{name}[{i}]", none=True)
    _probability(d["alpha"], f"{where}.alpha", none=True)
    lengths = _list(d["lengths"], f"{where}.lengths", length=tau + 1, why=f"τ = {tau}")
    counts = [_number(n, f"{where}.lengths[{i}]", 0, steps, whole=True) for i, n in enumerate(lengths)]
    _need(sum(counts) == steps, f"{where}.lengths", f"counts {sum(counts)} steps, not the row's {steps}")
    for name in ("speedup", "verify_cost", "predicted_speedup_v"):
        _spread(d[name], f"{where}.{name}", none=True)
    without_v = d["predicted_speedup_v"] is not None and d["verify_cost"] is None
    _need(not without_v, f"{where}.predicted_speedup_v", "is given without the verify_cost it is computed from")
    for name in (
        "expected_tokens_per_step",
        "predicted_speedup",
        "expected_tokens_per_step_measured",
        "predicted_speedup_measured",
    ):
        _number(d[name], f"{where}.{name}", 0, none=True)
    for name in later[1:]:
        _number(d.get(name), f"{where}.{name}", 0, none=True)
    given = [d.get(name) is not None for name in later[2:]]
    _need(all(given) or not any(given), f"{where}.ceiling", "is given without its two steps, or they without it")
    _text(d.get("withheld", ""), f"{where}.withheld", LONG_TEXT)
    for name in lossy[:2]:  # a distance between two distributions: 0 to 1
        _probability(d.get(name), f"{where}.{name}", none=True)
    for name in lossy[2:]:  # tokens a target pass emits: 1 to τ + 1
        _number(d.get(name), f"{where}.{name}", 1, tau + 1, none=True)
    given = [d.get(name) is not None for name in lossy]
    _need(
        all(given) or not any(given),
        f"{where}.tv_mean",
        "is given without the rest of a lossy rule's cost, or they without it",
    )
    return tau


def _policy_row(value: Any, where: str, settings: SweepSettings) -> str:
    """One τ policy's row (PolicySummary); returns the policy's name."""
    d = _fields(value, where, [f.name for f in dataclasses.fields(PolicySummary)])
    name = _text(d["policy"], f"{where}.policy")
    _need(name in settings.policies, f"{where}.policy", f"is {name!r}, not one of the sweep's policies")
    tau = _number(d["tau"], f"{where}.tau", whole=True)
    _need(tau == settings.policy_tau, f"{where}.tau", f"is {tau}, not the sweep's policy τ {settings.policy_tau}")
    runs = _number(d["runs"], f"{where}.runs", 1, len(settings.prompts) * len(settings.seeds), whole=True)
    _number(d["steps"], f"{where}.steps", 0, runs * settings.max_new_tokens, whole=True)
    _number(d["mean_tau"], f"{where}.mean_tau", 0, MAX_TAU)
    _number(d["mean_acceptance_length"], f"{where}.mean_acceptance_length", 0, MAX_TAU + 1)
    _spread(d["speedup"], f"{where}.speedup", none=True)
    return name


def _race(data: Any) -> None:
    """{"preset": its label, "result": RaceResult.to_dict(), "texts": [the target alone's, speculation's]}."""
    d = _fields(data, "data", ("preset", "result", "texts"))
    _text(d["preset"], "data.preset")
    texts = _list(d["texts"], "data.texts", length=2, why="one per lane")
    for i, text in enumerate(texts):
        _text(text, f"data.texts[{i}]", LONG_TEXT)
    later = ["mode", "pass_tokens", "drafted"]  # results saved before these lack them
    names = [f.name for f in dataclasses.fields(RaceResult) if f.name not in later]
    r = _fields(d["result"], "data.result", names, later)
    alone = _lane(r["alone"], "data.result.alone")
    speculative = _lane(r["speculative"], "data.result.speculative")
    _number(r["verify_ms"], "data.result.verify_ms", 0)
    _number(r["draft_ms_per_token"], "data.result.draft_ms_per_token", 0)
    _number(r["tau"], "data.result.tau", 1, MAX_TAU, whole=True)
    if "mode" in r:
        _need(r["mode"] in MODES, "data.result.mode", f"is not one of {', '.join(MODES)}")
    passes = _list(r.get("pass_tokens", []), "data.result.pass_tokens", most=len(speculative))
    for i, k in enumerate(passes):
        _number(k, f"data.result.pass_tokens[{i}]", 1, MAX_TAU + 1, whole=True)
    _number(r.get("drafted", 0), "data.result.drafted", 0, MAX_TAU * len(speculative), whole=True)
    same = _flag(r["same_text"], "data.result.same_text")
    _need(same == (alone == speculative), "data.result.same_text", "disagrees with the two lanes' tokens")


def _lane(value: Any, where: str) -> tuple[int, ...]:
    """One lane (Lane): at least one token, a clock that ran, its pieces adding up to both; returns its tokens."""
    names = [f.name for f in dataclasses.fields(Lane)]
    d = _fields(value, where, [n for n in names if n != "disturbed"], ["disturbed"])  # older snapshots lack it
    tokens = _list(d["tokens"], f"{where}.tokens", most=RACE_TOKENS)
    _need(tokens, f"{where}.tokens", "is empty: a lane that made no token has no speed")
    ids = tuple(_number(t, f"{where}.tokens[{i}]", 0, whole=True) for i, t in enumerate(tokens))
    seconds = _number(d["seconds"], f"{where}.seconds", 0)
    _need(seconds > 0, f"{where}.seconds", "is 0: a lane that made tokens took some time")
    _number(d["passes"], f"{where}.passes", 1, len(ids), whole=True)
    _flag(d["done"], f"{where}.done")
    pieces = _list(d["pieces"], f"{where}.pieces", most=len(ids))
    times, counts = [], []
    for i, piece in enumerate(pieces):
        pair = _list(piece, f"{where}.pieces[{i}]", length=2, why="(seconds, tokens)")
        times.append(_number(pair[0], f"{where}.pieces[{i}][0]", 0))
        _need(times[-1] > 0, f"{where}.pieces[{i}][0]", "is 0 seconds")
        counts.append(_number(pair[1], f"{where}.pieces[{i}][1]", 1, len(ids), whole=True))
    if pieces:
        _need(sum(counts) == len(ids), f"{where}.pieces", f"add up to {sum(counts)} tokens, not {len(ids)}")
        _need(math.isclose(sum(times), seconds, rel_tol=1e-6), f"{where}.pieces", f"add up to {sum(times):g} s")
    flags = _list(d.get("disturbed", []), f"{where}.disturbed", most=len(pieces))
    _need(len(flags) in (0, len(pieces)), f"{where}.disturbed", f"has {len(flags)} flags for {len(pieces)} pieces")
    for i, flag in enumerate(flags):
        _flag(flag, f"{where}.disturbed[{i}]")
    return ids


def _reading(data: Any) -> None:
    """{"trace": RunTrace.to_dict(), "reading": Diagnosis.to_dict()}: the run, checked as a replayed trace is."""
    d = _fields(data, "data", ("trace", "reading"))
    _need(isinstance(d["trace"], dict), "data.trace", f"is {_kind(d['trace'])}, not an object")
    try:
        run = RunTrace.from_dict(d["trace"])
    except SpecvizError as exc:
        raise SnapshotError(f"this snapshot's data.trace is not a run that can be replayed: {exc}") from exc
    where = "data.reading"
    names = [f.name for f in dataclasses.fields(Diagnosis) if f.name != "calibration"]
    r = _fields(d["reading"], where, names, ["calibration"])  # saved before calibrations were kept: none
    _text(r.get("calibration", ""), f"{where}.calibration", LONG_TEXT)
    for name in ("draft_ms", "verify_ms", "prefill_ms"):
        _number(r[name], f"{where}.{name}", 0)
    _probability(r["alpha"], f"{where}.alpha", none=True)
    _number(r["c"], f"{where}.c", 0, none=True)
    tau = _number(r["tau"], f"{where}.tau", whole=True)
    _need(tau == run.config.tau, f"{where}.tau", f"is {tau}, not the trace's τ {run.config.tau}")
    _number(r["mean_acceptance_length"], f"{where}.mean_acceptance_length", 0, MAX_TAU + 1, none=True)
    _number(r["predicted_speedup"], f"{where}.predicted_speedup", 0, none=True)
    _number(r["best_tau"], f"{where}.best_tau", 1, MAX_TAU, whole=True, none=True)
    _text(r["bottleneck"], f"{where}.bottleneck", LONG_TEXT)
    for name in ("verify_cost", "c_one_token", "predicted_speedup_v", "run_speedup"):
        _spread(r[name], f"{where}.{name}", none=True)


# --- one field ---------------------------------------------------------------------------------------


def _fields(value: Any, where: str, required: Iterable[str], optional: Iterable[str] = ()) -> dict[str, Any]:
    """`value` as an object with every `required` key, and no key outside `required` and `optional`."""
    required, optional = list(required), list(optional)
    _need(isinstance(value, dict), where, f"is {_kind(value)}, not an object")
    missing = [k for k in required if k not in value]
    _need(not missing, where, f"lacks {_few(missing, quote=True)}")
    unknown = sorted(str(k) for k in set(value) - set(required) - set(optional))
    _need(not unknown, where, f"has {_few(unknown, quote=True)}, which a snapshot does not")
    return value


def _number(
    value: Any,
    where: str,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    whole: bool = False,
    none: bool = False,
) -> Any:
    """`value` as a finite number (`whole`: an integer) in [low, high]; `none`: or None."""
    if value is None and none:
        return None
    kind = "a whole number" if whole else "a number"
    _need(
        not isinstance(value, bool) and isinstance(value, int if whole else (int, float)),
        where,
        f"is {_kind(value)}, not {kind}",
    )
    shown = f"is {value}, not a finite number" if isinstance(value, float) else "is a whole number too long to read"
    _need(is_number(value), where, shown)
    _need(low <= value <= high, where, f"is {value:g}, outside {low:g} to {high:g}")
    return value


def _probability(value: Any, where: str, none: bool = False) -> Any:
    return _number(value, where, 0.0, 1.0, none=none)


def _text(value: Any, where: str, most: int = TEXT) -> str:
    _need(isinstance(value, str), where, f"is {_kind(value)}, not text")
    _need(len(value) <= most, where, f"is {len(value):,} characters long, more than {most:,}")
    return value


def _flag(value: Any, where: str, none: bool = False) -> bool | None:
    _need(isinstance(value, bool) or (none and value is None), where, f"is {_kind(value)}, not true or false")
    return value


def _list(value: Any, where: str, length: int | None = None, most: int | None = None, why: str = "") -> list:
    _need(isinstance(value, list), where, f"is {_kind(value)}, not a list")
    if length is not None:
        _need(len(value) == length, where, f"has {len(value)} entries; {why} needs {length}")
    if most is not None:
        _need(len(value) <= most, where, f"has {len(value)} entries, more than {most}")
    return value


def _spread(value: Any, where: str, none: bool = False) -> None:
    """A measured quantity with its interval (specviz.analysis.measure.Spread.to_dict())."""
    if value is None and none:
        return
    d = _fields(value, where, ("value", "low", "high", "n", "how"))
    for name in ("value", "low", "high"):
        _number(d[name], f"{where}.{name}", 0)
    _need(d["low"] <= d["high"], f"{where}.low", "is above its high")
    _number(d["n"], f"{where}.n", 0, whole=True)
    _text(d["how"], f"{where}.how")


def _need(condition: Any, where: str, problem: str) -> None:
    if not condition:
        raise SnapshotError(f"this snapshot's {where} {problem}")


def _kind(value: Any) -> str:
    """What a JSON value is, in words."""
    if value is None:
        return "null"
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "text", list: "a list"}
    return names.get(type(value), "an object")


def _few(values: Iterable[Any], quote: bool = False) -> str:
    """At most three values, for a message (a field's name is short; its value may not be)."""
    values = list(values)
    shown = [repr(v) if quote else str(v) for v in values[:3]]
    shown = [text if len(text) <= 40 else text[:39] + "…" for text in shown]
    return ", ".join(shown) + (", …" if len(values) > 3 else "")
