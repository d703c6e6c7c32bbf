"""A lean forward for the feature draft (specviz.drafts.feature): the same function as its
transformers modules, written as a few tensor operations over weights prepared once.

At one token per call, the draft's cost on a laptop CPU is mostly overhead: the transformers layer's
Python (masks, cache objects, rotary module) and the kernel torch picks for a one-row product with a
16k-row head (MKL's SGEMV, which runs one core on AMD CPUs, pytorch#96643). Here q, k and v are one
fused product, gate and up another, every weight is stored pre-transposed, and the head picks, once
when it is built, the fastest of `F.linear`, the pre-transposed product and prepacked oneDNN for each
row count it serves (measured on this machine: specviz.models.kernels). The layer's own products keep
the pre-transposed copies: choosing their kernels the same way made a draft token 0.3–1 ms slower
(timed at load in warm caches, they run in a step after the target's pass has evicted them). The
prepared tensors are copies made at load and never changed; the FeatureDraft module they come from stays as it is
(training uses it).

The draft computes the same numbers up to the order of float32 sums (tests/test_llamacpp.py checks
its logits against the transformers forward).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F

from specviz.models.kernels import ChosenLinear


class LeanCache:
    """Keys and values of the draft's one layer, (1, kv heads, tokens, head dim); the interface of a
    one-layer transformers DynamicCache that the draft session uses (crop, gather via `layers`). They live in
    buffers that grow by doubling, so a token's keys are written in place, not the whole cache copied. Keys and values
    keep a length each: gather_cache sets the keys first, then reads the values it gathers."""

    is_sliding = False

    def __init__(self) -> None:
        self._keys: torch.Tensor | None = None  # (1, kv heads, capacity, head dim)
        self._values: torch.Tensor | None = None
        self._key_length = self._value_length = 0
        self.layers = [self]

    def __len__(self) -> int:
        return self._key_length

    @property
    def keys(self) -> torch.Tensor | None:
        return None if self._keys is None else self._keys[..., : self._key_length, :]

    @keys.setter
    def keys(self, keys: torch.Tensor) -> None:  # a whole new set of positions (gather_cache)
        self._keys, self._key_length = keys.contiguous(), keys.shape[-2]

    @property
    def values(self) -> torch.Tensor | None:
        return None if self._values is None else self._values[..., : self._value_length, :]

    @values.setter
    def values(self, values: torch.Tensor) -> None:
        self._values, self._value_length = values.contiguous(), values.shape[-2]

    def crop(self, length: int) -> None:
        """transformers' convention: a negative length removes that many tokens from the end."""
        keep = max(0, min(len(self), len(self) + length if length < 0 else length))
        self._key_length = self._value_length = keep

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        held = len(self)
        end = held + keys.shape[-2]
        if self._keys is None or end > self._keys.shape[-2] or end > self._values.shape[-2]:
            capacity = max(64, 2 * end)
            grown = [t.new_empty((*t.shape[:-2], capacity, t.shape[-1])) for t in (keys, values)]
            if held:
                grown[0][..., :held, :] = self.keys
                grown[1][..., :held, :] = self.values
            self._keys, self._values = grown
        self._keys[..., held:end, :] = keys
        self._values[..., held:end, :] = values
        self._key_length = self._value_length = end
        return self.keys, self.values


def product_weights(draft: Any) -> dict[str, torch.Tensor]:
    """The feature draft's layer as five products, each weight (out, in): fc, q k v fused, o, gate and up fused,
    down (its head is the sixth, `draft.head.weight`)."""
    layer = draft.body.layers[0]
    attn, mlp = layer.self_attn, layer.mlp
    return {
        "fc": draft.fc.weight,
        "qkv": torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]),
        "o": attn.o_proj.weight,
        "gate_up": torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),
        "down": mlp.down_proj.weight,
    }


class LeanFeatureDraft:
    """The FeatureDraft's forward (fc, one Llama decoder layer, final norm, subset head) over
    prepared weights. Shared and never mutated: each session owns its LeanCache."""

    def __init__(self, draft: Any) -> None:
        body = draft.body
        layer = body.layers[0]
        mlp = layer.mlp
        config = body.config
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = config.rms_norm_eps
        with torch.no_grad():
            self.embed = body.embed_tokens.weight.detach()  # the target's, shared and read only
            self._prepare(**product_weights(draft))
            self.norm_in = layer.input_layernorm.weight.detach().clone()
            self.norm_post = layer.post_attention_layernorm.weight.detach().clone()
            self.norm_out = body.norm.weight.detach().clone()
            self.inv_freq = body.rotary_emb.inv_freq.detach().clone().float()
            self.rope_scale = float(getattr(body.rotary_emb, "attention_scaling", 1.0))
        self.intermediate = mlp.gate_proj.weight.shape[0]
        self.full_vocab_size = draft.head.full_vocab_size
        self._prepare_head(draft.head.weight.detach(), draft.head.ids.detach().clone())
        self.dtype = self.embed.dtype

    def _prepare(self, **weights: torch.Tensor) -> None:
        """The layer's products (each weight (out, in)), stored pre-transposed."""
        for name, weight in weights.items():
            setattr(self, name + "_t", weight.detach().t().contiguous())

    def _prepare_head(self, weight: torch.Tensor, ids: torch.Tensor) -> None:
        self.head_ids = ids
        self.head_linear = ChosenLinear(weight)

    def _product(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return x @ getattr(self, name + "_t")

    def new_cache(self) -> LeanCache:
        return LeanCache()

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x32.to(x.dtype)

    def _rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def _rotated(self, qk: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q and k, (heads, n, head dim) and (kv heads, n, head dim), from their product's columns (n, q + k size),
        each turned by its position's rotary angles."""
        n = qk.shape[0]
        freqs = positions[:, None].float() * self.inv_freq[None]
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = (emb.cos() * self.rope_scale).to(self.dtype), (emb.sin() * self.rope_scale).to(self.dtype)
        q = qk[:, : self.heads * self.head_dim].view(n, self.heads, self.head_dim).transpose(0, 1)
        k = qk[:, self.heads * self.head_dim :].view(n, self.kv_heads, self.head_dim).transpose(0, 1)
        return self._rope(q, cos, sin), self._rope(k, cos, sin)

    def features(
        self,
        ids: torch.Tensor,
        prev: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: Any = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """g for every position of `ids` (1, n) given the previous positions' features (1, n, H), as
        FeatureDraft.features: the cache grows by n; `attention_mask` (additive, 1×1×n×total) and
        `position_ids` (1, n) shape a tree pass, else the n tokens continue the cached ones causally."""
        n = ids.shape[1]
        held = len(cache)
        x = self._product("fc", torch.cat([self.embed[ids[0]], prev[0].to(self.dtype)], dim=-1))  # (n, H)
        positions = position_ids[0] if position_ids is not None else torch.arange(held, held + n)
        h = self._product("qkv", self._norm(x, self.norm_in))
        q_size, kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q, k = self._rotated(h[:, : q_size + kv_size], positions)
        v = h[:, q_size + kv_size :].view(n, self.kv_heads, self.head_dim).transpose(0, 1)
        keys, values = cache.append(k[None], v[None])
        if attention_mask is None and n > 1:
            attention_mask = torch.ones(n, held + n, dtype=torch.bool).tril(held)[None, None]
        out = F.scaled_dot_product_attention(
            q[None], keys, values, attn_mask=attention_mask, scale=self.head_dim**-0.5, enable_gqa=True
        )
        x = x + self._product("o", out[0].transpose(0, 1).reshape(n, q_size))
        gate_up = self._product("gate_up", self._norm(x, self.norm_post))
        x = x + self._product("down", F.silu(gate_up[:, : self.intermediate]) * gate_up[:, self.intermediate :])
        return self._norm(x, self.norm_out)[None]

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Full-vocabulary logits (−inf outside the subset) for hidden states (n, H)."""
        small = self.head_linear(hidden)
        out = small.new_full((*small.shape[:-1], self.full_vocab_size), float("-inf"))
        out[..., self.head_ids] = small
        return out


class Transposed:
    """y = x Wᵀ over a pre-transposed copy of W (the lean forward's float32 product, as an object)."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight_t = weight.detach().t().contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight_t


class Int8Linear:
    """y = x Wᵀ with W's rows in int8, one scale per row (symmetric), through fbgemm's dynamic kernel: x is quantized
    to 8 bits at each call (one scale for the call, the range halved so that AVX2's 16-bit sums cannot overflow) and
    the products summed in int32, so a row gives the same bits on any thread count. It reads a quarter of float32's
    bytes, which is what a one-row product over a large weight costs on a CPU.

    `smooth` (one positive number per input channel, SmoothQuant's migration): the product is computed as
    (x / s)(W s)ᵀ, the same product in exact arithmetic, so that channels where x is far larger than elsewhere (a
    hidden state's outliers) do not take the one 8-bit scale of x for themselves."""

    def __init__(self, weight: torch.Tensor, smooth: torch.Tensor | None = None) -> None:
        w = weight.detach().to(torch.float32)
        self.smooth = None if smooth is None else smooth.detach().to(torch.float32)
        if self.smooth is not None:
            w = w * self.smooth[None]
        scales = (w.abs().amax(1) / 127).clamp_min(1e-12).double()
        zeros = torch.zeros(len(w), dtype=torch.long)
        with warnings.catch_warnings():  # torch 2.13 marks its quantized tensors deprecated; specviz pins 2.13
            warnings.simplefilter("ignore", UserWarning)
            self.qweight = torch.quantize_per_channel(w, scales, zeros, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(self.qweight, None)

    def held_bytes(self) -> int:
        """The int8 weight, its scales, and the kernel's packed copy of it (the same bytes again)."""
        smooth = 0 if self.smooth is None else 4 * len(self.smooth)
        return 2 * self.qweight.numel() + 16 * self.qweight.shape[0] + smooth

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x if x.dtype == torch.float32 else x.to(torch.float32)
        if self.smooth is not None:
            x32 = x32 / self.smooth
        y = torch.ops.quantized.linear_dynamic(x32, self.packed, True)
        return y if x.dtype == torch.float32 else y.to(x.dtype)


def smoothing(input_max: torch.Tensor, weight: torch.Tensor, strength: float = 0.7) -> torch.Tensor:
    """SmoothQuant's per-channel scale s_j = max|x_j|^a / max|W_·j|^(1−a) from the largest |x| seen in each input
    channel (`input_max`) and the weight (out, in): a = `strength` of x's range moved into the weight."""
    w_max = weight.detach().abs().amax(0).to(torch.float32).clamp_min(1e-5)
    return input_max.to(torch.float32).clamp_min(1e-5) ** strength / w_max ** (1 - strength)


def int8_available() -> bool:
    """Whether this torch has a CPU engine for int8 products (fbgemm or its x86 successor; qnnpack on ARM)."""
    return bool(torch.backends.quantized.supported_engines) and hasattr(torch.ops.quantized, "linear_dynamic")


PRODUCTS = ("fc", "qkv", "o", "gate_up", "down", "head")
INT8_PRODUCTS = PRODUCTS  # the int8 draft's products in int8 (Int8FeatureDraft; docs/performance.md: all of them
# beat float32 for gate and up and the head alone, 1.6 against 2.4 ms for the layer, one row, this AVX2 EPYC)
TABLE_POSITIONS = 4096  # the int8 draft's rotary tables (2 MB); later positions computed as the float32 draft does


class InputMaxima(LeanFeatureDraft):
    """The lean forward, recording the largest |input| each product sees in each channel (`maxima`, by name; the
    head's from `record_head`): what Int8FeatureDraft's smoothing is calibrated on. For offline calibration only."""

    def __init__(self, draft: Any) -> None:
        super().__init__(draft)
        self.maxima: dict[str, torch.Tensor] = {}

    def _see(self, name: str, x: torch.Tensor) -> None:
        seen = x.detach().abs().reshape(-1, x.shape[-1]).amax(0).to(torch.float32)
        self.maxima[name] = torch.maximum(self.maxima[name], seen) if name in self.maxima else seen

    def _product(self, name: str, x: torch.Tensor) -> torch.Tensor:
        self._see(name, x)
        return super()._product(name, x)

    def record_head(self, hidden: torch.Tensor) -> None:
        self._see("head", hidden)


class Int8FeatureDraft(LeanFeatureDraft):
    """The lean forward with its products in int8 (Int8Linear; `int8`, by name, PRODUCTS: by default all six; one not
    named stays float32 and pre-transposed) and the head over its `rows` most frequent tokens (indices into the
    draft's head, in order of frequency; all of them if None): a cheaper draft whose q is not the float32 draft's.
    `input_max` (by product name; from InputMaxima on the target's own text): each int8 product smoothed by
    `smoothing(input_max[name], its weight, strength)`; one without is not. Norms and attention stay float32."""

    def __init__(
        self,
        draft: Any,
        rows: torch.Tensor | None = None,
        input_max: dict[str, torch.Tensor] | None = None,
        strength: float = 0.7,
        int8: tuple[str, ...] = INT8_PRODUCTS,
    ) -> None:
        self._rows = rows
        self._input_max = input_max or {}
        self._strength = strength
        self.int8 = tuple(int8)
        super().__init__(draft)
        angles = torch.arange(TABLE_POSITIONS, dtype=torch.float32)[:, None] * self.inv_freq[None]
        half = (angles.sin() * self.rope_scale).to(self.dtype)
        self._cos = (torch.cat([angles, angles], dim=-1).cos() * self.rope_scale).to(self.dtype)
        self._sin = torch.cat([-half, half], dim=-1)  # x.roll(half) · this = rotate_half(x) · sin

    def _int8(self, name: str, weight: torch.Tensor) -> Int8Linear:
        seen = self._input_max.get(name)
        return Int8Linear(weight, None if seen is None else smoothing(seen, weight, self._strength))

    def _prepare(self, **weights: torch.Tensor) -> None:
        self.products: dict[str, Any] = {}
        for name, weight in weights.items():
            if name in self.int8:
                self.products[name] = self._int8(name, weight)
            else:
                self.products[name] = Transposed(weight)

    def _prepare_head(self, weight: torch.Tensor, ids: torch.Tensor) -> None:
        keep = torch.arange(len(ids)) if self._rows is None else self._rows.long().sort().values
        self.head_ids = ids[keep]
        self.head_linear = self._int8("head", weight[keep]) if "head" in self.int8 else ChosenLinear(weight[keep])

    def _product(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return self.products[name](x)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, weight.shape, weight, self.eps)

    def _rotated(self, qk: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """As the float32 forward's, in fewer operations: q and k turned together, the angles' cosines and signed
        sines read from tables made for the first TABLE_POSITIONS positions."""
        n = qk.shape[0]
        if int(positions.max()) >= len(self._cos):
            return super()._rotated(qk, positions)
        cos, sin = self._cos[positions][:, None], self._sin[positions][:, None]  # (n, 1, head dim)
        x = qk.view(n, self.heads + self.kv_heads, self.head_dim)
        turned = torch.addcmul(x * cos, x.roll(self.head_dim // 2, dims=-1), sin).transpose(0, 1)
        return turned[: self.heads], turned[self.heads :]
