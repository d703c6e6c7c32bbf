"""Loading models into pairs: local directories and Hugging Face hub ids.

Every failure becomes a typed `ModelError` whose message says what to do next.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specviz.errors import ModelError
from specviz.lm import HFModel
from specviz.pair import ModelPair
from specviz.text import HFCodec


def load_hf(spec: str) -> tuple[Any, Any]:
    """(model, tokenizer) from a local directory or a hub id, with trust_remote_code=False."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = str(Path(spec).expanduser()) if Path(spec).expanduser().is_dir() else spec
    if source == spec and os.path.sep in spec and not Path(spec).exists():
        raise ModelError(f"no such directory: {spec}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(source, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise ModelError(f"could not load {spec!r}: {_first_line(exc)}") from exc
    return model.eval(), tokenizer


def load_pair(target: str, draft: str) -> ModelPair:
    """A pair from two local directories or hub ids; the target's tokenizer encodes text."""
    target_model, tokenizer = load_hf(target)
    draft_model, _ = load_hf(draft)
    return ModelPair(HFModel(target_model, target), HFModel(draft_model, draft), HFCodec(tokenizer, target))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
