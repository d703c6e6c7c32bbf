"""Pieces of a long computation, where whoever started it may let other work go in between.

A lesson's run, a measurement of a pair's passes or a check of many trials is a chain of pieces: a decoding step,
a speculative step and the target alone's same tokens, a round of interleaved passes. Code that computes marks each
piece with `with piece():`. By itself that does nothing. A caller that runs the computation inside
`in_pieces(turn)` has each outermost piece run inside `turn()` (a server's compute turn: the class's Steps go
between two pieces, and a session that has ended is refused its next turn, so its work stops there). A piece inside
a piece runs in its parent's turn: a decoding step inside a timed step waits for nothing, so no wait is ever timed.
Likewise a piece inside a turn its caller took itself and marked `held()` takes none (a turn is never taken twice).

Inside a piece, `between()` marks a point where the work may wait for more urgent work (a long prompt's passes, one
after another): a caller that runs it inside `making_way(aside)` has `aside()` called there (a server's lecturer
goes first: a student's page opening lets the lecturer's Step run between two of its passes, not after all of them).

The choice lives in a context variable of the thread that computes, never on a model: two sessions sharing one
model each keep their own. Same inputs, same results: pieces change only when the work runs, not what it computes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar

Turn = Callable[[], AbstractContextManager]

_turn: ContextVar[Turn | None] = ContextVar("specviz_piece_turn", default=None)
_inside: ContextVar[bool] = ContextVar("specviz_inside_piece", default=False)
_aside: ContextVar[Callable[[], object] | None] = ContextVar("specviz_piece_aside", default=None)


@contextlib.contextmanager
def _set(var: ContextVar, value: object) -> Iterator[None]:
    """`var` is `value` within this block (in this thread), and what it was after."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def in_pieces(turn: Turn) -> AbstractContextManager:
    """Within this block (in this thread), each outermost `piece()` runs inside `turn()`."""
    return _set(_turn, turn)


def held() -> AbstractContextManager:
    """Within this block (in this thread) a turn is held already, taken by the caller itself: a piece takes none."""
    return _set(_inside, True)


@contextlib.contextmanager
def piece() -> Iterator[None]:
    """One piece of work: inside the turn `in_pieces` named, unless no turn was named or one is held already."""
    turn = _turn.get()
    if turn is None or _inside.get():
        yield
        return
    with turn(), held():
        yield


def making_way(aside: Callable[[], object]) -> AbstractContextManager:
    """Within this block (in this thread), each `between()` calls `aside()` (which may wait, or raise to stop)."""
    return _set(_aside, aside)


def between() -> None:
    """A point between two parts of a piece's work where it may wait for more urgent work: what `making_way` named,
    if anything."""
    if (aside := _aside.get()) is not None:
        aside()
