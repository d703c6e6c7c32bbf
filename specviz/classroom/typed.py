"""What Decode's "Your draft" says (specviz.drafts.typed is the draft itself): why a run cannot take a typed
draft, the tokens typed words make, and the note above a step that proposed them. Text only; every piece that
came from a person or a model is escaped (specviz.viz.plain), but in `refusal`, an error's message."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote_plus

from specviz.classroom.sandbox import PRESETS
from specviz.core.trace import StepTrace
from specviz.drafts.typed import GUARANTEE
from specviz.viz.plain import plain
from specviz.viz.render import token_label


def refusal(tree: bool, draft_name: str) -> str:
    """Why a run cannot take a typed draft: a token tree (a typed draft is a chain), or a drafter with no q. An
    error's message, as raw text: whoever shows it escapes it."""
    if tree:
        return "a typed draft is a chain of tokens: turn the token tree off in the sidebar"
    return f"{draft_name} has no q to score typed words with: choose a pair with a draft model"


def tokens_caption(texts: Sequence[str]) -> str:
    """The tokens typed words make after the text on screen (each token's text), and what of them is proposed."""
    shown = " · ".join(f"'{plain(token_label(t))}'" for t in texts)
    return f"As tokens after the text on screen: {shown} ({len(texts)}; at most τ are proposed). {GUARANTEE}"


def step_note(words: str, count: int, step: StepTrace, tau: int, brief: bool = False) -> str:
    """Above the chart of `step`, which proposed step.tau of the `count` tokens the typed `words` made, under the
    run's `tau`: what was proposed, and what its q and p are; for the textbook's own draft, why it was or was not
    rejected here (`book_note`). `brief` (a projector, where the note sits beside the chart): that why alone."""
    why = book_note(words, step)
    if brief and why:
        return f'**Your draft** "{plain(words)}" (step {step.index + 1}).{why}'
    cut = ""
    if step.tau < count:
        cut = (
            f" Only {step.tau} of its {count} tokens were proposed: τ = {tau}, the tokens left, or q = 0 for the next "
            "one (outside the draft's vocabulary, or cut by top-k, top-p or temperature 0), where p/q has no value."
        )
    return (
        f'**Your draft** "{plain(words)}" (step {step.index + 1}): q is the draft model\'s probability of each typed '
        "token, p the target's; under a token, the draft's own first choice where it differs. Not drawn from q: in "
        f"lossless mode the output is then not the target's distribution.{cut}{why}"
    )


BOOK = next(name for name in PRESETS if name.endswith("| mat and then slept"))  # the Sandbox's textbook exercise


def book_note(words: str, step: StepTrace) -> str:
    """For the textbook's own draft, "mat and then slept": why this step kept or rejected what it did, from its own
    numbers (a token with q ≤ p is kept whatever r is: r ≤ min(1, p/q) = 1 always holds; only one with q > p can be
    rejected, by a draw above p/q), and where the exercise's made-up numbers that reject 'then' are (the Sandbox);
    "" for any other words. Nothing is said of the book beyond that exercise."""
    if " ".join(words.lower().split()) != BOOK.split("| ", 1)[1]:
        return ""
    exercise = f"[{plain(BOOK)}](sandbox?sandbox_preset={quote_plus(BOOK)})"
    made_up = (
        f"The Sandbox's exercise {exercise} gives these words made-up q and p, under which 'then' (q .6 > p .2) is "
        "rejected when r is above p/q = 1/3."
    )
    if not step.tau or any(r is None for r in step.r):  # greedy: argmaxes decide, not q against p
        return f" **Not the exercise's outcome?** Here q and p are what two real models give. {made_up}"
    above = [t for t in range(step.tau) if step.ratio[t] < 1.0]
    if not above:
        return (
            " **Why no rejection?** Every token here had q ≤ p, so each was kept whatever r was: r ≤ min(1, p/q) = 1 "
            f"always holds. A rejection needs a token the draft likes more than the target (q > p) and r above p/q. "
            f"{made_up}"
        )
    said = ", ".join(
        f"'{plain(token_label(step.draft_text[t]))}' (p/q = {step.ratio[t]:.2f}, {step.decision[t]})" for t in above
    )
    return f" **Where r decided:** only {said} had q > p; every other token had q ≤ p, which no r rejects. {made_up}"
