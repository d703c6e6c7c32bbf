"""specviz: see speculative decoding token by token.

The library behind the app: an engine that performs speculative decoding exactly as docs/algorithm.md
describes (Leviathan et al. 2023; Chen et al. 2023) and records every decision in immutable
traces, the models it can pair, the metrics and theory it reports, and the charts it draws.
It never imports Streamlit.
"""

from specviz.core.config import MODES, SpecConfig
from specviz.core.engine import Decoder, DecodingFinished
from specviz.core.metrics import Metrics
from specviz.core.rules import RuleOutcome, acceptance_length, choose, each_rule
from specviz.core.trace import RunTrace, StepTrace, TokenProb
from specviz.drafts.lookup import PromptLookupDrafter
from specviz.errors import (
    ConfigError,
    IncompatibleModelsError,
    ModelError,
    PromptError,
    SpecvizError,
    TraceError,
)
from specviz.loading import (
    PRESETS,
    HubUnreachableError,
    ModelTooLargeError,
    Preset,
    VocabularyMismatchError,
    load_pair,
)
from specviz.models.lm import HFModel, NextTokenModel, Session, TableModel
from specviz.models.pair import ModelPair
from specviz.models.store import ModelStore
from specviz.models.text import HFCodec, IdsCodec, WordCodec

__all__ = [
    "MODES",
    "PRESETS",
    "ConfigError",
    "Decoder",
    "DecodingFinished",
    "HFCodec",
    "HFModel",
    "HubUnreachableError",
    "IdsCodec",
    "IncompatibleModelsError",
    "Metrics",
    "ModelError",
    "ModelPair",
    "ModelStore",
    "ModelTooLargeError",
    "NextTokenModel",
    "Preset",
    "PromptError",
    "PromptLookupDrafter",
    "RuleOutcome",
    "RunTrace",
    "Session",
    "SpecConfig",
    "SpecvizError",
    "StepTrace",
    "TableModel",
    "TokenProb",
    "TraceError",
    "VocabularyMismatchError",
    "WordCodec",
    "acceptance_length",
    "choose",
    "each_rule",
    "load_pair",
]
