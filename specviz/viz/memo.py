"""Charts built once per browser session for the same immutable traces (no Streamlit here).

A page reruns on every click; when nothing a chart depends on changed (another widget, a quiz
answer), the memo returns the figure it built before instead of building and validating it again.
Steps are told apart by identity: the memo holds them beside their figures, so their ids cannot be
reused by new steps while those figures are kept. Everything else is told apart by value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

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


class PlainFigure(go.Figure):
    """A figure made from plain trace and layout dicts (what plotly.js draws), validated by plotly only when
    something reads one of its parts (`fig.data`, `fig.layout`, an update): until then `to_dict` is the dicts
    themselves. A class server builds every chart of a Step anew for each student, and plotly's validation and
    the deep copies of its `to_dict` cost more of the server's Python than the rest of the chart's work
    (docs/performance.md, "A class under load: N students over Streamlit's own protocol").
    tests/test_charts.py checks that the dicts of every chart read as plotly's validated form does."""

    def __init__(self, data: list[dict], layout: dict) -> None:
        self.__dict__["_specviz_source"] = (data, layout)

    def __getattr__(self, name: str) -> Any:
        source = self.__dict__.pop("_specviz_source", None)  # a part is read: become a validated figure, once
        if source is None or name.startswith("__"):
            raise AttributeError(name)
        go.Figure.__init__(self, data=source[0], layout=source[1])
        return getattr(self, name)

    def to_dict(self) -> dict:
        source = self.__dict__.get("_specviz_source")
        if source is None:
            return super().to_dict()
        data, layout = source
        return {"data": data, "layout": {**layout, "template": _template(layout.get("template"))}}


_TEMPLATES: dict[str, dict] = {}


def _template(template: object) -> object:
    """The template plotly's validation would put in the layout: the one named (by default plotly's current
    default, which Streamlit sets to its own on import), as a plain dict made once per name."""
    if template is not None and not isinstance(template, str):
        return template
    name = template or pio.templates.default
    if name not in _TEMPLATES:
        _TEMPLATES[name] = pio.templates[name].to_plotly_json()
    return _TEMPLATES[name]


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
