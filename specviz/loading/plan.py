"""The memory plan: the parts load_pair would take from a store for a pair, each with the bytes it is estimated to
hold, before anything loads (a class server budgets with it)."""

from __future__ import annotations

import torch

from specviz import specs
from specviz.class_policy import ClassPolicy
from specviz.drafts import kinds
from specviz.drafts.kinds import FILE
from specviz.drafts.kinds.model import estimated_params as model_params
from specviz.loading import options
from specviz.loading.files import EMBEDDED_PARAMS, gguf_file_bytes, known_gguf_path
from specviz.loading.options import AUTO, KERNELS, TORCH, LoadSettings, Spec
from specviz.loading.presets import check_allowed
from specviz.loading.runtime import resolve_runtime
from specviz.models import gguf, llamacpp
from specviz.models.hub import EMBEDDED, resolve_device, resolve_dtype
from specviz.models.llamapool import context_bytes
from specviz.pair_parts import Keys
from specviz.specs import ModelSpec

EMBEDDED_KV_BYTES = 2 * 30 * 3 * 64 * 4  # a token's float32 keys and values: 30 layers, 3 KV heads of 64
EMBEDDED_SHAPE = (49_152, 576, 9)  # its vocabulary, hidden size and attention heads (a batch's buffers)


def planned_parts(
    target: Spec,
    draft: Spec,
    runtime: str = AUTO,
    *,
    device: str = "auto",
    dtype: str = "auto",
    guard: ClassPolicy | None = None,
    settings: LoadSettings | None = None,
) -> list[tuple[tuple, int]]:
    """The parts `load_pair` would take from a store for this pair (the keys it uses), each with the bytes it is
    estimated to hold, before anything loads: a class server budgets its memory with it (specviz.server.paircache)
    and loads only the parts it does not hold yet. A model whose size cannot be known without loading it counts 0.
    Under a class's rules, a target or draft the class does not allow is refused first (RefusedError, check_allowed):
    nothing it names is resolved, fetched, sized or read."""
    target, draft = specs.parse(target), specs.parse(draft)
    rules = guard or ClassPolicy()
    settings = settings or options.DEFAULTS
    check_allowed(target, draft, rules)
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype, device)
    runtime = resolve_runtime(target, runtime, dev, torch_dtype, default=settings.runtime)
    width = torch.tensor([], dtype=torch_dtype).element_size()
    keys, places = Keys(dev, torch_dtype, settings.llama.slots_for(rules.on)), settings.found_in()
    if isinstance(target, specs.Served):
        return [(keys.torch(draft), estimated_params(draft) * width)]
    slots, tokens = keys.slots, settings.llama.slot_tokens

    def pooled(kv: int | None, vocab: int, hidden: int | None, heads: int | None) -> int:
        """The shared batched context (none without slots), its buffers included."""
        if not slots:
            return 0
        shape = {"vocab": vocab, "hidden": hidden or 0, "heads": heads or 0}
        return context_bytes(size=tokens, streams=slots, kv_bytes_per_token=kv or 0, **shape)

    if target.is_gguf:
        path = known_gguf_path(target, places)
        if path is None:  # it would have to be downloaded first: its size is not known here
            return []
        info = gguf.read_info(path)
        pool = pooled(info.kv_bytes_per_token, info.vocab_size, info.n_embd, info.n_head)
        planned = [(keys.llama(path, slots), info.file_bytes + pool)]
        if draft.is_gguf and (draft_path := known_gguf_path(draft, places)) is not None and draft_path != path:
            planned.append((keys.llama(draft_path, 0), gguf_file_bytes(draft, draft_path)))
        return planned
    kind = kinds.kind_of(draft)
    if runtime == KERNELS:
        size = (estimated_params(target) + kind.params(draft, target)) * width
        return [(keys.kernels(target, draft), size)]
    planned = [(keys.torch(target), estimated_params(target) * width)]
    if runtime == llamacpp.RUNTIME:
        planned.append((keys.llama(EMBEDDED, slots), EMBEDDED_PARAMS * 4 + pooled(EMBEDDED_KV_BYTES, *EMBEDDED_SHAPE)))
    if not kind.is_target:
        lean = runtime != TORCH
        size = kind.params(draft, target) * width * (2 if lean else 1)  # lean: prepared copies beside
        if FILE in kind.needs:
            path = known_gguf_path(draft, places)
            size = gguf_file_bytes(draft, path) if path is not None else 0
        planned.append((keys.draft(target, draft, lean), size))
    return planned


def estimated_params(spec: ModelSpec) -> int:
    return EMBEDDED_PARAMS if isinstance(spec, specs.Embedded) else model_params(spec)
