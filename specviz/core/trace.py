"""Immutable records of what the engine did: one `StepTrace` per speculative step, one `RunTrace`
per run. Both convert to pandas DataFrames and to JSON and back without loss.

Longer than most modules, for a reason: the trace format lives in one place. Every field is defined here
and read back here, and a run read from outside (a saved file) is checked here, field by field and
decision by decision (`check_run`), so nothing else restates the format."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, get_args

import pandas as pd

from specviz.bounded import UPLOAD_BYTES, UPLOAD_DEPTH, is_number, is_whole, read_json
from specviz.core.config import SpecConfig
from specviz.core.metrics import Metrics, compute_metrics
from specviz.errors import ConfigError, TraceError

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

    rule: str  # "one-hot" | "block"
    threshold: tuple[float, ...]  # what r_t was compared with: p(ŷ_t) (one-hot), h_t (block)
    passed: tuple[bool, ...]  # r_t ≤ threshold_t; block keeps every position up to the last pass
    w: tuple[float, ...] = ()  # block: w_t = min(1, w_{t−1} p(ŷ_t) / q(ŷ_t)), w_0 = 1
    residual_mass: tuple[float, ...] = ()  # block: R_t = Σ_v max(0, w_t p_{t+1}(v) − q_{t+1}(v)); R_τ = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifyTrace:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


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
    verify: VerifyTrace | None = None  # a lossless step under the one-hot or block rule; None: token-wise

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

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.verify is None:  # token-wise steps keep the record they always had
            del data["verify"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepTrace:
        fields = dict(data)
        if fields.get("verify") is not None and not isinstance(fields["verify"], VerifyTrace):
            fields["verify"] = VerifyTrace.from_dict(fields["verify"])
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


# --- reading a run from outside: every field present and of its type, every decision as its numbers make it

_STEP_FIELDS = {f.name for f in dataclasses.fields(StepTrace)}
_RUN_FIELDS = {f.name for f in dataclasses.fields(RunTrace)}
_PER_POSITION = ("draft_tokens", "draft_text", "q", "p", "ratio", "r", "accepted", "decision", "beta", "q_top", "p_top")


def check_run(raw: Any) -> SpecConfig:
    """A run trace read from outside (a saved file), checked completely: every field present and of its
    type, probabilities in [0, 1], 0 ≤ n ≤ τ, each decision as its own r and threshold (or, greedy, the
    target's argmax) dictate, a tree's walk as docs/algorithm.md makes it, the emitted tokens as the
    decisions make them. Any problem: a TraceError naming where it is. Returns its settings."""
    _need(isinstance(raw, dict), "this file is not a specviz trace: its top level is not an object")
    _fields(raw, _RUN_FIELDS, "the trace", optional={"target_top_k"})
    top_k = raw.get("target_top_k")
    _need(top_k is None or (_integer(top_k) and top_k > 0), "target_top_k is not a positive whole number")
    try:
        config = SpecConfig.from_dict(raw["config"])
    except (ConfigError, TypeError) as exc:
        raise TraceError(f"its settings are not valid: {exc}") from exc
    _need(isinstance(raw["steps"], list) and raw["steps"], "the trace has no steps to replay")
    for i, s in enumerate(raw["steps"]):
        _step(s, i, config)
    _ints(raw["prompt_ids"], "prompt_ids")
    new_tokens = _ints(raw["new_tokens"], "new_tokens")
    _need(new_tokens == [t for s in raw["steps"] for t in s["emitted"]], "new_tokens are not the steps' emitted tokens")
    _need(
        raw["stop_reason"] in (None, *STOP_REASONS), f"stop_reason {raw['stop_reason']!r} is not one of {STOP_REASONS}"
    )
    for name in ("target_name", "draft_name", "prompt", "prompt_text", "text"):
        _need(isinstance(raw[name], str), f"{name} is not text")
    _need(isinstance(raw["chat"], bool), "chat is not true or false")
    _need(_number(raw["prefill_ms"]) and raw["prefill_ms"] >= 0, "prefill_ms is not a time in milliseconds")
    return config


def _step(raw: Any, i: int, config: SpecConfig) -> None:
    where = f"step {i + 1}"
    _need(isinstance(raw, dict), f"{where} is not an object")
    _fields(raw, _STEP_FIELDS, where, optional={"tree", "verify"})
    _need(raw["index"] == i, f"{where} has index {raw['index']!r}")
    tree = raw.get("tree")
    _need(
        (tree is not None) is config.tree,
        f"{where}: {'a tree' if tree else 'a chain'} step in a run of {'trees' if config.tree else 'chains'}",
    )
    tau = raw["tau"]
    _need(_integer(tau) and 0 <= tau <= config.depth, f"{where}: τ = {tau!r} is not between 0 and {config.depth}")
    for name in _PER_POSITION:
        _need(
            isinstance(raw[name], (list, tuple)) and len(raw[name]) == tau,
            f"{where}: {name} does not hold {tau} entries",
        )
    residual_top = raw["residual_top"]
    listed = residual_top is None or isinstance(residual_top, (list, tuple))
    _need(listed, f"{where}: residual_top is neither null nor a list")
    tops = [*raw["q_top"], *raw["p_top"], raw["next_top"], *([residual_top] if residual_top else [])]
    for top in tops:
        _need(isinstance(top, (list, tuple)) and all(_top_entry(e) for e in top), f"{where}: a top-n list is malformed")
    n = raw["n_accepted"]
    _need(_integer(n) and 0 <= n <= tau, f"{where}: n_accepted = {n!r} is not between 0 and τ = {tau}")
    rule = config.verification if config.mode == "lossless" else "token"
    verify = raw.get("verify")
    _need(
        (verify is not None) is (rule != "token" and (tree is None or rule == "one-hot")),
        f"{where}: its verification record does not match the run's rule ({rule})",
    )
    for t in range(tau):
        at = f"{where}, draft token {t + 1}"
        for name in ("q", "p", "beta"):
            _need(_probability(raw[name][t]), f"{at}: {name} = {raw[name][t]!r} is not a probability in [0, 1]")
        q, p, ratio, r = raw["q"][t], raw["p"][t], raw["ratio"][t], raw["r"][t]
        _need(
            _number(ratio) and q > 0 and math.isclose(ratio, p / q, rel_tol=1e-6, abs_tol=1e-12),
            f"{at}: p/q = {ratio!r} is not p / q = {p!r} / {q!r}",
        )
        if config.mode == "greedy":
            _need(r is None, f"{at}: greedy mode makes no draw, yet r = {r!r}")
        else:
            _need(_number(r) and 0 <= r < 1, f"{at}: r = {r!r} is not a draw in [0, 1)")
        decision = "accepted" if t < n else "rejected" if t == n or rule == "block" else "not reached"
        _need(
            raw["decision"][t] == decision and raw["accepted"][t] is (t < n),
            f"{at}: recorded as {raw['decision'][t]!r} but n_accepted = {n} makes it {decision!r}",
        )
        if t <= n and tree is None and verify is None:  # the kept tokens and the first rejected: their own test
            _check_rule(raw, t, t < n, config.mode, at)
        _ints([raw["draft_tokens"][t]], f"{at}: the token")
        _need(isinstance(raw["draft_text"][t], str), f"{at}: its text is not text")
    if verify is not None:  # after each position's own numbers were checked
        _verify(verify, raw, rule, where, tree is not None)
    for name in ("index", "context_length", "next_token"):
        _need(_integer(raw[name]) and raw[name] >= 0, f"{where}: {name} = {raw[name]!r} is not a count")
    _need(isinstance(raw["next_text"], str), f"{where}: next_text is not text")
    rule = "bonus" if n == tau else {"lossless": "residual", "greedy": "greedy"}.get(config.mode, "argmax")
    if tree is not None:
        rule = _tree(tree, raw, config, where)
    _need(
        raw["next_rule"] == rule,
        f"{where}: the next token's rule is {raw['next_rule']!r}; with n = {n} of "
        f"τ = {tau} in {config.mode} mode it is {rule!r}",
    )
    _need(_probability(raw["next_prob"]), f"{where}: next_prob = {raw['next_prob']!r} is not a probability")
    made = [*raw["draft_tokens"][:n], raw["next_token"]]
    emitted = _ints(raw["emitted"], f"{where}: emitted")
    _need(
        emitted and emitted == made[: len(emitted)],
        f"{where}: emitted {emitted} is not the accepted run and the target's token {made}",
    )
    for name in ("draft_ms", "verify_ms"):
        _need(_number(raw[name]) and raw[name] >= 0, f"{where}: {name} = {raw[name]!r} is not a time")


def _tree(tree: Any, raw: dict, config: SpecConfig, where: str) -> str:
    """A tree step's nodes, checked as the walk of docs/algorithm.md makes them: each tested node against its
    own r and ratio (p/q; lossless: p′/q′; greedy: the target's argmax at its parent), the path a
    chain of accepted nodes from the root, and the step's tokens its tokens. Returns the next rule."""
    _need(isinstance(tree, dict), f"{where}: its tree is not an object")
    _fields(tree, {f.name for f in dataclasses.fields(TreeTrace)}, f"{where}: its tree")
    nodes = tree["nodes"]
    _need(
        isinstance(nodes, (list, tuple)) and len(nodes) <= config.num_draft_tokens,
        f"{where}: the tree holds more than num_draft_tokens = {config.num_draft_tokens} nodes",
    )
    fields = {f.name for f in dataclasses.fields(TreeNode)}
    for name in ("topk", "steps", "num_draft_tokens", "stop"):
        _need(_integer(tree[name]), f"{where}: its tree's {name} is not a whole number")
    _need(isinstance(tree["path"], (list, tuple)), f"{where}: its tree's path is not a list")
    for name in ("root_p_top", "root_q_top"):
        _need(_top_list(tree[name]), f"{where}: its tree's {name} is malformed")
    for j, node in enumerate(nodes):
        at = f"{where}, tree node {j + 1}"
        _need(isinstance(node, dict) and set(node) == fields, f"{at} is malformed")
        tops = ("p_top", "q_top", "residual_top", "q_residual_top")
        _need(all(_top_list(node[name]) for name in tops), f"{at}: a top-n list is malformed")
        _need(_integer(node["rank"]) and isinstance(node["text"], str), f"{at}: its rank or text is malformed")
        _ints([node["token"]], f"{at}: the token")
        up = node["parent"]
        _need(_integer(up) and -1 <= up < j, f"{at}: parent {up!r} is not an earlier node or the root")
        _need(node["depth"] == (nodes[up]["depth"] + 1 if up >= 0 else 1), f"{at}: depth {node['depth']!r} is wrong")
        for name in ("q", "p", "score"):
            _need(_probability(node[name]), f"{at}: {name} = {node[name]!r} is not a probability")
        _need(node["decision"] in NODE_DECISIONS, f"{at}: decision {node['decision']!r} is unknown")
        tested = node["decision"] != "not tested"
        if not tested or config.mode == "greedy":
            _need(node["r"] is None, f"{at}: r = {node['r']!r} where no draw tests it")
        if not tested:
            continue
        if config.mode == "greedy":
            top = nodes[up]["p_top"] if up >= 0 else tree["root_p_top"]
            best = top[0][0] if top and _top_entry(top[0]) else None
            _need(
                (node["token"] == best) is (node["decision"] == "accepted"),
                f"{at}: greedy keeps a token only if it is the target's argmax ({best})",
            )
            continue
        r, ratio = node["r"], node["ratio"]
        _need(_number(r) and 0 <= r < 1 and _number(ratio), f"{at}: no valid r and ratio")
        if config.mode == "textbook" and node["q"] > 0:
            _need(math.isclose(ratio, node["p"] / node["q"], rel_tol=1e-6, abs_tol=1e-12), f"{at}: ratio is not p/q")
        _need(
            (r <= ratio) is (node["decision"] == "accepted"),
            f"{at}: r = {r} against {ratio:.6g} cannot make it {node['decision']!r}",
        )
    path, previous = tree["path"], -1
    for j in path:
        chained = _integer(j) and 0 <= j < len(nodes) and nodes[j]["parent"] == previous
        _need(
            chained and nodes[j]["decision"] == "accepted", f"{where}: the tree's path is not a chain of accepted nodes"
        )
        previous = j
    _need(tree["stop"] == previous, f"{where}: the walk stopped at {tree['stop']!r}, not at the path's end")
    _need(len(path) == raw["n_accepted"], f"{where}: n_accepted is not the tree's accepted depth")
    _need(raw["draft_tokens"][: len(path)] == [nodes[j]["token"] for j in path], f"{where}: the path's tokens differ")
    kids = [j for j, node in enumerate(nodes) if node["parent"] == previous]
    if not kids:
        return "bonus"
    _need(all(nodes[j]["decision"] == "rejected" for j in kids), f"{where}: the walk stopped beside an accepted child")
    return {"lossless": "residual", "greedy": "greedy"}.get(config.mode, "argmax")


def _verify(verify: Any, raw: dict, rule: str, where: str, tree: bool = False) -> None:
    """A one-hot or block step checked against its own numbers (docs/algorithm.md, "Verification as serving
    engines run it"): one-hot compares r with p(ŷ) and stops at the first failure (on a tree's main line with
    p′(ŷ), p without the siblings rejected before it: never below p(ŷ)); block's w, R and h follow from each
    other and p/q, and n is the last position that passed."""
    tau, n, at = raw["tau"], raw["n_accepted"], f"{where}: its {rule} verification"
    names = {f.name for f in dataclasses.fields(VerifyTrace)}
    _need(isinstance(verify, dict) and set(verify) == names and verify["rule"] == rule, f"{at} is malformed")
    lists = ("threshold", "passed", *(("w", "residual_mass") if rule == "block" else ()))
    for name in lists:
        _need(
            isinstance(verify[name], (list, tuple)) and len(verify[name]) == tau,
            f"{at}: {name} does not hold {tau} entries",
        )
    threshold, passed = verify["threshold"], verify["passed"]
    for t in range(tau):
        _need(_probability(threshold[t]) and isinstance(passed[t], bool), f"{at}: position {t + 1} is malformed")
        _need(
            passed[t] is (raw["r"][t] <= threshold[t]),
            f"{at}: position {t + 1}: r = {raw['r'][t]} against "
            f"{threshold[t]:.6g} cannot be {'a pass' if passed[t] else 'a failure'}",
        )
    if rule == "one-hot":
        for t in range(tau):
            p = raw["p"][t]
            _need(
                threshold[t] >= p - 1e-12 if tree else math.isclose(threshold[t], p, rel_tol=1e-9, abs_tol=1e-12),
                f"{at}: position {t + 1} was not compared with p(ŷ) = {p}",
            )
        first = next((t for t in range(tau) if not passed[t]), tau)
        _need(n == first, f"{at}: n_accepted = {n}, but the first failure is at position {first + 1}")
        return
    weight = 1.0
    for t in range(tau):
        weight = min(1.0, weight * raw["ratio"][t])
        w, mass = verify["w"][t], verify["residual_mass"][t]
        _need(
            _number(w) and math.isclose(w, weight, rel_tol=1e-9, abs_tol=1e-12),
            f"{at}: w{t + 1} is not min(1, w{t} p/q) = {weight:.6g}",
        )
        _need(_number(mass) and mass >= 0, f"{at}: R{t + 1} is not a mass")
        h = w if t == tau - 1 else (mass / (mass + 1 - w) if mass + 1 - w > 0 else 1.0)
        _need(math.isclose(threshold[t], h, rel_tol=1e-9, abs_tol=1e-12), f"{at}: h{t + 1} is not R/(R + 1 − w)")
    last = max((t + 1 for t in range(tau) if passed[t]), default=0)
    _need(n == last, f"{at}: n_accepted = {n}, but the last position that passed is {last}")


def _check_rule(raw: dict, t: int, kept: bool, mode: str, at: str) -> None:
    """A kept token passed its test and the first rejected one failed it (docs/algorithm.md, step 3)."""
    if mode == "greedy":
        top = raw["p_top"][t]
        if top and _top_entry(top[0]):
            best = top[0][0]
            _need(
                (raw["draft_tokens"][t] == best) is kept,
                f"{at}: greedy keeps a token only if it is the "
                f"target's argmax ({best}); it was {'kept' if kept else 'rejected'}",
            )
        return
    r, ratio = raw["r"][t], raw["ratio"][t]
    _need(
        (r <= ratio) is kept,
        f"{at}: r = {r} {'>' if r > ratio else '≤'} p/q = {ratio:.6g}, so it cannot be "
        f"{'accepted' if kept else 'rejected'}",
    )


def _need(condition: Any, message: str) -> None:
    if not condition:
        raise TraceError(message)


def _fields(raw: dict, names: set[str], where: str, optional: frozenset[str] | set[str] = frozenset()) -> None:
    missing, extra = sorted(names - set(raw) - set(optional)), sorted(set(raw) - names)
    _need(not missing, f"{where} lacks {', '.join(missing[:5])}")
    _need(not extra, f"{where} has unknown field(s) {', '.join(extra[:5])}")


def _integer(value: Any) -> bool:
    return is_whole(value)  # of a size a float holds: a 400-digit id is no token


def _number(value: Any) -> bool:
    return is_number(value)


def _probability(value: Any) -> bool:
    return _number(value) and 0.0 <= value <= 1.0


def _ints(values: Any, what: str) -> list[int]:
    ids = isinstance(values, (list, tuple)) and all(_integer(v) and v >= 0 for v in values)
    _need(ids, f"{what} are not token ids")
    return list(values)


def _top_list(top: Any) -> bool:
    return isinstance(top, (list, tuple)) and all(_top_entry(e) for e in top)


def _top_entry(entry: Any) -> bool:
    return (
        isinstance(entry, (list, tuple))
        and len(entry) == 3
        and _integer(entry[0])
        and isinstance(entry[1], str)
        and _probability(entry[2])
    )
