"""What loading is told: the runtimes a target may run on, and the settings a server hands load_pair (LoadSettings;
DEFAULTS, read at each call, where none are handed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from specviz import limits
from specviz.models import gguf, llamacpp, remote
from specviz.specs import ModelSpec

Spec = str | ModelSpec  # what load_pair and its neighbours take: a spec, or the text of one (parsed once, at entry)
AUTO, TORCH, KERNELS = "auto", "torch", "torch-kernels"
# the target's runtime; "auto": llama.cpp where it can run, else torch on per-shape kernels (specviz.models.kernels)
RUNTIMES = (AUTO, llamacpp.RUNTIME, KERNELS, TORCH)
RUNTIME_ENV = "SPECVIZ_RUNTIME"  # what "auto" means on a server (specviz.server.config)


@dataclass(frozen=True, kw_only=True)
class LoadSettings:
    """What a server hands load_pair besides the pair (specviz.server.config: its environment, read at the top);
    the defaults are the library's own, whatever the environment says."""

    runtime: str = AUTO  # what the runtime "auto" means
    max_params: int = limits.DEFAULT_MAX_PARAMS  # the largest model, in parameters
    places: tuple[gguf.Place, ...] | None = None  # where GGUF files are found; None: the usual places at home
    remote_timeout_s: float = remote.DEFAULT_TIMEOUT_S  # a served target's answer
    llama: llamacpp.LlamaSettings = field(default_factory=llamacpp.LlamaSettings)

    def found_in(self) -> list[gguf.Place]:
        """The places handed in; else the usual places at home, the Hugging Face cache where huggingface_hub keeps
        it (its own setting, as an outside script that downloads with it expects: HF_HOME is huggingface_hub's)."""
        if self.places is not None:
            return list(self.places)
        from huggingface_hub import constants

        return gguf.default_places({}, Path.home(), hf_cache=Path(constants.HF_HUB_CACHE))


DEFAULTS = LoadSettings()  # load_pair's when none is handed: read as options.DEFAULTS at each call
