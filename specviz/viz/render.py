"""The confirmed text with every step's tokens marked, as HTML (no Streamlit here).

The last step stands out: accepted draft tokens green, the first rejected one red and struck
through, the ones after it ("not reached": their own test is never applied) grey and dashed, the
target's own token blue with the rule that chose it. Earlier steps keep a faint tint
of the same colours. Hovering a draft token shows its q, p, p/q and r."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

import pandas as pd

from specviz.core.rules import RuleOutcome
from specviz.core.trace import StepTrace
from specviz.viz.plain import plain

LONG_PROMPT = 600  # characters: a longer prompt is drawn with its middle cut out
FIGURES_ALL = (
    8  # past this many draft tokens, the numbers under tokens stop at the first rejection (a projector's line)
)
STYLE = """<style>
.sv-text { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 1.25rem; line-height: 2.3;
           white-space: pre-wrap; word-break: break-word; }
.sv-text span { border-radius: 4px; padding: 1px 1px; }
.sv-prompt { color: #555; }
.sv-cut { color: #777; font-style: italic; font-size: 0.8em; }
.sv-words span { margin-right: 0.45em; }
.sv-acc, .sv-key-acc { background: #c7eed0; color: #0b5a23; border-bottom: 3px solid #1a9850; }
.sv-rej, .sv-key-rej { background: #fbd0cc; color: #8c1a10; text-decoration: line-through;
                       border-bottom: 3px solid #d73027; }
.sv-nr, .sv-key-nr { background: #eeeeee; color: #616161; border-bottom: 3px dashed #9e9e9e; }
.sv-tgt, .sv-key-tgt { background: #cfe0fb; color: #0d3d91; border-bottom: 3px solid #1f5fbf; }
.sv-acc-old { background: #eaf7ed; }
.sv-tgt-old { background: #ebf1fc; }
.sv-role { font-family: sans-serif; font-size: 0.75rem; font-weight: 600; color: #fff; background: #666;
           border-radius: 4px; padding: 2px 6px; margin-right: 6px; }
.sv-quiz { background: #eee; color: #222; border-bottom: 3px dashed #777; }
.sv-mark { font-family: sans-serif; font-size: 1.3rem; font-weight: 700; margin: 0 4px 0 1px; }
.sv-right { color: #1a9850; }
.sv-wrong { color: #d73027; }
.sv-legend { font-family: sans-serif; font-size: 0.95rem; color: #333; margin-bottom: 0.3rem; }
.sv-legend span { margin-right: 0.9em; padding: 1px 6px; border-radius: 4px; }
.sv-rule { font-size: 0.7rem; vertical-align: super; color: #1f5fbf; margin-left: 2px; }
.sv-fig { display: inline-flex; flex-direction: column; align-items: flex-start; vertical-align: top;
          line-height: 1.6; margin: 0 0.5em 0.2rem 0; }
.sv-num { font-family: sans-serif; font-size: 0.75rem; line-height: 1.15; color: #222; white-space: nowrap;
          padding: 0 2px; }
.sv-own { font-family: sans-serif; font-size: 0.75rem; line-height: 1.15; color: #9a4a00; white-space: nowrap;
          padding: 0 2px; }
</style>"""


def token_label(text: str, limit: int | None = None) -> str:
    """A token as it reads on an axis: spaces and newlines made visible; with `limit`, cut to that
    many characters and marked with '…' (the hover shows it whole)."""
    shown = text.replace("\n", "↵").replace("\t", "⇥")
    if shown.startswith(" "):
        shown = "·" + shown[1:]
    shown = shown if shown.strip() else repr(text)
    return shown[: limit - 1] + "…" if limit and len(shown) > limit else shown


def chart_label(text: str, limit: int | None = None) -> str:
    """A token as a Plotly chart shows it (axis, bar text, hover): token_label with <, > and & written as entities,
    because Plotly reads a few HTML tags in its text (links, styles): a token from a replayed file or a model is text,
    never a link on the chart."""
    label = token_label(text, limit)
    return label.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _show(text: str) -> str:
    return html.escape(text).replace("\n", "↵\n")


def _span(text: str, cls: str, title: str = "") -> str:
    tip = f' title="{html.escape(title)}"' if title else ""
    return f'<span class="{cls}"{tip}>{_show(text)}</span>'


def decision_parts(step: StepTrace, t: int) -> tuple[str, str]:
    """(why, outcome) for draft token t (0-based), in the rule's own terms: ("r = 0.79 > p/q = 0.47",
    "rejected"), ("q ≤ p", "accepted outright"), ("", "not reached (after the first rejection)"); in
    greedy mode, against the target's argmax; under one-hot q, against p(ŷ); under block verification,
    against h, and a token kept although its own draw failed says so."""
    decision = step.decision[t]
    if decision == "not reached":
        return "", "not reached (after the first rejection)"
    if step.r[t] is None:  # greedy: no draw, the draft token against the target's argmax
        if decision == "accepted":
            return "= the target's argmax", "accepted"
        best = step.p_top[t][0].text if step.p_top[t] else "?"
        return f"≠ the target's argmax {best!r}", "rejected"
    if step.verify is not None:
        name = "p(ŷ)" if step.verify.rule == "one-hot" else "h"
        r, bound = _distinct(step.r[t], step.verify.threshold[t])
        passed = step.verify.passed[t]
        why = f"r = {r} {'≤' if passed else '>'} {name} = {bound}"
        if decision == "accepted" and not passed:
            return why, "kept: a later pass"
        return why, decision
    if decision == "accepted" and step.ratio[t] >= 1.0:
        return "q ≤ p", "accepted outright"
    r, ratio = _distinct(step.r[t], step.ratio[t])
    return f"r = {r} {'≤' if decision == 'accepted' else '>'} p/q = {ratio}", decision


def decision_reason(step: StepTrace, t: int) -> str:
    """The reason as one sentence: "r = 0.79 > p/q = 0.47 → rejected"."""
    why, outcome = decision_parts(step, t)
    return f"{why} → {outcome}" if why else outcome


def next_token_source(step: StepTrace) -> tuple[str, str | None]:
    """(where the target's token came from and by which rule, a note when it equals the rejected
    draft token) for docs/algorithm.md, step 5."""
    n = step.n_accepted
    if step.next_rule == "bonus":
        source = (
            f"All {step.tau} draft tokens accepted: a free token from p at position {step.tau + 1} (bonus; "
            "argmax in textbook and greedy, sampled in lossless)"
        )
        source = source if step.tau else "No draft: the target's own token from p (bonus)"
    elif step.next_rule == "residual":
        source = (
            f"Rejected at position {n + 1}: sampled from norm(max(0, p − q)) there, what p has and q lacks (lossless)"
        )
    else:
        source = f"Rejected at position {n + 1}: the target's most likely token there, argmax p ({step.next_rule})"
    note = None
    if n < step.tau and step.next_token == step.draft_tokens[n]:
        note = (
            f"The target's token is the rejected draft token itself: {plain(repr(step.next_text))} is also p's "
            f"most likely token, but q gave it more than p (q = {step.q[n]:.2f} > p = {step.p[n]:.2f}), so it was kept "
            f"only with probability p/q = {step.ratio[n]:.2f}, and r = {step.r[n]:.2f} fell above. Textbook's "
            "correction takes argmax p, which can be the same token; lossless resamples where p exceeds q, so it "
            "never can."
        )
    return source, note


def _tied(top, chosen: int) -> list[str]:
    """The tokens of a top-n that tie with its first at the top, in the vocabulary's order, when there are two or more
    and `chosen` is the first of them (what an argmax takes); else []."""
    best = sorted((e for e in top if math.isclose(e.prob, top[0].prob, rel_tol=1e-9)), key=lambda e: e.token)
    return [f"'{plain(token_label(e.text))}'" for e in best] if len(best) > 1 and best[0].token == chosen else []


def _listed(names: Sequence[str]) -> str:
    return f"{', '.join(names[:-1])} and {names[-1]}"


def argmax_ties(step: StepTrace, mode: str) -> list[str]:
    """Why a tie went the way it did, one sentence each: where an argmax (the draft's own token in textbook and greedy
    mode, the target's token after a rejection or as the bonus outside lossless mode) chose between tokens of equal
    probability, it took the first of them in the vocabulary's order."""
    notes = []
    for t in range(step.tau) if mode != "lossless" else ():
        if tied := _tied(step.q_top[t], step.draft_tokens[t]):
            notes.append(
                f"q ties at {step.q_top[t][0].prob:.2f} at position {t + 1} between {_listed(tied)}: the draft "
                f"proposes the first of them in the vocabulary's order, {tied[0]}."
            )
    argmax = step.next_rule in ("argmax", "greedy") or (step.next_rule == "bonus" and mode != "lossless")
    if argmax and (tied := _tied(step.next_top, step.next_token)):
        notes.append(
            f"p ties at {step.next_top[0].prob:.2f} at position {step.n_accepted + 1} between {_listed(tied)}: argmax "
            f"takes the first of them in the vocabulary's order, {tied[0]}."
        )
    return notes


def _distinct(a: float, b: float) -> tuple[str, str]:
    """a and b to two decimals, or as many more (up to six) as it takes to tell them apart."""
    for digits in range(2, 7):
        if f"{a:.{digits}f}" != f"{b:.{digits}f}":
            break
    return f"{a:.{digits}f}", f"{b:.{digits}f}"


def own_choice(step: StepTrace, t: int):
    """The draft model's own first choice at draft position t (the top of q), where the draft token is not it (a
    typed draft, or a token lossless mode sampled); else None."""
    top = step.q_top[t][0] if step.q_top[t] else None
    return top if top is not None and top.token != step.draft_tokens[t] else None


def draft_tooltip(step: StepTrace, t: int) -> str:
    r = step.r[t]
    r_text = "no draw (greedy: compares argmaxes)" if r is None else f"{r:.3f}"
    own = own_choice(step, t)
    pick = f" (the draft model's own first choice: {own.text!r}, q = {own.prob:.4f})" if own else ""
    return (
        f"position {t + 1}: q = {step.q[t]:.4f}, p = {step.p[t]:.4f}, p/q = {step.ratio[t]:.3f}, "
        f"r = {r_text}: {decision_reason(step, t)}{pick}"
    )


def short(x: float, extra: int = 0) -> str:
    """A probability or a draw in a few characters, under a token: ".42", "1.00", ".0003"; `extra` more digits each
    (".4213", ".00031" with 2)."""
    text = f"{x:.{2 + extra}f}" if x >= 0.005 else f"{x:.{1 + extra}g}"
    return text[1:] if text.startswith("0.") else text


EXTRA_DIGITS = 6  # the most digits written beyond short's own, to keep the figures under a token from contradicting it


def reads_kept(q: float, p: float, r: float | None, threshold: str = "p/q") -> bool:
    """The decision a room takes from q, p and r as written under a token: token-wise (`threshold` "p/q"), kept where
    q ≤ p, else where r ≤ p/q; under one-hot q ("p(ŷ)"), kept where r ≤ p. Without r (greedy, a quiz before its
    draws) only q ≤ p says anything: kept outright."""
    if threshold == "p(ŷ)":
        return r is not None and r <= p
    return q <= p or (r is not None and r <= p / q)


def decides(step: StepTrace, t: int) -> bool | None:
    """What the exact numbers decide at draft position t, in the terms `reads_kept` reads the written ones: r against
    the rule's threshold (for a token after the first rejection too: what its own test would have said), or without
    r whether q ≤ p (p/q at least 1); None under block verification, whose threshold h no token's q, p and r give."""
    name, r = threshold_name(step), step.r[t]
    if name == "h":
        return None
    if r is None:
        return step.ratio[t] >= 1.0
    return r <= (step.verify.threshold[t] if step.verify is not None else step.ratio[t])


def figure_texts(step: StepTrace, t: int, draws: bool = True) -> tuple[str, str, str | None, str | None]:
    """q, p, (`draws`, where there is one) r and, rarely, p/q as written under draft token t: short's two decimals,
    or as many more (up to EXTRA_DIGITS) as it takes for the written figures to decide as the exact ones do
    (`reads_kept` against `decides`: at τ = 8 "q .50 p .48 r .97" read as rejected, .48 / .50 = .96, a token kept with
    p/q = .973 > r); where even those do not, p/q itself beside r, each to the digits that tell them apart."""
    r = step.r[t] if draws else None
    exact = decides(step, t)
    for extra in range(EXTRA_DIGITS + 1):
        q, p = short(step.q[t], extra), short(step.p[t], extra)
        drawn = None if r is None else short(r, extra)
        read = reads_kept(float(q), float(p), None if drawn is None else float(drawn), threshold_name(step))
        if exact is None or read == exact:
            return q, p, drawn, None
    drawn, ratio = _distinct(r, step.ratio[t]) if r is not None else (None, f"{step.ratio[t]:.6f}")
    return short(step.q[t]), short(step.p[t]), drawn, ratio


def _figures(span: str, step: StepTrace, t: int, draws: bool = True) -> str:
    """A draft token with its q, p and (`draws`, where there is one) r in small type under it, one above the other (a
    narrow column: a long draft's tokens stay on one line), and the draft model's own first choice where the token is
    not it: readable on a projector without hovering. As many digits as it takes to decide as the exact numbers do
    (`figure_texts`)."""
    q, p, r, ratio = figure_texts(step, t, draws)
    numbers = f"q {q}<br>p {p}" + ("" if r is None else f"<br>r {r}") + ("" if ratio is None else f"<br>p/q {ratio}")
    own = own_choice(step, t)
    pick = f'<span class="sv-own">draft\'s pick: {_show(token_label(own.text))}</span>' if own else ""
    return f'<span class="sv-fig">{span}<span class="sv-num">{numbers}</span>{pick}</span>'


def _quiz_spans(step: StepTrace, show_draws: bool, figures: bool = False) -> list[str]:
    """The draft with q and p (and, for the quiz on the rule, p/q and r): no decision, no target
    token (the class predicts). `figures`: q and p (and r with `show_draws`) written under each token."""
    spans = []
    for t, text in enumerate(step.draft_text):
        tip = f"position {t + 1}: q = {step.q[t]:.4f}, p = {step.p[t]:.4f}"
        if show_draws:
            r = step.r[t]
            tip += f", p/q = {step.ratio[t]:.3f}" + ("" if r is None else f", r = {r:.3f}")
        span = _span(text, "sv-quiz", tip + " — its fate?")
        spans.append(_figures(span, step, t, draws=show_draws) if figures else span)
    return spans


def _mark(right: bool | None) -> str:
    """A ✓ or ✗ after a token the class answered (quiz, after Reveal); nothing where it gave no answer."""
    if right is None:
        return ""
    title = "the class answered this token right" if right else "the class answered this token wrong"
    return f'<span class="sv-mark {"sv-right" if right else "sv-wrong"}" title="{title}">{"✓" if right else "✗"}</span>'


def _step_spans(step: StepTrace, current: bool, marks: Sequence[bool | None] = (), figures: bool = False) -> list[str]:
    shown = len(step.emitted)
    accepted = min(step.n_accepted, shown)
    parts = []
    for t in range(step.tau):
        text = step.draft_text[t]
        if t < accepted:
            parts.append(_span(text, "sv-acc" if current else "sv-acc-old", draft_tooltip(step, t)))
        elif current and step.decision[t] == "rejected":  # the first rejected (block: each that failed after n)
            parts.append(_span(text, "sv-rej", draft_tooltip(step, t)))
        elif current:  # after the first rejection: never tested, not rejected
            parts.append(_span(text, "sv-nr", draft_tooltip(step, t)))
        if current and figures and (step.tau <= FIGURES_ALL or step.decision[t] != "not reached"):
            parts[-1] = _figures(parts[-1], step, t)  # q, p and r under the token just drawn
        if current and t < len(marks):
            parts.append(_mark(marks[t]))
    if shown == step.n_accepted + 1:
        tip = f"from the target ({step.next_rule}), probability {step.next_prob:.4f}"
        parts.append(_span(step.next_text, "sv-tgt" if current else "sv-tgt-old", tip))
        if current:
            parts.append(f'<span class="sv-rule">{step.next_rule}</span>')
    return parts


def _prompt_span(prompt: str, limit: int = LONG_PROMPT) -> str:
    """The prompt, its middle cut out when longer than `limit` characters (the page shows it whole in an expander)."""
    if len(prompt) <= limit:
        return _span(prompt, "sv-prompt")
    head, tail = limit // 6, limit - limit // 6 - limit // 3
    return (
        _span(prompt[:head], "sv-prompt")
        + f'<span class="sv-cut"> … {len(prompt) - head - tail:,} characters not shown … </span>'
        + _span(prompt[-tail:], "sv-prompt")
    )


# The key of the marked text, each name after the symbol the step chart heads its column with past WORDY_TAU draft
# tokens (specviz.viz.charts.DECISION_SYMBOLS: there the symbol is all a column says).
LEGEND = (
    '<div class="sv-legend"><span class="sv-key-acc">✓ accepted</span><span class="sv-key-rej">✗ rejected (the '
    'first)</span><span class="sv-key-nr">– not reached (after it)</span><span class="sv-key-tgt">the target\'s '
    "token</span></div>"
)


def run_html(
    prompt: str,
    steps: Sequence[StepTrace],
    chat: bool = False,
    words: bool = False,
    hide_last: bool = False,
    show_draws: bool = False,
    legend: bool = False,
    marks: Sequence[bool | None] = (),
    figures: bool = False,
    recent: int | None = None,
) -> str:
    """The prompt, then every step's emitted tokens; the last step fully marked. With `chat`, the
    prompt and the reply are labelled as the user's and the assistant's turns; with `words`, tokens
    are whole words and get a space between them; with `hide_last`, the last step shows its draft
    without decisions or the target's token, and without r unless `show_draws` (quiz mode); with
    `legend`, a key of the marks comes first; `marks` (one per draft token of the last step, None
    where the class gave no answer) puts a ✓ or ✗ after each answered token; with `figures`, the last step's
    draft tokens carry their q, p and r in small type under them (and the draft model's own first choice where
    the token is not it), readable without hovering (past FIGURES_ALL draft tokens, up to the first rejection).
    With `recent` (a projector: the prompt, the newest text and the step on one screen), the prompt is cut to 3 ×
    `recent` characters and the text before the last step to its newest tokens within `recent` characters (at least
    one), what is left out said in a word ("… 31 tokens …"), and a line break is only its mark, ↵."""
    parts = [STYLE, LEGEND if legend and not hide_last else ""]
    parts.append(f'<div class="sv-text{" sv-words" if words else ""}">')
    limit = LONG_PROMPT if recent is None else 3 * recent
    if chat:
        parts += ['<span class="sv-role">user</span>', _prompt_span(prompt, limit), "\n"]
        parts += ['<span class="sv-role">assistant</span>']
    else:
        parts.append(_prompt_span(prompt, limit))
    earlier: list[tuple[str, int]] = []  # each token before the last step: its HTML and its characters
    for step in steps[:-1]:
        texts = [*step.draft_text[: step.n_accepted], step.next_text][: len(step.emitted)]
        earlier += zip(_step_spans(step, current=False), map(len, texts), strict=True)
    kept, used = len(earlier), 0
    while recent is not None and kept and (kept == len(earlier) or used + earlier[kept - 1][1] <= recent):
        kept, used = kept - 1, used + earlier[kept - 1][1]  # the newest tokens, up to `recent` characters
    if recent is not None and kept:
        parts.append(f'<span class="sv-cut"> … {kept:,} token{"s" if kept > 1 else ""} … </span>')
    parts += [html for html, _ in earlier[kept if recent is not None else 0 :]]
    if steps and hide_last:
        parts.extend(_quiz_spans(steps[-1], show_draws, figures))
    elif steps:
        parts.extend(_step_spans(steps[-1], current=True, marks=marks, figures=figures))
    parts.append("</div>")
    text = "".join(parts)
    return text if recent is None else text.replace("↵\n", "↵")  # a projector's few lines: a line break is its mark


def sentence(message: object) -> str:
    """An error's text as a sentence of its own, ending in a full stop, so that the next sentence on
    the page does not run into it ("…type some text to continue The run below is kept")."""
    text = str(message).strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def refusal(message: object, advice: str) -> str:
    """A refused measurement's text as a sentence (`sentence`), then `advice` where the error gives none of its own
    (its `advises`): a busy machine's refusal already says to measure again when it is quieter
    (specviz.analysis.clock.busy_message), and the page's "Run it again when the server is quieter." after it said the
    same thing twice."""
    text = sentence(message)
    text = text[:1].upper() + text[1:]  # after the page's own bold sentence: "…this run.** A target pass…"
    return text if getattr(message, "advises", False) else f"{text} {advice}"


def threshold_name(step: StepTrace) -> str:
    """What r is compared with under the step's rule: p/q (token-wise), p(ŷ) (one-hot q), h (block)."""
    if step.verify is None:
        return "p/q"
    return "p(ŷ)" if step.verify.rule == "one-hot" else "h"


def step_frame(step: StepTrace, greedy: bool, hidden: bool = False, draws: bool = False) -> pd.DataFrame:
    """The step's numbers as a table a room can read, one row per draft token, by position: token, q,
    p, p/q, r (four decimals, as text), the target's argmax in greedy mode, the decision. Before a
    quiz's Reveal (`hidden`): no decision, and r only with `draws`. Made from the step's lists in one go (a
    class server makes one per Step for every student)."""

    def text(values) -> list[str]:  # as text: a Styler costs more
        return ["–" if x is None or x != x else f"{x:.4f}" for x in values]

    table = {"token": [token_label(t) for t in step.draft_text], "q": text(step.q), "p": text(step.p)}
    table["p/q"] = text(step.ratio)
    if not hidden or draws:
        table["r"] = text(step.r)
    if greedy:
        table["target argmax"] = [token_label(top[0].text) if top else "" for top in step.p_top]
    if step.verify is not None and (draws or not hidden):  # what r was compared with under the engines' rules
        table[threshold_name(step)] = text(step.verify.threshold)
    if not hidden:
        table["decision"] = list(step.decision)
    return pd.DataFrame(table, index=pd.Index(range(1, step.tau + 1), name="position"))


RULE_NAMES = {  # each verification rule as the page names it, with who runs it
    "token": "Token-wise (the textbook's lossless rule)",
    "one-hot": "One-hot q (vLLM's default, SGLang, EAGLE)",
    "block": "Block verification (vLLM's block method)",
    "typical": "Typical acceptance (LOSSY; Medusa, vLLM V0)",
    "sglang": "SGLang's accept thresholds (LOSSY)",
    "ensemble": "Static ensemble (LOSSY; transformers' assistant_ensemble_weight)",
}
RULE_TESTS = {
    "token": "r ≤ min(1, p/q)",
    "one-hot": "r ≤ p(ŷ)",
    "block": "r ≤ h",
    "typical": "p(ŷ) > min(ε, δ·exp(−H)), no draw",
    "sglang": "r ≤ p(ŷ)/t_a, or p(ŷ) ≥ t_s",
    "ensemble": "r ≤ min(1, m/q), m = w·p + (1 − w)·q",
}
RULE_NEXT = {  # where the next token comes from after a rejection at position n + 1
    "token": "norm(max(0, p − q))",
    "one-hot": "p without the rejected token",
    "block": "norm(max(0, w·p − q))",
    "typical": "argmax p",
    "sglang": "p without the rejected token",
    "ensemble": "norm(max(0, m − q))",
}


def rule_sentence(step: StepTrace, outcome: RuleOutcome, text: Callable[[int], str]) -> str:
    """What one rule makes of the step, in one sentence from its own numbers: what it keeps and why, and
    where its next token would come from (`text`: a token's text)."""
    n, tau = outcome.n, step.tau
    kept = ", ".join(f"'{plain(token_label(t))}'" for t in step.draft_text[:n])  # markdown: token text escaped
    keeps = f"keeps {n} of {tau} ({kept})" if n else f"keeps none of {tau}"
    if outcome.rule == "block":
        passes = [t + 1 for t, ok in enumerate(outcome.passed) if ok]
        why = f"the last pass is at position {n}" if n else "no position passes"
        failed = [t + 1 for t in range(n) if not outcome.passed[t]]
        if failed:
            which = ", ".join(map(str, failed))
            why += f"; position{'s' if len(failed) > 1 else ''} {which} failed its own draw and is kept all the same"
        if n:
            why += f" (passes at {', '.join(map(str, passes))})"
    elif n < tau and outcome.rule == "typical":  # no draw decides it
        why = f"position {n + 1} fails: p(ŷ) = {step.p[n]:.3f} ≤ {outcome.threshold[n]:.3f}"
    elif n < tau:
        why = f"position {n + 1} fails: r = {step.r[n]:.3f} > {outcome.threshold[n]:.3f}"
    else:
        why = "every draft token passes"
    top = ", ".join(f"'{plain(token_label(text(y)))}' {v:.3g}" for y, v in outcome.next_top)
    source = "p at position τ + 1 (the bonus token)" if n == tau else RULE_NEXT[outcome.rule]
    source = "norm(max(0, p − q))" if outcome.rule == "block" and n == 0 else source  # w_0 = 1
    return (
        f"**{RULE_NAMES[outcome.rule]}** ({RULE_TESTS[outcome.rule]}): {keeps}: {why}. Next token from {source}: {top}."
    )


RACE_STYLE = """<style>.sv-race { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 1.15rem;
line-height: 1.6; height: 11rem; overflow-y: auto; display: flex; flex-direction: column-reverse;
padding: 0.6rem; border: 1px solid #ddd; border-radius: 6px; }
.sv-race div { white-space: pre-wrap; word-break: break-word; }</style>"""


def lane_text(codec, tokens: Sequence[int]) -> str:
    """A race lane's text so far: the tokens decoded, less a character still being written (its first
    bytes decode to "�" until the token that completes it arrives), so each frame is a prefix of the last."""
    return codec.decode(list(tokens)).rstrip("\ufffd")


def lane_html(text: str) -> str:
    """A lane's box: the text escaped, every space and line break kept as the final text has them
    (indented code stays indented while it streams), scrolled to its newest line (RACE_STYLE)."""
    return f'<div class="sv-race"><div>{html.escape(text)}</div></div>'
