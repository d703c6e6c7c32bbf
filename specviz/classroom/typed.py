"""What Decode's "Your draft" says (specviz.drafts.typed is the draft itself): why a run cannot take a typed
draft, the tokens typed words make, and the note above a step that proposed them. Text only; every piece that
came from a person or a model is escaped (specviz.viz.plain), but in `refusal`, an error's message."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote_plus

from specviz.classroom.sandbox import PRESETS
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


def step_note(words: str, count: int, index: int, proposed: int, tau: int) -> str:
    """Above the chart of step `index` (0-based), which proposed `proposed` of the `count` tokens the typed `words`
    made, under the run's `tau`: what was proposed, and what its q and p are."""
    cut = ""
    if proposed < count:
        cut = (
            f" Only {proposed} of its {count} tokens were proposed: τ = {tau}, the tokens left, or q = 0 for the next "
            "one (outside the draft's vocabulary, or cut by top-k, top-p or temperature 0), where p/q has no value."
        )
    return (
        f'**Your draft** "{plain(words)}" (step {index + 1}): q is the draft model\'s probability of each typed '
        "token, p the target's; under a token, the draft's own first choice where it differs. Not drawn from q: in "
        f"lossless mode the output is then not the target's distribution.{cut}{book_note(words)}"
    )


BOOK = next(name for name in PRESETS if name.endswith("| mat and then slept"))  # the Sandbox's textbook exercise


def book_note(words: str) -> str:
    """For the textbook's own draft, "mat and then slept": why the real models do not give the book's outcome, and
    where its numbers are (the Sandbox's exercise); "" for any other words."""
    if " ".join(words.lower().split()) != BOOK.split("| ", 1)[1]:
        return ""
    return (
        " **Not the book's outcome?** The book invents q and p for these words ('mat': q .6, p .5; 'then': q .6, p .2) "
        "so that 'mat' and 'and' are kept, 'then' is rejected and the target says 'purred'. Here q and p are what two "
        "real models give each word after this text, and the rule is applied to them as they are. The book's own "
        f"numbers are the Sandbox's exercise [{plain(BOOK)}](sandbox?sandbox_preset={quote_plus(BOOK)})."
    )
