"""A text codec on llama.cpp's own tokenizer, read from a loaded GGUF model.

A GGUF file carries its tokenizer (vocabulary, merges, special tokens, whether to add BOS) and its
chat template, so a target run on llama.cpp needs no Hugging Face tokenizer: `LlamaCodec` encodes
with `llama_tokenize`, decodes with `llama_detokenize`, reads each token's bytes with
`llama_token_to_piece` (a piece of a split character shown as its bytes, as HFCodec does), and
renders the file's Jinja chat template with the renderer of transformers' `apply_chat_template`, so
a prompt is wrapped and encoded to the same ids as through `HFCodec` on the same model
(tests/test_ggufcodec.py gives the one known difference).
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from specviz.errors import ModelError, PromptError
from specviz.models.text import BASE_WORDS, TUNED_WORDS, name_words, readable

if TYPE_CHECKING:
    from specviz.models.llamacpp import LlamaCppModel


NAMING_KEYS = ("general.finetune", "general.basename", "general.name")  # what a file says it is (GGUF's own keys)


def chat_default_of(template: str | None, naming: Mapping[str, str]) -> bool | None:
    """Whether a GGUF file's prompts are wrapped in its chat template by default: None without a template; with one,
    yes, unless the file's own naming metadata (`NAMING_KEYS`: general.finetune, basename, name) calls it a base model
    and nowhere a tuned one. The template is the file's own word on how it is prompted: a converter writes it from the
    model's tokenizer, and general.name is often a training run's ("Smollm2 135M 8k Lc100K Mix1 Ep2" for
    SmolLM2-135M-Instruct), so the word "instruct" in a name decides nothing."""
    if not template:
        return None
    words = name_words(*naming.values())
    return not (words & BASE_WORDS and not words & TUNED_WORDS)


class LlamaCodec:
    """The tokenizer of a GGUF model loaded by specviz.models.llamacpp.LlamaCppModel; token texts are
    memoised. A token that holds only part of a character reads as its bytes, "⟨E4 BD⟩", never "�"."""

    def __init__(self, model: LlamaCppModel, name: str = "") -> None:
        lib = model._lib
        self._lib = lib
        self._owner = model  # keeps the llama.cpp model, which owns the vocabulary, alive
        self._vocab = lib.llama_model_get_vocab(model._model)
        if not self._vocab:
            raise ModelError(f"{model.name} has no vocabulary llama.cpp can read")
        self.name = name or model.name
        self.vocab_size = int(lib.llama_vocab_n_tokens(self._vocab))
        self.eos_token_id = self._token(lib.llama_vocab_eos(self._vocab))
        self.bos_token_id = self._token(lib.llama_vocab_bos(self._vocab))
        self.add_bos = bool(lib.llama_vocab_get_add_bos(self._vocab))
        template = lib.llama_model_chat_template(model._model, None)
        self.chat_template: str | None = template.decode("utf-8") if template else None
        self._texts: dict[int, str] = {}

    @property
    def chat_default(self) -> bool | None:
        """None without a chat template; else whether to use it by default, from the file itself (`chat_default_of`),
        never from the name specviz gives it."""
        return chat_default_of(self.chat_template, {key: self._meta_str(key.encode()) for key in NAMING_KEYS})

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`: special tokens written in it are parsed, and BOS added where the file says."""
        return self._tokenize(text, add_special=True)

    def encode_chat(self, text: str) -> tuple[str, list[int]]:
        """The prompt as one user message in the file's chat template: (exact text, its ids)."""
        if not self.chat_template:
            raise PromptError(f"{self.name} has no chat template: turn the chat option off")
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, _ = render_jinja_template(
            conversations=[[{"role": "user", "content": text}]],
            chat_template=self.chat_template,
            add_generation_prompt=True,
            **self._special_tokens(),
        )
        wrapped = rendered[0]
        # the template already holds every special token the model expects
        return wrapped, self._tokenize(wrapped, add_special=False)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of `ids`, special tokens left out; a character cut off at either end reads "�"."""
        tokens = [self._checked(int(y)) for y in ids]
        array = (self._lib.llama_token * len(tokens))(*tokens)
        size = 8 * len(tokens) + 64
        while True:  # llama.cpp's own inverse of llama_tokenize: BOS, EOS and other control tokens left out
            buffer = ctypes.create_string_buffer(size)
            n = self._lib.llama_detokenize(self._vocab, array, len(tokens), buffer, size, True, False)
            if n >= 0:
                return buffer.raw[:n].decode("utf-8", errors="replace")
            size = -n

    def token_text(self, token: int) -> str:
        text = self._texts.get(token)
        if text is None:
            text = readable(self._piece(int(token), special=True))
            self._texts[token] = text
        return text

    def token_bytes(self, token: int) -> bytes:
        """The bytes a token stands for (a special token: its own text)."""
        return self._piece(int(token), special=True)

    # --- llama.cpp --------------------------------------------------------------------------------

    def _alive(self) -> None:
        """The vocabulary lives in the model: once the model was given back (a server evicted its pair), the codec
        must not read freed memory."""
        if self._owner.closed and not self._owner.held():
            raise ModelError(f"{self.name} on llama.cpp was given back; load the pair again")

    def _tokenize(self, text: str, add_special: bool) -> list[int]:
        self._alive()
        data = text.encode("utf-8")
        size = len(data) + 2  # at most one token per byte, plus BOS and EOS
        tokens = (self._lib.llama_token * size)()
        n = self._lib.llama_tokenize(self._vocab, data, len(data), tokens, size, add_special, True)
        if n < 0:  # never with the bound above; -n is the count it needed
            size = -n
            tokens = (self._lib.llama_token * size)()
            n = self._lib.llama_tokenize(self._vocab, data, len(data), tokens, size, add_special, True)
        if n < 0:
            raise PromptError(f"llama.cpp could not tokenize a text of {len(data)} bytes for {self.name}")
        return list(tokens[:n])

    def _checked(self, token: int) -> int:
        """`token`, where it is an id of the vocabulary (llama.cpp would abort the process on another)."""
        self._alive()
        if not 0 <= token < self.vocab_size:
            raise PromptError(f"token id {token} is not in {self.name}'s vocabulary of {self.vocab_size}")
        return token

    def _piece(self, token: int, special: bool) -> bytes:
        self._checked(token)
        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            n = self._lib.llama_token_to_piece(self._vocab, token, buffer, size, 0, special)
            if n >= 0:
                return buffer.raw[:n]
            size = -n

    def _special_tokens(self) -> dict[str, str]:
        """What transformers hands every chat template besides the messages: the special tokens' texts."""
        lib, vocab = self._lib, self._vocab
        ids = {
            "bos_token": lib.llama_vocab_bos(vocab),
            "eos_token": lib.llama_vocab_eos(vocab),
            "pad_token": lib.llama_vocab_pad(vocab),
            "unk_token": self._meta_int(b"tokenizer.ggml.unknown_token_id"),
        }
        return {key: self._piece(int(y), special=True).decode("utf-8", "replace") for key, y in ids.items() if y >= 0}

    def _meta_int(self, key: bytes) -> int:
        """An integer of the file's metadata; -1 where it has none."""
        try:
            return int(self._meta_str(key, 32) or "-1")
        except ValueError:
            return -1

    def _meta_str(self, key: bytes, size: int = 256) -> str:
        """A value of the file's metadata as llama.cpp writes it (cut at `size` bytes); "" where it has none."""
        buffer = ctypes.create_string_buffer(size)
        n = self._lib.llama_model_meta_val_str(self._owner._model, key, buffer, len(buffer))
        return buffer.value.decode("utf-8", "replace") if n >= 0 else ""

    def _token(self, token: int) -> int | None:
        return None if token < 0 else int(token)
