"""The server's configuration: every `SPECVIZ_*` environment variable and the class settings file, read once.

The app (through pages/_serving/config.py) and the command line read it at the top, with `ServerConfig.from_environ`,
and hand its parts down as arguments: the class policy, what "auto" runtime means, the largest model, the folders
GGUF files are found in, how llama.cpp runs, a served target's timeout. Nothing below the top reads the environment
(tests/test_architecture.py checks it); a library user who hands nothing gets the library's own defaults.
docs/app.md lists every variable with its meaning.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from specviz import limits
from specviz.bounded import whole_number
from specviz.class_policy import FIELDS, ClassPolicy
from specviz.errors import ConfigError, ModelError, SpecvizError
from specviz.loading import AUTO, RUNTIME_ENV, RUNTIMES, LoadSettings
from specviz.models import embedded, gguf
from specviz.models.llamasettings import (
    BEND_ENV,
    CONTEXT_ENV,
    CPU_ENV,
    DEFAULT_CONTEXT,
    ONE_TOKEN_THREADS_ENV,
    SLOT_TOKENS,
    SLOT_TOKENS_ENV,
    SLOTS_ENV,
    THREADS_ENV,
    LlamaSettings,
)
from specviz.models.remote.spec import DEFAULT_TIMEOUT_S, TIMEOUT_ENV

CLASS_MODE_ENV = "SPECVIZ_CLASS_MODE"
CLASS_SETTINGS_ENV = "SPECVIZ_CLASS_SETTINGS"
LLAMA_LOG_ENV = "SPECVIZ_LLAMA_LOG"
COMPUTE_ENV = "SPECVIZ_COMPUTE"
TORCH_THREADS_ENV = "SPECVIZ_TORCH_THREADS"
TIMINGS_ENV = "SPECVIZ_TIMINGS_DIR"
COMPUTE = ("turns", "free")  # every step in the server's turns (the default), or none queued

# every variable the server reads: name → what it sets (docs/app.md's table lists the same)
VARIABLES = {
    CLASS_MODE_ENV: "class mode on (1, true, yes or on)",
    CLASS_SETTINGS_ENV: "the class settings file (TOML, one [class] table)",
    RUNTIME_ENV: "what the runtime 'auto' means",
    limits.MAX_PARAMS_ENV: "the largest model, in parameters",
    embedded.CACHE_ENV: "specviz's cache folder",
    TIMINGS_ENV: "where the pairs' calibrations are kept",
    gguf.MODELS_DIR_ENV: "a folder of GGUF files the sidebar lists",
    TIMEOUT_ENV: "seconds a served target may take to answer",
    THREADS_ENV: "llama.cpp's threads per decode",
    ONE_TOKEN_THREADS_ENV: "llama.cpp's threads for a one-token pass",
    CONTEXT_ENV: "llama.cpp's tokens per session",
    SLOTS_ENV: "llama.cpp's streams of the shared batched context",
    SLOT_TOKENS_ENV: "tokens each stream holds",
    BEND_ENV: "0: llama.cpp's passes keep their threads however busy the cores",
    CPU_ENV: "one of ggml's CPU variants by name",
    LLAMA_LOG_ENV: "llama.cpp's own log",
    COMPUTE_ENV: "turns (default) or free",
    TORCH_THREADS_ENV: "torch's threads",
}


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """What one server runs with. The defaults are the library's: a config made from an empty environment
    equals `ServerConfig()` but for the folders, which come from the home folder."""

    class_policy: ClassPolicy = field(default_factory=ClassPolicy)
    runtime: str = AUTO  # what load_pair's runtime "auto" means on this server
    max_params: int = limits.DEFAULT_MAX_PARAMS
    cache_dir: Path | None = None  # specviz's own cache (embedded.cache_root); None: ~/.cache/specviz
    # where the pairs' calibrations are kept for every later process (specviz.analysis.pairtimes.TimingBook); None:
    # in memory only
    timings_dir: Path | None = None
    places: tuple[gguf.Place, ...] = ()  # where GGUF files are found (gguf.default_places)
    remote_timeout_s: float = DEFAULT_TIMEOUT_S
    llama: LlamaSettings = field(default_factory=LlamaSettings)
    compute: str = "turns"
    torch_threads: int = 1

    @property
    def llama_slots(self) -> int:
        """The streams a llama.cpp model of this server opens (class mode: CLASS_SLOTS unless set)."""
        return self.llama.slots_for(self.class_policy.on)

    def load_settings(self) -> LoadSettings:
        """What load_pair and planned_parts are handed on this server."""
        return LoadSettings(
            runtime=self.runtime,
            max_params=self.max_params,
            places=self.places,
            remote_timeout_s=self.remote_timeout_s,
            llama=self.llama,
        )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], home: Path | None = None) -> ServerConfig:
        """The configuration `environ` (os.environ, or a test's dict) asks for, with the class settings file it
        names; a value that cannot be used is the typed error its reader raised before, naming the variable."""
        env = {k: v for k, v in environ.items() if isinstance(v, str)}
        home = Path.home() if home is None else home
        runtime = env.get(RUNTIME_ENV, "").strip() or AUTO
        if runtime not in RUNTIMES:
            raise ModelError(f"{RUNTIME_ENV}={runtime!r}: unknown runtime; use {', '.join(RUNTIMES)}")
        compute = env.get(COMPUTE_ENV, "").strip() or "turns"
        if compute not in COMPUTE:
            raise ConfigError(f"{COMPUTE_ENV}={compute!r}: use {' or '.join(COMPUTE)}, or unset it")
        one_token = env.get(ONE_TOKEN_THREADS_ENV, "").strip()
        slots = env.get(SLOTS_ENV, "").strip()
        llama = LlamaSettings(
            threads=count(env, THREADS_ENV, None, "threads", 1),
            one_token_threads=count(env, ONE_TOKEN_THREADS_ENV, None, "threads", 1) if one_token else None,
            context=count(env, CONTEXT_ENV, DEFAULT_CONTEXT, "tokens", 64),
            slots=count(env, SLOTS_ENV, None, "runs", 0) if slots else None,
            slot_tokens=count(env, SLOT_TOKENS_ENV, SLOT_TOKENS, "tokens", 64),
            bend=env.get(BEND_ENV, "").strip() != "0",
            cpu=env.get(CPU_ENV, "").strip(),
            log=bool(env.get(LLAMA_LOG_ENV)),
        )
        return cls(
            class_policy=class_policy(env),
            runtime=runtime,
            max_params=count(env, limits.MAX_PARAMS_ENV, limits.DEFAULT_MAX_PARAMS, "parameters", 1),
            cache_dir=cache_dir(env, home),
            timings_dir=timings_dir(env, home),
            places=tuple(gguf.default_places(env, home)),
            remote_timeout_s=seconds(env, TIMEOUT_ENV, DEFAULT_TIMEOUT_S),
            llama=llama,
            compute=compute,
            torch_threads=count(env, TORCH_THREADS_ENV, 1, "threads", 1),
        )


def count(env: Mapping[str, str], name: str, default: int | None, what: str, minimum: int) -> int | None:
    """A whole number from the variable `name` (at least `minimum`, digits 0-9 only), else `default`."""
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        number = whole_number(value, error=ValueError, what=name)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise ModelError(f"{name}={value!r}: set it to a whole number of {what}, {minimum} or more, or unset it")
    return number


def seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from the variable `name`, else `default`."""
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number <= 0:
        raise ModelError(f"{name} must be a number of seconds (got {value!r})")
    return number


def cache_dir(env: Mapping[str, str], home: Path) -> Path:
    """$SPECVIZ_CACHE_DIR, else the user's cache directory (XDG_CACHE_HOME or ~/.cache)/specviz."""
    if env.get(embedded.CACHE_ENV):
        return Path(env[embedded.CACHE_ENV]).expanduser()
    return Path(env.get("XDG_CACHE_HOME") or home / ".cache") / "specviz"


def timings_dir(env: Mapping[str, str], home: Path) -> Path:
    """$SPECVIZ_TIMINGS_DIR, else the cache folder's `timings`."""
    if env.get(TIMINGS_ENV, "").strip():
        return Path(env[TIMINGS_ENV].strip()).expanduser()
    return cache_dir(env, home) / "timings"


def class_policy(env: Mapping[str, str]) -> ClassPolicy:
    """The class policy `env` asks for: class mode on with SPECVIZ_CLASS_MODE=1 (or true, yes, on), its lists and
    budgets from the TOML file named by SPECVIZ_CLASS_SETTINGS (its `[class]` table)."""
    if env.get(CLASS_MODE_ENV, "").strip().lower() not in ("1", "true", "yes", "on"):
        return ClassPolicy()
    values: dict = {}
    if path := env.get(CLASS_SETTINGS_ENV, "").strip():
        try:
            table = tomllib.loads(Path(path).expanduser().read_text()).get("class", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SpecvizError(f"{CLASS_SETTINGS_ENV}={path}: the class settings cannot be read ({exc})") from exc
        unknown = sorted(set(table) - set(FIELDS) - {"on"})
        if unknown:
            raise SpecvizError(f"{path}: unknown class settings {unknown}; known: {sorted(set(FIELDS) - {'on'})}")
        for name, value in table.items():
            kind = type(FIELDS[name].default)
            values[name] = tuple(str(v) for v in value) if kind is tuple else kind(value)
    return ClassPolicy(on=True, **values)
