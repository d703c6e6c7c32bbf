"""Immutable records of what the engine did: one `StepTrace` per speculative step, one `RunTrace`
per run. Both convert to pandas DataFrames and to JSON and back without loss.

The trace format lives in one place: every field is defined here and read back here, and a run read from outside
(a saved file) is checked field by field and decision by decision (`check_run`: the checks are
specviz.core.trace_check's, handed this format's field names), so nothing else restates the format."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, get_args

import pandas as pd

from specviz.bounded import UPLOAD_BYTES, UPLOAD_DEPTH, read_json
from specviz.core.config import SpecConfig
from specviz.core.metrics import Metrics, compute_metrics
from specviz.core.trace_check import TraceFormat, check_saved_run
from specviz.errors import TraceError

NextRule = Literal["argmax", "residual", "bonus", "greedy"]  # where the target's token came from
Decision = Literal["accepted", "rejected", "not reached"]  # each draft token's fate
StopReason = Literal["eos", "max_new_tokens", "context_length"]
NEXT_RULES: tuple[NextRule, ...] = get_args(NextRule)
DECISIONS: tuple[Decision, ...] = get_args(Decision)
STOP_REASONS: tuple[StopReason, ...] = get_args(StopReason)


class TokenProb(NamedTuple):
    token: int
    text: str
    prob: float


TopN = tuple[TokenProb, ...]
NodeDecision = Literal["accepted", "rejected", "not tested"]  # a tree node's fate in the walk
NODE_DECISIONS: tuple[NodeDecision, ...] = get_args(NodeDecision)


@dataclass(frozen=True)
class TreeNode:
    """One drafted node of a token tree (docs/algorithm.md, "Token trees")."""

    parent: int  # index of the parent node in TreeTrace.nodes; −1: the root (the last confirmed token)
    depth: int  # 1 for the root's children
    token: int
    text: str
    q: float  # q(token) at the parent: the draft's probability of this child
    p: float  # p(token) at the parent: the target's
    score: float  # path score: the product of q from the root to this node
    rank: int  # 1, 2, …: order among its siblings (highest q first; lossless: drawing order)
    r: float | None  # the draw that tested it; None when untested or in greedy mode
    ratio: float | None  # what r was compared with: p/q (textbook), p′/q′ (lossless); None when untested
    decision: NodeDecision
    p_top: TopN  # top of p after this node (the target's next-token distribution there)
    q_top: TopN  # top of q after this node where the draft expanded it, else empty
    residual_top: TopN = ()  # lossless, after this node was rejected: top of p′ (what the walk sampled from next)
    q_residual_top: TopN = ()  # lossless, after this node was rejected: top of q′ (q without the rejected tokens)


@dataclass(frozen=True)
class TreeTrace:
    """A tree step: every verified node, the walk's path and where it stopped."""

    topk: int
    steps: int
    num_draft_tokens: int
    nodes: tuple[TreeNode, ...]  # breadth first: by depth, then parent, then rank
    path: tuple[int, ...]  # accepted nodes, root to deepest
    stop: int  # node where the walk stopped (−1: the root); the next token hangs below it
    root_p_top: TopN  # top of p at the root
    root_q_top: TopN  # top of q at the root
    # the draft's passes that grew the tree: one per level, over all its expanded nodes (docs/algorithm.md); 0: a
    # trace saved before they were kept (read as its kept depth, which pruning can leave shallower)
    draft_passes: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TreeTrace:
        nodes = []
        for raw in data["nodes"]:
            node = dict(raw)
            for name in ("p_top", "q_top", "residual_top", "q_residual_top"):
                node[name] = _top(node.get(name, ()))
            nodes.append(TreeNode(**node))
        return cls(
            **{
                **data,
                "nodes": tuple(nodes),
                "path": tuple(data["path"]),
                "root_p_top": _top(data["root_p_top"]),
                "root_q_top": _top(data["root_q_top"]),
            }
        )

    def children(self, node: int) -> list[int]:
        """Kept children of `node` (−1: the root), in the order the walk tries them."""
        return sorted((i for i, n in enumerate(self.nodes) if n.parent == node), key=lambda i: self.nodes[i].rank)

    @property
    def accepted_depth(self) -> int:
        return len(self.path)


@dataclass(frozen=True)
class VerifyTrace:
    """A lossless step verified by an engine's rule (docs/algorithm.md, "Verification as serving engines
    run it"): what each draw was compared with and whether it passed. Absent for the token-wise rule,
    whose test is r ≤ p/q (the step's `ratio`)."""

    rule: str  # "one-hot" | "block" | a lossy rule: "typical" | "sglang" | "ensemble"
    # what r_t was compared with: p(ŷ_t) (one-hot), h_t (block), min(1, p/t_a) or 1 (sglang), min(1, m/q) (ensemble);
    # typical: what p(ŷ_t) was compared with, min(ε, δ·exp(−H_t)) (no draw decides it)
    threshold: tuple[float, ...]
    passed: tuple[bool, ...]  # r_t ≤ threshold_t (typical: p(ŷ_t) > threshold_t); block keeps up to the last pass
    w: tuple[float, ...] = ()  # block: w_t = min(1, w_{t−1} p(ŷ_t) / q(ŷ_t)), w_0 = 1
    residual_mass: tuple[float, ...] = ()  # block: R_t = Σ_v max(0, w_t p_{t+1}(v) − q_{t+1}(v)); R_τ = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifyTrace:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclass(frozen=True)
class CostTrace:
    """A step under a lossy rule (docs/algorithm.md, "Lossy rules"): what it gains over its lossless baseline on the
    same draft, and what that costs, exactly (specviz.core.lossy). Absent for the lossless rules, whose cost is 0."""

    rule: str  # "typical" | "sglang" | "ensemble"
    baseline: str  # the lossless rule set against it on the same draft: "one-hot" (typical, sglang), "token" (ensemble)
    accept: tuple[float, ...]  # per draft position: the chance the lossy rule keeps ŷ_t (once position t is reached)
    baseline_accept: tuple[float, ...]  # the chance the baseline keeps the same ŷ_t: p(ŷ_t) or min(1, p/q)
    tv: tuple[float, ...]  # TV(o_t, p_t): how far the token emitted at position t moved from the target's p_t

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CostTrace:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    @property
    def tokens_per_pass(self) -> float:
        """The lossy rule's expected tokens per pass on this draft: 1 + Σ_k Π_{j≤k} a_j (the target's token
        included)."""
        return _expected_length(self.accept)

    @property
    def baseline_tokens_per_pass(self) -> float:
        """The lossless baseline's on the same draft."""
        return _expected_length(self.baseline_accept)

    def decided(self, n: int) -> tuple[float, ...]:
        """TV at the positions whose token this rule decided in a step that kept n: 1..min(n + 1, τ)."""
        return self.tv[: n + 1]


def _expected_length(accept: tuple[float, ...]) -> float:
    length, survive = 1.0, 1.0
    for a in accept:
        survive *= a
        length += survive
    return length


@dataclass(frozen=True)
class StepTrace:
    index: int  # 0-based step number within the run
    context_length: int  # confirmed tokens (prompt + emitted) before this step
    tau: int  # draft tokens proposed this step (config τ, fewer near the end or on EOS)
    draft_tokens: tuple[int, ...]  # ŷ_1..ŷ_τ
    draft_text: tuple[str, ...]
    q: tuple[float, ...]  # q(ŷ_t): draft probability of each draft token
    p: tuple[float, ...]  # p(ŷ_t): target probability of each draft token
    ratio: tuple[float, ...]  # p/q (the acceptance threshold for r)
    r: tuple[float | None, ...]  # uniform draws r_t; None in greedy mode (no draw is made)
    accepted: tuple[bool, ...]  # True only for the contiguous accepted run
    decision: tuple[Decision, ...]  # per draft token
    beta: tuple[float, ...]  # Σ_y min(p, q) at each draft position
    n_accepted: int  # n: length of the accepted run
    next_token: int  # the target's token after the run
    next_text: str
    next_rule: NextRule
    next_prob: float  # probability of next_token under the distribution it was chosen from
    emitted: tuple[int, ...]  # tokens appended to the output (accepted run + next, cut at EOS)
    q_top: tuple[TopN, ...]  # top-n of q at each draft position
    p_top: tuple[TopN, ...]  # top-n of p at each draft position
    next_top: TopN  # top-n of p at position n+1
    residual_top: TopN | None  # top-n of norm(max(0, p − q)) when lossless mode resampled
    draft_ms: float  # wall time of the draft phase
    verify_ms: float  # wall time of the verification phase
    # a tree step (docs/algorithm.md, "Token trees"): every node; the fields above then read the main line (the
    # accepted path, then the first child tried where the walk stopped and its first descendants)
    tree: TreeTrace | None = None
    verify: VerifyTrace | None = None  # a lossless-mode step under any rule but token-wise; None: token-wise
    cost: CostTrace | None = None  # a step under a lossy rule: its gain and its exact cost; None: a lossless rule

    @property
    def nodes(self) -> int:
        """Draft tokens the target verified in this step's pass."""
        return len(self.tree.nodes) if self.tree is not None else self.tau

    @property
    def depth(self) -> int:
        """The deepest draft position of this step: τ for a chain, the deepest node of a tree."""
        if self.tree is None:
            return self.tau
        return max((node.depth for node in self.tree.nodes), default=0)

    @property
    def draft_passes(self) -> int:
        """The draft's forwards this step: one per draft token of a chain, one per level of a tree."""
        if self.tree is None:
            return self.tau
        return self.tree.draft_passes or self.depth

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.verify is None:  # token-wise steps keep the record they always had
            del data["verify"]
        if self.cost is None:  # and lossless steps
            del data["cost"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepTrace:
        fields = dict(data)
        if fields.get("verify") is not None and not isinstance(fields["verify"], VerifyTrace):
            fields["verify"] = VerifyTrace.from_dict(fields["verify"])
        if fields.get("cost") is not None and not isinstance(fields["cost"], CostTrace):
            fields["cost"] = CostTrace.from_dict(fields["cost"])
        for name in _TUPLE_FIELDS:
            fields[name] = tuple(fields[name])
        for name in ("q_top", "p_top"):
            fields[name] = tuple(_top(pos) for pos in fields[name])
        fields["next_top"] = _top(fields["next_top"])
        if fields["residual_top"] is not None:
            fields["residual_top"] = _top(fields["residual_top"])
        if fields.get("tree") is not None and not isinstance(fields["tree"], TreeTrace):
            fields["tree"] = TreeTrace.from_dict(fields["tree"])
        return cls(**fields)

    def to_frame(self) -> pd.DataFrame:
        """The step table: one row per draft position. `attrs` keeps the step-level fields."""
        rows = {name: list(getattr(self, name)) for name in _POSITION_FIELDS}
        frame = pd.DataFrame({"position": range(1, self.tau + 1), **rows})
        frame.attrs["step"] = {k: v for k, v in self.to_dict().items() if k not in rows}
        return frame

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> StepTrace:
        fields = dict(frame.attrs["step"])
        for name in _POSITION_FIELDS:
            fields[name] = [_plain(v) for v in frame[name].tolist()]
        return cls.from_dict(fields)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> StepTrace:
        return cls.from_dict(_read(text))


_POSITION_FIELDS = (
    "draft_tokens",
    "draft_text",
    "q",
    "p",
    "ratio",
    "r",
    "decision",
    "accepted",
    "beta",
    "q_top",
    "p_top",
)
_TUPLE_FIELDS = ("draft_tokens", "draft_text", "q", "p", "ratio", "r", "accepted", "decision", "beta", "emitted")


def _read(text: str | bytes) -> Any:
    return read_json(text, error=TraceError, what="this file", max_bytes=UPLOAD_BYTES, max_depth=UPLOAD_DEPTH)


def _top(entries: Any) -> TopN:
    return tuple(TokenProb(int(t), str(s), float(pr)) for t, s, pr in entries)


def _plain(value: Any) -> Any:
    # pandas turns None into NaN in float columns; NaN never occurs otherwise in a trace
    if isinstance(value, float) and value != value:
        return None
    return value.item() if hasattr(value, "item") else value


@dataclass(frozen=True)
class RunTrace:
    config: SpecConfig
    target_name: str
    draft_name: str
    prompt: str  # the prompt as the user gave it ("" when given as token ids)
    chat: bool  # whether it was wrapped in the target's chat template
    prompt_text: str  # the exact text that was encoded
    prompt_ids: tuple[int, ...]
    steps: tuple[StepTrace, ...]
    new_tokens: tuple[int, ...]  # every emitted token, in order
    text: str  # the emitted tokens decoded
    stop_reason: StopReason | None  # None: not finished
    prefill_ms: float  # wall time to encode the prompt into both caches
    metrics: Metrics
    # a remote target's top-k: p(ŷ), p/q and argmax p are exact; α, β and full-p charts approximate
    target_top_k: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["config"] = self.config.to_dict()
        data["steps"] = [s.to_dict() for s in self.steps]
        data["metrics"] = self.metrics.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunTrace:
        """A run from its dict (a saved trace's JSON), checked completely (check_run); its metrics are
        recomputed from its steps."""
        config = check_run(data)
        fields = {k: v for k, v in data.items() if k != "metrics"}
        fields.update(
            config=config,
            steps=tuple(StepTrace.from_dict(s) for s in data["steps"]),
            prompt_ids=tuple(data["prompt_ids"]),
            new_tokens=tuple(data["new_tokens"]),
        )
        return build_run_trace(**fields)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, indent=indent)

    def outcome(self) -> dict[str, Any]:
        """Everything but the wall-clock timings: what the same models, prompt, settings and seed
        must reproduce exactly, whatever else runs beside them."""
        data = self.to_dict()
        data.pop("prefill_ms")
        data["steps"] = [{k: v for k, v in s.items() if k not in _TIMINGS} for s in data["steps"]]
        data["metrics"] = {k: v for k, v in data["metrics"].items() if k not in (*_TIMINGS, "c", "tokens_per_second")}
        return data

    @classmethod
    def from_json(cls, text: str | bytes) -> RunTrace:
        """A saved run (JSON text or bytes) read within bounds (specviz.bounded: size, nesting, digits), then
        checked completely (from_dict); any problem is a TraceError."""
        return cls.from_dict(_read(text))

    def to_frame(self) -> pd.DataFrame:
        """One row per step with every StepTrace field; `attrs` keeps the run-level fields."""
        frame = pd.DataFrame([s.to_dict() for s in self.steps], columns=_STEP_COLUMNS)
        frame.attrs["run"] = {k: v for k, v in self.to_dict().items() if k != "steps"}
        return frame

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> RunTrace:
        steps = [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]
        return cls.from_dict({**frame.attrs["run"], "steps": steps})

    def positions_frame(self) -> pd.DataFrame:
        """One row per drafted token of the whole run, with its step number."""
        frames = [s.to_frame().assign(step=s.index) for s in self.steps]
        columns = ["step", "position", *_POSITION_FIELDS]
        return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


_STEP_COLUMNS = [f.name for f in dataclasses.fields(StepTrace)]
_TIMINGS = ("draft_ms", "verify_ms")


def build_run_trace(**fields: Any) -> RunTrace:
    """A RunTrace whose metrics are computed from its steps."""
    steps = tuple(fields["steps"])
    return RunTrace(**{**fields, "steps": steps}, metrics=compute_metrics(steps, fields["config"].depth))


FORMAT = TraceFormat(
    run=frozenset(f.name for f in dataclasses.fields(RunTrace)),
    step=frozenset(f.name for f in dataclasses.fields(StepTrace)),
    tree=frozenset(f.name for f in dataclasses.fields(TreeTrace)),
    node=frozenset(f.name for f in dataclasses.fields(TreeNode)),
    verify=frozenset(f.name for f in dataclasses.fields(VerifyTrace)),
    cost=frozenset(f.name for f in dataclasses.fields(CostTrace)),
    stop_reasons=STOP_REASONS,
    node_decisions=NODE_DECISIONS,
)


def check_run(raw: Any) -> SpecConfig:
    """A run trace read from outside (a saved file), checked completely against this format
    (specviz.core.trace_check): every field present and of its type, probabilities in [0, 1], 0 ≤ n ≤ τ, each
    decision as its own r and threshold (or, greedy, the target's argmax) dictate, a tree's walk as
    docs/algorithm.md makes it, the emitted tokens as the decisions make them. Any problem: a TraceError naming
    where it is. Returns its settings."""
    return check_saved_run(raw, FORMAT)
