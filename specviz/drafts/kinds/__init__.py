"""Draft kinds as plug-ins: one module per kind of draft, each behind `DraftKind`, all in one registry.

A kind says what it needs (`needs`: the target as it runs, the target's torch weights, llama.cpp, a GGUF file of its
own, a tokenizer of its own), which specs are its own (`claims`, and `parse` for a text of its own), how it is built
beside the loaded target (`build`, from a `Beside`), its own parameters before anything loads (`params`, for the
memory plan), how the sidebar shows it (`label`, `help`, `hint`, `offer`), and what it is in Across drafts (`across`,
`own_label`, `engine_file`) with the settings that run it in a serving engine (`engine_settings`). specviz.loading picks
the kind of a draft spec here (`kind_of`) and builds it; the Decode sidebar, the command line's help, Across drafts
(specviz.classroom.across) and docs/architecture.md's table of kinds read the registry.

Adding a kind is one file in this folder that calls `register(MyKind())` when imported: every module here is
imported with the package (`_load_all`), in file-name order, and the registry is kept in `rank` order.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from specviz import specs
from specviz.analysis import engine_flags
from specviz.analysis.engine_flags import Flag
from specviz.errors import ModelError
from specviz.models import gguf
from specviz.models.llamasettings import LlamaSettings
from specviz.models.lm import HFModel, NextTokenModel

# what a kind needs (DraftKind.needs)
TARGET = "the target as it runs"  # its vocabulary, or the target itself: any local target (torch or GGUF)
TARGET_WEIGHTS = "the target's torch weights"  # layers, head, hidden states: a target loaded by transformers
LLAMA = "llama.cpp"  # the draft runs on llama.cpp
FILE = "a GGUF file"  # a file of its own, checked against the target's header before anything heavy loads
TOKENIZER = "a tokenizer of its own"  # a standalone model: it may draft for a served target

# what a draft is in Across drafts (DraftKind.across): kinds of one class share its engine settings there
GGUF, TRAINED, EARLY, LOOKUP, MODEL = "gguf", "trained", "early exit", "lookup", "model"


@dataclass(frozen=True, kw_only=True)
class EngineTarget:
    """The target as serving engines load it: its GGUF file (llama.cpp's -m) and its hub id or folder (vLLM's and
    SGLang's); "" where it has none."""

    gguf_file: str = ""
    model_id: str = ""


@dataclass(frozen=True, kw_only=True)
class GGUFModel:
    """A GGUF model as loading found it: the spec, its file, its parsed header and how pages name it."""

    spec: specs.ModelSpec
    path: Any  # pathlib.Path
    info: gguf.GGUFInfo
    name: str


@dataclass(frozen=True, kw_only=True)
class Beside:
    """What a draft is built beside: the loaded target and the settings of the load (specviz.loading makes it)."""

    spec: specs.ModelSpec  # the target's
    model: NextTokenModel | None  # the target as it runs; None beside a served target (none runs here)
    torch: HFModel | None  # its transformers model (weights a draft may share); None for a GGUF target
    tokenizer: Any  # its transformers tokenizer, None for a GGUF target
    limit: int  # the largest model allowed, in parameters
    device: torch.device
    dtype: torch.dtype
    progress: Callable[[str], None] | None
    lean: bool  # the fast runtimes run a draft's lean forward too
    llama: LlamaSettings  # how llama.cpp runs a draft on it (a server's, handed in through load_pair)
    open_gguf: Callable[[specs.ModelSpec], GGUFModel]  # a GGUF spec's file, found or made (loading's places)
    target_gguf: Callable[[], gguf.GGUFInfo] | None = None  # the target's GGUF header, where it has one
    # beside a served target: a standalone model with its own tokenizer, from loading's store (the pair's codec)
    open_model: Callable[[specs.ModelSpec], NextTokenModel] | None = None

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


class DraftKind:
    """One kind of draft. Subclasses set the class attributes and override `claims` and `build`."""

    name: str = ""  # its key in the registry
    rank: int = 100  # its place among the kinds: in the sidebar's words, and which kind claims a spec first
    label: str = ""  # how the sidebar names it as a choice
    help: str = ""  # one line on what it is
    hint: str = ""  # how to write it, in the free-text draft's help ("" : not listed there)
    offer: str = ""  # the spec the sidebar offers beside any target ("" : none, it needs more than a name)
    example: str = ""  # a spec text of this kind
    needs: frozenset[str] = frozenset({TARGET})
    # what it is in Across drafts: GGUF, TRAINED, EARLY, LOOKUP, MODEL or a class of its own ("": not listed there)
    across: str = ""

    def parse(self, text: str) -> specs.ModelSpec | None:
        """This kind's spec for a text of its own; None for the texts specviz.specs reads."""
        return None

    def claims(self, spec: specs.ModelSpec) -> bool:
        raise NotImplementedError

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        raise NotImplementedError

    def params(self, spec: specs.ModelSpec, target: specs.ModelSpec) -> int:
        """Its own weights' parameters, estimated before anything loads (0: none of its own, or not known)."""
        return 0

    def own_label(self, text: str) -> str:
        """How Across drafts names the pair's own draft of this kind."""
        return f"the pair's draft ({text})"

    def engine_file(self, text: str) -> str:
        """What a serving engine loads for the draft `text` (a GGUF file, a hub id or a folder); "" where none does."""
        return ""

    def engine_settings(
        self, target: EngineTarget, *, label: str, spec: str, file: str, name: str, tau: int
    ) -> tuple[tuple[Flag, ...], str]:
        """The settings that run the draft `spec` (as Across drafts names it, `label`; what an engine loads, `file`,
        and the user's name for it, `name`) at τ for `target` in the engines that can, and a note on what is left
        out. By default no engine runs it."""
        return (), f"No serving engine loads {label} ({self.help}): it shows what such a draft does, here."

    @property
    def is_target(self) -> bool:
        """The target drafts for itself: no part of its own."""
        return False

    @property
    def standalone(self) -> bool:
        return TOKENIZER in self.needs

    @property
    def target_only(self) -> bool:
        """Built from the target as it runs and nothing else: it drafts beside any local target, GGUF ones too."""
        return self.needs <= {TARGET}


_KINDS: dict[str, DraftKind] = {}


def register(kind: DraftKind) -> DraftKind:
    """Add `kind` (its name must be new); its own text, if it has one, is then parsed by specviz.specs.parse."""
    if not kind.name or kind.name in _KINDS:
        raise ValueError(f"a draft kind needs a name of its own; {kind.name!r} is taken or empty")
    _KINDS[kind.name] = kind
    if type(kind).parse is not DraftKind.parse:
        specs.add_parser(kind.parse)
    return kind


def unregister(name: str) -> None:
    kind = _KINDS.pop(name, None)
    if kind is not None:
        specs.remove_parser(kind.parse)


def kinds() -> list[DraftKind]:
    """Every registered kind, in rank order."""
    return sorted(_KINDS.values(), key=lambda k: (k.rank, k.name))


def kind_of(spec: specs.ModelSpec) -> DraftKind:
    """The kind that builds the draft `spec`: the first in rank order that claims it."""
    for kind in kinds():
        if kind.claims(spec):
            return kind
    raise ModelError(f"{spec.text!r} is no draft: {hints()}")


def served_flags(target: EngineTarget, draft: str, tau: int, method: str) -> tuple[Flag, ...]:
    """vLLM's and SGLang's settings for a hub target with `draft` (a hub id or folder; "" for a model-free method)."""
    return tuple(
        flag
        for engine in ("vLLM", "SGLang")
        for flag in engine_flags.settings(target.model_id, draft, tau, engine=engine, method=method)
    )


def of_class(across: str) -> DraftKind | None:
    """The first kind in rank order that is `across` in Across drafts (whose engine settings a draft of that class
    takes); None for a class no kind has."""
    return next((k for k in kinds() if k.across == across), None)


def offered() -> list[DraftKind]:
    """The kinds the sidebar offers beside any target (self, prompt lookup, …): a fixed spec, the target alone."""
    return [k for k in kinds() if k.offer and k.target_only]


def hints() -> str:
    """How each kind is written, in one line: "self, prompt-lookup, early-exit:K, …, or …"."""
    said = [k.hint for k in kinds() if k.hint]
    return ", ".join(said[:-1]) + f", or {said[-1]}" if len(said) > 1 else "".join(said)


def _load_all() -> None:
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{module}")


_load_all()
