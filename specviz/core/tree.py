"""Token trees, as docs/algorithm.md, "Token trees" describes them: draft a tree of continuations,
verify every node in one target pass, walk down from the root, emit the path and one target token.

The chain of "One speculative step" is the tree with topk = 1 and steps = num_draft_tokens = τ, and
this module reproduces it exactly: the same draws, in the same order, from the same generator.
References: SpecInfer (Miao et al. 2024), EAGLE-2 (Li et al. 2024, the dynamic tree), recursive
speculative decoding (Jeon et al. 2024, drafting without replacement).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from specviz.core.config import Knobs, Mode, SpecConfig
from specviz.core.sampling import residual, sample, total
from specviz.core.trace import NextRule, NodeDecision, TokenProb

Warp = Callable[[torch.Tensor], torch.Tensor]  # logits [V] → probabilities [V] float64: the run's warp


def root_only(session, pending: Sequence[int], warp: Warp) -> DraftTree:
    """A tree with no node (no room left for a draft token): only the root's q, from one draft pass."""
    tree = DraftTree(passes=1)
    tree.dist[-1] = tree.ranking[-1] = _proposals(warp)(session.extend(list(pending), keep=1)[-1])
    tree.session_index[-1] = session.length - 1
    return tree


def rank_paths(topk: int, steps: int, count: int) -> list[tuple[int, ...]]:
    """The `count` rank paths with the smallest sum of ranks (ties: shallower, then lexicographic),
    ranks 1…topk, depth 1…steps: the fixed shape of a lossless tree. Every prefix of a kept path and
    every lower-ranked sibling is kept too, so the result is a tree that needs no drawn value."""
    heap: list[tuple[int, int, tuple[int, ...]]] = [(1, 1, (1,))]
    kept: list[tuple[int, ...]] = []
    while heap and len(kept) < count:
        total, depth, path = heapq.heappop(heap)
        kept.append(path)
        if depth < steps:  # its first child
            heapq.heappush(heap, (total + 1, depth + 1, (*path, 1)))
        if path[-1] < topk:  # its next sibling
            heapq.heappush(heap, (total + 1, depth, (*path[:-1], path[-1] + 1)))
    return kept


@dataclass
class DraftTree:
    """A drafted tree while it is built: node i has parent[i] (−1: the root), token, depth, its q at
    the parent, path score and rank; `dist` holds the draft distribution after each expanded node
    (−1: the root) and `session_index` where that node sits in the draft session."""

    parent: list[int] = field(default_factory=list)
    token: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    q: list[float] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    dist: dict[int, torch.Tensor] = field(default_factory=dict)  # node (−1: root) → q after it: [V]
    # what children are ranked and scored by: q itself, except in greedy mode, where q may be one-hot
    # (temperature 0) and the draft's own probabilities at temperature 1 rank its candidates
    ranking: dict[int, torch.Tensor] = field(default_factory=dict)  # node → [V]
    session_index: dict[int, int] = field(default_factory=dict)
    paths: list[tuple[int, ...]] = field(default_factory=list)  # rank path of each node
    passes: int = 0  # the draft forwards that grew it (one per level)

    def add(self, parent: int, token: int, q: float, rank: int, weight: float | None = None) -> int:
        """A child of `parent`; its path score multiplies `weight` (default: q) onto the parent's."""
        up = self.score[parent] if parent >= 0 else 1.0
        q_score = q if weight is None else weight
        self.parent.append(parent)
        self.token.append(token)
        self.depth.append(self.depth[parent] + 1 if parent >= 0 else 1)
        self.q.append(q)
        self.score.append(up * q_score)
        self.rank.append(rank)
        self.paths.append((*(self.paths[parent] if parent >= 0 else ()), rank))
        return len(self.token) - 1

    def __len__(self) -> int:
        return len(self.token)


def draft_tree(
    session,
    pending: Sequence[int],
    config: SpecConfig,
    steps: int,
    warp: Warp,
    gen: torch.Generator,
    eos: int | None,
) -> DraftTree:
    """docs/algorithm.md, step 1: one draft forward per level, every node of a level in one pass. Textbook and
    greedy: EAGLE-2's dynamic tree (children = the topk most likely tokens of q, the topk best nodes of
    each level expanded, the num_draft_tokens best kept). Lossless: children drawn from q without
    replacement, the shape fixed by rank paths before any draw. Returns the kept nodes only."""
    lossless = config.mode == "lossless"
    shape = set(rank_paths(config.topk, steps, config.num_draft_tokens)) if lossless else set()
    warp = _proposals(warp)
    rank_by = _proposals(lambda row: torch.softmax(row, -1)) if config.mode == "greedy" else warp
    tree = DraftTree(passes=1)  # the root's pass, below; one more per level
    row = session.extend(list(pending), keep=1)[-1]  # [V]: the draft's logits after the last confirmed token
    tree.dist[-1], tree.ranking[-1] = warp(row), rank_by(row)
    tree.session_index[-1] = session.length - 1
    frontier = [-1]
    for level in range(1, steps + 1):
        new = [c for node in frontier for c in _children(tree, node, config.topk, shape, gen, lossless)]
        if level == steps or not new:
            break
        frontier = _to_expand(tree, new, config.topk, shape, eos, lossless)
        if not frontier:
            break
        parents = [tree.session_index[tree.parent[i]] for i in frontier]
        rows = session.extend_tree([tree.token[i] for i in frontier], parents)  # [len(frontier), V]
        tree.passes += 1
        base = session.length - len(frontier)
        for j, node in enumerate(frontier):
            tree.dist[node], tree.ranking[node] = warp(rows[j]), rank_by(rows[j])
            tree.session_index[node] = base + j
    return _keep(tree, config.num_draft_tokens, shape, lossless)


def _proposals(warp: Warp) -> Warp:
    """The warp, except that a row with no proposal at all (every logit −inf) gives q = 0 everywhere."""
    return lambda row: torch.zeros_like(row) if bool((row == float("-inf")).all()) else warp(row)


def _children(tree: DraftTree, node: int, topk: int, shape: set, gen: torch.Generator, lossless: bool) -> list[int]:
    dist = tree.dist[node]
    if not lossless:  # the topk most likely tokens that q (greedy: the draft) gives any probability
        ranking = tree.ranking[node]
        values, tokens = torch.topk(ranking, min(topk, ranking.numel()))
        return [
            tree.add(node, int(t), float(dist[t]), rank, float(v))
            for rank, (v, t) in enumerate(zip(values, tokens, strict=True), 1)
            if v > 0
        ]
    prefix = tree.paths[node] if node >= 0 else ()
    wanted = max((path[-1] for path in shape if path[:-1] == prefix), default=0)
    left, out = dist.clone(), []
    for rank in range(1, wanted + 1):  # without replacement, in drawing order
        if total(left) <= 0:
            break
        token = sample(left, gen)
        out.append(tree.add(node, token, float(dist[token]), rank))
        left[token] = 0.0
        mass = total(left)
        left = left / mass if mass > 0 else left
    return out


def _to_expand(tree: DraftTree, level: list[int], topk: int, shape: set, eos: int | None, lossless: bool) -> list[int]:
    """The nodes of a level whose children the next draft forward computes (never an EOS)."""
    alive = [i for i in level if tree.token[i] != eos]
    if lossless:
        return [i for i in alive if any(path[:-1] == tree.paths[i] for path in shape)]
    best = sorted(alive, key=lambda i: (-tree.score[i], -tree.q[i], i))[:topk]
    return sorted(best)


def _keep(tree: DraftTree, count: int, shape: set, lossless: bool) -> DraftTree:
    """The kept nodes, renumbered breadth first (by depth, then parent, then rank)."""
    if lossless:
        chosen = [i for i in range(len(tree)) if tree.paths[i] in shape]
    else:
        chosen = sorted(range(len(tree)), key=lambda i: (-tree.score[i], tree.depth[i], -tree.q[i], i))[:count]
    order = sorted(chosen, key=lambda i: (tree.depth[i], i))
    new_index = {old: j for j, old in enumerate(order)}
    new_index[-1] = -1
    kept = DraftTree(passes=tree.passes)
    for old in order:
        kept.parent.append(new_index[tree.parent[old]])
        kept.token.append(tree.token[old])
        kept.depth.append(tree.depth[old])
        kept.q.append(tree.q[old])
        kept.score.append(tree.score[old])
        kept.rank.append(tree.rank[old])
        kept.paths.append(tree.paths[old])
    for old, dist in tree.dist.items():
        if old in new_index:
            kept.dist[new_index[old]] = dist
            kept.ranking[new_index[old]] = tree.ranking.get(old, dist)
            kept.session_index[new_index[old]] = tree.session_index[old]
    return kept


def children(parent: Sequence[int], rank: Sequence[int], node: int) -> list[int]:
    """Kept children of `node` (−1: the root) in the order the walk tries them (rank order)."""
    return sorted((i for i, up in enumerate(parent) if up == node), key=lambda i: rank[i])


@dataclass(frozen=True)
class Walk:
    """docs/algorithm.md, steps 3–4 on a verified tree."""

    path: tuple[int, ...]  # accepted nodes, root to deepest
    stop: int  # node where the walk stopped (−1: root)
    decision: tuple[NodeDecision, ...]  # per node
    ratio: tuple[float | None, ...]  # per node: what its r was compared with (None: untested or greedy)
    token: int
    rule: NextRule
    dist: torch.Tensor  # [V] float64: the distribution `token` was chosen from
    residuals: dict[int, tuple[torch.Tensor, torch.Tensor]]  # lossless: (p′, q′), each [V], after each rejected node
    # SGLang's thresholds: the draw that tested each tested node, one coin per level (the first child's r), where it
    # is not the node's own r
    coins: dict[int, float] = field(default_factory=dict)


def walk(
    mode: Mode,
    tree: DraftTree,
    p: torch.Tensor,
    r: Sequence[float | None],
    gen: torch.Generator,
    verification: str = "token",
    knobs: Knobs | None = None,
) -> Walk:
    """Walk down from the root. `p`: [N + 1, V] float64 (N = len(tree)), the root's row first, then one row per
    node; `r` one pre-drawn uniform per node (None in greedy mode), used only if that node is tested. Lossless with
    verification "one-hot" walks as SGLang's target-only tree sampling: child x is kept when r ≤ p′(x),
    and after a rejection p′ loses x (renormalised); q is never read. Verification "sglang" (lossy, `knobs`' t_s and
    t_a) walks as sgl-kernel's TreeSpeculativeSamplingTargetOnly does: one coin u per level (the first child's r),
    the running sum s of p over the children tried so far, this one included; child x is kept when u ≤ s/t_a or
    p(x) ≥ t_s; where none is, the next token is a sample of p without every child tried."""
    if mode == "lossless" and verification == "sglang":
        return _sglang_walk(tree, p, r, gen, knobs or Knobs())
    one_hot = mode == "lossless" and verification == "one-hot"
    n = len(tree)
    decision: list[NodeDecision] = ["not tested"] * n
    ratio: list[float | None] = [None] * n
    residuals: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    path: list[int] = []
    node = -1
    while True:
        here = p[node + 1]
        kids = children(tree.parent, tree.rank, node)
        if not kids:  # a leaf (or nothing drafted): the target's free token
            token = sample(here, gen) if mode == "lossless" else int(here.argmax())
            return Walk(tuple(path), node, tuple(decision), tuple(ratio), token, "bonus", here, residuals)
        p_now, q_now = here, tree.dist[node]
        best = int(here.argmax())
        taken = None
        for kid in kids:
            x = tree.token[kid]
            if mode == "greedy":
                ok = x == best
            else:
                ratio[kid] = float(p_now[x]) if one_hot else _divide(float(p_now[x]), float(q_now[x]))
                ok = r[kid] <= ratio[kid]
            decision[kid] = "accepted" if ok else "rejected"
            if ok:
                taken = kid
                break
            if one_hot:  # p′ without x, renormalised (q taken as one-hot at x)
                p_now = residual(p_now, torch.nn.functional.one_hot(torch.tensor(x), p_now.numel()).to(p_now.dtype))
                residuals[kid] = (p_now, q_now)
            elif mode == "lossless":  # recursive rejection sampling: what p has beyond q, q without x
                p_now = residual(p_now, q_now)
                q_now = q_now.clone()
                q_now[x] = 0.0
                mass = total(q_now)
                q_now = q_now / mass if mass > 0 else q_now
                residuals[kid] = (p_now, q_now)
        if taken is None:  # every kept child rejected
            if mode == "lossless":
                return Walk(
                    tuple(path), node, tuple(decision), tuple(ratio), sample(p_now, gen), "residual", p_now, residuals
                )
            rule: NextRule = "greedy" if mode == "greedy" else "argmax"
            return Walk(tuple(path), node, tuple(decision), tuple(ratio), best, rule, here, residuals)
        path.append(taken)
        node = taken


def _sglang_walk(
    tree: DraftTree, p: torch.Tensor, r: Sequence[float | None], gen: torch.Generator, knobs: Knobs
) -> Walk:
    """SGLang's thresholds on a tree (`walk`): what each tested node's coin was compared with is recorded as its ratio
    (s/t_a, and at least 1 where p(x) ≥ t_s), so that r ≤ ratio is exactly its decision."""
    n = len(tree)
    decision: list[NodeDecision] = ["not tested"] * n
    ratio: list[float | None] = [None] * n
    residuals: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    coins: dict[int, float] = {}
    path: list[int] = []
    node = -1
    while True:
        here = p[node + 1]
        kids = children(tree.parent, tree.rank, node)
        walked = (tuple(path), node, tuple(decision), tuple(ratio))
        if not kids:  # a leaf (or nothing drafted): the target's free token
            return Walk(*walked, sample(here, gen), "bonus", here, residuals, coins)
        coin, tried, taken = float(r[kids[0]]), 0.0, None
        left = here.clone()
        for kid in kids:
            x = tree.token[kid]
            tried += float(here[x])  # the running sum includes the child being tried
            sure = float(here[x]) >= knobs.threshold_single
            ratio[kid] = max(1.0, tried / knobs.threshold_acc) if sure else tried / knobs.threshold_acc
            coins[kid] = coin
            ok = coin <= ratio[kid]
            decision[kid] = "accepted" if ok else "rejected"
            if ok:
                taken = kid
                break
            left[x] = 0.0  # p without every child tried, renormalised
            mass = total(left)
            residuals[kid] = (left / mass if mass > 0 else here, tree.dist[node])
        if taken is None:
            dist = residuals[kids[-1]][0]
            walked = (tuple(path), node, tuple(decision), tuple(ratio))
            return Walk(*walked, sample(dist, gen), "residual", dist, residuals, coins)
        path.append(taken)
        node = taken


def _divide(p: float, q: float) -> float:
    return p / q if q > 0 else float("inf")


def main_line(tree: DraftTree, walk_: Walk) -> list[int]:
    """The nodes a chain view shows: the accepted path, then the first child tried where the walk
    stopped and, below it, each first child (for topk = 1: exactly the chain's draft)."""
    line = list(walk_.path)
    node = walk_.stop
    while kids := children(tree.parent, tree.rank, node):
        node = kids[0]
        line.append(node)
    return line


def top(dist: torch.Tensor, n: int, text: Callable[[int], str]) -> tuple[TokenProb, ...]:
    """dist: [V] float64 → its `n` most likely tokens of probability > 0, most likely first."""
    values, indices = torch.topk(dist, min(n, dist.shape[-1]))
    return tuple(TokenProb(int(t), text(int(t)), float(v)) for v, t in zip(values, indices, strict=True) if v > 0)
