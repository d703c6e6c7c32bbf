"""GGUF model files as models: what a file holds (read from its header alone), whether two files pair as target and
draft, the memory a pair needs, where GGUF files lie on this computer, and what a GGUF spec names.

One module per part: `header` (the file's header, parsed), `info` (what a file holds: GGUFInfo), `pairing` (target
and draft), `memory` (what a pair needs, what is free), `places` (where GGUF files lie, the models found there),
`ollama` (Ollama's store and names), `specs` (GGUF specs and the hub); `records` holds the records they share."""

from specviz.models.gguf.info import KV_BYTES_PER_VALUE, read_info, vocabulary
from specviz.models.gguf.memory import (
    DEFAULT_TOKENS,
    NotEnoughMemoryError,
    check_fits,
    format_bytes,
    free_memory,
    memory_needed,
)
from specviz.models.gguf.ollama import OLLAMA_LIBRARY, OLLAMA_MODEL_LAYER, OLLAMA_REGISTRY, resolve_ollama, shown
from specviz.models.gguf.pairing import SHOWN_DIFFERENCES, can_pair, check_pair, compatible_drafts, pair_differences
from specviz.models.gguf.places import default_places, find_models, is_model_file
from specviz.models.gguf.records import (
    FOLDER,
    HF_CACHE,
    LM_STUDIO,
    MAX_DEPTH,
    MAX_FILES,
    MODELS_DIR,
    MODELS_DIR_ENV,
    OLLAMA,
    FoundModel,
    GGUFInfo,
    Place,
)
from specviz.models.gguf.specs import Progress, parse_spec, progress_bar, resolve

__all__ = [
    "DEFAULT_TOKENS",
    "FOLDER",
    "HF_CACHE",
    "KV_BYTES_PER_VALUE",
    "LM_STUDIO",
    "MAX_DEPTH",
    "MAX_FILES",
    "MODELS_DIR",
    "MODELS_DIR_ENV",
    "OLLAMA",
    "OLLAMA_LIBRARY",
    "OLLAMA_MODEL_LAYER",
    "OLLAMA_REGISTRY",
    "SHOWN_DIFFERENCES",
    "FoundModel",
    "GGUFInfo",
    "NotEnoughMemoryError",
    "Place",
    "Progress",
    "can_pair",
    "check_fits",
    "check_pair",
    "compatible_drafts",
    "default_places",
    "find_models",
    "format_bytes",
    "free_memory",
    "is_model_file",
    "memory_needed",
    "pair_differences",
    "parse_spec",
    "progress_bar",
    "read_info",
    "resolve",
    "resolve_ollama",
    "shown",
    "vocabulary",
]
