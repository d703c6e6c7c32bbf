"""Typed errors of specviz: every failure a user can cause is a subclass of `SpecvizError`."""

from __future__ import annotations


class SpecvizError(Exception):
    """Base class of every error specviz raises on purpose; the message is meant for the user."""


class ConfigError(SpecvizError, ValueError):
    """A setting is out of range or of the wrong kind (τ, mode, temperature, ...)."""


class PromptError(SpecvizError, ValueError):
    """The prompt is empty, or too long for the models."""


class ModelError(SpecvizError):
    """A model could not be found, loaded or used."""


class IncompatibleModelsError(ModelError):
    """Draft and target cannot be paired (different vocabularies, devices, ...)."""


class TraceError(SpecvizError, ValueError):
    """A saved trace cannot be replayed: not JSON, fields missing or of the wrong type, numbers out
    of range, or decisions that do not follow from its own r and p/q."""


class SnapshotError(SpecvizError, ValueError):
    """A file or link that is not a snapshot this app can reopen: not one at all, or a field of it missing,
    of the wrong type, out of range or at odds with another (the message names the field)."""


class EngineLogError(SpecvizError, ValueError):
    """A paste or file of a serving engine's speculative-decoding numbers that cannot be read: a line of a known
    format malformed or cut off, counts that contradict each other, several engines mixed, or too much text. The
    message names the line; `line` is its number (1-based), None where no one line is at fault."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class SessionEndedError(SpecvizError):
    """The browser session that asked for some work has ended (its tab closed): the work is not started, or stops
    at its next turn, and gives its place in the queues back."""
