"""A GGUF draft (`PATH.gguf`, `ollama:NAME[:TAG]`, `hf:ORG/REPO:QUANT`) beside the embedded target: its header is
checked against the target's float32 GGUF (vocabulary, special tokens, chat template) before it loads, and it runs on
llama.cpp. Beside a GGUF target specviz.loading pairs the two files itself (their memory is checked together)."""

from __future__ import annotations

from specviz import specs
from specviz.drafts.kinds import FILE, LLAMA, Beside, DraftKind, register
from specviz.errors import ModelError
from specviz.models import gguf, llamacpp
from specviz.models.lm import NextTokenModel


class GGUFDraft(DraftKind):
    name = "gguf"
    rank = 50
    label = "a GGUF file of the target's vocabulary"
    help = "a .gguf file, an Ollama model or a GGUF file on the hub, run on llama.cpp"
    hint = "a GGUF file of the target's vocabulary"
    example = "hf:bartowski/SmolLM2-135M-Instruct-GGUF:Q4_0"
    needs = frozenset({LLAMA, FILE})

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.GGUFFile)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        if not isinstance(beside.spec, specs.Embedded) or beside.target_gguf is None:
            raise ModelError(
                f"a GGUF draft ({spec.text!r}) pairs with the embedded target or a GGUF target; {beside.spec.text!r} "
                "is neither"
            )
        target = beside.target_gguf()
        file = beside.open_gguf(spec)
        gguf.check_pair(target, file.info)
        return llamacpp.from_settings(file.path, file.name, beside.llama)


register(GGUFDraft())
