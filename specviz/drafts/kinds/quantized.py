"""A quantized self-draft (`embedded:Q8_0`, Q4_0, Q3_K_M, Q2_K): the embedded target quantized by llama.cpp's
quantizer here on first use (specviz.models.quantize), a real second model whose acceptance falls with its bits."""

from __future__ import annotations

from specviz import specs
from specviz.drafts.kinds import register
from specviz.drafts.kinds.gguf_file import GGUFDraft


class QuantizedDraft(GGUFDraft):
    name = "quantized"
    rank = 60
    label = "the embedded target quantized here"
    help = "the target drafting for itself in fewer bits, quantized by llama.cpp on first use"
    hint = "embedded:Q8_0, embedded:Q4_0, embedded:Q3_K_M, embedded:Q2_K (the embedded target quantized here)"
    example = "embedded:Q4_0"

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.Quantized)

    def engine_file(self, text: str) -> str:
        return text  # made here on first use (Across drafts names the copy's file where it lists it)


register(QuantizedDraft())
