"""Which runtime runs a target: "auto" resolved, and a runtime asked for where it cannot run refused with why."""

from __future__ import annotations

import torch

from specviz import specs
from specviz.errors import ModelError
from specviz.loading.options import AUTO, KERNELS, RUNTIMES, TORCH, Spec
from specviz.models import llamacpp


def resolve_runtime(
    target: Spec,
    runtime: str = AUTO,
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    *,
    default: str = AUTO,
) -> str:
    """The runtime that will run `target`. "auto" (`default` where a server names one: $SPECVIZ_RUNTIME), for the
    embedded target on a CPU in float32: llama.cpp when llama-cpp-python is installed, else torch on per-shape kernels;
    any other target: torch. Asking for a runtime where it cannot run is a ModelError that says why."""
    target = specs.parse(target)
    if runtime == AUTO and not target.is_gguf:  # the default a GGUF file has no choice in
        runtime = default
    if runtime not in RUNTIMES:
        raise ModelError(f"unknown runtime {runtime!r}: use {', '.join(RUNTIMES)}")
    cpu = device is None or device.type == "cpu"
    served = isinstance(target, specs.Served)
    if target.is_gguf:
        if runtime not in (AUTO, llamacpp.RUNTIME):
            raise ModelError(f"a GGUF file runs on llama.cpp; {target.text!r} cannot run on {runtime}")
        if not llamacpp.available():
            raise ModelError(f"a GGUF target runs on llama.cpp, which is not installed: {llamacpp.INSTALL_HINT}")
        return llamacpp.RUNTIME
    if runtime == AUTO:
        if not isinstance(target, specs.Embedded) or not cpu or dtype != torch.float32:
            return TORCH
        return llamacpp.RUNTIME if llamacpp.available() else KERNELS
    if runtime == KERNELS and (served or not cpu or dtype != torch.float32):
        raise ModelError("the torch-kernels runtime runs a local target on the CPU in float32; use torch")
    if runtime == llamacpp.RUNTIME:
        if not isinstance(target, specs.Embedded):
            raise ModelError(
                f"the llama.cpp runtime runs the embedded target and GGUF files; {target.text!r} runs on torch"
            )
        if not cpu or dtype != torch.float32:
            raise ModelError("the llama.cpp runtime runs on the CPU in float32: use device cpu and dtype float32")
        if not llamacpp.available():
            raise ModelError(f"the llama.cpp runtime is not installed: {llamacpp.INSTALL_HINT}")
    return runtime
