"""Model specs: the text a user writes for a target or a draft, parsed once (`parse`) into a typed, frozen spec that
loading carries as an object. `str(spec)` gives the canonical text back (for display, snapshots, the sidebar, the
store's keys); `spec.text` keeps what was written (stripped), for messages that quote the user.

| text | spec |
|---|---|
| `embedded` | `Embedded`: SmolLM2-135M-Instruct shipped with specviz (as a draft: its distilled draft) |
| `embedded:Q4_0` | `Quantized`: the embedded target quantized by llama.cpp here (a draft of graded bits) |
| `PATH.gguf`, `ollama:NAME[:TAG]`, `hf:ORG/REPO:QUANT` | `GGUFFile`: a GGUF model on llama.cpp |
| a file of another name that begins with `GGUF` | `GGUFFile`: an Ollama blob (`sha256-<hex>`), a GGUF named `.bin` |
| `vllm:URL[#MODEL]`, `sglang:URL`, `llamacpp:URL` | `Served`: a target behind a serving engine |
| `self`, `prompt-lookup`, `early-exit:K` | `SelfDraft`, `PromptLookup`, `EarlyExit`: drafts made from the target |
| anything else | `Named`: a hub id or a local folder (a trained draft's folder among them) |

Nothing here reads the network, nor a file beyond the first four bytes of a path not named `.gguf` (GGUF's magic,
so that a GGUF under any name is read as one): whether a folder exists or holds a trained draft is asked when it
loads.
A draft kind that brings a text of its own (specviz.drafts.kinds) adds its parser with `add_parser`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from specviz.bounded import whole_number
from specviz.errors import ModelError
from specviz.models import gguf, remote
from specviz.models.hub import EMBEDDED

SELF = "self"
PROMPT_LOOKUP = "prompt-lookup"
EARLY_EXIT = "early-exit"  # "early-exit:K": the target's first K layers, its final norm and head
QUANTIZED = EMBEDDED + ":"  # "embedded:Q4_0": the embedded target quantized by llama.cpp, a draft of graded bits


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A parsed spec. Equal specs name the same model, however they were written."""

    kind: ClassVar[str] = ""
    text: str = field(compare=False)  # as written, stripped: what messages quote

    def __str__(self) -> str:
        return self.text

    @property
    def is_gguf(self) -> bool:
        """A GGUF model run by llama.cpp: a file, an Ollama or hub GGUF, or the embedded target quantized here."""
        return False


@dataclass(frozen=True, kw_only=True)
class Embedded(ModelSpec):
    kind: ClassVar[str] = "embedded"

    def __str__(self) -> str:
        return EMBEDDED


EMBEDDED_SPEC = Embedded(text=EMBEDDED)  # the embedded target (and, as a draft, its distilled draft): the default pair


@dataclass(frozen=True, kw_only=True)
class Named(ModelSpec):
    """A hub id or a local folder (which one is known when it loads)."""

    kind: ClassVar[str] = "model"
    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def path(self) -> Path:
        return Path(self.name).expanduser()


@dataclass(frozen=True, kw_only=True)
class GGUFFile(ModelSpec):
    """A .gguf file (~ expanded), "ollama:NAME:TAG" or "hf:ORG/REPO:FILE_OR_QUANT", written out whole
    (specviz.models.gguf.parse_spec). `found`: the model as discovery found it (path and header), when it came from
    there: then it is not looked for again."""

    kind: ClassVar[str] = "gguf"
    ref: str
    found: gguf.FoundModel | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.ref

    @property
    def is_gguf(self) -> bool:
        return True

    @property
    def on_hub(self) -> bool:
        return self.ref.startswith("hf:")


@dataclass(frozen=True, kw_only=True)
class Quantized(ModelSpec):
    """The embedded target quantized by llama.cpp's quantizer here ("embedded:Q4_0"); the grade is checked when it
    is made (specviz.models.quantize.grade)."""

    kind: ClassVar[str] = "quantized"
    quant: str

    def __str__(self) -> str:
        return QUANTIZED + self.quant

    @property
    def is_gguf(self) -> bool:
        return True


@dataclass(frozen=True, kw_only=True)
class Served(ModelSpec):
    """A target behind a serving engine (specviz.models.remote)."""

    kind: ClassVar[str] = "remote"
    served: remote.RemoteSpec

    def __str__(self) -> str:
        return str(self.served)


@dataclass(frozen=True, kw_only=True)
class SelfDraft(ModelSpec):
    kind: ClassVar[str] = SELF

    def __str__(self) -> str:
        return SELF


@dataclass(frozen=True, kw_only=True)
class PromptLookup(ModelSpec):
    kind: ClassVar[str] = PROMPT_LOOKUP

    def __str__(self) -> str:
        return PROMPT_LOOKUP


@dataclass(frozen=True, kw_only=True)
class EarlyExit(ModelSpec):
    """The target's first `layers` layers, its final norm and head."""

    kind: ClassVar[str] = EARLY_EXIT
    layers: int

    def __str__(self) -> str:
        return f"{EARLY_EXIT}:{self.layers}"


Parser = Callable[[str], "ModelSpec | None"]
_PARSERS: list[Parser] = []  # the texts of draft kinds that bring their own (specviz.drafts.kinds.register)


def add_parser(parser: Parser) -> None:
    """A draft kind's own text: `parser` gives its spec, or None for a text that is not of its kind."""
    if parser not in _PARSERS:
        _PARSERS.append(parser)


def remove_parser(parser: Parser) -> None:
    if parser in _PARSERS:
        _PARSERS.remove(parser)


def parse(text: str | ModelSpec) -> ModelSpec:
    """The spec `text` names (a spec is given back as it is). ModelError for a text of a known form that is not
    well formed: a served target's address, an Ollama or hub GGUF name, an early-exit draft without its K."""
    if isinstance(text, ModelSpec):
        return text
    written = text.strip()
    if remote.is_remote(written):
        return Served(text=written, served=remote.parse_spec(written))
    if written == SELF:
        return SelfDraft(text=written)
    if written == PROMPT_LOOKUP:
        return PromptLookup(text=written)
    if written == EMBEDDED:
        return Embedded(text=written)
    if written.startswith(EARLY_EXIT):
        return EarlyExit(text=written, layers=_layer_count(written))
    if written.startswith(QUANTIZED):
        return Quantized(text=written, quant=written.removeprefix(QUANTIZED))
    if (ref := gguf.parse_spec(written)) is not None:
        return GGUFFile(text=written, ref=ref)
    for parser in _PARSERS:
        if (spec := parser(written)) is not None:
            return spec
    return Named(text=written, name=written)


def found(model: gguf.FoundModel) -> GGUFFile:
    """A GGUF model found on this computer as a spec that keeps its path and header (nothing is looked for again)."""
    return GGUFFile(text=model.spec, ref=gguf.parse_spec(model.spec) or model.spec, found=model)


def _layer_count(text: str) -> int:
    _, _, k = text.partition(":")
    try:
        layers = whole_number(k, error=ValueError, what="K")  # digits 0-9 only: not "²" or "٣"
    except ValueError:
        layers = 0
    if layers < 1:
        raise ModelError(f"write the early-exit draft as {EARLY_EXIT}:K with K ≥ 1 layers; got {text!r}")
    return layers
