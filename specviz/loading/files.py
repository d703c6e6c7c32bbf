"""GGUF models as loading opens them: whether a spec names one, its file (made, found or downloaded), the name every
page gives it, its header read once; and, for the plan, its file where knowing it needs no download."""

from __future__ import annotations

from pathlib import Path

from specviz import specs
from specviz.drafts.kinds import GGUFModel
from specviz.loading import options
from specviz.loading.options import Spec
from specviz.models import embedded, gguf, quantize
from specviz.specs import ModelSpec

EMBEDDED_PARAMS = 134_515_008  # SmolLM2-135M-Instruct's weights


def is_gguf(spec: Spec) -> bool:
    """A GGUF model spec: a .gguf file, "ollama:NAME[:TAG]", "hf:ORG/REPO:FILE_OR_QUANT", or "embedded:KIND" (the
    embedded target quantized here: Q8_0, Q4_0, Q3_K_M, Q2_K)."""
    return specs.parse(spec).is_gguf


def gguf_path(spec: Spec, progress: embedded.Progress | None = None, places: list[gguf.Place] | None = None) -> Path:
    """The file a GGUF spec names: made here for "embedded:KIND", found in `places` (default: the usual places at
    home) or downloaded otherwise (specviz.models.gguf.resolve); a found model's own file."""
    spec = specs.parse(spec)
    if isinstance(spec, specs.Quantized):
        return quantize.embedded_quantized(spec.quant, progress)
    if isinstance(spec, specs.GGUFFile) and spec.found is not None:
        return spec.found.path
    return gguf.resolve(str(spec), options.DEFAULTS.found_in() if places is None else places, progress)


def gguf_name(info: gguf.GGUFInfo, spec: Spec = "") -> str:
    """How a GGUF model is named on every page: the user's own name for it and its quantization, "my-smol.Q2_K.gguf
    (Q2_K)": the file's name, an Ollama model's NAME:TAG; never the file's general.name, often a training run's
    ("Smollm2 135M 8k Lc100K Mix1 Ep2"). The embedded target's own files (its float32 copy, its quantized drafts) go by
    the embedded model's name, "SmolLM2-135M-Instruct (Q4_0)"."""
    parsed = specs.parse(spec) if spec else None
    ours = isinstance(parsed, specs.Quantized) or Path(info.path).resolve().parent == embedded.cache_root().resolve()
    if ours:
        return f"{embedded.NAME} ({info.quantization})"
    name = Path(info.path).name
    if isinstance(parsed, specs.GGUFFile) and parsed.ref.startswith("ollama:"):  # its blob's name says nothing
        name = parsed.found.name if parsed.found is not None else parsed.ref.removeprefix("ollama:")
    return f"{name} ({info.quantization})"


def open_gguf(
    spec: ModelSpec, progress: embedded.Progress | None = None, places: list[gguf.Place] | None = None
) -> GGUFModel:
    """A GGUF spec's model: its file (found in `places`, downloaded or made here) and its header, read once; a model
    discovery found keeps the header it read."""
    path = gguf_path(spec, progress, places)
    found = spec.found if isinstance(spec, specs.GGUFFile) else None
    info = found.info if found is not None and found.info is not None else gguf.read_info(path)
    return GGUFModel(spec=spec, path=path, info=info, name=gguf_name(info, spec))


def known_gguf_path(spec: ModelSpec, places: list[gguf.Place]) -> Path | None:
    """The file a GGUF spec names, where knowing it needs no download and no quantizing."""
    if isinstance(spec, specs.Quantized):
        quantize.grade(spec.quant)
        return Path(f"{embedded.NAME}.{spec.quant}.gguf")  # made on first use; sized by its bits
    if isinstance(spec, specs.GGUFFile) and spec.found is not None:
        return spec.found.path
    if isinstance(spec, specs.GGUFFile) and spec.on_hub:
        return None
    return gguf.resolve(str(spec), places)


def gguf_file_bytes(spec: ModelSpec, path: Path) -> int:
    if isinstance(spec, specs.Quantized) and not path.is_file():  # not made yet: the target's weights at its bits
        return EMBEDDED_PARAMS * quantize.grade(spec.quant).bits // 8
    return gguf.read_info(path).file_bytes
