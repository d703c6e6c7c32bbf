"""The server's configuration (specviz.server.config), read here and nowhere else in the app: every page and helper
asks `config()` and hands its parts down. Read once, and again only when the environment or the class settings file
changes (a lecturer editing the file while the server runs; a test setting a variable)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from specviz.class_policy import ClassPolicy
from specviz.models import embedded
from specviz.server.config import CLASS_SETTINGS_ENV, ServerConfig

READ = ("XDG_CACHE_HOME", "HF_HUB_CACHE", "HF_HOME", "OLLAMA_MODELS", "HOME")  # beside SPECVIZ_*: where files are
_lock = threading.Lock()
_held: dict[tuple, ServerConfig] = {}


def config() -> ServerConfig:
    """This server's configuration."""
    env = {k: v for k, v in os.environ.items() if k.startswith("SPECVIZ_") or k in READ}
    path = env.get(CLASS_SETTINGS_ENV, "").strip()
    try:
        stamp = Path(path).expanduser().stat().st_mtime if path else None
    except OSError:
        stamp = None
    key = (tuple(sorted(env.items())), stamp)
    with _lock:
        if key not in _held:
            _held.clear()
            _held[key] = ServerConfig.from_environ(env)
            embedded.use_cache(_held[key].cache_dir)  # specviz's own files: where this server keeps them
        return _held[key]


def forget() -> None:
    """Read the configuration again on the next call, whatever changed (a test's class settings file, rewritten)."""
    with _lock:
        _held.clear()


def class_policy() -> ClassPolicy:
    """The class policy: what this server lets its students do."""
    return config().class_policy
