"""Per-shape kernel choice for linear products on a CPU: for each weight shape and row count, the
fastest of three kernels, timed once on this machine when the model is prepared.

- `F.linear` (MKL's SGEMM/SGEMV; its one-row path runs one core on AMD CPUs, pytorch#96643),
- the product with a pre-transposed copy of the weight (`x @ Wᵀ`, contiguous),
- oneDNN with the weight prepacked once into its blocked layout (`torch.ops.mkldnn`).

Which one wins depends on the shape and the row count (one row when decoding, τ + 1 when verifying): prepacked
oneDNN took the embedded model's LM head in half the time of F.linear or less, at one row and at five
(docs/performance.md, "The numbers behind the code's defaults"). The kernels compute the same products in a
different order of float32 sums: p moves by ~1e-6, not more.

The prepared tensors are copies made once and never changed afterwards; `with_chosen_kernels`
replaces a freshly loaded model's Linear modules before the model is shared (per-model, never
per-run state).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

ROWS = (1, 2, 4, 8, 16)  # row counts timed (more rows: the kernel chosen for 16)
KINDS = ("linear", "transposed", "onednn")


def onednn_available() -> bool:
    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


class ChosenLinear:
    """y = x Wᵀ (+ b) for x of shape (rows, in), with the kernel that was fastest here for each row
    count; `choice` (rows → kind) may be given to skip the timing (a shape already timed)."""

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        repeats: int = 7,
        choice: dict[int, str] | None = None,
        kinds: tuple[str, ...] = KINDS,
    ) -> None:
        self.weight = weight.detach()
        self.bias = None if bias is None else bias.detach()
        kinds = tuple(k for k in kinds if k != "onednn" or (onednn_available() and weight.dtype == torch.float32))
        self._prepared: dict[str, torch.Tensor] = {}
        with torch.inference_mode():
            for kind in set(kinds if choice is None else choice.values()):  # a given choice: only its kernels
                self._prepare(kind)
            if choice is None:
                choice = {}
                for rows in ROWS:
                    x = torch.randn(rows, weight.shape[1], dtype=weight.dtype)
                    choice[rows] = min(kinds, key=lambda k, x=x: _median(self.run, k, x, repeats))
        self.choice = dict(choice)
        for kind in set(self._prepared) - set(self.choice.values()):  # keep only what is used
            del self._prepared[kind]

    def _prepare(self, kind: str) -> None:
        if kind == "transposed":
            self._prepared[kind] = self.weight.t().contiguous()  # a copy: the model's weight is never touched
        elif kind == "onednn":
            self._prepared[kind] = torch.ops.mkldnn._reorder_linear_weight(self.weight, None)

    def run(self, kind: str, x: torch.Tensor) -> torch.Tensor:
        if kind == "transposed":
            y = x @ self._prepared[kind]
            return y if self.bias is None else y + self.bias
        if kind == "onednn":
            return torch.ops.mkldnn._linear_pointwise(x, self._prepared[kind], self.bias, "none", [], "")
        return F.linear(x, self.weight, self.bias)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        bucket = next((r for r in ROWS if r >= rows), ROWS[-1])
        return self.run(self.choice[bucket], x)


class KernelLinear(torch.nn.Module):
    """An nn.Linear's function on chosen kernels; any leading shape (batch, tokens) is flattened to rows."""

    def __init__(self, linear: torch.nn.Linear, choice: dict[int, str] | None = None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight  # the model's own (tied weights stay tied); never changed here
        self.kernel = ChosenLinear(linear.weight, linear.bias, choice=choice)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        return self.kernel(rows).reshape(*x.shape[:-1], self.out_features)


def with_chosen_kernels(model: torch.nn.Module, log: Callable[[str], None] | None = None) -> torch.nn.Module:
    """Replace every nn.Linear of a freshly loaded CPU float32 `model` (before it is shared) by a
    KernelLinear; each distinct weight shape is timed once. Returns the same model."""
    choices: dict[tuple[int, ...], dict[int, str]] = {}
    linears = [(name, module) for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]
    for name, module in linears:
        shape = tuple(module.weight.shape)
        replacement = KernelLinear(module, choices.get(shape))
        if shape not in choices:
            choices[shape] = replacement.kernel.choice
            if log:
                log(f"{shape[0]}×{shape[1]}: {choices[shape]}")
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, replacement)
    return model


def _median(run: Callable[[str, torch.Tensor], torch.Tensor], kind: str, x: torch.Tensor, repeats: int) -> float:
    run(kind, x)  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(kind, x)
        times.append(time.perf_counter() - start)
    return sorted(times)[repeats // 2]
