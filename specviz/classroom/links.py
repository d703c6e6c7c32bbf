"""Shareable links: page settings to URL query parameters and back, typed by their defaults.

Pure functions (no Streamlit): the app keeps its settings under keys like `decode_tau`; a link
carries the same keys. Values that do not parse are left out and reported, never raised. Every value is read by
specviz.bounded: numbers in the digits 0-9 only, a table's JSON within its size, depth and digits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from specviz.bounded import LINK_BYTES, decimal, is_number, read_json, whole_number
from specviz.errors import ConfigError

TABLE_ROWS = 1000  # rows of a table a link carries (the app's tables have a few)
CELL_CHARS = 200  # characters of one of its text cells
KINDS = {bool: "true or false", tuple: "a range such as 1-8", int: "a whole number (digits 0-9)", float: "a number"}


def encode(settings: Mapping[str, Any]) -> dict[str, str]:
    """Settings as query-parameter strings: booleans as true/false, ranges as low-high."""
    return {key: _text(value) for key, value in settings.items()}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "-".join(str(v) for v in value)
    return str(value)


def decode(
    params: Mapping[str, str], defaults: Mapping[str, Any], allowed: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """(settings read from the parameters, one message per parameter that could not be used).
    Only keys with a default are read; each value takes its default's type and must lie in its
    `allowed` (lo, hi) range, or be one of its allowed strings."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, raw in params.items():
        if key not in defaults:
            continue
        try:
            value = _parse(raw, defaults[key])
        except ValueError:
            kind = KINDS.get(type(defaults[key]))
            kind = kind or f"a {type(defaults[key]).__name__}"
            hint = f"; {_allowed_text(allowed[key])}" if allowed and key in allowed else ""
            problems.append(f"ignored {key}={_cut(raw)!r} from the link: not {kind}{hint}")
            continue
        if not _fits(value, (allowed or {}).get(key)):
            problems.append(f"ignored {key}={_cut(raw)!r} from the link: {_allowed_text((allowed or {})[key])}")
            continue
        values[key] = value
    return values, problems


def _allowed_text(allowed: Any) -> str:
    """What a parameter may be: its choices, or its range."""
    if all(isinstance(a, str) for a in allowed):
        return "allowed values are " + ", ".join(repr(a) for a in allowed)
    lo, hi = allowed
    return f"allowed values are {lo} to {hi}"


def _fits(value: Any, allowed: Any) -> bool:
    if allowed is None:
        return True
    if isinstance(value, str):
        return value in allowed
    lo, hi = allowed
    return all(lo <= v <= hi for v in (value if isinstance(value, tuple) else (value,)))


def _cut(raw: str, most: int = 60) -> str:
    """A link's value in a message: at most `most` characters."""
    return raw if len(raw) <= most else raw[: most - 1] + "…"


def _parse(raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        if raw.lower() not in ("true", "false", "1", "0"):
            raise ValueError(raw)
        return raw.lower() in ("true", "1")
    if isinstance(default, tuple):
        return tuple(_parse(part, d) for d, part in zip(default, raw.split("-"), strict=True))
    if isinstance(default, int):
        return whole_number(raw, error=ValueError, what="the value")  # digits 0-9 only: not "٣"
    if isinstance(default, float):
        return decimal(raw, error=ValueError, what="the value")
    return type(default)(raw)


def share_url(base: str, settings: Mapping[str, Any]) -> str:
    """The page's address with its settings as query parameters."""
    return f"{base.split('?')[0]}?{urlencode(encode(settings))}"


def table_text(columns: Mapping[str, list]) -> str:
    """A small table as compact JSON columns, for a link."""
    return json.dumps({str(k): list(v) for k, v in columns.items()}, separators=(",", ":"), default=float)


def table(text: str, problems: list[str]) -> dict[str, list] | None:
    """A table carried by a link as JSON columns ({"column": [values]}), each cell text (at most CELL_CHARS
    characters) or a finite number (specviz.bounded.is_number), at most TABLE_ROWS rows; None (and a message in
    `problems`) when it cannot be read."""
    if not text:
        return None
    try:
        columns = read_json(text, error=ConfigError, what="the table", max_bytes=LINK_BYTES, max_depth=2)
        if not isinstance(columns, dict) or not all(isinstance(v, list) for v in columns.values()):
            raise ConfigError("the table is not columns of values")
        if len({len(v) for v in columns.values()}) != 1:
            raise ConfigError("the table's columns are of different lengths")
        if len(next(iter(columns.values()))) > TABLE_ROWS:
            raise ConfigError(f"the table has more than {TABLE_ROWS:,} rows")
        cells = (cell for column in columns.values() for cell in column)
        if not all((isinstance(c, str) and len(c) <= CELL_CHARS) or is_number(c) for c in cells):
            raise ConfigError(f"a cell of the table is neither a finite number nor text of at most {CELL_CHARS}")
        return {str(k): list(v) for k, v in columns.items()}
    except ConfigError as exc:
        problems.append(f"ignored the table in the link: {exc}")
        return None
