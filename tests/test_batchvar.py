"""Batch variance (specviz.analysis.batchvar): a verify pass over k tokens against k one-token passes. By hand on a
table whose passes over several tokens read other numbers at one position (as a runtime's batched kernels do); none
beyond rounding on a float32 tiny model on torch; measured on a quantized GGUF on llama.cpp; and a greedy race whose
texts part there, explained with the target's top two in each kind of pass."""

from __future__ import annotations

import pytest
import torch

import specviz
from specviz.analysis import batchvar
from specviz.analysis.race import Race
from specviz.errors import ConfigError
from specviz.models.lm import Capabilities, ListSession
from tests.helpers import tiny_llama

ONE_TOKEN = (0.40, 0.38, 0.22)  # p everywhere, one token per pass: 'a' before 'b' by 0.02
BATCHED = {1: (0.37, 0.42, 0.21)}  # in a pass over several tokens, the p that predicts new token 1: 'b' first
PROMPT = 3  # tokens of the prompt ("a a a")


class BatchedTable:
    """A target whose p depends on the pass: ONE_TOKEN in a pass of one token, BATCHED[n] for new token n in a pass
    over several (a verify pass, or the prompt's)."""

    name, vocab_size, max_length = "batched table", 3, None
    capabilities = Capabilities(runtime="fake kernels", trees=False)

    def __init__(self, batched: dict[int, tuple[float, ...]] = BATCHED) -> None:
        self.batched = batched

    def new_session(self) -> _BatchedSession:
        return _BatchedSession(self)


class _BatchedSession(ListSession):
    def __init__(self, owner: BatchedTable) -> None:
        super().__init__()
        self._owner, self._size = owner, 1

    def extend(self, ids, keep=None):
        self._size = len(ids)
        return super().extend(ids, keep)

    def _row(self, context) -> torch.Tensor:
        new = len(context) - PROMPT  # the new token this row predicts
        probs = self._owner.batched.get(new, ONE_TOKEN) if self._size > 1 else ONE_TOKEN
        return torch.tensor(probs, dtype=torch.float64).log()


def table_pair() -> specviz.ModelPair:
    draft = specviz.TableModel([0.5, 0.3, 0.2], "q")  # always drafts 'a'
    return specviz.ModelPair(BatchedTable(), draft, specviz.WordCodec("abc"))


def test_the_largest_difference_by_hand():
    """10 ids, a prefix of 2, passes of 4: rows 0-3 and 4-7 after the prefix. Row r (the p after id 2 + r) predicts new
    token r of a 3-token prompt: row 1 reads BATCHED[1] = (.37, .42, .21) against (.40, .38, .22): |Δp| = .03, .04,
    .01, the largest .04 on 'b', whose p is first there (a flip); every other row agrees."""
    measured = batchvar.batch_variance(BatchedTable(), [0] * 10, prefix=2, k=4)
    assert measured.position == 1
    assert measured.largest == pytest.approx(0.04) and measured.token == 1
    assert (measured.batched_p, measured.single_p) == pytest.approx((0.42, 0.38))
    assert (measured.flips, measured.positions, measured.k, measured.runtime) == (1, 8, 4, "fake kernels")
    assert measured.by_position == pytest.approx((0, 0.04, 0, 0, 0, 0, 0, 0))
    assert measured.gaps == pytest.approx((0.02,) * 8)  # .40 - .38 in every one-token pass
    assert not measured.negligible
    assert measured.words() == (
        "a verify pass over 4 tokens and 4 one-token passes on fake kernels gave p up to 0.0400 apart (0.3800 one "
        "token at a time, 0.4200 in the verify pass) over 8 positions; the most likely token differed at 1 of them"
    )
    # prefix 3: row r predicts new token r + 1. New token 1: |Δp| = 0, .01, .01; new token 5 (row 4): .03, .03, .06
    two = batchvar.batch_variance(BatchedTable({1: (0.40, 0.37, 0.23), 5: (0.37, 0.35, 0.28)}), [0] * 12, 3, 3)
    assert two.largest == pytest.approx(0.06) and (two.position, two.token, two.flips) == (4, 2, 0)
    same = batchvar.batch_variance(BatchedTable(), [0] * 10, prefix=2, k=1)  # one token per pass on both sides
    assert same.largest == 0.0 and same.flips == 0 and same.negligible


def test_nothing_to_compare_is_refused():
    for ids, prefix, k in (([0, 1, 2], 3, 2), ([0, 1], 0, 2), ([0, 1, 2], 1, 0)):
        with pytest.raises(ConfigError):
            batchvar.batch_variance(BatchedTable(), ids, prefix, k)


def test_a_float32_model_on_torch_shows_none_beyond_rounding():
    """The tiny Llama in float32: a pass over 5 tokens and 5 one-token passes agree to the last bits of a float32 logit
    (torch's batched products add in another order: measured 8e-10 in p, 9e-8 in a logit), no top choice moves; in
    float64 the difference is 1e-17."""
    model = specviz.HFModel(tiny_llama(0).to(torch.float32), "tiny f32", threads=1)
    ids = list(range(3, 60))
    measured = batchvar.batch_variance(model, ids, prefix=5, k=5)
    assert measured.negligible and measured.largest < batchvar.ROUNDING and measured.flips == 0
    assert measured.positions == 52 and measured.runtime == "torch"
    assert measured.words().endswith("(float32 sums added in another order): no batch variance to speak of")
    exact = batchvar.batch_variance(specviz.HFModel(tiny_llama(0), "tiny f64", threads=1), ids, prefix=5, k=5)
    assert exact.largest < 1e-14


def test_a_greedy_race_whose_texts_part_is_explained_by_hand():
    """τ = 2 on "a a a": the first verify pass reads 'a' (accepted: p = .40 first) and then BATCHED[1], where 'b' leads
    (.42 against .37): the draft 'a' is rejected and 'b' emitted. The target alone reads new token 1 in a one-token
    pass, where 'a' leads (.40 against .38): the texts part at new token 2, each side on its own pass's first
    token, a top-2 gap of .02 against a measured batch variance of .04."""
    pair = table_pair()
    race = Race(pair, "a a a", specviz.SpecConfig(tau=2, mode="greedy", max_new_tokens=6))
    result = race.run()
    assert not result.same_text and result.alone.tokens == (0,) * 6 and result.speculative.tokens[:2] == (0, 1)
    why = batchvar.greedy_difference(pair, race.spec.prompt_ids, race.alone.tokens, race.spec.steps, tau=2)
    assert why.index == 1 and why.own_choices and why.verify_tokens == 3
    assert (why.alone.text, why.alone.prob) == ("a", pytest.approx(0.40))
    assert (why.speculative.text, why.speculative.prob) == ("b", pytest.approx(0.42))
    assert [(t.text, t.prob) for t in why.one_token_top] == [("a", pytest.approx(0.40)), ("b", pytest.approx(0.38))]
    assert why.gap == pytest.approx(0.02) and why.speculative_alone_p == pytest.approx(0.38)
    assert why.alone_verify_p == pytest.approx(0.37)
    assert why.variance.largest == pytest.approx(0.04) and why.variance.k == 3 and why.variance.positions == 6
    said = why.words()
    assert said.startswith(
        "The texts part at new token 2: the target alone wrote 'a', speculation 'b'. In the target's one-token pass "
        "there, 'a' had p = 0.4000 and 'b' 0.3800 (its top-2 gap: 0.0200); in the verify pass over 3 tokens that "
        "chose 'b', 'b' had 0.4200 and 'a' 0.3700. Each side took the most likely token of its own pass"
    )
    assert "batch variance, not a bug of the algorithm" in said and "p up to 0.0400 apart" in said
    same = batchvar.greedy_difference(pair, race.spec.prompt_ids, race.spec.new_tokens, race.spec.steps, tau=2)
    assert same is None  # speculation against its own text: nothing to explain


def test_a_side_that_did_not_take_its_own_passes_first_token_is_called_a_bug():
    """The same race, the target alone's tokens changed to 'c' from new token 2: 'c' is not the first of its one-token
    pass (.22), so the difference is a bug, not batch variance."""
    pair = table_pair()
    race = Race(pair, "a a a", specviz.SpecConfig(tau=2, mode="greedy", max_new_tokens=6))
    race.run()
    alone = [0, 2, 2, 2, 2, 2]
    why = batchvar.greedy_difference(pair, race.spec.prompt_ids, alone, race.spec.steps, tau=2)
    assert why.index == 1 and not why.own_choices and why.alone.prob == pytest.approx(0.22)
    assert "But the target alone did not take the most likely token of its own pass: that is a bug" in why.words()


def test_first_difference():
    assert batchvar.first_difference([1, 2, 3], [1, 2, 3]) is None
    assert batchvar.first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert batchvar.first_difference([1, 2], [1, 2, 3]) == 2


# --- on llama.cpp: the embedded target in float32 and in 4 bits ---------------------------------------------------

ANSWER = " Here is one in Python: def reverse(items): return items[::-1]. It returns a reversed copy of the list."


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_on_llama_cpp_the_4_bit_target_moves_p_and_the_float32_one_does_not(embedded_cache):
    """The embedded target's float32 GGUF and its Q4_0 copy (llama.cpp's quantizer) on the last 40 tokens of a chat
    prompt and an answer, passes of 5. Measured 2026-11-27 (docs/algorithm.md, "Batch variance"): float32 1.8e-6 to
    3.2e-6 on the haswell, icelake, skylakex and zen4 CPU variants, 4 bits 0.053 to 0.054 with one top token moved;
    both exactly 0 on the scalar x64 variant (one code path for any number of tokens). Tiny random llamas written
    here moved by 0 or 0.03 by seed and variant: too small a model to say anything, so the real one."""
    from specviz.models import embedded, llamacpp, quantize
    from specviz.models.ggufcodec import LlamaCodec

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    exact = llamacpp.LlamaCppModel(embedded.ensure_f32_gguf(), "F32", context=512)
    four = llamacpp.LlamaCppModel(quantize.embedded_quantized("Q4_0"), "Q4_0", context=512)
    codec = LlamaCodec(exact)
    ids = [*codec.encode_chat("Write a Python function that reverses a list.")[1], *codec.encode(ANSWER)]
    f32, q4 = (batchvar.batch_variance(model, ids, len(ids) - 40, 5) for model in (exact, four))
    assert f32.positions == q4.positions == 40 and f32.runtime == q4.runtime == "llama.cpp"
    if llamacpp.cpu_variant() == "x64":
        assert f32.largest == q4.largest == 0.0
        return
    assert f32.negligible and f32.flips == 0
    assert q4.largest > 0.01 and not q4.negligible, q4
