"""Limits every layer shares: the longest draft and the largest tree, the largest model the app loads,
how many tokens a run may still emit."""

from __future__ import annotations

MAX_TAU = 64  # draft tokens per step (and levels of a tree)
MAX_TOPK = 10  # children per expanded tree node
MAX_TREE_NODES = 64  # nodes a tree step verifies in one pass
MAX_PARAMS_ENV = "SPECVIZ_MAX_PARAMS"  # the largest model, in parameters, estimated before any weight loads
DEFAULT_MAX_PARAMS = 2_000_000_000


def token_budget(max_new_tokens: int, max_length: int | None, length: int) -> int:
    """Tokens a run may still emit: its max_new_tokens left, within the target's context length (`length`
    tokens held)."""
    return max_new_tokens if max_length is None else min(max_new_tokens, max_length - length)
