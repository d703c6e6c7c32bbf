"""The prompt of a run: the exact text encoded (in the target's chat template where used), its ids,
checked against the target's vocabulary and context length."""

from __future__ import annotations

from collections.abc import Sequence

from specviz.errors import PromptError
from specviz.models.pair import ModelPair


def encode_prompt(pair: ModelPair, prompt: str | Sequence[int], chat: bool | None) -> tuple[str, list[int], bool]:
    """(exact text encoded, its ids, whether the chat template was used), checked for the target."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise PromptError("the prompt is empty: type some text to continue")
        use_chat = _resolve_chat(pair, chat)
        text, ids = pair.codec.encode_chat(prompt) if use_chat else (prompt, pair.codec.encode(prompt))
    else:
        ids, use_chat = [int(y) for y in prompt], False
        text = pair.codec.decode(ids)
    _check_prompt(ids, pair)
    return text, ids, use_chat


def toggled_chat(pair: ModelPair, on: bool) -> bool:
    """A page's "Chat template" toggle as a run's `chat`: on, the prompt is wrapped wherever the target has a chat
    template (whatever its default, `Codec.chat_default`); off, or a target without one, it is read as typed. The
    toggle said on while a GGUF file whose name lacks "Instruct" ran the raw text (issue 53)."""
    return bool(on) and pair.codec.chat_default is not None


def _resolve_chat(pair: ModelPair, chat: bool | None) -> bool:
    default = pair.codec.chat_default
    if chat and default is None:
        raise PromptError(f"{pair.target.name} has no chat template: turn the chat option off")
    return bool(default) if chat is None else chat


def _check_prompt(ids: list[int], pair: ModelPair) -> None:
    if not ids:
        raise PromptError("the prompt is empty: type some text to continue")
    max_length = pair.target.max_length
    if max_length is not None and len(ids) >= max_length:
        raise PromptError(f"the prompt is {len(ids)} tokens long; the target reads at most {max_length}: shorten it")
    bad = [y for y in ids if not 0 <= y < pair.target.vocab_size]
    if bad:
        raise PromptError(f"token ids outside the vocabulary: {bad[:5]}")
