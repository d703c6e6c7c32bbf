"""A roofline cost model of speculative decoding: what it would gain on hardware and models the app does not run.

One forward pass of a model over k new tokens for each of `batch` sequences costs

    T(k) = max(bytes / bandwidth, FLOPs / throughput) + overhead

(the roofline of Williams, Waterman, Patterson, CACM 52(4), 2009). Bytes: the weights, read once per pass, and every
sequence's KV cache; FLOPs: 2 per weight per token, plus attention. From T come the verify cost v(k) = T(k) / T(1),
the draft cost c = T_draft(1) / T_target(1) and the speedup S_v(τ) = E / (τc + v(τ + 1)) of
specviz.analysis.theory (Leviathan, Kalman, Matias 2023, arXiv 2211.17192; v as in docs/algorithm.md, "Verify cost").
`fit_hardware` fits the hardware numbers to the passes timed on this machine (specviz.analysis.measure.pass_times).

Sources: each preset's `source`; published speedups it is checked against (tests/test_costmodel.py): Spec-Bench
(Xia et al. 2024, github.com/hemingkx/Spec-Bench, Leaderboard.md), Leviathan et al. 2023 (Table 2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONTEXT = 512  # default tokens already in each sequence's KV cache when a pass runs (a chat prompt and its reply)


@dataclass(frozen=True)
class Hardware:
    """A device as the roofline sees it."""

    name: str  # what it is
    bandwidth: float  # memory bandwidth, bytes/s (datasheet peak)
    flops: float  # dense matrix throughput at the weight precision, FLOP/s (datasheet peak, no sparsity)
    overhead: float  # s added to every pass whatever its size: launches its work does not hide, sampling, framework
    source: str  # where the numbers come from: a URL or datasheet, or "fitted on this machine"
    layer_overhead: float = 0.0  # s added per decoder layer per pass: operator dispatch on a CPU, which nothing hides
    memory: float = 0.0  # bytes of memory the device holds (0: unknown): a pair that needs more takes several
    # a pass over a single row (one token, one sequence) runs a matrix-vector product, which a runtime may make
    # faster than its matrix-matrix path: that pass's time over the roofline's (fitted; 1 for the presets)
    single_row: float = 1.0


@dataclass(frozen=True)
class Model:
    """A model as one decoding pass sees it."""

    name: str  # what it is
    params: float  # weights one pass reads: all but the input embedding table (a pass reads k of its rows); tied: once
    bytes_per_weight: float  # 4 for float32, 2 for bf16/fp16
    layers: int  # decoder layers (the per-layer overhead counts them)
    kv_bytes_per_token: int  # KV cache per token: layers × 2 × kv_heads × head_dim × bytes
    attn_width: int  # query heads × head dim: attention costs 4 × attn_width FLOPs per key, token and layer
    source: str = ""  # the config the numbers come from


def kv_bytes(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int) -> int:
    """KV cache bytes per token: a key and a value vector per KV head and layer."""
    return layers * 2 * kv_heads * head_dim * bytes_per_value


# GPU per-pass overhead: SGLang runs Llama-3.1-8B on one H100 at 158.34 tok/s (docs.sglang.io, speculative decoding,
# "Performance Highlights"): 6.32 ms a token, against 4.50 ms to read its 15.0 GB of weights and a 512-token KV cache
# at 3.35 TB/s. The 1.8 ms left (launches, sampling, scheduling, and the bandwidth a GEMV does not reach) is used for
# every GPU, as a framework's cost more than a chip's; a plain eager-PyTorch loop may pay more, a compiled one less.
GPU_OVERHEAD = 1.8e-3
# fmt: off
HARDWARE: dict[str, Hardware] = {h.name: h for h in (
    # Ryzen 7 7840U: dual-channel DDR5-5600 = 2 × 8 B × 5.6 GT/s = 89.6 GB/s; FP32 8 cores × 32 FLOP/cycle (two 8-wide
    # FMA pipes) × ~4.0 GHz all-core ≈ 1.0 TFLOP/s. Overheads: estimates (~40 PyTorch operators per decoder layer at a
    # few µs each), not measurements: fit_hardware measures them on the machine at hand.
    Hardware("laptop CPU (Ryzen 7 7840U, fp32)", 89.6e9, 1.02e12, 0.2e-3,
             "liliputing.com Ryzen 7040U table; cputronic.com (DDR5-5600); 32 FLOP/cycle: AVX2 FMA", 0.1e-3, 32e9),
    Hardware("NVIDIA A100 80GB SXM", 2.039e12, 312e12, GPU_OVERHEAD,
             "thundercompute.com/blog/nvidia-a100-specs-full-guide; glennklockwood.com/garden/processors/A100", 0.0,
             80e9),
    Hardware("NVIDIA H100 SXM", 3.35e12, 989.4e12, GPU_OVERHEAD,
             "NVIDIA H100 datasheet (archive-lib.hpctech.co.jp copy: 1,979 TFLOP/s with sparsity, dense 1/2)", 0.0,
             80e9),
    Hardware("NVIDIA H200 SXM", 4.8e12, 989e12, GPU_OVERHEAD,
             "lzwjava.github.io/nvidia-h200-gpu-specs-en (4.8 TB/s); itkb.uw.cz H200 vs B300 (dense)", 0.0, 141e9),
    # Apple publishes no GPU TFLOP/s: TechPowerUp's FP32 via HF's hardware table, FP16 taken as the FP32 rate
    Hardware("Apple M3 Max (40-core GPU)", 400e9, 14.2e12, GPU_OVERHEAD,
             "macmegasite.com (400 GB/s); huggingface/huggingface.js packages/tasks/src/hardware.ts", 0.0, 128e9),
    # 71 TFLOP/s: FP16 tensor with FP32 accumulate, as PyTorch's fp16 GEMMs run (142 with FP16 accumulate)
    Hardware("NVIDIA RTX 3090", 936e9, 71e12, GPU_OVERHEAD,
             "holynerdvana.blogspot.com RTX 3090 specifications (936 GB/s, 142 FP16); GA102 whitepaper (FP32 acc.)",
             0.0, 24e9),
    # Leviathan et al.'s device. XLA compiles a whole pass into one program, with no per-kernel launches: 0.1 ms is an
    # assumption (consistent with the c ≈ 0.008 their 3.4× implies)
    Hardware("Google TPU v4", 1.2e12, 275e12, 0.1e-3,
             "docs.cloud.google.com/tpu/docs/v4 (275 TFLOP/s bf16, 1,200 GBps, 32 GiB HBM)", 0.0, 32 * 2**30),
)}
# fmt: on


def _llama(
    name: str, params: float, bytes_: int, layers: int, kv_heads: int, head_dim: int, heads: int, source: str
) -> Model:
    return Model(name, params, bytes_, layers, kv_bytes(layers, kv_heads, head_dim, bytes_), heads * head_dim, source)


HF = "config.json on huggingface.co/"
# fmt: off
MODELS: dict[str, Model] = {m.name: m for m in (
    # 30 × 3,540,096 (layer) + 49,152 × 576 (tied embedding, read as the head) + 576 = 134,515,008
    _llama("SmolLM2-135M (fp32)", 134_515_008, 4, 30, 3, 64, 9, HF + "HuggingFaceTB/SmolLM2-135M-Instruct"),
    # assets/draft: one decoder layer (3,540,096) + norm (576) + fc 2·576→576 (663,552) + the target's LM-head rows for
    # its 16,384 most generated tokens (9,437,184) = 13,641,408 read per draft token (32.5 M with all 49,152 rows)
    _llama("SmolLM2-135M embedded draft (fp32)", 13_641_408, 4, 1, 3, 64, 9, "assets/draft/draft.safetensors"),
    _llama("Llama-3.1-8B", 7_504_924_672, 2, 32, 8, 128, 32, HF + "meta-llama/Llama-3.1-8B (8.03 B in all)"),
    # EAGLE-1/2 head: a layer (218.1 M) + fc 2h→h (33.6 M), reading the target's 128,256-row LM head (525.3 M)
    _llama("EAGLE-2 head for Llama-3.1-8B", 777_007_104, 2, 1, 8, 128, 32,
           "SafeAILab/EAGLE eagle/train/EAGLE-LLaMA3-Instruct-8B.json"),
    # EAGLE-3: attention over a 2h input (67.1 M) + MLP (176.2 M) + fc 3h→h (50.3 M) + own 32,000-row head (131.1 M)
    _llama("EAGLE-3 head for Llama-3.1-8B", 424_689_664, 2, 1, 8, 128, 32, "hemingkx/Spec-Bench model/eagle3/cnets.py"),
    _llama("Llama-3.1-70B", 69_503_033_344, 2, 80, 8, 128, 64, HF + "meta-llama/Llama-3.1-70B (70.55 B in all)"),
    _llama("Llama-3.2-1B", 1_235_814_400, 2, 16, 8, 64, 32, HF + "meta-llama/Llama-3.2-1B (tied embedding)"),
    _llama("Vicuna-7B v1.3", 6_607_343_616, 2, 32, 32, 128, 32, "SafeAILab/EAGLE train/vicuna_7B_config.json"),
    _llama("Vicuna-13B v1.3", 12_852_024_320, 2, 40, 40, 128, 40, "SafeAILab/EAGLE train/vicuna_13B_config.json"),
    _llama("Vicuna-33B v1.3", 32_315_951_616, 2, 60, 52, 128, 52, "LLaMA-30B shape: 60 layers, 6656, 52 heads"),
    # a layer (202.4 M) + fc (33.6 M) + the target's 32,000-row LM head (131.1 M)
    _llama("EAGLE head for Vicuna-7B", 367_013_888, 2, 1, 32, 128, 32, "SafeAILab/EAGLE train/vicuna_7B_config.json"),
    # JackFram/llama-68m's shape: 2 layers, hidden 768, 12 heads, FFN 3072, untied 32,000 vocab (68.0 M in all)
    _llama("vicuna-68m", 43_454_208, 2, 2, 12, 64, 12, HF + "double7/vicuna-68m"),
    # T5 v1.1 decoder + LM head (the encoder runs once per request; cross-attention's KV is left out)
    _llama("T5-XXL v1.1 decoder", 6_373_019_648, 2, 24, 64, 64, 64, "OpenBMB/BMInf bminf/arch/t5/config.py"),
    _llama("T5-small v1.1 decoder", 41_628_160, 2, 8, 6, 64, 6, "google/t5-v1_1-small: 512 / 1024 / 6 × 64, 8 layers"),
)}
# fmt: on


def pass_bytes(model: Model, k: int = 1, batch: int = 1, context: int = CONTEXT) -> float:
    """Bytes one pass moves: the weights once, and per sequence the KV cache read (context) and written (k)."""
    return model.params * model.bytes_per_weight + batch * (context + k) * model.kv_bytes_per_token


def pass_flops(model: Model, k: int = 1, batch: int = 1, context: int = CONTEXT) -> float:
    """2 FLOPs per weight per token, and attention: 4 × attn_width per key and layer, every token taken to see all
    context + k keys (causality within the pass ignored: an upper bound)."""
    return batch * k * (2.0 * model.params + 4.0 * model.layers * model.attn_width * (context + k))


def pass_time(model: Model, hw: Hardware, k: int = 1, batch: int = 1, context: int = CONTEXT) -> float:
    """Seconds of one forward over k new tokens for each of `batch` sequences holding `context` tokens."""
    roof = max(pass_bytes(model, k, batch, context) / hw.bandwidth, pass_flops(model, k, batch, context) / hw.flops)
    time = roof + hw.overhead + model.layers * hw.layer_overhead
    return time * hw.single_row if k * batch == 1 else time


def verify_cost(model: Model, hw: Hardware, k: int, batch: int = 1, context: int = CONTEXT) -> float:
    """v(k) = T(k) / T(1) at the same batch."""
    return pass_time(model, hw, k, batch, context) / pass_time(model, hw, 1, batch, context)


def draft_cost(draft: Model, target: Model, hw: Hardware, batch: int = 1, context: int = CONTEXT) -> float:
    """c = T_draft(1) / T_target(1): a draft pass over one token per sequence in target passes, same batch."""
    return pass_time(draft, hw, 1, batch, context) / pass_time(target, hw, 1, batch, context)


def tokens_per_step(tau: int, alpha: float | None = None, rates: Sequence[float] | None = None) -> float:
    """E = 1 + Σ_{i≤τ} a_i, a_i the unconditional rate at draft position i (the share of steps that accept it);
    from an i.i.d. α, a_i = α^i and E = (1 − α^{τ+1}) / (1 − α)."""
    if rates is not None:
        if len(rates) < tau:
            raise ValueError(f"{len(rates)} per-position rates cannot give E at τ = {tau}")
        return 1.0 + float(sum(rates[:tau]))
    if alpha is None:
        raise ValueError("give alpha or per-position rates")
    return float(tau + 1) if alpha >= 1.0 else (1.0 - alpha ** (tau + 1)) / (1.0 - alpha)


def predicted_speedup(
    target: Model,
    draft: Model,
    hw: Hardware,
    tokens: float,
    draft_passes: int,
    verify_tokens: int,
    batch: int = 1,
    context: int = CONTEXT,
    draft_width: int = 1,
) -> float:
    """Tokens per step over a step's time in target-alone steps: E · T(1) / (passes · T_draft(width) + T(verify)).
    A chain is passes = τ, verify = τ + 1, width 1: S_v(τ) = E / (τc + v(τ + 1))."""
    step = draft_passes * pass_time(draft, hw, draft_width, batch, context)
    step += pass_time(target, hw, verify_tokens, batch, context)
    return tokens * pass_time(target, hw, 1, batch, context) / step


def chain_speedup(
    target: Model,
    draft: Model,
    hw: Hardware,
    tau: int,
    alpha: float | None = None,
    rates: Sequence[float] | None = None,
    batch: int = 1,
    context: int = CONTEXT,
) -> float:
    """S_v(τ) of a chain of τ drafted tokens, E from α or from measured per-position rates."""
    return predicted_speedup(target, draft, hw, tokens_per_step(tau, alpha, rates), tau, tau + 1, batch, context)


def tree_speedup(
    target: Model,
    draft: Model,
    hw: Hardware,
    num_draft_tokens: int,
    depth: int,
    tokens: float,
    topk: int = 1,
    batch: int = 1,
    context: int = CONTEXT,
) -> float:
    """A tree of `num_draft_tokens` nodes grown in `depth` draft passes over `topk` tokens each (the app's trees of
    4/8/16 nodes: specviz.analysis.trees.TREE_SHAPES), verified in one pass over num_draft_tokens + 1 tokens; E is
    the measured tokens per step."""
    return predicted_speedup(target, draft, hw, tokens, depth, num_draft_tokens + 1, batch, context, topk)


def best_tau(
    target: Model,
    draft: Model,
    hw: Hardware,
    alpha: float | None = None,
    rates: Sequence[float] | None = None,
    batch: int = 1,
    context: int = CONTEXT,
    max_tau: int = 16,
) -> tuple[int, float]:
    """(τ, S_v(τ)) for the chain length in 1..max_tau (at most as many as there are rates) that is fastest."""
    top = min(max_tau, len(rates)) if rates is not None else max_tau
    speeds = {t: chain_speedup(target, draft, hw, t, alpha, rates, batch, context) for t in range(1, top + 1)}
    tau = max(speeds, key=speeds.__getitem__)
    return tau, speeds[tau]


def break_even_batch(
    target: Model,
    draft: Model,
    hw: Hardware,
    alpha: float | None = None,
    rates: Sequence[float] | None = None,
    context: int = CONTEXT,
    max_tau: int = 16,
    max_batch: int = 4096,
) -> int | None:
    """The smallest batch at which even the best τ is slower than the target alone (None: none up to max_batch).
    The best speedup is taken to fall with the batch (weights shared, compute not): doubling, then bisection."""

    def slower(batch: int) -> bool:
        return best_tau(target, draft, hw, alpha, rates, batch, context, max_tau)[1] < 1.0

    if slower(1):
        return 1
    low, high = 1, 2
    while not slower(high):
        if high >= max_batch:
            return None
        low, high = high, min(2 * high, max_batch)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if slower(middle) else (middle, high)
    return high


@dataclass(frozen=True)
class Fit:
    """Hardware numbers fitted to timed passes."""

    hardware: Hardware  # the numbers that best explain the times; source "fitted on this machine"
    max_rel_error: float  # the largest |fitted − measured| / measured over the measured k
    compute_bound_from: int | None  # the first k on the compute roof; None: all on the memory roof, where overhead
    # and bandwidth cannot be told apart (the overhead is then 0 and the bandwidth absorbs it: T(k) is still right)


def fit_hardware(
    ks: Sequence[int],
    times: Sequence[float],
    model: Model,
    context: int = CONTEXT,
    per_layer: bool = True,
    name: str = "this machine",
    flat: float = 0.01,
    single_row: bool = False,
) -> Fit:
    """Fit T(k) = max(bytes(k) / bandwidth, FLOPs(k) / throughput) + overhead, at batch 1, to `times` (seconds) of
    one pass over each k in `ks` (pass_times gives milliseconds: its medians / 1000). A pass over one token is a
    matrix-vector product, which a runtime may run on a faster path than its matrix-matrix one (llama.cpp does): with
    `single_row` and at least three other k, the roofline is fitted to k ≥ 2 and the one-token pass's time over it
    kept as the hardware's `single_row` factor. Least squares on relative
    errors, for each split of the sorted ks into a memory-bound head and a compute-bound tail (at least two k);
    the split whose max() model fits best wins, unless the memory roof alone explains every time within `flat`
    (then a compute roof would be fitted to noise). `per_layer`: the overhead is charged per decoder layer (so a
    one-layer draft pays 1/layers of it: right for CPU dispatch), else per pass (a GPU's launches)."""
    one = [t for k, t in zip(ks, times, strict=True) if k == 1]
    apart = single_row and one and sum(1 for k in ks if k > 1) >= 3
    if apart:
        ks, times = zip(*((k, t) for k, t in zip(ks, times, strict=True) if k > 1), strict=True)
    order = np.argsort(ks)
    k = np.asarray(ks, dtype=np.int64)[order]
    t = np.asarray(times, dtype=np.float64)[order]
    mem = np.array([pass_bytes(model, int(x), 1, context) for x in k])
    ops = np.array([pass_flops(model, int(x), 1, context) for x in k])
    best: tuple[float, float, float, float, int | None] | None = None  # (sse, 1/bw, 1/flops, overhead, first)
    for m in range(len(k), 0, -1):  # all on the memory roof first
        if len(k) - m == 1 or (m < len(k) and len(set(k[m:])) < 2):
            continue
        design = np.zeros((len(k), 3))
        design[:m, 0], design[m:, 1], design[:, 2] = mem[:m], ops[m:], 1.0
        columns = [0] if m == len(k) else [0, 1, 2]
        for cols in (columns, columns[:2]):  # with an overhead, then (if it came out negative) without
            solution = np.zeros(3)
            solution[cols] = np.linalg.lstsq(design[:, cols] / t[:, None], np.ones(len(k)), rcond=None)[0]
            if solution[2] >= 0:
                break
        x, y, o = solution
        if x <= 0 or y < 0:
            continue
        rel = (np.maximum(x * mem, y * ops) + o - t) / t
        sse = float(rel @ rel)
        if best is None or sse < best[0]:
            best = (sse, x, y, o, int(k[m]) if m < len(k) else None)
        if m == len(k) and np.max(np.abs(rel)) <= flat:
            break
    if best is None:
        raise ValueError("no roofline fits these times")
    _, x, y, o, first = best
    x, y, o = float(x), float(y), float(o)
    hw = Hardware(
        name,
        1.0 / x,
        1.0 / y if y > 0 else float("inf"),
        0.0 if per_layer else o,
        "fitted on this machine",
        o / model.layers if per_layer else 0.0,
    )
    if apart:  # the one-token pass exactly as timed
        hw = dataclasses.replace(hw, single_row=float(np.median(one)) / pass_time(model, hw, 1, 1, context))
    fitted = np.array([pass_time(model, hw, int(n), 1, context) for n in k])
    return Fit(hw, float(np.max(np.abs(fitted - t) / t)), first)
