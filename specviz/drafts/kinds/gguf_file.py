"""A GGUF draft (`PATH.gguf`, `ollama:NAME[:TAG]`, `hf:ORG/REPO:QUANT`) beside the embedded target: its header is
checked against the target's float32 GGUF (vocabulary, special tokens, chat template) before it loads, and it runs on
llama.cpp. Beside a GGUF target too: specviz.loading opens both files first (their memory is checked together) and
hands the draft's to `build`."""

from __future__ import annotations

from specviz import specs
from specviz.analysis import engine_flags
from specviz.analysis.engine_flags import Flag
from specviz.drafts.kinds import FILE, GGUF, LLAMA, Beside, DraftKind, EngineTarget, register
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
    across = GGUF

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.GGUFFile)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        """Beside the embedded target (its float32 GGUF's header) or a GGUF target: its file opened (found,
        downloaded or made here), checked against the target's header, and loaded on llama.cpp."""
        if beside.target_gguf is None:
            raise ModelError(
                f"a GGUF draft ({spec.text!r}) pairs with the embedded target or a GGUF target; {beside.spec.text!r} "
                "is neither"
            )
        target = beside.target_gguf()
        file = beside.open_gguf(spec)
        gguf.check_pair(target, file.info)
        return llamacpp.from_settings(file.path, file.name, beside.llama)

    def engine_file(self, text: str) -> str:
        return gguf.parse_spec(text) or text

    def engine_settings(
        self, target: EngineTarget, *, label: str, spec: str, file: str, name: str, tau: int
    ) -> tuple[tuple[Flag, ...], str]:
        """llama-server's and LM Studio's llama.cpp engine beside a GGUF target's file, p-min 0."""
        if not target.gguf_file:
            return (), f"llama-server and LM Studio run {label} beside a GGUF file of the target: this target has none."
        note = (
            "p-min 0: every step drafts τ tokens, as this benchmark did (llama.cpp's own default stops a draft "
            "earlier where the draft is unsure). vLLM and SGLang serve hub models, not these files."
        )
        return engine_flags.own_gguf_pair(target.gguf_file, file, name, tau), note


register(GGUFDraft())
