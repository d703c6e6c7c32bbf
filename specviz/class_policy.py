"""The class policy: what a class server lets its students do (docs/class-server.md, "Running a class server").

Off (the default), the app does what its user asks: any hub id, folder or serving engine, any budget. A
lecturer running one server for a class switches it on with `SPECVIZ_CLASS_MODE=1` and, optionally, a
settings file named by `SPECVIZ_CLASS_SETTINGS` (TOML, one `[class]` table) that lists what students may
load and the budgets each of them gets; both are read once, with every other setting of the server, by
specviz.server.config, and the policy is handed to whatever needs it. In class mode:

- models come from the presets and the operator's allowlist only: hub ids by name, local models only
  under allowlisted folders, served targets only at allowlisted addresses (checked before any
  connection is made, and again on every redirect);
- every pair and every run is bounded (a model's size, the pairs held, a prompt's length, the tokens of
  a run, a sweep's runs, the lossless page's trials, Steps a second, an uploaded trace's size and depth).

A refused request is a `RefusedError` whose message names the bound and what the student can do instead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from specviz import bounded
from specviz.errors import SpecvizError


class RefusedError(SpecvizError):
    """Class mode refuses the request: the message says which allowlist or bound, and what to do instead."""


@dataclass(frozen=True)
class ClassPolicy:
    on: bool = False
    models: tuple[str, ...] = ()  # hub ids students may load besides the presets
    folders: tuple[str, ...] = ()  # local folders under which models (and trained drafts) may load
    urls: tuple[str, ...] = ()  # serving engines students may use: scheme://host:port[/path] prefixes
    max_model_params: int = 600_000_000  # the largest model a student may load (estimated before loading)
    max_pairs: int = 3  # pairs held at once besides the default pair
    memory_gb: float = 6.0  # what the models held at once may take: their weights and KV caches, the default pair too
    prompt_chars: int = 2_000
    max_new_tokens: int = 256  # per run
    sweep_runs: int = 40  # runs in one τ sweep (τ values × prompts × seeds, and the policies)
    lossless_trials: int = 2_000
    steps_per_second: float = 2.0  # a student's Steps, each session
    heavy_jobs: int = 1  # sweeps, lossless checks, lessons and races running at once, the whole server
    heavy_jobs_per_address: int = 2  # running or waiting, from one client address (every browser behind it)
    heavy_jobs_waiting: int = 40  # waiting at once, the whole server; past it a new one is refused
    steps_at_once: int = 8  # model steps computing at once; on llama.cpp their target passes share one decode
    upload_bytes: int = 2_000_000  # a replayed trace file
    upload_depth: int = 32  # its nesting
    lecturer_key: str = ""  # a link with lecturer=KEY marks the lecturer's session: first in every queue
    # each student's share (their browser's tabs together; the lecturer's session is exempt): specviz.server.quotas
    tabs_per_student: int = 6  # sessions (tabs) open at once
    runs_per_student: int = 3  # Decode runs open at once (a tab's new run replaces its own)
    pairs_per_student: int = 1  # places of max_pairs held at once (asking for another gives their own oldest back)
    heavy_jobs_per_student: int = 2  # heavy jobs running or waiting from one student's tabs

    # --- models -------------------------------------------------------------------------------------

    def url_allowed(self, url: str) -> bool:
        """An address is allowed when it is at or below an allowlisted one: the same scheme, host and port,
        and a path that starts with the allowlisted path."""
        if not self.on:
            return True
        asked = _address(url)
        return asked is not None and any(_under(asked, _address(entry)) for entry in self.urls)

    def check_url(self, url: str) -> None:
        """Refuse an address outside the allowlist, before any connection is made."""
        if not self.url_allowed(url):
            allowed = ", ".join(self.urls) if self.urls else "none"
            raise RefusedError(
                f"class mode: this server connects only to the serving engines its operator allowed ({allowed}); "
                f"{url!r} is not one of them. Use a preset pair, or ask the lecturer to add it."
            )

    def path_allowed(self, path: Path) -> bool:
        if not self.on:
            return True
        real = path.expanduser().resolve()
        return any(real.is_relative_to(Path(folder).expanduser().resolve()) for folder in self.folders)

    def check_model(self, spec: str, presets: tuple[str, ...], looks_local: bool) -> None:
        """Refuse a model that is neither a preset nor allowlisted: `presets` are the specs the app offers,
        `looks_local` whether `spec` names a folder on this server (then it must lie under an allowed one)."""
        if not self.on or spec in presets:
            return
        if looks_local:
            if not self.path_allowed(Path(spec)):
                folders = ", ".join(self.folders) if self.folders else "none"
                raise RefusedError(
                    f"class mode: models load only from the folders the operator allowed ({folders}); {spec!r} is "
                    "outside them. Use a preset pair."
                )
            return
        if spec not in self.models:
            allowed = ", ".join(self.models) if self.models else "none besides the presets"
            raise RefusedError(
                f"class mode: {spec!r} is not among the models this server offers (allowed: {allowed}). Use a "
                "preset pair, or ask the lecturer to add it."
            )

    def model_params(self, asked: int) -> int:
        """The size limit a load runs under: the smaller of the caller's and the class's."""
        return min(asked, self.max_model_params) if self.on else asked

    # --- a student's budgets ------------------------------------------------------------------------

    def check_sweep(self, runs: int) -> None:
        if self.on and runs > self.sweep_runs:
            raise RefusedError(
                f"class mode: a sweep may make {self.sweep_runs} runs at most, so the server stays quick for the "
                f"whole class; this one makes {runs}. Choose fewer τ values, prompts or seeds."
            )

    def check_upload(self, data: bytes) -> None:
        """Size and nesting, before anything parses the file."""
        limit = self.upload_bytes if self.on else UPLOAD_BYTES
        if len(data) > limit:
            raise RefusedError(
                f"the file is {len(data) / 1e6:.1f} MB; a trace this server replays is at most {limit / 1e6:.1f} MB"
            )
        depth_limit = self.upload_depth if self.on else UPLOAD_DEPTH
        if (depth := bounded.json_depth(data, depth_limit)) > depth_limit:
            raise RefusedError(
                f"the file nests deeper than {depth_limit} levels (at least {depth}); a specviz trace nests 6: it is "
                "not a trace"
            )

    def words(self) -> str:
        """What the sidebar says about the mode."""
        if not self.on:
            return "Personal mode: any model, any budget."
        return (
            f"Class mode: models from the presets and the operator's list; {self.max_new_tokens} tokens a run, "
            f"{self.sweep_runs} runs a sweep, {self.steps_per_second:g} Steps a second."
        )


# outside class mode, an uploaded trace is still bounded (far above any real trace: 1,000 steps are ~3 MB)
UPLOAD_BYTES, UPLOAD_DEPTH = bounded.UPLOAD_BYTES, bounded.UPLOAD_DEPTH


def _address(url: str) -> tuple[str, str, int, str] | None:
    """(scheme, host, port, path) with the default port filled in and the host lowercased; None if not http(s)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, parts.hostname.lower(), port, parts.path.rstrip("/")


def _under(asked: tuple[str, str, int, str], entry: tuple[str, str, int, str] | None) -> bool:
    if entry is None or asked[:3] != entry[:3]:
        return False
    return asked[3] == entry[3] or asked[3].startswith(entry[3] + "/") or not entry[3]


FIELDS = {f.name: f for f in dataclasses.fields(ClassPolicy)}
