"""Recording a step: the immutable StepTrace of what one step drafted, verified and decided, with every
number a chart or a student needs (docs/algorithm.md, "One speculative step" and "Token trees")."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import torch

from specviz.core import tree as tree_mod
from specviz.core.config import SpecConfig
from specviz.core.rules import Choice, at, ratio_of
from specviz.core.sampling import overlap
from specviz.core.trace import CostTrace, StepTrace, TokenProb, TreeNode, TreeTrace, VerifyTrace


def record_step(
    index: int,
    context_length: int,
    draft: list[int],
    q: torch.Tensor,
    p: torch.Tensor,
    choice: Choice,
    emitted: tuple[int, ...],
    timing: tuple[float, float],
    text: Callable[[int], str],
    top_n: int = 10,
    cost: CostTrace | None = None,
) -> StepTrace:
    """The immutable record of one step: every number a chart or a student needs. q: [τ, V] float64, the draft's
    distribution at each drafted position; p: [τ + 1, V] float64, the target's there and one position further;
    `cost`: a lossy rule's exact cost (specviz.core.lossy.cost_of)."""
    k, n = len(draft), choice.n
    extra = [] if choice.residual is None else [choice.residual[None]]
    verify = None
    if choice.verification != "token":
        block = choice.block
        verify = VerifyTrace(
            choice.verification,
            choice.threshold,
            choice.passed,
            block.w if block else (),
            block.residual_mass if block else (),
        )
    after = "rejected" if verify is not None and verify.rule == "block" else "not reached"  # block: each failed
    tops = top_rows(torch.cat([q, p[:k], p[n : n + 1], *extra]), top_n, text)
    return StepTrace(
        index=index,
        context_length=context_length,
        tau=k,
        draft_tokens=tuple(draft),
        draft_text=tuple(text(y) for y in draft),
        q=tuple(at(q, draft).tolist()),
        p=tuple(at(p[:k], draft).tolist()),
        ratio=tuple(choice.ratio.tolist()),
        r=choice.r,
        accepted=tuple(t < n for t in range(k)),
        decision=tuple("accepted" if t < n else "rejected" if t == n else after for t in range(k)),
        beta=tuple(overlap(p[:k], q).tolist()),
        n_accepted=n,
        next_token=choice.token,
        next_text=text(choice.token),
        next_rule=choice.rule,
        next_prob=float(choice.dist[choice.token]),
        emitted=emitted,
        q_top=tops[:k],
        p_top=tops[k : 2 * k],
        next_top=tops[2 * k],
        residual_top=tops[2 * k + 1] if extra else None,
        draft_ms=timing[0] * 1000.0,
        verify_ms=timing[1] * 1000.0,
        verify=verify,
        cost=cost,
    )


def record_tree_step(
    index: int,
    context_length: int,
    cfg: SpecConfig,
    tree: tree_mod.DraftTree,
    p: torch.Tensor,
    r: Sequence[float | None],
    walked: tree_mod.Walk,
    emitted: tuple[int, ...],
    timing: tuple[float, float],
    text: Callable[[int], str],
) -> StepTrace:
    """A tree step's record: every node, and the chain fields read along the main line
    (`tree.main_line`), so that a topk = 1 tree's record is the chain's, field for field."""
    n_top = cfg.top_n
    q_rows = {node: dist for node, dist in tree.dist.items()}
    p_at = lambda node: p[node + 1]  # noqa: E731 - row of p after `node` (−1: the root)
    q_at = lambda node: q_rows[node]  # noqa: E731
    nodes = []
    for i in range(len(tree)):
        up, x = tree.parent[i], tree.token[i]
        residual_p, residual_q = walked.residuals.get(i, (None, None))
        nodes.append(
            TreeNode(
                parent=up,
                depth=tree.depth[i],
                token=x,
                text=text(x),
                q=tree.q[i],
                p=float(p_at(up)[x]),
                score=tree.score[i],
                rank=tree.rank[i],
                r=walked.coins.get(i, r[i]) if walked.decision[i] != "not tested" else None,
                ratio=walked.ratio[i],
                decision=walked.decision[i],
                p_top=tree_mod.top(p_at(i), n_top, text),
                q_top=tree_mod.top(q_at(i), n_top, text) if i in q_rows else (),
                residual_top=tree_mod.top(residual_p, n_top, text) if residual_p is not None else (),
                q_residual_top=tree_mod.top(residual_q, n_top, text) if residual_q is not None else (),
            )
        )
    line = tree_mod.main_line(tree, walked)
    n = len(walked.path)
    if line:
        parents = [tree.parent[i] for i in line]
        q_line = torch.stack([q_at(up) for up in parents])
        p_line = torch.stack([p_at(up) for up in parents])
    else:
        q_line = p_line = torch.empty(0, p.shape[-1], dtype=torch.float64)
    draft = [tree.token[i] for i in line]
    one_hot = cfg.mode == "lossless" and cfg.verification == "one-hot"
    # one-hot: what each node's r was compared with, p′(x) (p without the siblings rejected before it); a node
    # the walk never tested, p(x), as a chain would
    threshold = tuple(
        walked.ratio[i] if walked.ratio[i] is not None else float(p_at(tree.parent[i])[tree.token[i]]) for i in line
    )
    choice = Choice(
        r=tuple(walked.coins.get(i, r[i]) for i in line),
        ratio=ratio_of(at(p_line, draft), at(q_line, draft)) if line else torch.empty(0, dtype=torch.float64),
        n=n,
        token=walked.token,
        rule=walked.rule,
        dist=walked.dist,
        residual=walked.dist if walked.rule == "residual" else None,
        verification="one-hot" if one_hot else "token",
        threshold=threshold if one_hot else (),
        passed=tuple(r[i] <= h for i, h in zip(line, threshold, strict=True)) if one_hot else (),
    )
    rows = torch.cat([p_line, p_at(walked.stop)[None]])
    step = record_step(index, context_length, draft, q_line, rows, choice, emitted, timing, text, n_top)
    tree_trace = TreeTrace(
        topk=cfg.topk,
        steps=cfg.steps,
        num_draft_tokens=cfg.num_draft_tokens,
        nodes=tuple(nodes),
        path=walked.path,
        stop=walked.stop,
        root_p_top=tree_mod.top(p_at(-1), n_top, text),
        root_q_top=tree_mod.top(q_at(-1), n_top, text),
        draft_passes=tree.passes,
    )
    return dataclasses.replace(step, tree=tree_trace)


def top_rows(dists: torch.Tensor, n: int, text) -> tuple[tuple[TokenProb, ...], ...]:
    """The n most likely tokens of each row, as (token, text, prob); zero-probability ones omitted."""
    values, indices = torch.topk(dists, min(n, dists.shape[-1]), dim=-1)
    return tuple(
        tuple([TokenProb(t, text(t), pr) for t, pr in zip(row_i, row_v, strict=True) if pr > 0])
        for row_i, row_v in zip(indices.tolist(), values.tolist(), strict=True)
    )
