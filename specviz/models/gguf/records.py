"""What the GGUF package hands out: a file's header read as a model (GGUFInfo), a place where GGUF files lie (Place)
and a file found there (FoundModel), with the names of the kinds of place and how deep discovery looks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HF_CACHE = "Hugging Face cache"
LM_STUDIO = "LM Studio"
OLLAMA = "Ollama"
MODELS_DIR_ENV = "SPECVIZ_MODELS_DIR"
MODELS_DIR = f"${MODELS_DIR_ENV}"
FOLDER = "folder"  # any other folder of GGUF files, listed as $SPECVIZ_MODELS_DIR is (a class's, specviz's cache)
MAX_DEPTH = 4  # folders below a place that discovery descends
MAX_FILES = 500  # GGUF files listed per place

Entry = tuple[str, str, Path, str | None]  # what a place's lister yields: spec, name, path, error


@dataclass(frozen=True, kw_only=True)
class GGUFInfo:
    """What a GGUF file's header says about its model; no tensor is read."""

    path: Path  # the file (for a split model: its first part)
    architecture: str  # general.architecture: "llama", "qwen2", ...
    name: str  # general.name, else the file's stem
    parameters: int  # elements of every tensor (every part of a split model)
    read_per_pass: int  # elements one decoding pass reads: all but the input embedding table where the file has its
    # own output matrix (a pass reads k rows of that table); where the two are tied, the table once
    quantization: str  # llama.cpp's name of the file type: "F32", "Q8_0", "Q4_K_M", ...
    file_bytes: int  # size on disk (every part), the memory its weights take mapped
    context_length: int | None  # positions it was trained for
    n_layer: int | None  # transformer blocks
    n_embd: int | None  # hidden size
    kv_bytes_per_token: int | None  # float32 KV cache per position: keys and values of every KV head and layer
    vocab_size: int  # tokens in its vocabulary
    bos_id: int | None  # beginning-of-sequence token
    bos_text: str | None
    eos_id: int | None  # end-of-sequence token
    eos_text: str | None
    pad_id: int | None  # padding token
    pad_text: str | None
    chat_template: str | None  # the Jinja template of tokenizer.chat_template
    vocab_fingerprint: str  # SHA-256 of the token list (texts in id order): equal lists, equal fingerprints
    n_head: int | None = None  # attention heads (the most of any layer)


@dataclass(frozen=True, kw_only=True)
class Place:
    """A folder where GGUF files may lie, and how it is laid out."""

    source: str  # HF_CACHE, LM_STUDIO, OLLAMA or MODELS_DIR
    path: Path


@dataclass(frozen=True, kw_only=True)
class FoundModel:
    """A GGUF file found on this computer, read or not."""

    spec: str  # what load code is given: the file's path, or "ollama:NAME:TAG"
    name: str  # as the user knows it: "ORG/REPO FILE", "PUBLISHER/REPO FILE", "NAME:TAG", a relative path
    source: str  # where it was found: HF_CACHE, LM_STUDIO, OLLAMA or MODELS_DIR
    path: Path  # the GGUF file (an Ollama blob for Ollama models)
    info: GGUFInfo | None  # None when the file could not be read
    error: str | None = None  # why not
