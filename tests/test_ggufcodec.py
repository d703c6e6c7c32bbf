"""LlamaCodec (specviz.models.ggufcodec): llama.cpp's own tokenizer of a GGUF file, against HFCodec on the
same model (the embedded target, whose Hugging Face tokenizer transformers reads from the same GGUF):
the same ids, the same text back, the same token texts over the whole vocabulary (bytes of a split
character as "⟨E4 BD⟩"), the same chat-wrapped prompt, and the one place the two tokenizers differ."""

import pytest
from transformers import AutoTokenizer

from specviz.errors import PromptError
from specviz.models import embedded, llamacpp
from specviz.models.ggufcodec import LlamaCodec
from specviz.models.text import Codec, HFCodec

pytestmark = [pytest.mark.slow, pytest.mark.numeric]  # no clock: on both cores in `make test`

TEXTS = (
    "The cat sat on the mat.",
    "  two leading spaces, then words",
    " one leading space",
    "naïve café, Ünïcödé — “quotes” … and 你好，世界",
    "emoji 🤖🎉👍🏽 and a flag 🇫🇷",
    'def fib(n):\n    """The n-th number."""\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n',
    "\ttabs\tand\n\n\nnewlines  \n",
    "numbers 3.14159, 1234567890 and 2026-11-26",
    "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n",
    "text around<|endoftext|>a special token",
    "",
    " ",
)
PROMPTS = ("What is the capital of Australia?", "Écris un poème sur 🌊, s'il te plaît.", "Explain <|im_end|> to me")


@pytest.fixture(scope="module")
def codecs(embedded_cache):
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    hf = HFCodec(AutoTokenizer.from_pretrained(embedded_cache["path"]), embedded.NAME)  # as specviz.loading does
    return LlamaCodec(llamacpp.load_embedded()), hf


def test_it_is_a_codec_with_the_files_special_tokens(codecs):
    llama, hf = codecs
    assert isinstance(llama, Codec)
    assert llama.name == embedded.NAME
    assert llama.vocab_size == len(hf.tokenizer) == 49152
    assert llama.eos_token_id == hf.eos_token_id == 2
    assert llama.chat_default is hf.chat_default is True  # an Instruct model with a chat template
    assert llama.chat_template == hf.tokenizer.chat_template
    assert not llama.add_bos  # this file adds no BOS: the first id is the text's
    assert llama.encode("<|im_start|>") == [1] and llama.encode("Hello")[0] != llama.bos_token_id


def test_the_same_ids_as_the_hugging_face_tokenizer(codecs):
    llama, hf = codecs
    for text in TEXTS:
        assert llama.encode(text) == hf.encode(text), text
    long = " ".join(TEXTS) * 40  # beyond any first guess of the buffer's size
    assert llama.encode(long) == hf.encode(long)


def test_decode_gives_the_text_back_and_the_same_text_as_hugging_face(codecs):
    llama, hf = codecs
    for text in TEXTS:
        ids = llama.encode(text)
        if "<|" not in text:
            assert llama.decode(ids) == text
        assert llama.decode(ids) == hf.decode(ids), text  # special tokens left out
    ids = llama.encode("你好 🤖 x")
    for start in range(len(ids)):  # a character cut at either end reads "�", as with Hugging Face
        for end in range(start, len(ids) + 1):
            assert llama.decode(ids[start:end]) == hf.decode(ids[start:end]), (start, end)
    assert "\ufffd" in llama.decode(ids[:1])


def test_every_tokens_text_is_hugging_faces_and_split_characters_read_as_bytes(codecs):
    llama, hf = codecs
    differ = [t for t in range(llama.vocab_size) if llama.token_text(t) != hf.token_text(t)]
    assert differ == []
    assert [llama.token_text(t) for t in llama.encode("你好")] == ["⟨E4 BD⟩", "⟨A0⟩", "⟨E5 A5⟩", "⟨BD⟩"]
    assert llama.token_text(1) == "<|im_start|>" and llama.token_bytes(1) == b"<|im_start|>"
    assert sum("⟨" in llama.token_text(t) for t in range(llama.vocab_size)) > 200  # the byte tokens, and more
    for bad in (-1, llama.vocab_size):
        with pytest.raises(PromptError, match=f"token id {bad} is not in SmolLM2-135M-Instruct's vocabulary of 49152"):
            llama.token_text(bad)
        with pytest.raises(PromptError, match=f"token id {bad} is not in"):
            llama.decode([5, bad])


def test_the_chat_wrapped_prompt_is_hugging_faces(codecs):
    llama, hf = codecs
    for prompt in PROMPTS:
        assert llama.encode_chat(prompt) == hf.encode_chat(prompt), prompt
    text, ids = llama.encode_chat("Hi")
    assert text == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert ids[0] == 1 and ids.count(2) == 2  # the template's special tokens are parsed, not spelled out


def test_the_one_known_difference_numbers_after_a_space(codecs):
    """The file names its pre-tokenizer ("smollm": every number character split off on its own, as
    the original SmolLM2 tokenizer does); llama.cpp follows it, while transformers' GGUF loader splits
    as GPT-2 does. They part only where a non-ASCII number character ("½", "²", "①") follows a space:
    ASCII digits come out the same, as the vocabulary has no merges across them."""
    llama, hf = codecs
    assert llama.encode(" ½") == [llama.encode(" ")[0], llama.encode("½")[0]] != hf.encode(" ½")
    assert llama.decode(llama.encode(" ½")) == hf.decode(hf.encode(" ½")) == " ½"
    assert llama.encode(" 12 x½") == hf.encode(" 12 x½")


def test_a_file_named_as_its_training_run_is_still_chatted_with_by_default(codecs):
    """Issue 53: the embedded file itself, opened as any GGUF file is (its name general.name, "Smollm2 135M 8k Lc100K
    Mix1 Ep2"): its chat template is used by default, as for the same model named SmolLM2-135M-Instruct."""
    from specviz.models.gguf import read_info

    path = embedded.gguf_path()
    named = read_info(path).name
    assert named == "Smollm2 135M 8k Lc100K Mix1 Ep2"
    codec = LlamaCodec(llamacpp.LlamaCppModel(path, named, context=64))
    assert codec.name == named and codec.chat_default is True
    assert codec.encode_chat("Hi") == codecs[0].encode_chat("Hi")
