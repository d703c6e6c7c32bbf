"""A run trace read from outside (a saved file), checked completely before anything reads it: every field present
and of its type, every decision as its numbers make it, a tree's walk as docs/algorithm.md makes it.

The format itself (the records and their fields) is specviz.core.trace's; it hands its field names and words in as
a TraceFormat, so that the format is stated once, there, and `specviz.core.trace.check_run` is what callers use."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from specviz.bounded import is_number, is_whole
from specviz.core.config import SpecConfig
from specviz.errors import ConfigError, TraceError


@dataclass(frozen=True, kw_only=True)
class TraceFormat:
    """What a saved run is checked against: each record's field names, and the words a field may hold."""

    run: frozenset[str]  # RunTrace's fields
    step: frozenset[str]  # StepTrace's
    tree: frozenset[str]  # TreeTrace's
    node: frozenset[str]  # TreeNode's
    verify: frozenset[str]  # VerifyTrace's
    cost: frozenset[str]  # CostTrace's
    stop_reasons: tuple[str, ...]  # what stop_reason may say (besides null)
    node_decisions: tuple[str, ...]  # a tree node's fate


_PER_POSITION = ("draft_tokens", "draft_text", "q", "p", "ratio", "r", "accepted", "decision", "beta", "q_top", "p_top")


def check_saved_run(raw: Any, names: TraceFormat) -> SpecConfig:
    """A run trace read from outside (a saved file), checked completely: every field present and of its
    type, probabilities in [0, 1], 0 ≤ n ≤ τ, each decision as its own r and threshold (or, greedy, the
    target's argmax) dictate, a tree's walk as docs/algorithm.md makes it, the emitted tokens as the
    decisions make them. Any problem: a TraceError naming where it is. Returns its settings."""
    _need(isinstance(raw, dict), "this file is not a specviz trace: its top level is not an object")
    _fields(raw, names.run, "the trace", optional={"target_top_k"})
    top_k = raw.get("target_top_k")
    _need(top_k is None or (_integer(top_k) and top_k > 0), "target_top_k is not a positive whole number")
    try:
        config = SpecConfig.from_dict(raw["config"])
    except (ConfigError, TypeError) as exc:
        raise TraceError(f"its settings are not valid: {exc}") from exc
    _need(isinstance(raw["steps"], list) and raw["steps"], "the trace has no steps to replay")
    for i, s in enumerate(raw["steps"]):
        _step(s, i, config, names)
    _ints(raw["prompt_ids"], "prompt_ids")
    new_tokens = _ints(raw["new_tokens"], "new_tokens")
    _need(new_tokens == [t for s in raw["steps"] for t in s["emitted"]], "new_tokens are not the steps' emitted tokens")
    _need(
        raw["stop_reason"] in (None, *names.stop_reasons),
        f"stop_reason {raw['stop_reason']!r} is not one of {names.stop_reasons}",
    )
    for name in ("target_name", "draft_name", "prompt", "prompt_text", "text"):
        _need(isinstance(raw[name], str), f"{name} is not text")
    _need(isinstance(raw["chat"], bool), "chat is not true or false")
    _need(_number(raw["prefill_ms"]) and raw["prefill_ms"] >= 0, "prefill_ms is not a time in milliseconds")
    return config


def _step(raw: Any, i: int, config: SpecConfig, names: TraceFormat) -> None:
    where = f"step {i + 1}"
    _need(isinstance(raw, dict), f"{where} is not an object")
    _fields(raw, names.step, where, optional={"tree", "verify", "cost"})
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
        _verify(verify, raw, rule, where, names, tree is not None, config)
    cost = raw.get("cost")
    costed = config.lossy and tree is None  # a tree walked by SGLang's thresholds: its cost is a chain's only
    _need((cost is not None) is costed, f"{where}: its cost record does not match the run's rule ({rule})")
    if cost is not None:
        _cost(cost, raw, rule, where, names)
    for name in ("index", "context_length", "next_token"):
        _need(_integer(raw[name]) and raw[name] >= 0, f"{where}: {name} = {raw[name]!r} is not a count")
    _need(isinstance(raw["next_text"], str), f"{where}: next_text is not text")
    rule = "bonus" if n == tau else {"lossless": "residual", "greedy": "greedy"}.get(config.mode, "argmax")
    if n < tau and config.lossy and config.verification == "typical":  # typical's next token: argmax p
        rule = "argmax"
    if tree is not None:
        rule = _tree(tree, raw, config, where, names)
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


def _tree(tree: Any, raw: dict, config: SpecConfig, where: str, names: TraceFormat) -> str:
    """A tree step's nodes, checked as the walk of docs/algorithm.md makes them: each tested node against its
    own r and ratio (p/q; lossless: p′/q′; greedy: the target's argmax at its parent), the path a
    chain of accepted nodes from the root, and the step's tokens its tokens. Returns the next rule."""
    _need(isinstance(tree, dict), f"{where}: its tree is not an object")
    _fields(tree, names.tree, f"{where}: its tree")
    nodes = tree["nodes"]
    _need(
        isinstance(nodes, (list, tuple)) and len(nodes) <= config.num_draft_tokens,
        f"{where}: the tree holds more than num_draft_tokens = {config.num_draft_tokens} nodes",
    )
    fields = names.node
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
        _need(node["decision"] in names.node_decisions, f"{at}: decision {node['decision']!r} is unknown")
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


def _verify(
    verify: Any,
    raw: dict,
    rule: str,
    where: str,
    names: TraceFormat,
    tree: bool = False,
    config: SpecConfig | None = None,
) -> None:
    """A one-hot, block or lossy step checked against its own numbers (docs/algorithm.md, "Verification as serving
    engines run it" and "Lossy rules"): one-hot compares r with p(ŷ) and stops at the first failure (on a tree's
    main line with p′(ŷ), p without the siblings rejected before it: never below p(ŷ)); block's w, R and h follow
    from each other and p/q, and n is the last position that passed; SGLang's thresholds compare r with
    min(1, p/t_a) (1 where p ≥ t_s), the ensemble with min(1, m/q), typical acceptance p(ŷ) with its threshold."""
    tau, n, at = raw["tau"], raw["n_accepted"], f"{where}: its {rule} verification"
    fields = names.verify
    _need(isinstance(verify, dict) and set(verify) == fields and verify["rule"] == rule, f"{at} is malformed")
    lists = ("threshold", "passed", *(("w", "residual_mass") if rule == "block" else ()))
    for name in lists:
        _need(
            isinstance(verify[name], (list, tuple)) and len(verify[name]) == tau,
            f"{at}: {name} does not hold {tau} entries",
        )
    threshold, passed = verify["threshold"], verify["passed"]
    for t in range(tau):
        _need(_probability(threshold[t]) and isinstance(passed[t], bool), f"{at}: position {t + 1} is malformed")
        if rule == "typical":  # no draw: p(ŷ) against min(ε, δ·exp(−H))
            _need(
                threshold[t] <= config.posterior_threshold + 1e-12 and passed[t] is (raw["p"][t] > threshold[t]),
                f"{at}: position {t + 1}: p(ŷ) = {raw['p'][t]} against {threshold[t]:.6g} cannot be "
                f"{'a pass' if passed[t] else 'a failure'}",
            )
            continue
        _need(
            passed[t] is (raw["r"][t] <= threshold[t]),
            f"{at}: position {t + 1}: r = {raw['r'][t]} against "
            f"{threshold[t]:.6g} cannot be {'a pass' if passed[t] else 'a failure'}",
        )
    if rule in ("sglang", "ensemble", "typical"):
        for t in range(tau):
            p, q = raw["p"][t], raw["q"][t]
            if rule == "sglang":
                h = 1.0 if p >= config.threshold_single else min(1.0, p / config.threshold_acc)
            else:
                w = config.ensemble_weight
                h = min(1.0, (w * p + (1 - w) * q) / q) if rule == "ensemble" else threshold[t]
            _need(math.isclose(threshold[t], h, rel_tol=1e-9, abs_tol=1e-12), f"{at}: position {t + 1}'s threshold")
        first = next((t for t in range(tau) if not passed[t]), tau)
        _need(n == first, f"{at}: n_accepted = {n}, but the first failure is at position {first + 1}")
        return
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


def _cost(cost: Any, raw: dict, rule: str, where: str, names: TraceFormat) -> None:
    """A lossy step's cost record (docs/algorithm.md, "Lossy rules"): per position, chances and distances in [0, 1],
    the rule's chance of keeping ŷ as its own test makes it, the baseline's p(ŷ) (one-hot) or min(1, p/q) (token)."""
    at = f"{where}: its cost"
    fields = names.cost
    _need(isinstance(cost, dict) and set(cost) == fields and cost["rule"] == rule, f"{at} is malformed")
    tau = raw["tau"]
    for name in ("accept", "baseline_accept", "tv"):
        values = cost[name]
        _need(
            isinstance(values, (list, tuple)) and len(values) == tau and all(_probability(v) for v in values),
            f"{at}: {name} does not hold {tau} probabilities",
        )
    base = {"typical": "one-hot", "sglang": "one-hot", "ensemble": "token"}[rule]
    _need(cost["baseline"] == base, f"{at}: the {rule} rule is set against {base}, not {cost['baseline']!r}")
    threshold, passed = raw["verify"]["threshold"], raw["verify"]["passed"]
    for t in range(tau):
        own = float(passed[t]) if rule == "typical" else threshold[t]
        kept = raw["p"][t] if base == "one-hot" else min(1.0, raw["ratio"][t])
        _need(math.isclose(cost["accept"][t], own, rel_tol=1e-9, abs_tol=1e-12), f"{at}: position {t + 1}'s chance")
        _need(
            math.isclose(cost["baseline_accept"][t], kept, rel_tol=1e-6, abs_tol=1e-12),
            f"{at}: position {t + 1}'s {base} chance is not {kept:.6g}",
        )


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


def _fields(raw: dict, names: frozenset[str], where: str, optional: frozenset[str] | set[str] = frozenset()) -> None:
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
