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

from typing import Any

import torch
import torch.nn.functional as F

from specviz.models.kernels import ChosenLinear


class LeanCache:
    """Keys and values of the draft's one layer, (1, kv heads, tokens, head dim); the interface of a
    one-layer transformers DynamicCache that the draft session uses (crop, gather via `layers`)."""

    is_sliding = False

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self.layers = [self]

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    def crop(self, length: int) -> None:
        """transformers' convention: a negative length removes that many tokens from the end."""
        keep = len(self) + length if length < 0 else length
        if self.keys is not None:
            self.keys, self.values = self.keys[..., :keep, :], self.values[..., :keep, :]

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.keys is None or not self.keys.numel():
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=-2)
            self.values = torch.cat([self.values, values], dim=-2)
        return self.keys, self.values


class LeanFeatureDraft:
    """The FeatureDraft's forward (fc, one Llama decoder layer, final norm, subset head) over
    prepared weights. Shared and never mutated: each session owns its LeanCache."""

    def __init__(self, draft: Any) -> None:
        body = draft.body
        layer = body.layers[0]
        attn, mlp = layer.self_attn, layer.mlp
        config = body.config
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = config.rms_norm_eps
        with torch.no_grad():
            self.embed = body.embed_tokens.weight.detach()  # the target's, shared and read only
            self.fc_t = draft.fc.weight.detach().t().contiguous()
            self.qkv_t = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]).t().contiguous()
            self.o_t = attn.o_proj.weight.detach().t().contiguous()
            self.gate_up_t = torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).t().contiguous()
            self.down_t = mlp.down_proj.weight.detach().t().contiguous()
            self.norm_in = layer.input_layernorm.weight.detach().clone()
            self.norm_post = layer.post_attention_layernorm.weight.detach().clone()
            self.norm_out = body.norm.weight.detach().clone()
            self.inv_freq = body.rotary_emb.inv_freq.detach().clone().float()
            self.rope_scale = float(getattr(body.rotary_emb, "attention_scaling", 1.0))
        self.intermediate = mlp.gate_proj.weight.shape[0]
        self.head_ids = draft.head.ids.detach().clone()
        self.full_vocab_size = draft.head.full_vocab_size
        self.head_linear = ChosenLinear(draft.head.weight)
        self.dtype = self.fc_t.dtype

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
        x = torch.cat([self.embed[ids[0]], prev[0].to(self.dtype)], dim=-1) @ self.fc_t  # (n, H)
        positions = position_ids[0] if position_ids is not None else torch.arange(held, held + n)
        freqs = positions[:, None].float() * self.inv_freq[None]
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = (emb.cos() * self.rope_scale).to(self.dtype), (emb.sin() * self.rope_scale).to(self.dtype)

        h = self._norm(x, self.norm_in) @ self.qkv_t
        q_size, kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q = h[:, :q_size].view(n, self.heads, self.head_dim).transpose(0, 1)
        k = h[:, q_size : q_size + kv_size].view(n, self.kv_heads, self.head_dim).transpose(0, 1)
        v = h[:, q_size + kv_size :].view(n, self.kv_heads, self.head_dim).transpose(0, 1)
        q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
        keys, values = cache.append(k[None], v[None])
        if attention_mask is None and n > 1:
            attention_mask = torch.ones(n, held + n, dtype=torch.bool).tril(held)[None, None]
        out = F.scaled_dot_product_attention(
            q[None], keys, values, attn_mask=attention_mask, scale=self.head_dim**-0.5, enable_gqa=True
        )
        x = x + out[0].transpose(0, 1).reshape(n, q_size) @ self.o_t
        gate_up = self._norm(x, self.norm_post) @ self.gate_up_t
        x = x + (F.silu(gate_up[:, : self.intermediate]) * gate_up[:, self.intermediate :]) @ self.down_t
        return self._norm(x, self.norm_out)[None]

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Full-vocabulary logits (−inf outside the subset) for hidden states (n, H)."""
        small = self.head_linear(hidden)
        out = small.new_full((*small.shape[:-1], self.full_vocab_size), float("-inf"))
        out[..., self.head_ids] = small
        return out
