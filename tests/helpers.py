"""Tiny models, codecs and GGUF files for fast tests (no network, no real weights)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from gguf import GGUFWriter, LlamaFileType
from transformers import LlamaConfig, LlamaForCausalLM

from specviz import HFCodec, HFModel, ModelPair, TableModel
from specviz.drafts.feature import FeatureDraft
from specviz.models.text import IdsCodec

VOCAB = 96
SUBSET = torch.tensor(sorted({*range(0, VOCAB, 2), 1, 3, 5}))  # a feature draft's head vocabulary


def tiny_llama(seed: int, layers: int = 2, vocab: int = VOCAB, hidden: int = 32) -> LlamaForCausalLM:
    """A random 2-layer Llama in float64 (float64 so that batched and incremental scoring agree
    to ~1e-15 and argmax ties never flip)."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).to(torch.float64).eval()


class Wrapped:
    """Wraps a model behind the protocol: records how many tokens each extend() fed and, with
    negate=True, proposes the model's *least* likely token (an adversarial draft)."""

    def __init__(self, model, negate: bool = False) -> None:
        self.inner, self.negate = model, negate
        self.name = f"anti-{model.name}" if negate else model.name
        self.vocab_size, self.max_length = model.vocab_size, model.max_length
        self.capabilities = model.capabilities
        self.fed: list[int] = []

    def new_session(self):
        return _WrappedSession(self, self.inner.new_session())


class _WrappedSession:
    def __init__(self, owner: Wrapped, inner) -> None:
        self._owner, self._inner = owner, inner

    def __getattr__(self, attr):  # length, forwards, forward_seconds
        return getattr(self._inner, attr)

    def extend(self, ids, keep=None):
        self._owner.fed.append(len(ids))
        logits = self._inner.extend(ids, keep)
        return -logits if self._owner.negate else logits

    def crop(self, length):
        self._inner.crop(length)


def hf_pair(target_seed: int = 0, draft_seed: int = 1, draft_layers: int = 1, eos: int | None = None):
    target = HFModel(tiny_llama(target_seed), "tiny-target")
    draft = HFModel(tiny_llama(draft_seed, layers=draft_layers), "tiny-draft")
    return ModelPair(target, draft, IdsCodec(eos))


def table_pair(p, q, eos: int | None = None) -> ModelPair:
    return ModelPair(TableModel(p, "p-table"), TableModel(q, "q-table"), IdsCodec(eos))


def full_logits(model: LlamaForCausalLM, ids: Sequence[int]) -> torch.Tensor:
    """Logits at every position from one cache-free forward pass."""
    with torch.inference_mode():
        return model(torch.tensor([list(ids)]), use_cache=False).logits[0].double()


CHAT_TEMPLATE = (
    "{% for m in messages %}w90 {{ m['content'] }} w91 {% endfor %}{% if add_generation_prompt %}w92{% endif %}"
)


def word_tokenizer(vocab: int = VOCAB, prefix: str = "w", chat: bool = False):
    """A whitespace word-level fast tokenizer over "w0".."w{vocab-1}"; the last word is EOS."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {f"{prefix}{i}": i for i in range(vocab)}
    core = Tokenizer(models.WordLevel(words, unk_token=f"{prefix}0"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token=f"{prefix}0", eos_token=f"{prefix}{vocab - 1}")
    if chat:
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def save_tiny(path, seed: int, layers: int = 2, vocab: int = VOCAB, prefix: str = "w", chat: bool = False) -> str:
    """A tiny random Llama (float64 weights) and its tokenizer, written as a local model folder."""
    tiny_llama(seed, layers=layers, vocab=vocab).save_pretrained(path)
    word_tokenizer(vocab, prefix, chat).save_pretrained(path)
    return str(path)


def tiny_text_pair(chat: bool = False, runtime: str = "torch") -> ModelPair:
    """A tiny random pair behind a word-level tokenizer: any text encodes (unknown words as w0). `runtime`:
    the name its target reports (the app keys every measurement by it)."""
    target = HFModel(tiny_llama(0), "tiny-target", runtime)
    draft = HFModel(tiny_llama(1, layers=1), "tiny-draft")
    return ModelPair(target, draft, HFCodec(word_tokenizer(chat=chat), "tiny-Instruct" if chat else "tiny"))


def make_feature_draft(target, seed: int = 0) -> FeatureDraft:
    """A feature-level draft over SUBSET with every trained weight moved off its initial value."""
    torch.manual_seed(seed)
    draft = FeatureDraft(target, SUBSET)
    with torch.no_grad():  # a trained-looking draft: every weight moved, rounded to fp16 (saving is exact)
        for name, p in draft.named_parameters():
            if name.startswith("body.embed_tokens"):  # the target's own, shared: leave it alone
                continue
            p.add_(0.2 * torch.randn_like(p) * p.abs().mean().clamp(min=0.05))
            p.copy_(p.half().to(p.dtype))
    return draft.eval()


def runs_by_mode(prompt: Sequence[int], **config) -> dict:
    """One finished run of a tiny random pair per mode, same prompt and settings."""
    from specviz import Decoder, SpecConfig

    pair = hf_pair()
    return {m: Decoder(pair, prompt, SpecConfig(mode=m, **config)).run() for m in ("textbook", "lossless", "greedy")}


def css_font_sizes(css: str) -> dict[str, float]:
    """Each selector of a stylesheet (no @media blocks) and the font size it sets, in px (a rem is 16 px, Streamlit's
    root); `max(18px, 1em)`, a floor, reads as its 18 px. Selectors are split at commas outside parentheses."""
    import re

    def px(value: str) -> float:
        value = value.replace("!important", "").strip()
        if value.startswith("max("):
            value = value[4:].split(",")[0]
        number = float(re.match(r"[\d.]+", value).group())
        return number * 16 if value.endswith("rem") else number

    sizes: dict[str, float] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css.replace("<style>", "").replace("</style>", "")):
        found = re.search(r"font-size:\s*([^;]+)", body)
        if not found:
            continue
        depth, part, parts = 0, "", []
        for char in selectors:
            depth += char == "("
            depth -= char == ")"
            if char == "," and depth == 0:
                parts.append(part)
                part = ""
            else:
                part += char
        for selector in [*parts, part]:
            sizes[" ".join(selector.split())] = px(found.group(1))
    return sizes


# A tiny GGUF file's vocabulary and chat template (tests/test_gguf_*.py read them back).
TOKENS = ["<unk>", "<s>", "</s>", "hello", "world", "!"]
TEMPLATE = "{{ messages }}"


def write_gguf(
    path: Path,
    *,
    tokens=TOKENS,
    bos=1,
    eos=2,
    pad=0,
    template=TEMPLATE,
    file_type=LlamaFileType.ALL_F32,
    embd_dtype=np.float32,
    width=8,
    name="tiny",
    split_max_tensors=0,
    output=False,
) -> Path:
    """A llama-shaped GGUF: 2 layers, hidden size `width`, 2 heads, 1 KV head, and two tensors: the token
    embedding (len(tokens) × width) and the output norm (width); with `output`, an output matrix as well."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = GGUFWriter(path, "llama", split_max_tensors=split_max_tensors)
    if name is not None:
        writer.add_name(name)
    writer.add_context_length(64)
    writer.add_block_count(2)
    writer.add_embedding_length(width)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    for role, token in (("bos", bos), ("eos", eos), ("pad", pad)):
        if token is not None:
            getattr(writer, f"add_{role}_token_id")(token)
    if template is not None:
        writer.add_chat_template(template)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), width), dtype=embd_dtype))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    if output:  # an output matrix of its own: not tied to the embedding
        writer.add_tensor("output.weight", np.zeros((len(tokens), width), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_tiny_gguf(
    path, seed: int = 0, layers: int = 2, width: int = 64, words: int = 61, renamed: int | None = None, context=256
):
    """A real (random) llama-architecture GGUF in float32 that llama.cpp loads and runs in milliseconds: `layers`
    blocks of width `width` (4 heads, 2 KV heads, a feed-forward twice as wide), `context` tokens, an untied output, a
    SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 bytes (any text encodes), then `words` tokens "▁t0",
    "▁t1", …; token `renamed`, if given, spelled "▁x" instead (another vocabulary)."""
    import numpy as np
    from gguf import GGUFWriter, LlamaFileType, TokenType

    rng = np.random.default_rng(seed)
    heads, kv_heads, ff = 4, 2, 2 * width
    writer = GGUFWriter(path, "llama")
    writer.add_name(f"tiny llama {layers}x{width}")
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(width // heads)
    writer.add_file_type(LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *(f"▁t{i}" for i in range(words))]
    if renamed is not None:
        tokens[renamed] = "▁x"
    vocab = len(tokens)
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * vocab)
    kinds = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL, *[TokenType.BYTE] * 256]
    writer.add_token_types([*kinds, *[TokenType.NORMAL] * words])
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    def weight(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale / np.sqrt(shape[-1])).astype(np.float32)

    kv = width // heads * kv_heads
    writer.add_tensor("token_embd.weight", weight(vocab, width, scale=4.0))
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", weight(width, width))
        writer.add_tensor(f"blk.{i}.attn_k.weight", weight(kv, width))
        writer.add_tensor(f"blk.{i}.attn_v.weight", weight(kv, width))
        writer.add_tensor(f"blk.{i}.attn_output.weight", weight(width, width))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(ff, width))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(ff, width))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(width, ff))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    writer.add_tensor("output.weight", weight(vocab, width, scale=8.0))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def fake_ms(what: str, tokens: int) -> float:
    """Every test's pass times unless it hands in its own (issue 52.6: no test depends on the clock): a target pass
    over k tokens 10 + 2(k − 1) ms, a draft forward 1 ms (a clock.FakeTimer's `ms`)."""
    return 1.0 if what == "draft" else 10.0 + 2.0 * (tokens - 1)


# A process's default timer, set as its interpreter starts (a sitecustomize module on its PYTHONPATH): fake_ms,
# nothing disturbed. Its models run; their times are decided, so what an app server or a command line prints does
# not depend on what else the machine runs (issue 52.6). The tests' own process: tests/conftest.py.
FAKE_PASS_TIMES = f"""import os
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as app.py sets it, before torch is imported
from specviz.analysis import clock
{inspect.getsource(fake_ms)}
clock.set_default(clock.FakeTimer(fake_ms))
"""


def fake_pass_times(folder) -> dict[str, str]:
    """The environment (PYTHONPATH) that makes a child process time with FAKE_PASS_TIMES; its module in `folder`."""
    from pathlib import Path

    site = Path(folder) / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(FAKE_PASS_TIMES)
    return {"PYTHONPATH": str(site)}
