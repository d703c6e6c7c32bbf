"""What can go wrong with a served target, each a typed ModelError whose message says what to do."""

from __future__ import annotations

from specviz.errors import IncompatibleModelsError, ModelError


class RemoteError(ModelError):
    """A remote target failed: the message says what the server did and what to do."""


class RemoteUnreachableError(RemoteError):
    """Nothing answers at the server's address."""


class RemoteTimeoutError(RemoteError):
    """The server took longer than the timeout to answer one request."""


class RemoteHTTPError(RemoteError):
    """The server answered with an HTTP error status."""


class RemoteProtocolError(RemoteError):
    """The server answered, but not with the prompt log-probabilities a verify step needs."""


class LogprobsCappedError(RemoteProtocolError):
    """The server returned fewer top log-probabilities than were asked for (its cap is lower)."""


class RemoteTokenizerError(IncompatibleModelsError, RemoteError):
    """The server splits text into different tokens from the local draft's tokenizer."""
