"""Replay a saved run trace step by step, with no model: the same interface the Decode page uses
for a live `Decoder` (step, undo, run, done, stop_reason, trace)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator
from typing import Any

from specviz.core.config import SpecConfig
from specviz.core.trace import (
    NODE_DECISIONS,
    STOP_REASONS,
    RunTrace,
    StepTrace,
    TreeNode,
    TreeTrace,
    VerifyTrace,
    build_run_trace,
)
from specviz.errors import ConfigError, TraceError
from specviz.models.text import Codec


class Replay:
    def __init__(self, run: RunTrace, name: str = "", texts: str = "") -> None:
        self.run_trace, self.name, self.cursor = run, name, 0
        self.config = run.config
        self.texts = texts  # how its texts were checked, in words (load_trace)

    @property
    def steps(self) -> tuple[StepTrace, ...]:
        return self.run_trace.steps[: self.cursor]

    @property
    def new_tokens(self) -> tuple[int, ...]:
        return tuple(t for s in self.steps for t in s.emitted)

    @property
    def done(self) -> bool:
        return self.cursor >= len(self.run_trace.steps)

    @property
    def stop_reason(self) -> str | None:
        return self.run_trace.stop_reason if self.done else None

    def step(self) -> StepTrace:
        if self.done:
            raise IndexError("the replay is at its last step")
        self.cursor += 1
        return self.run_trace.steps[self.cursor - 1]

    def undo(self) -> StepTrace | None:
        if self.cursor == 0:
            return None
        self.cursor -= 1
        return self.run_trace.steps[self.cursor]

    def describe(self) -> str:
        """Where the replay is and what the saved run was: its models and settings."""
        run, c = self.run_trace, self.config
        return (
            f"Replaying a saved trace: step {self.cursor} of {len(run.steps)}, no model loaded. **{run.target_name}** "
            f"with draft **{run.draft_name}**, {c.mode} mode, τ = {c.tau}, temperature {c.temperature:g}, "
            f"top-k {c.top_k}, top-p {c.top_p:g}, seed {c.seed}. {self.texts} Remove the file to decode live."
        )

    def run(self) -> RunTrace:
        self.cursor = len(self.run_trace.steps)
        return self.trace()

    def trace(self) -> RunTrace:
        """The saved run up to the cursor, its metrics recomputed for those steps."""
        if self.done:
            return self.run_trace
        steps, new_tokens = self.steps, self.new_tokens
        text = "".join(_emitted_text(s) for s in steps)
        fields = {k: getattr(self.run_trace, k) for k in ("config", "target_name", "draft_name", "prompt", "chat")}
        return build_run_trace(
            **fields, prompt_text=self.run_trace.prompt_text, prompt_ids=self.run_trace.prompt_ids, steps=steps,
            new_tokens=new_tokens, text=text, stop_reason=None, prefill_ms=self.run_trace.prefill_ms,
            target_top_k=self.run_trace.target_top_k,
        )  # fmt: skip


def _emitted_text(step: StepTrace) -> str:
    shown = min(step.n_accepted, len(step.emitted))
    tail = step.next_text if len(step.emitted) == step.n_accepted + 1 else ""
    return "".join(step.draft_text[:shown]) + tail


# --- checking a saved trace before it replays ----------------------------------------------------

_STEP_FIELDS = {f.name for f in dataclasses.fields(StepTrace)}
_RUN_FIELDS = {f.name for f in dataclasses.fields(RunTrace)}
_PER_POSITION = ("draft_tokens", "draft_text", "q", "p", "ratio", "r", "accepted", "decision", "beta", "q_top", "p_top")


def replay_for(
    data: bytes, name: str, current: Replay | None, codec_for: Callable[[str], Codec | None] | None = None
) -> tuple[Replay | None, str | None]:
    """The replay of an uploaded file named `name`: `current` when it is that file's already (its
    cursor kept), else a new one at step 0; (None, the reason) when the file cannot be replayed.
    `codec_for(target name)` gives the tokenizer to check the texts with, where one is at hand."""
    if current is not None and current.name == name:
        return current, None
    try:
        run = load_trace(data)
        codec = codec_for(run.target_name) if codec_for else None
        return Replay(run, name, check_texts(run, codec)), None
    except TraceError as exc:
        return None, str(exc)


def check_texts(run: RunTrace, codec: Codec | None = None) -> str:
    """Every text of a trace against its token ids: with the target's tokenizer, each text is what that
    tokenizer makes of the id (the prompt and the reply too); without one, each id reads the same
    wherever it appears. A text edited by hand is a TraceError naming where. Returns how they were checked."""
    seen: dict[int, tuple[str, str]] = {}
    for token, text, where in _texts(run):
        if codec is not None:
            made = codec.token_text(token)
            _need(text == made, f"{where}: the text {text!r} is not token {token}'s ({made!r})")
        first = seen.setdefault(token, (text, where))
        _need(first[0] == text, f"token {token} reads {first[0]!r} in {first[1]} but {text!r} in {where}")
    if codec is None:
        return "Its texts agree with each other; no tokenizer for its target is here to check them against."
    _need(run.text == codec.decode(run.new_tokens), "its text is not what the tokenizer makes of new_tokens")
    if run.chat:
        _need(codec.encode_chat(run.prompt) == (run.prompt_text, list(run.prompt_ids)),
              "its prompt is not what the chat template and tokenizer make of prompt_ids")  # fmt: skip
    elif run.prompt:
        _need(run.prompt_text == run.prompt and codec.encode(run.prompt) == list(run.prompt_ids),
              "its prompt is not what the tokenizer makes of prompt_ids")  # fmt: skip
    else:
        _need(run.prompt_text == codec.decode(run.prompt_ids), "its prompt is not the text of prompt_ids")
    return f"Its texts were checked against the tokenizer of {run.target_name}."


def _texts(run: RunTrace) -> Iterator[tuple[int, str, str]]:
    """(token id, its text, where) for every text a trace carries beside an id."""
    for step in run.steps:
        where = f"step {step.index + 1}"
        for t, (token, text) in enumerate(zip(step.draft_tokens, step.draft_text, strict=True)):
            yield token, text, f"{where}, draft token {t + 1}"
        yield step.next_token, step.next_text, f"{where}, the next token"
        tops = [*step.q_top, *step.p_top, step.next_top, step.residual_top or ()]
        if step.tree is not None:
            tops += [step.tree.root_p_top, step.tree.root_q_top]
            for j, node in enumerate(step.tree.nodes):
                yield node.token, node.text, f"{where}, tree node {j + 1}"
                tops += [node.p_top, node.q_top, node.residual_top, node.q_residual_top]
        for top in tops:
            for entry in top:
                yield entry.token, entry.text, f"{where}, a top-n list"


def load_trace(data: bytes | str) -> RunTrace:
    """A saved run trace (JSON), checked completely: every field present and of its type,
    probabilities in [0, 1], 0 ≤ n ≤ τ, each decision as its own r and p/q (or, greedy, the
    target's argmax) dictate, the emitted tokens as the decisions make them. Its metrics are
    recomputed from its steps. Any problem: a `TraceError` naming where it is."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceError(f"this file is not JSON ({exc})") from exc
    _need(isinstance(raw, dict), "this file is not a specviz trace: its top level is not an object")
    _fields(raw, _RUN_FIELDS, "the trace", optional={"target_top_k"})
    top_k = raw.get("target_top_k")
    _need(top_k is None or (_integer(top_k) and top_k > 0), "target_top_k is not a positive whole number")
    try:
        config = SpecConfig.from_dict(raw["config"])
    except (ConfigError, TypeError) as exc:
        raise TraceError(f"its settings are not valid: {exc}") from exc
    _need(isinstance(raw["steps"], list) and raw["steps"], "the trace has no steps to replay")
    steps = [_step(s, i, config) for i, s in enumerate(raw["steps"])]
    prompt_ids = _ints(raw["prompt_ids"], "prompt_ids")
    new_tokens = _ints(raw["new_tokens"], "new_tokens")
    _need(new_tokens == [t for s in steps for t in s.emitted], "new_tokens are not the steps' emitted tokens")
    _need(
        raw["stop_reason"] in (None, *STOP_REASONS), f"stop_reason {raw['stop_reason']!r} is not one of {STOP_REASONS}"
    )
    for name in ("target_name", "draft_name", "prompt", "prompt_text", "text"):
        _need(isinstance(raw[name], str), f"{name} is not text")
    _need(isinstance(raw["chat"], bool), "chat is not true or false")
    _need(_number(raw["prefill_ms"]) and raw["prefill_ms"] >= 0, "prefill_ms is not a time in milliseconds")
    fields = {k: raw.get(k) for k in _RUN_FIELDS - {"metrics", "steps", "config", "prompt_ids", "new_tokens"}}
    return build_run_trace(
        **fields, config=config, steps=steps, prompt_ids=tuple(prompt_ids), new_tokens=tuple(new_tokens)
    )


def _step(raw: Any, i: int, config: SpecConfig) -> StepTrace:
    where = f"step {i + 1}"
    _need(isinstance(raw, dict), f"{where} is not an object")
    _fields(raw, _STEP_FIELDS, where, optional={"tree", "verify"})
    _need(raw["index"] == i, f"{where} has index {raw['index']!r}")
    tree = raw.get("tree")
    _need((tree is not None) is config.tree, f"{where}: {'a tree' if tree else 'a chain'} step in a run of "
          f"{'trees' if config.tree else 'chains'}")  # fmt: skip
    tau = raw["tau"]
    _need(_integer(tau) and 0 <= tau <= config.depth, f"{where}: τ = {tau!r} is not between 0 and {config.depth}")
    for name in _PER_POSITION:
        _need(isinstance(raw[name], list) and len(raw[name]) == tau, f"{where}: {name} does not hold {tau} entries")
    tops = [*raw["q_top"], *raw["p_top"], raw["next_top"], *([raw["residual_top"]] if raw["residual_top"] else [])]
    for top in tops:
        _need(isinstance(top, list) and all(_top_entry(e) for e in top), f"{where}: a top-n list is malformed")
    n = raw["n_accepted"]
    _need(_integer(n) and 0 <= n <= tau, f"{where}: n_accepted = {n!r} is not between 0 and τ = {tau}")
    rule = config.verification if config.mode == "lossless" else "token"
    verify = raw.get("verify")
    _need((verify is not None) is (rule != "token" and tree is None),
          f"{where}: its verification record does not match the run's rule ({rule})")  # fmt: skip
    if verify is not None:
        _verify(verify, raw, rule, where)
    for t in range(tau):
        at = f"{where}, draft token {t + 1}"
        for name in ("q", "p", "beta"):
            _need(_probability(raw[name][t]), f"{at}: {name} = {raw[name][t]!r} is not a probability in [0, 1]")
        q, p, ratio, r = raw["q"][t], raw["p"][t], raw["ratio"][t], raw["r"][t]
        _need(_number(ratio) and q > 0 and math.isclose(ratio, p / q, rel_tol=1e-6, abs_tol=1e-12),
              f"{at}: p/q = {ratio!r} is not p / q = {p!r} / {q!r}")  # fmt: skip
        if config.mode == "greedy":
            _need(r is None, f"{at}: greedy mode makes no draw, yet r = {r!r}")
        else:
            _need(_number(r) and 0 <= r < 1, f"{at}: r = {r!r} is not a draw in [0, 1)")
        decision = "accepted" if t < n else "rejected" if t == n or rule == "block" else "not reached"
        _need(raw["decision"][t] == decision and raw["accepted"][t] is (t < n),
              f"{at}: recorded as {raw['decision'][t]!r} but n_accepted = {n} makes it {decision!r}")  # fmt: skip
        if t <= n and tree is None and verify is None:  # the kept tokens and the first rejected: their own test
            _check_rule(raw, t, t < n, config.mode, at)
        _ints([raw["draft_tokens"][t]], f"{at}: the token")
        _need(isinstance(raw["draft_text"][t], str), f"{at}: its text is not text")
    for name in ("index", "context_length", "next_token"):
        _need(_integer(raw[name]) and raw[name] >= 0, f"{where}: {name} = {raw[name]!r} is not a count")
    _need(isinstance(raw["next_text"], str), f"{where}: next_text is not text")
    rule = "bonus" if n == tau else {"lossless": "residual", "greedy": "greedy"}.get(config.mode, "argmax")
    if tree is not None:
        rule = _tree(tree, raw, config, where)
    _need(raw["next_rule"] == rule, f"{where}: the next token's rule is {raw['next_rule']!r}; with n = {n} of "
          f"τ = {tau} in {config.mode} mode it is {rule!r}")  # fmt: skip
    _need(_probability(raw["next_prob"]), f"{where}: next_prob = {raw['next_prob']!r} is not a probability")
    made = [*raw["draft_tokens"][:n], raw["next_token"]]
    emitted = _ints(raw["emitted"], f"{where}: emitted")
    _need(emitted and emitted == made[: len(emitted)], f"{where}: emitted {emitted} is not the accepted run "
          f"and the target's token {made}")  # fmt: skip
    for name in ("draft_ms", "verify_ms"):
        _need(_number(raw[name]) and raw[name] >= 0, f"{where}: {name} = {raw[name]!r} is not a time")
    return StepTrace.from_dict(raw)


def _tree(tree: Any, raw: dict, config: SpecConfig, where: str) -> str:
    """A tree step's nodes, checked as the walk of SPEC.md makes them: each tested node against its
    own r and ratio (p/q; lossless: p′/q′; greedy: the target's argmax at its parent), the path a
    chain of accepted nodes from the root, and the step's tokens its tokens. Returns the next rule."""
    _need(isinstance(tree, dict), f"{where}: its tree is not an object")
    _fields(tree, {f.name for f in dataclasses.fields(TreeTrace)}, f"{where}: its tree")
    nodes = tree["nodes"]
    _need(isinstance(nodes, list) and len(nodes) <= config.num_draft_tokens,
          f"{where}: the tree holds more than num_draft_tokens = {config.num_draft_tokens} nodes")  # fmt: skip
    fields = {f.name for f in dataclasses.fields(TreeNode)}
    for j, node in enumerate(nodes):
        at = f"{where}, tree node {j + 1}"
        _need(isinstance(node, dict) and set(node) == fields, f"{at} is malformed")
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
            _need((node["token"] == best) is (node["decision"] == "accepted"),
                  f"{at}: greedy keeps a token only if it is the target's argmax ({best})")  # fmt: skip
            continue
        r, ratio = node["r"], node["ratio"]
        _need(_number(r) and 0 <= r < 1 and isinstance(ratio, (int, float)), f"{at}: no valid r and ratio")
        if config.mode == "textbook" and node["q"] > 0:
            _need(math.isclose(ratio, node["p"] / node["q"], rel_tol=1e-6, abs_tol=1e-12), f"{at}: ratio is not p/q")
        _need((r <= ratio) is (node["decision"] == "accepted"), f"{at}: r = {r} against {ratio:.6g} cannot make it "
              f"{node['decision']!r}")  # fmt: skip
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


def _verify(verify: Any, raw: dict, rule: str, where: str) -> None:
    """A one-hot or block step checked against its own numbers (docs/algorithm.md, "Verification as serving
    engines run it"): one-hot compares r with p(ŷ) and stops at the first failure; block's w, R and h follow
    from each other and p/q, and n is the last position that passed."""
    tau, n, at = raw["tau"], raw["n_accepted"], f"{where}: its {rule} verification"
    names = {f.name for f in dataclasses.fields(VerifyTrace)}
    _need(isinstance(verify, dict) and set(verify) == names and verify["rule"] == rule, f"{at} is malformed")
    lists = ("threshold", "passed", *(("w", "residual_mass") if rule == "block" else ()))
    for name in lists:
        _need(isinstance(verify[name], list) and len(verify[name]) == tau, f"{at}: {name} does not hold {tau} entries")
    threshold, passed = verify["threshold"], verify["passed"]
    for t in range(tau):
        _need(_probability(threshold[t]) and isinstance(passed[t], bool), f"{at}: position {t + 1} is malformed")
        _need(passed[t] is (raw["r"][t] <= threshold[t]), f"{at}: position {t + 1}: r = {raw['r'][t]} against "
              f"{threshold[t]:.6g} cannot be {'a pass' if passed[t] else 'a failure'}")  # fmt: skip
    if rule == "one-hot":
        for t in range(tau):
            _need(math.isclose(threshold[t], raw["p"][t], rel_tol=1e-9, abs_tol=1e-12),
                  f"{at}: position {t + 1} was not compared with p(ŷ) = {raw['p'][t]}")  # fmt: skip
        first = next((t for t in range(tau) if not passed[t]), tau)
        _need(n == first, f"{at}: n_accepted = {n}, but the first failure is at position {first + 1}")
        return
    weight = 1.0
    for t in range(tau):
        weight = min(1.0, weight * raw["ratio"][t])
        w, mass = verify["w"][t], verify["residual_mass"][t]
        _need(_number(w) and math.isclose(w, weight, rel_tol=1e-9, abs_tol=1e-12), f"{at}: w{t + 1} is not "
              f"min(1, w{t} p/q) = {weight:.6g}")  # fmt: skip
        _need(_number(mass) and mass >= 0, f"{at}: R{t + 1} is not a mass")
        h = w if t == tau - 1 else (mass / (mass + 1 - w) if mass + 1 - w > 0 else 1.0)
        _need(math.isclose(threshold[t], h, rel_tol=1e-9, abs_tol=1e-12), f"{at}: h{t + 1} is not R/(R + 1 − w)")
    last = max((t + 1 for t in range(tau) if passed[t]), default=0)
    _need(n == last, f"{at}: n_accepted = {n}, but the last position that passed is {last}")


def _check_rule(raw: dict, t: int, kept: bool, mode: str, at: str) -> None:
    """A kept token passed its test and the first rejected one failed it (SPEC.md step 3)."""
    if mode == "greedy":
        top = raw["p_top"][t]
        if top and _top_entry(top[0]):
            best = top[0][0]
            _need((raw["draft_tokens"][t] == best) is kept, f"{at}: greedy keeps a token only if it is the "
                  f"target's argmax ({best}); it was {'kept' if kept else 'rejected'}")  # fmt: skip
        return
    r, ratio = raw["r"][t], raw["ratio"][t]
    _need((r <= ratio) is kept, f"{at}: r = {r} {'>' if r > ratio else '≤'} p/q = {ratio:.6g}, so it cannot be "
          f"{'accepted' if kept else 'rejected'}")  # fmt: skip


def _need(condition: Any, message: str) -> None:
    if not condition:
        raise TraceError(message)


def _fields(raw: dict, names: set[str], where: str, optional: frozenset[str] | set[str] = frozenset()) -> None:
    missing, extra = sorted(names - set(raw) - set(optional)), sorted(set(raw) - names)
    _need(not missing, f"{where} lacks {', '.join(missing[:5])}")
    _need(not extra, f"{where} has unknown field(s) {', '.join(extra[:5])}")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _probability(value: Any) -> bool:
    return _number(value) and 0.0 <= value <= 1.0


def _ints(values: Any, what: str) -> list[int]:
    _need(isinstance(values, list) and all(_integer(v) and v >= 0 for v in values), f"{what} are not token ids")
    return values


def _top_entry(entry: Any) -> bool:
    return (
        isinstance(entry, list) and len(entry) == 3 and _integer(entry[0]) and isinstance(entry[1], str)
        and _probability(entry[2])
    )  # fmt: skip
