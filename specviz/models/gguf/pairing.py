"""Whether two GGUF files pair as target and draft, checked before anything heavy loads, as llama.cpp's
`llama-speculative` and LM Studio's draft picker check it: the same vocabulary, the same special tokens, and here
the same chat template."""

from __future__ import annotations

from collections.abc import Sequence

from specviz.errors import IncompatibleModelsError
from specviz.models.gguf.info import vocabulary
from specviz.models.gguf.records import FoundModel, GGUFInfo

SHOWN_DIFFERENCES = 4  # differences an IncompatibleModelsError names


def check_pair(target: GGUFInfo, draft: GGUFInfo) -> None:
    """Raise IncompatibleModelsError naming the first differences unless `draft` can draft for `target`: the
    same vocabulary (size, and every token's text at its id), the same BOS, EOS and padding tokens, and the
    same chat template."""
    differences = pair_differences(target, draft)
    if differences:
        shown = "; ".join(differences[:SHOWN_DIFFERENCES])
        more = len(differences) - SHOWN_DIFFERENCES
        raise IncompatibleModelsError(
            f"{draft.name} ({draft.path.name}) cannot draft for {target.name} ({target.path.name}): {shown}"
            + (f"; and {more} more" if more > 0 else "")
        )


def can_pair(target: GGUFInfo, draft: GGUFInfo) -> bool:
    """True when check_pair passes; reads nothing."""
    return (
        target.vocab_fingerprint == draft.vocab_fingerprint
        and _specials(target) == _specials(draft)
        and target.chat_template == draft.chat_template
    )


def pair_differences(target: GGUFInfo, draft: GGUFInfo) -> list[str]:
    """What keeps `draft` from drafting for `target`, in words, most telling first (empty: they pair). The
    token lists are read (cached) only where the fingerprints differ."""
    differences = []
    if target.vocab_size != draft.vocab_size:
        differences.append(f"vocabulary: {target.vocab_size} tokens in the target, {draft.vocab_size} in the draft")
    if target.vocab_fingerprint != draft.vocab_fingerprint:
        differences += _token_differences(target, draft)
    for role, mine, theirs in zip(("BOS", "EOS", "padding"), _specials(target), _specials(draft), strict=True):
        if mine != theirs:
            differences.append(f"{role}: {_describe(mine)} in the target, {_describe(theirs)} in the draft")
    if target.chat_template != draft.chat_template:
        differences.append(_template_difference(target.chat_template, draft.chat_template))
    return differences


def _specials(info: GGUFInfo) -> tuple[tuple[int | None, str | None], ...]:
    return (info.bos_id, info.bos_text), (info.eos_id, info.eos_text), (info.pad_id, info.pad_text)


def _describe(special: tuple[int | None, str | None]) -> str:
    token, text = special
    if token is None:
        return "none"
    return f"id {token} {text!r}" if text is not None else f"id {token} (past the end of the vocabulary)"


def _token_differences(target: GGUFInfo, draft: GGUFInfo, shown: int = 3) -> list[str]:
    mine, theirs = vocabulary(target.path), vocabulary(draft.path)
    differing = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b]
    differing += range(min(len(mine), len(theirs)), max(len(mine), len(theirs)))
    if not differing:  # a file changed since its info was read
        return ["vocabulary: the token lists' fingerprints differ"]
    words = [f"token {i}: {_token(mine, i)} in the target, {_token(theirs, i)} in the draft" for i in differing[:shown]]
    if len(differing) > shown:
        words.append(f"{len(differing) - shown} more tokens differ")
    return words


def _token(tokens: tuple[str, ...], index: int) -> str:
    return repr(tokens[index]) if index < len(tokens) else "absent"


def _template_difference(mine: str | None, theirs: str | None) -> str:
    if mine is None or theirs is None:
        has = {True: "none", False: "one"}
        return f"chat template: {has[mine is None]} in the target, {has[theirs is None]} in the draft"
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), min(len(mine), len(theirs)))
    return (
        f"chat template: differs from character {at}: {mine[at : at + 24]!r} in the target, "
        f"{theirs[at : at + 24]!r} in the draft"
    )


def compatible_drafts(target: FoundModel, found: Sequence[FoundModel]) -> list[FoundModel]:
    """The models in `found` that can draft for `target`: they pass check_pair and are smaller (fewer
    parameters or a smaller file)."""
    if target.info is None:
        return []
    mine = target.info
    return [
        model
        for model in found
        if model.info is not None
        and (model.info.parameters < mine.parameters or model.info.file_bytes < mine.file_bytes)
        and can_pair(mine, model.info)
    ]
