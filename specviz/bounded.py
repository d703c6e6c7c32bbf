"""Reading what a person sends (a link's parameter, an uploaded file, a typed spec): one bounded, typed reader.

A text from outside is read here or not at all: its size and nesting are bounded before it is parsed, a number is
written in ASCII digits ("٣" and "²" are characters, not numbers) with a bounded number of them, and whatever
cannot be read is one exception of the caller's type (a specviz error: TraceError, SnapshotError, ConfigError, …)
whose message says why, never a RecursionError, OverflowError or ValueError from deep inside Python.

Nothing of specviz is imported here (this module sits beside specviz.errors, below every layer): the caller names
the error it raises."""

from __future__ import annotations

import json
import math
import re
from typing import Any

LINK_BYTES = 100_000  # a link's JSON parameter (a table, typed drafts): far above any link the app makes
UPLOAD_BYTES, UPLOAD_DEPTH = 50_000_000, 64  # an uploaded file outside class mode (1,000 trace steps are ~3 MB)
WHOLE_DIGITS = 16  # digits of a whole number read (2**53, the largest a float holds exactly, has 16)
MAX_WHOLE = 2**53  # the largest size of a whole number that passes is_whole (token ids, counts, seeds)
NUMBER_CHARS = 32  # characters of a number with a fraction or an exponent (a float's repr needs at most 24)
_WHOLE = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: \d would take "٣" and "²"
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class _Unreadable(ValueError):
    """Raised by the JSON hooks below: why a number in the text is not read."""


def read_json(text: str | bytes, *, error: type[Exception], what: str, max_bytes: int, max_depth: int) -> Any:
    """The JSON value of `text`, read within bounds: at most `max_bytes` bytes, nested at most `max_depth` levels
    (checked byte by byte before parsing), every whole number at most WHOLE_DIGITS digits, every other number at
    most NUMBER_CHARS characters and finite (no NaN or Infinity). Anything else: `error("{what} cannot be read:
    why")`."""
    if len(text) > max_bytes:  # a str's characters are never more than its bytes
        raise error(f"{what} cannot be read: it is {len(text):,} bytes long, more than the {max_bytes:,} read")
    data = text.encode("utf-8", "replace") if isinstance(text, str) else bytes(text)
    if len(data) > max_bytes:
        raise error(f"{what} cannot be read: it is {len(data):,} bytes long, more than the {max_bytes:,} read")
    if json_depth(data, max_depth) > max_depth:
        raise error(f"{what} cannot be read: it nests deeper than {max_depth} level{'s' if max_depth != 1 else ''}")
    try:
        return json.loads(data, parse_int=_whole, parse_float=_float, parse_constant=_constant)
    except _Unreadable as exc:
        raise error(f"{what} cannot be read: {exc}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise error(f"{what} cannot be read: it is not JSON ({exc})") from None


def json_depth(data: bytes, stop: int) -> int:
    """How deep a JSON text nests its arrays and objects (strings skipped), read byte by byte without parsing;
    it stops counting once past `stop`."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    return deepest
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def _whole(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > WHOLE_DIGITS:
        raise _Unreadable(f"it holds a whole number of {digits:,} digits, more than the {WHOLE_DIGITS} read")
    return int(literal)


def _float(literal: str) -> float:
    if len(literal) > NUMBER_CHARS:
        raise _Unreadable(f"it holds a number of {len(literal):,} characters, more than the {NUMBER_CHARS} read")
    value = float(literal)
    if not math.isfinite(value):
        raise _Unreadable(f"it holds {literal[:NUMBER_CHARS]}, a number too large to be finite")
    return value


def _constant(name: str) -> float:
    raise _Unreadable(f"it holds {name}, not a finite number")


def whole_number(text: str, *, error: type[Exception], what: str) -> int:
    """A whole number written in ASCII digits (an optional sign, at most WHOLE_DIGITS digits, spaces around it
    ignored), else `error("{what} is not a whole number")`."""
    text = text.strip(" \t")
    if not _WHOLE.fullmatch(text) or len(text.lstrip("+-")) > WHOLE_DIGITS:
        raise error(f"{what} is not a whole number of at most {WHOLE_DIGITS} digits 0-9")
    return int(text)


def decimal(text: str, *, error: type[Exception], what: str) -> float:
    """A finite number written in ASCII digits ("0.5", "-3", "1e-3"; at most NUMBER_CHARS characters), else
    `error("{what} is not a number")`."""
    text = text.strip(" \t")
    if len(text) > NUMBER_CHARS or not _DECIMAL.fullmatch(text) or not math.isfinite(value := float(text)):
        raise error(f"{what} is not a finite number written with the digits 0-9")
    return value


def typed_number(value: Any, *, error: type[Exception], what: str) -> float:
    """A number as a person types it in a worksheet's cell, read as they mean it: "0.05", ".05", "0,05" (a comma the
    only decimal mark) and "5%" are all 0.05; a number the grid already holds (is_number), as it is. Else
    `error("{what} …")` saying why (empty, two decimal marks, not a number), never a guess: the grid's own number
    cell turned ".05" into 5 (issue 65.2)."""
    if is_number(value):
        return float(value)
    if not isinstance(value, str):
        raise error(f"{what} is empty")
    text = value.strip(" \t")
    if not text:
        raise error(f"{what} is empty")
    percent = text.endswith("%")
    text = text.removesuffix("%").rstrip(" \t")
    if "," in text and ("." in text or text.count(",") > 1):
        raise error(f"{what} ({value.strip()[:NUMBER_CHARS]!r}) has two decimal marks: write 0.05, .05, 0,05 or 5%")
    number = decimal(text.replace(",", "."), error=error, what=f"{what} ({value.strip()[:NUMBER_CHARS]!r})")
    return number / 100 if percent else number


def is_whole(value: Any) -> bool:
    """A whole number (not a bool) of size at most MAX_WHOLE: safe to compare, format and turn into a float."""
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_WHOLE <= value <= MAX_WHOLE


def is_number(value: Any) -> bool:
    """A finite float, or a whole number that is_whole: safe to compare, format and compute with."""
    return is_whole(value) or (isinstance(value, float) and math.isfinite(value))
