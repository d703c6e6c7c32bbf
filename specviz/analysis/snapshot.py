"""Snapshots for slides: a measurement frozen with when, where and under what load it was taken, so
that the slide and the screen agree in class. A snapshot reopens from a file or from a link (its data
compressed into one query parameter) and is drawn by the same code as the live measurement."""

from __future__ import annotations

import base64
import datetime
import json
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from specviz.analysis import busy, snapshot_data
from specviz.analysis.busy import machine
from specviz.bounded import UPLOAD_DEPTH, read_json
from specviz.class_policy import ClassPolicy, RefusedError
from specviz.errors import SnapshotError

KINDS = ("sweep", "race", "reading")
HEADER = ("kind", "created", "machine", "runtime", "load")  # a snapshot's fields besides its data, all text
LINK_LIMIT = 6000  # characters of a link's snapshot parameter; a larger snapshot travels as a file
MAX_BYTES = 2_000_000  # a snapshot file larger than this is refused before it is read


def load() -> str:
    """The load at the moment: the cores other processes hold (specviz.analysis.busy.current_load), in words."""
    now = busy.current_load()
    return "load unknown" if now is None else now.words()


@dataclass(frozen=True)
class Snapshot:
    kind: str  # what was measured: a sweep, a race or a run's reading
    created: str  # when (ISO 8601, local time, to the minute)
    machine: str
    runtime: str  # what ran the target, with its thread count
    load: str  # the load when it was frozen
    data: dict[str, Any]  # what the page draws (e.g. specviz.analysis.sweep.SweepSummary.to_dict())

    def describe(self, quote: Callable[[str], str] = str) -> str:
        """The snapshot in a sentence; each field as `quote` makes it (a page passes specviz.viz.plain.plain:
        a snapshot's fields come from a file or a link)."""
        when = quote(self.created.replace("T", " at "))
        return (
            f"Frozen measurement: {quote(self.kind)}, taken {when} on {quote(self.machine)}, runtime "
            f"{quote(self.runtime)}, {quote(self.load)}. The numbers below are that measurement, not a new one."
        )

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(asdict(self), indent=indent, allow_nan=False)

    def link_param(self) -> str | None:
        """The snapshot as one query parameter (zlib, base64url), or None when too long for a link."""
        packed = base64.urlsafe_b64encode(zlib.compress(self.to_json(None).encode(), 9)).decode()
        return packed if len(packed) <= LINK_LIMIT else None


def freeze(kind: str, runtime: str, data: dict[str, Any]) -> Snapshot:
    if kind not in KINDS:
        raise SnapshotError(f"unknown snapshot kind {kind!r}")
    created = datetime.datetime.now().replace(second=0, microsecond=0).isoformat(timespec="minutes")
    return Snapshot(kind, created, machine(), runtime, load(), data)


def from_json(text: str | bytes, class_policy: ClassPolicy | None = None) -> Snapshot:
    """A snapshot from a file's text, checked whole: its header, then its data field by field for its kind
    (specviz.analysis.snapshot_data). Any problem is one SnapshotError that names the field. `class_policy`: the
    server's, handed in by the app (its upload bounds); None: the bounds outside class mode."""
    if len(text) > MAX_BYTES:
        raise SnapshotError(f"this file is larger than a snapshot can be ({MAX_BYTES // 1_000_000} MB)")
    try:
        (class_policy or ClassPolicy()).check_upload(
            text.encode() if isinstance(text, str) else text
        )  # nesting, before parsing
    except RefusedError as exc:
        raise SnapshotError(str(exc)) from exc
    raw = read_json(text, error=SnapshotError, what="this file", max_bytes=MAX_BYTES, max_depth=UPLOAD_DEPTH)
    if not isinstance(raw, dict):
        raise SnapshotError("this file is not a specviz snapshot (kind, created, machine, runtime, load and data)")
    missing = [k for k in (*HEADER, "data") if k not in raw]
    if missing:
        raise SnapshotError(f"this file is not a specviz snapshot: it lacks {', '.join(missing)}")
    if len(raw) != len(HEADER) + 1:
        raise SnapshotError(
            "this file is not a specviz snapshot: it has fields besides " + ", ".join(HEADER) + " and data"
        )
    for name in HEADER:
        if not isinstance(raw[name], str) or len(raw[name]) > snapshot_data.TEXT:
            raise SnapshotError(f"this snapshot's {name} is not text of at most {snapshot_data.TEXT} characters")
    if raw["kind"] not in KINDS:
        raise SnapshotError(f"this snapshot's kind is not one of {', '.join(KINDS)}")
    try:
        datetime.datetime.fromisoformat(raw["created"])
    except ValueError as exc:
        raise SnapshotError("this snapshot's created is not a date and time (2026-01-31T09:45)") from exc
    snapshot_data.check(raw["kind"], raw["data"])  # field by field, for its kind
    return Snapshot(**raw)


def from_link_param(text: str, class_policy: ClassPolicy | None = None) -> Snapshot:
    if len(text) > LINK_LIMIT:
        raise SnapshotError("this link's snapshot is longer than a link's can be")
    try:  # never more than MAX_BYTES out, whatever the link claims
        raw = zlib.decompressobj().decompress(base64.urlsafe_b64decode(text.encode()), MAX_BYTES + 1)
    except (ValueError, zlib.error) as exc:
        raise SnapshotError(f"this link's snapshot cannot be read ({exc})") from exc
    return from_json(raw, class_policy)


def runtime_of(pair: Any) -> str:
    """What runs a pair's target, with its thread count: "llama.cpp, 2 threads", "torch, 1 thread"."""
    import torch

    threads = pair.target.capabilities.threads or torch.get_num_threads()
    return f"{pair.runtime}, {threads} thread{'s' if threads != 1 else ''}"
