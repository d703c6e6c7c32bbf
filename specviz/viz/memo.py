"""Charts built once per browser session for the same immutable traces (no Streamlit here).

A page reruns on every click; when nothing a chart depends on changed (another widget, a quiz
answer), the memo returns the figure it built before instead of building and validating it again.
Steps are told apart by identity: the memo holds them beside their figures, so their ids cannot be
reused by new steps while those figures are kept. Everything else is told apart by value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

from specviz.core.trace import StepTrace


def _identity(value: object) -> object:
    """A step by identity, a sequence of steps by theirs, anything else by value."""
    if isinstance(value, StepTrace):
        return id(value)
    if isinstance(value, tuple | list) and value and all(isinstance(v, StepTrace) for v in value):
        return tuple(map(id, value))
    return repr(value)


class FrozenFigure(go.Figure):
    """A memo's figure, never changed once built: its plain form (`to_dict`, what Streamlit serialises on every
    rerun of every session) is made once, not deep-copied again each time."""

    def to_dict(self) -> dict:
        plain = self.__dict__.get("_specviz_plain")
        if plain is None:
            plain = self._specviz_plain = super().to_dict()
        return plain


def frozen(fig: go.Figure) -> go.Figure:
    """The same figure object, its plain form made once from now on (FrozenFigure)."""
    if type(fig) is go.Figure:
        fig.__class__ = FrozenFigure
    return fig


class FigureMemo:
    """One session's figures, by the chart function and what it was given; at most `limit` kept."""

    def __init__(self, limit: int = 48) -> None:
        self.limit = limit
        self._figures: dict[tuple, tuple[tuple, dict, go.Figure]] = {}

    def __call__(self, build: Callable[..., go.Figure], *args: Any, **kwargs: Any) -> go.Figure:
        key = (build.__name__, tuple(map(_identity, args)), tuple((k, _identity(v)) for k, v in sorted(kwargs.items())))
        if key not in self._figures:
            if len(self._figures) >= self.limit:  # a long session: start over rather than grow
                self._figures.clear()
            self._figures[key] = (args, kwargs, frozen(build(*args, **kwargs)))  # the inputs kept alive beside it
        return self._figures[key][2]

    def __len__(self) -> int:
        return len(self._figures)
