"""A run's numbers do not depend on the thread that computes it (specviz.models.threads): the same run alone in
the main thread, from a new thread, after the process's torch thread count was changed, and beside other runs
in threads gives the same trace bit for bit, for every kind of torch model a pair runs (a transformers draft
and target, the feature draft through its transformers modules and its lean forward, the target on chosen
kernels), and for the embedded pair on llama.cpp as a class server runs it.

The models here are random float32 Llamas of the embedded model's widths (576 wide, an MLP of 1536, 9 heads of
64): products of these shapes round differently on one and two threads (on a 2-core AMD EPYC, products of 5
and 6 rows: a verify pass at τ = 4, a prompt of 5 or 6 tokens), which the last test shows with the pin taken
away. Where a CPU's MKL rounds them alike, that test skips and the others still check the traces."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import specviz
from specviz import Decoder, HFModel, ModelPair, SpecConfig
from specviz.drafts.feature import FeatureDraftModel
from specviz.models import llamacpp, threads
from specviz.models.kernels import with_chosen_kernels
from specviz.models.text import IdsCodec
from tests.helpers import make_feature_draft

PROMPTS = ([5, 17, 3, 5, 17], [40, 2, 40, 2, 9, 11], [88, 1, 7, 88, 1, 7, 30])
MODES = ("textbook", "lossless", "greedy")
KINDS = ("transformers draft", "feature draft", "lean feature draft", "chosen kernels")


def wide_llama(seed: int, layers: int) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=1024,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=layers,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=256,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).eval()


def wide_pair(kind: str) -> ModelPair:
    """A pair whose models take the count of the thread that makes them (the caller sets it first)."""
    model = wide_llama(0, layers=2)
    if kind == "chosen kernels":
        target = HFModel(with_chosen_kernels(wide_llama(0, layers=2)), "target on chosen kernels", "torch-kernels")
    else:
        target = HFModel(model, "target")
    draft = {
        "transformers draft": lambda: HFModel(wide_llama(1, layers=1), "draft"),
        "feature draft": lambda: FeatureDraftModel(make_feature_draft(model), "feature draft"),
        "lean feature draft": lambda: FeatureDraftModel(make_feature_draft(model), "lean draft", lean=True),
        "chosen kernels": lambda: FeatureDraftModel(make_feature_draft(model), "lean draft", lean=True),
    }[kind]()
    return ModelPair(target, draft, IdsCodec(None))


def decode(pair: ModelPair, run: int) -> dict:
    config = SpecConfig(tau=4, mode=MODES[run % len(MODES)], seed=run, max_new_tokens=16)
    return Decoder(pair, PROMPTS[run % len(PROMPTS)], config).run().outcome()


def in_threads(*work: Callable[[], dict]) -> list[dict]:
    """Each callable in a new thread of its own, all released at the same instant; their results in order."""
    results: list = [None] * len(work)
    start = threading.Barrier(len(work))

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work[i]()
        except BaseException as exc:  # reported below, with the run that raised it
            results[i] = exc

    started = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    for i, result in enumerate(results):
        if isinstance(result, BaseException):
            raise AssertionError(f"run {i} raised {result!r}") from result
    return results


@pytest.fixture
def own_count():
    """The main thread's torch count (and the count new threads take) given back after the test."""
    own = torch.get_num_threads()
    yield
    torch.set_num_threads(own)


def test_pinned_sets_this_threads_count_and_gives_it_back(own_count):
    torch.set_num_threads(2)
    with threads.pinned(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    seen = in_threads(lambda: {"before": threads.current(), "within": _within(3), "after": threads.current()})
    assert seen == [{"before": 2, "within": 3, "after": 2}]  # a new thread starts at the process's count
    assert torch.get_num_threads() == 2  # another thread's pin leaves this one's count alone


def _within(count: int) -> int:
    with threads.pinned(count):
        return torch.get_num_threads()


def test_a_new_threads_first_product_runs_on_the_pinned_count(own_count):
    """A thread's products before its first parallel operation run on MKL's default (every core), whatever the
    process set: the lean draft's first pass in a Streamlit fragment's thread, behind a llama.cpp target. Pinned,
    the product is the one the main thread makes at that count."""
    torch.manual_seed(0)
    x, weight = torch.randn(5, 1536), torch.randn(576, 1536) / 40
    torch.set_num_threads(1)
    main = x @ weight.T

    def first() -> dict:
        with threads.pinned(1):
            return {"y": x @ weight.T}

    assert torch.equal(in_threads(first)[0]["y"], main)


def test_a_vocabularys_sums_are_the_same_on_any_thread_count(own_count):
    """β, the residual and the block rule's masses sum 49,152 numbers: torch splits such a sum over the thread's
    threads. specviz.core.sampling.total sums on one: the same bits at any count, in any thread."""
    from specviz.core.sampling import overlap, residual, total

    gen = torch.Generator().manual_seed(0)
    rows = [(5 * torch.randn(2, 49152, generator=gen, dtype=torch.float64)).softmax(-1) for _ in range(20)]

    def sums() -> dict:
        return {
            "plain": [float((p - q).clamp(min=0.0).sum()) for p, q in rows],
            "beta": [float(overlap(p, q)) for p, q in rows],
            "residual": [residual(p, q) for p, q in rows],
            "total": [float(total(p)) for p, _ in rows],
        }

    torch.set_num_threads(1)
    one = sums()
    torch.set_num_threads(2)
    two, fresh = sums(), in_threads(sums)[0]
    for other in (two, fresh):
        assert other["beta"] == one["beta"] and other["total"] == one["total"]
        assert all(torch.equal(a, b) for a, b in zip(other["residual"], one["residual"], strict=True))
    if two["plain"] == one["plain"]:
        pytest.skip("this CPU's torch sums these alike on one and two threads")  # else: what total holds against


def test_models_take_the_count_they_are_made_with(own_count):
    torch.set_num_threads(1)
    pair = wide_pair("lean feature draft")
    torch.set_num_threads(2)
    assert pair.target.threads == pair.draft.threads == 1
    assert pair.target.capabilities.threads == pair.draft.capabilities.threads == 1
    assert HFModel(wide_llama(2, layers=1), "made at 2").threads == 2
    assert HFModel(wide_llama(2, layers=1), "given 3", threads=3).capabilities.threads == 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_gives_the_same_bits_from_any_thread_at_any_count_beside_any_run(kind, own_count):
    torch.set_num_threads(1)  # the app's count: its models are made with it
    pair = wide_pair(kind)
    alone = [decode(pair, run) for run in range(3)]  # each alone, in the main thread
    torch.set_num_threads(2)  # the main thread's count and the one new threads take: another now
    assert decode(pair, 0) == alone[0], "the main thread at another count"
    assert in_threads(lambda: decode(pair, 1)) == [alone[1]], "a new thread"
    together = in_threads(*(lambda run=run: decode(pair, run) for run in (0, 1, 2, 0)))
    for run, trace in zip((0, 1, 2, 0), together, strict=True):
        assert trace == alone[run], f"run {run} beside three others"


def test_without_the_pin_the_thread_count_changes_these_runs(monkeypatch, own_count):
    """What the pin holds against on this CPU: the same runs with every pass left on its thread's own count
    differ between one and two threads (skipped where this CPU's MKL rounds these products alike)."""
    monkeypatch.setattr(threads, "pinned", lambda count: contextlib.nullcontext())
    torch.set_num_threads(1)
    pair = wide_pair("transformers draft")
    one = [decode(pair, run) for run in range(3)]
    torch.set_num_threads(2)
    two = [decode(pair, run) for run in range(3)]
    if one == two:
        pytest.skip("this CPU rounds these products alike on one and two threads")
    assert [decode(pair, run) for run in range(3)] == two  # each count is repeatable: the count is the cause


@pytest.mark.slow
def test_the_embedded_pair_on_llama_cpp_gives_the_same_bits_from_any_thread(embedded_cache, own_count):
    """As a class server runs it: the target on llama.cpp with a pool of streams whose passes share decodes, the
    lean feature draft on torch; runs stepped alone at one torch thread, then at two, from threads, beside others."""
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    torch.set_num_threads(1)
    pair = specviz.load_pair("embedded", "embedded", runtime="llama.cpp")
    prompts = ("Explain how a rainbow forms, step by step.", "List ten facts about the ocean.")

    def run(i: int) -> dict:
        config = SpecConfig(tau=4, mode=MODES[i % len(MODES)], seed=i, max_new_tokens=24)
        return Decoder(pair, prompts[i % 2], config, compare_rules=True).run().outcome()

    alone = [run(i) for i in range(3)]
    torch.set_num_threads(2)
    pool = llamacpp.SlotPool(pair.target, 4, 512, pair.target.threads or llamacpp.default_threads())
    with _pooled(pair.target, pool):
        together = in_threads(*(lambda i=i: run(i) for i in (0, 1, 2, 0)))
    for i, trace in zip((0, 1, 2, 0), together, strict=True):
        assert trace == alone[i], f"run {i} beside three others"
    assert pool.passes > pool.decodes  # the runs' passes did share decodes


@contextlib.contextmanager
def _pooled(model, pool):
    before, model._pool = model._pool, pool
    try:
        yield
    finally:
        model._pool = before


def test_the_engine_and_the_target_alone_do_their_own_tensor_work_on_one_thread(own_count):
    """Whatever count the caller's thread has, a step's own tensor work (warping logits, sampling, a llama.cpp
    session's copy of its logits) runs on one thread: a team of torch threads started there busy-waits after it on
    the cores a llama.cpp pass then needs (docs/performance.md). A session that does not pin a count of its own (a
    table model's) sees the count the engine gives it."""
    from specviz.analysis.measure import TargetAlone
    from specviz.models.lm import TableModel, TableSession

    seen: list[int] = []

    class Counting(TableSession):
        def extend(self, ids, keep=None):
            seen.append(torch.get_num_threads())
            return super().extend(ids, keep)

    class CountingModel(TableModel):
        def new_session(self, *args, **kwargs):
            return Counting(self)

    model = CountingModel([0.5, 0.3, 0.2], "counting")
    pair = ModelPair(model, model, specviz.WordCodec("abc"))
    torch.set_num_threads(2)
    dec = Decoder(pair, [0, 1], SpecConfig(tau=2, max_new_tokens=3, seed=0))
    dec.step()
    alone = TargetAlone(pair, [0, 1], SpecConfig(mode="greedy", max_new_tokens=3))
    alone.step()
    alone.feed([2])
    assert seen and set(seen) == {1}, seen
    assert torch.get_num_threads() == 2  # the caller's own count is given back


def test_mkls_reproducible_mode_is_on_once_specviz_is_imported():
    """Without MKL's conditional numerical reproducibility a product's last bits follow its rows' alignment: the same
    seeded run gave the feature draft other q in about one run of three beside a busy process. Importing specviz sets
    the mode before any product: MKL's branch reads AUTO (2), not OFF (1)."""
    lib = threads.mkl_service()
    if lib is None:
        pytest.skip("this torch exports no MKL service functions")
    assert threads.REPRODUCIBLE
    assert lib.mkl_serv_cbwr_get(1) == 2
