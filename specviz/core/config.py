"""Settings of one speculative decoding run (docs/algorithm.md, "Three acceptance modes")."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

from specviz.errors import ConfigError
from specviz.limits import MAX_TAU, MAX_TOPK, MAX_TREE_NODES

Mode = Literal["textbook", "lossless", "greedy"]  # docs/algorithm.md, "Three acceptance modes"
MODES: tuple[Mode, ...] = get_args(Mode)
TauPolicy = Literal["fixed", "heuristic", "confidence"]  # docs/algorithm.md, "Variants"
TAU_POLICIES: tuple[TauPolicy, ...] = get_args(TauPolicy)
# how a lossless-mode step is verified (docs/algorithm.md, "Verification as serving engines run it"): three lossless
# rules, then three lossy ones ("Lossy rules"), whose output is not the target's
Lossless = Literal["token", "one-hot", "block"]
Lossy = Literal["typical", "sglang", "ensemble"]
Verification = Literal["token", "one-hot", "block", "typical", "sglang", "ensemble"]
VERIFICATIONS: tuple[Lossless, ...] = get_args(Lossless)  # the lossless rules
LOSSY: tuple[Lossy, ...] = get_args(Lossy)  # the lossy rules, each labelled lossy wherever it is shown
RULES: tuple[Verification, ...] = get_args(Verification)  # every rule a lossless-mode step may be verified by


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """The lossy rules' settings, named as their engines name them (docs/algorithm.md, "Lossy rules")."""

    posterior_threshold: float = 0.09  # typical acceptance's ε (vLLM V0 TypicalAcceptanceSampler)
    posterior_alpha: float = 0.3  # typical acceptance's δ
    threshold_single: float = 1.0  # SGLang's --speculative-accept-threshold-single t_s (1.0: lossless)
    threshold_acc: float = 1.0  # SGLang's --speculative-accept-threshold-acc t_a (1.0: lossless)
    # transformers' assistant_ensemble_weight w: the TARGET's weight in the mixture w·p + (1 − w)·q (1.0: lossless)
    ensemble_weight: float = 0.7


@dataclass(frozen=True)
class SpecConfig:
    tau: int = 4  # τ: draft tokens proposed per step
    mode: Mode = "textbook"  # docs/algorithm.md table
    temperature: float = 1.0  # applied to p and q alike; 0 means argmax (one-hot)
    top_k: int = 0  # keep the k most likely tokens of p and of q; 0 keeps all
    top_p: float = 1.0  # nucleus: smallest set with mass >= top_p; 1.0 keeps all
    seed: int = 0  # seeds the run's torch.Generator: same seed, same trace
    max_new_tokens: int = 32  # hard cap on emitted tokens; never exceeded
    top_n: int = 10  # size of the top-n slices of q, p and the residual kept in traces
    # τ policy (docs/algorithm.md, "Variants"): fixed τ; heuristic (start at τ, +2 after a fully accepted step,
    # −1 after a rejection, never below 1); confidence (at most τ, stop drafting when the draft's top
    # probability at the next position is below `confidence`; the first draft token is always proposed)
    tau_policy: TauPolicy = "fixed"
    confidence: float = 0.4
    broken_draft: bool = False  # a deliberate bug: every draft token conditions on the prefix alone
    # token trees (docs/algorithm.md, "Token trees"; SGLang's names): children per expanded node, levels drafted,
    # nodes verified. steps = 0 is the chain of τ; topk = 1, steps = num_draft_tokens = τ is the same chain
    # drafted and walked as a tree
    topk: int = 1
    steps: int = 0
    num_draft_tokens: int = 0
    # lossless mode's verification rule: token (r ≤ p/q), one-hot (r ≤ p(ŷ): q one-hot at the drafted token,
    # as vLLM and SGLang verify EAGLE, MTP and n-gram drafts), block (Sun et al.: the last position whose r ≤ h)
    verification: Verification = "token"
    # the lossy rules' settings (Knobs; docs/algorithm.md, "Lossy rules"): each read only by its own rule
    posterior_threshold: float = 0.09
    posterior_alpha: float = 0.3
    threshold_single: float = 1.0
    threshold_acc: float = 1.0
    ensemble_weight: float = 0.7

    def __post_init__(self) -> None:
        _check_int("tau", self.tau, 1, MAX_TAU)
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        _check_float("temperature", self.temperature, 0.0, 100.0)
        _check_int("top_k", self.top_k, 0, 10**9)
        _check_float("top_p", self.top_p, 0.0, 1.0)
        if self.top_p <= 0.0:
            raise ConfigError(f"top_p must be in (0, 1]; got {self.top_p}")
        _check_int("seed", self.seed, 0, 2**63 - 1)
        _check_int("max_new_tokens", self.max_new_tokens, 1, 100_000)
        _check_int("top_n", self.top_n, 1, 1000)
        if self.tau_policy not in TAU_POLICIES:
            raise ConfigError(f"tau_policy must be one of {', '.join(TAU_POLICIES)}; got {self.tau_policy!r}")
        _check_float("confidence", self.confidence, 0.0, 1.0)
        if not isinstance(self.broken_draft, bool):
            raise ConfigError(f"broken_draft must be true or false; got {self.broken_draft!r}")
        self._check_tree()
        self._check_verification()

    def _check_verification(self) -> None:
        if self.verification not in RULES:
            raise ConfigError(f"verification must be one of {', '.join(RULES)}; got {self.verification!r}")
        for name in ("posterior_threshold", "posterior_alpha", "threshold_single", "threshold_acc", "ensemble_weight"):
            _check_float(name, getattr(self, name), 0.0, 1.0)
        if self.threshold_acc <= 0.0:
            raise ConfigError(f"threshold_acc must be in (0, 1]; got {self.threshold_acc}")
        if self.verification == "token":
            return
        if self.mode != "lossless":
            raise ConfigError(
                f"the {self.verification} verification rule decides lossless steps; {self.mode} mode has its own "
                "rule: use lossless mode, or verification='token'"
            )
        if self.verification in LOSSY and self.verification != "sglang" and self.tree:
            raise ConfigError(
                f"the lossy {self.verification} rule is walked on chains here; a token tree is verified by a lossless "
                "rule (verification='token' or 'one-hot') or SGLang's thresholds (verification='sglang')"
            )
        if self.verification == "block" and self.tree:
            raise ConfigError(
                "block verification judges a chain of draft tokens as one block; a token tree is verified token by "
                "token (verification='token') or with one-hot q (verification='one-hot', SGLang's tree sampling)"
            )

    def _check_tree(self) -> None:
        _check_int("topk", self.topk, 1, MAX_TOPK)
        _check_int("steps", self.steps, 0, MAX_TAU)
        _check_int("num_draft_tokens", self.num_draft_tokens, 0, MAX_TREE_NODES)
        if not self.steps:
            if self.topk != 1 or self.num_draft_tokens:
                raise ConfigError("a token tree needs steps ≥ 1 (levels drafted); steps = 0 is the chain of τ")
            return
        most = sum(self.topk**d for d in range(1, self.steps + 1))
        if not 1 <= self.num_draft_tokens <= most:
            raise ConfigError(
                f"num_draft_tokens must be between 1 and {most} (every node of {self.steps} levels of {self.topk} "
                f"children); got {self.num_draft_tokens}"
            )
        if self.tau_policy != "fixed" or self.broken_draft:
            raise ConfigError("a token tree has its own shape: use the fixed τ policy and a working draft")

    @property
    def tree(self) -> bool:
        """Whether steps are drafted and walked as token trees."""
        return self.steps > 0

    @property
    def lossy(self) -> bool:
        """Whether the run's rule is lossy: its output does not follow the target's distribution."""
        return self.mode == "lossless" and self.verification in LOSSY

    @property
    def knobs(self) -> Knobs:
        """The lossy rules' settings, as one record."""
        return Knobs(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Knobs)})

    @property
    def depth(self) -> int:
        """The most draft tokens one step can accept: τ for a chain, steps for a tree."""
        return self.steps if self.tree else self.tau

    @property
    def scored_per_step(self) -> int:
        """The draft positions one step scores and keeps: τ on a chain, every node of a token tree (its
        num_draft_tokens, not its depth)."""
        return self.num_draft_tokens if self.tree else self.tau

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.verification == "token":  # the default rule: settings saved before it existed read the same
            del data["verification"]
        for knob in dataclasses.fields(Knobs):  # so do the lossy rules' settings at their defaults
            if data[knob.name] == knob.default:
                del data[knob.name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpecConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        return cls(**data)


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer; got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo} and {hi}; got {value}")


def _check_float(name: str, value: object, lo: float, hi: float) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or (isinstance(value, float) and math.isnan(value)):  # (an int is never NaN, however long)
        raise ConfigError(f"{name} must be a number; got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo} and {hi}; got {value}")
