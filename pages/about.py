"""About: the algorithm of docs/algorithm.md and the three acceptance modes, for teaching."""

import pandas as pd
import streamlit as st

import specviz
from pages._common.shell import ensure_shell
from specviz.analysis.glossary import NOTE as GLOSSARY_NOTE
from specviz.analysis.glossary import glossary_rows
from specviz.analysis.theory import first_token_distribution
from specviz.viz import run_charts, step_chart
from specviz.viz.plain import plain

ensure_shell()
st.title("How speculative decoding works")
st.markdown(
    """
A small **draft** model *q* guesses τ tokens ahead; the large **target** model *p* checks all of
them in **one** forward pass. Every step emits between 1 and τ + 1 tokens for one target pass.
*p* is always the target here (some papers swap the letters).

**One step**, starting from the confirmed text *x*:

1. **Draft.** *q* proposes ŷ₁ … ŷτ one at a time, each conditioned on *x* and the earlier draft
   tokens. Record q(ŷₜ).
2. **Verify.** *p* scores *x* ⊕ ŷ₁…ŷτ in one pass: p(ŷₜ) at every position, plus one more
   distribution at position τ + 1.
3. **Accept or reject.** Draw rₜ ~ U[0, 1). Token *t* is **rejected when rₜ > p/q**. If q ≤ p it is
   always accepted; if q > p it survives with probability p/q. q > p is *not* an automatic rejection.
4. **Count the run.** Only the run from the start counts: n = the position of the first rejection
   minus one (n = τ if none). Tokens after a rejection are discarded even if their own test passes.
5. **Next token from the target** — never the draft — from position n + 1 of the same pass.
"""
)
st.subheader("A worked step")
st.markdown(
    "Hand-made context-free tables: target p = [.5, .3, .2] over the words *a b c*, draft "
    "q = [.2, .2, .6]. The draft greedily proposes *c* three times (q = .6, p = .2, so p/q = 1/3)."
)
table_pair = specviz.ModelPair(
    specviz.TableModel([0.5, 0.3, 0.2], "p"),
    specviz.TableModel([0.2, 0.2, 0.6], "q"),
    specviz.WordCodec("abc"),
)
example = specviz.Decoder(table_pair, "a", specviz.SpecConfig(tau=3, seed=3)).step()
st.plotly_chart(step_chart.step_chart(example), key="about_step_chart")
st.caption(
    f"Seed 3: r = {', '.join(f'{r:.2f}' for r in example.r)}; {example.n_accepted} accepted, then "
    f"'{plain(example.next_text)}' ({example.next_rule}). A diamond above its cross means r ≤ p/q: accepted."
)

st.subheader("Three acceptance modes")
st.markdown(
    """
| mode | drafting | test | next token after n accepted |
|---|---|---|---|
| **textbook** (default) | argmax of q | r ≤ p/q | argmax of p at n + 1 |
| **lossless** (speculative sampling) | sample from q | r ≤ p/q | norm(max(0, p − q)); p if n = τ |
| **greedy** (assisted generation) | argmax of q | ŷ = argmax p | argmax of p at n + 1 |

* **greedy** reproduces the target's own greedy decoding token for token, whatever the draft.
* **lossless** emits exactly the target's sampling distribution, whatever the draft.
* **textbook** with sampling is *fast but wrong*: its correction is always the mode of p.
"""
)
p, q = [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]
rows = {mode: first_token_distribution(p, q, mode) for mode in ("lossless", "textbook", "textbook-sampled", "greedy")}
st.dataframe(
    {"mode": ["target p", *rows], **{w: [p[i]] + [d[i] for d in rows.values()] for i, w in enumerate("abc")}},
    hide_index=True,
)
st.caption("Exact first-token distributions for the tables above. Only lossless matches p.")

st.subheader("How many tokens per step?")
st.markdown(
    "If each draft token is accepted with probability α = Σ min(p, q) = 1 − TV(p, q), independently, "
    "a step emits **E = (1 − α^(τ+1)) / (1 − α)** tokens on average (Leviathan, Kalman, Matias 2023). "
    "With c = draft cost / target cost, the speedup is E / (τ·c + 1): speculation pays off for "
    "some τ exactly when α > c."
)
st.plotly_chart(run_charts.theory_chart([0.5, 0.7, 0.8, 0.9]), key="about_theory_chart")

st.subheader("The same numbers in the serving engines")
st.markdown(
    "What each number specviz shows is called in vLLM's, SGLang's and llama.cpp's logs, read from their source "
    '(files and commits in docs/algorithm.md, "Glossary: the same numbers in the serving engines"). ' + GLOSSARY_NOTE
)
# the engines' long metric names are code: let them break, so that every column fits the page
st.html("<style>[data-testid='stTable'] code { white-space: pre-wrap; overflow-wrap: anywhere; }</style>")
st.table(pd.DataFrame(glossary_rows()).set_index("specviz"))
