"""Text codecs: how a pair turns a prompt into token ids and ids back into text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from specviz.errors import PromptError


@runtime_checkable
class Codec(Protocol):
    name: str
    eos_token_id: int | None
    chat_default: bool | None  # None: no chat template; else whether prompts are wrapped in it by default

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def token_text(self, token: int) -> str:
        """How one token reads on its own (for charts and tables)."""
        ...


def _byte_chars() -> dict[str, int]:
    """Byte-level BPE's printable stand-in for each byte (GPT-2's bytes_to_unicode), inverted: char → byte."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = list(kept), 0
    for b in range(256):
        if b not in kept:
            kept.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(kept, chars, strict=True)}


BYTE_CHARS = _byte_chars()


TUNED_WORDS = frozenset({"instruct", "chat", "it", "sft", "dpo", "orpo", "rlhf", "assistant"})  # a tuned model's name
BASE_WORDS = frozenset({"base", "pretrain", "pretrained"})  # a base model's


def name_words(*names: str | None) -> set[str]:
    """The lower-case words of model names, split at everything but letters and digits ("gemma-2-2b-it": gemma, 2,
    2b, it), so that "base" inside "database" is no word of its own."""
    return {word for name in names for word in re.split(r"[^0-9a-z]+", (name or "").lower()) if word}


def readable(data: bytes) -> str:
    """Bytes as text a person can read: valid UTF-8 as its characters, any byte that is part of a character
    split across tokens as its hexadecimal value in ⟨ ⟩ ("⟨E4 BD⟩" for the first two bytes of "你")."""
    out, pending = [], []
    for ch in data.decode("utf-8", errors="surrogateescape"):
        if 0xDC80 <= ord(ch) <= 0xDCFF:  # an undecodable byte, escaped by surrogateescape
            pending.append(f"{ord(ch) - 0xDC00:02X}")
            continue
        if pending:
            out.append(f"⟨{' '.join(pending)}⟩")
            pending = []
        out.append(ch)
    if pending:
        out.append(f"⟨{' '.join(pending)}⟩")
    return "".join(out)


class HFCodec:
    """A Hugging Face tokenizer; token texts are decoded once and memoised. A token that holds only part of
    a character (byte-level BPE, SentencePiece byte fallback) reads as its bytes, "⟨E4 BD⟩", never "�"."""

    def __init__(self, tokenizer: Any, name: str = "") -> None:
        self.tokenizer = tokenizer
        self.name = name or getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        self.eos_token_id = tokenizer.eos_token_id
        self._texts: dict[int, str] = {}

    @property
    def chat_default(self) -> bool | None:
        """None without a chat template; else whether to use it by default: where the model's name calls it tuned
        (a word of TUNED_WORDS: "-Instruct", "-it", "-chat"…). A base model's tokenizer may carry a template too
        (Qwen2.5-0.5B's does), and a hub name is the model's own word on what it is."""
        if not getattr(self.tokenizer, "chat_template", None):
            return None
        return bool(name_words(self.name) & TUNED_WORDS)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def encode_chat(self, text: str) -> tuple[str, list[int]]:
        """The prompt as one user message in the chat template: (exact text, its ids)."""
        wrapped = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        # the template already holds every special token the model expects
        return wrapped, list(self.tokenizer.encode(wrapped, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def token_text(self, token: int) -> str:
        text = self._texts.get(token)
        if text is None:
            text = self.tokenizer.decode([token])
            if "\ufffd" in text and (raw := self.token_bytes(token)) is not None:
                text = readable(raw)
            self._texts[token] = text
        return text

    def token_bytes(self, token: int) -> bytes | None:
        """The bytes a token stands for, where the tokenizer works on bytes (byte-level BPE, or a
        SentencePiece byte-fallback token "<0xE4>"); None where it does not tell."""
        piece = self.tokenizer.convert_ids_to_tokens(token)
        if not isinstance(piece, str):
            return None
        if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            return bytes([int(piece[3:5], 16)])
        if piece and all(ch in BYTE_CHARS for ch in piece):
            return bytes(BYTE_CHARS[ch] for ch in piece)
        return None


class WordCodec:
    """A vocabulary of whole words separated by spaces, for table models and the sandbox."""

    chat_default = None  # no chat template

    def __init__(self, words: Sequence[str], eos: str | None = None, name: str = "words") -> None:
        if len(set(words)) != len(words) or any(not w or w.split() != [w] for w in words):
            raise ValueError("words must be distinct and contain no whitespace")
        self.name = name
        self.words = tuple(words)
        self._ids = {w: i for i, w in enumerate(words)}
        self.eos_token_id = None if eos is None else self._ids[eos]

    def encode(self, text: str) -> list[int]:
        unknown = [w for w in text.split() if w not in self._ids]
        if unknown:
            raise PromptError(f"not in the vocabulary: {', '.join(unknown)}")
        return [self._ids[w] for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.words[i] for i in ids if i != self.eos_token_id)

    def token_text(self, token: int) -> str:
        return self.words[token]


class IdsCodec:
    """Text is space-separated token ids: drives the engine on models that have no tokenizer."""

    name = "ids"
    chat_default = None  # no chat template

    def __init__(self, eos_token_id: int | None = None) -> None:
        self.eos_token_id = eos_token_id

    def encode(self, text: str) -> list[int]:
        try:
            return [int(x) for x in text.split()]
        except ValueError as exc:
            raise PromptError(f"write the prompt as token ids separated by spaces ({exc})") from exc

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(str(i) for i in ids)

    def token_text(self, token: int) -> str:
        return f"<{token}>"
