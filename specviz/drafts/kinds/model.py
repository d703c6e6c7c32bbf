"""A separate model as the draft (a hub id or a local folder): any causal LM whose tokenizer is the target's (checked
token by token before the first step), or beside a served target a standalone model with its tokenizer."""

from __future__ import annotations

from typing import Any

from specviz import specs
from specviz.analysis.engine_flags import Flag
from specviz.drafts.kinds import MODEL, TOKENIZER, Beside, DraftKind, EngineTarget, register, served_flags
from specviz.errors import IncompatibleModelsError, ModelError
from specviz.models.hub import estimate_parameters, load_config, load_model
from specviz.models.lm import HFModel, NextTokenModel


class VocabularyMismatchError(IncompatibleModelsError):
    """Draft and target tokenizers differ in size or in their token ↔ id mapping."""


class ModelDraft(DraftKind):
    name = "model"
    rank = 90
    label = "a separate model (hub id or folder)"
    help = "any causal LM of the target's tokenizer: a hub id or a local folder"
    example = "HuggingFaceTB/SmolLM2-135M-Instruct"
    needs = frozenset({TOKENIZER})
    across = MODEL

    def claims(self, spec: specs.ModelSpec) -> bool:
        return isinstance(spec, specs.Named)

    def build(self, spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
        if beside.torch is None:  # beside a served target: the model alone, its tokenizer the pair's codec
            return standalone(spec, beside)
        if spec == beside.spec:
            return beside.torch  # the same model as the target: it drafts for itself
        model, tokenizer = load_model(str(spec), beside.limit, beside.device, beside.dtype, beside.progress)
        check_vocabularies(beside.tokenizer, tokenizer, beside.torch.name, str(spec))
        return HFModel(model, str(spec))

    def params(self, spec: specs.ModelSpec, target: specs.ModelSpec) -> int:
        return estimated_params(spec)

    def engine_file(self, text: str) -> str:
        return text

    def engine_settings(
        self, target: EngineTarget, *, label: str, spec: str, file: str, name: str, tau: int
    ) -> tuple[tuple[Flag, ...], str]:
        """vLLM's and SGLang's draft model beside a hub target."""
        if target.model_id:
            note = "llama.cpp and LM Studio run GGUF files: convert both models to run them there."
            return served_flags(target, file, tau, "draft_model"), note
        return (), f"vLLM and SGLang run {label} beside a hub target: this target is not one."


def standalone(spec: specs.ModelSpec, beside: Beside) -> NextTokenModel:
    """The draft as a model of its own with its own tokenizer (beside a served target, loading's `open_model`)."""
    if beside.open_model is None:
        raise ModelError(
            f"{spec.text!r} drafts beside a served target or a torch target; {beside.spec.text!r} is neither"
        )
    return beside.open_model(spec)


def estimated_params(spec: specs.ModelSpec) -> int:
    """A hub model's or a folder's parameters, from its config alone (0 where it cannot be read)."""
    try:
        return estimate_parameters(load_config(str(spec)))
    except (ModelError, OSError, ValueError):
        return 0


def check_vocabularies(target_tok: Any, draft_tok: Any, target_name: str, draft_name: str) -> None:
    """Same size and the same token ↔ id mapping, or a VocabularyMismatchError naming the first
    differing entry."""
    t_vocab, d_vocab = target_tok.get_vocab(), draft_tok.get_vocab()
    if t_vocab == d_vocab:
        return
    t_by_id = {i: tok for tok, i in t_vocab.items()}
    d_by_id = {i: tok for tok, i in d_vocab.items()}
    first = next(i for i in sorted(set(t_by_id) | set(d_by_id)) if t_by_id.get(i) != d_by_id.get(i))
    raise VocabularyMismatchError(
        f"the draft {draft_name!r} ({type(draft_tok).__name__}, {len(d_vocab)} tokens) and the target "
        f"{target_name!r} ({type(target_tok).__name__}, {len(t_vocab)} tokens) use different vocabularies: "
        f"id {first} is {d_by_id.get(first)!r} in the draft but {t_by_id.get(first)!r} in the target. "
        f"Pick two models from one family."
    )


register(ModelDraft())
