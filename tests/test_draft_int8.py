"""The distilled draft in int8 (specviz.drafts.lean.Int8FeatureDraft, the `embedded-int8[:ROWS]` kind): its products
in int8 within the rounding that 8 bits allow, the same bits on any thread count, its head over the ranked rows only,
its spec's text, and what the class server counts of its memory."""

from __future__ import annotations

import pytest
import torch

from specviz import Decoder, HFModel, ModelPair, SpecConfig, specs
from specviz.drafts.feature import FeatureDraftModel
from specviz.drafts.kinds import kind_of
from specviz.drafts.kinds.embedded_int8 import DEFAULT_ROWS, INT8, EmbeddedInt8
from specviz.drafts.lean import Int8FeatureDraft, Int8Linear, int8_available
from specviz.errors import ModelError
from specviz.models import threads
from specviz.models.store import tensor_bytes
from specviz.models.text import IdsCodec
from specviz.training.data import rank_rows
from tests.helpers import SUBSET, make_feature_draft, tiny_llama

pytestmark = pytest.mark.skipif(not int8_available(), reason="this torch has no int8 CPU kernels")


def test_an_int8_product_is_within_what_eight_bits_round_and_the_same_on_any_thread_count():
    torch.manual_seed(0)
    weight = torch.randn(300, 64)
    x = torch.randn(3, 64)
    linear = Int8Linear(weight)
    got = linear(x)
    want = x @ weight.t()
    # each weight is off by at most half its row's step (max|w| / 127 / 2), each input by half the call's step
    # (its range / 127 with the range halved: / 127 · 2 / 2); the sum's error is bounded by those, entry by entry
    w_step = weight.abs().amax(1) / 127
    x_step = (x.max() - x.min().clamp(max=0)) / 127
    bound = (x.abs().sum(1, keepdim=True) * w_step[None] / 2) + (weight.abs().sum(1)[None] * (x_step + 1e-6))
    assert ((got - want).abs() <= bound).all()
    assert (got - want).abs().max() > 0  # it is a different product: not the float32 one
    with threads.pinned(2):
        two = linear(x)
    with threads.pinned(1):
        one = linear(x)
    assert torch.equal(one, two) and torch.equal(one, got)


def test_the_int8_draft_keeps_only_its_ranked_rows_and_stays_near_the_float_draft():
    target = tiny_llama(0)
    draft = make_feature_draft(target)
    rows = torch.tensor([5, 0, 9, 2, 30, 11])  # indices into the head (SUBSET), most frequent first
    fast = Int8FeatureDraft(draft, rows)
    assert fast.head_ids.tolist() == sorted(SUBSET[rows].tolist())
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(draft, "d", forward=fast), IdsCodec(None))
    reference = ModelPair(HFModel(target, "t"), FeatureDraftModel(draft, "d", lean=True), IdsCodec(None))
    ids = [5, 17, 3, 88, 42]
    got, want = [], []
    for p, out in ((pair, got), (reference, want)):
        t_session, d_session = p.new_sessions()
        t_session.extend(ids[:-1])
        out.append(d_session.extend(ids).softmax(-1))
    q, q_float = got[0], want[0]
    kept = SUBSET[rows]
    outside = torch.ones(q.shape[-1], dtype=torch.bool)
    outside[kept] = False
    assert (q[:, outside] == 0).all() and torch.allclose(q.sum(-1), torch.ones(len(ids), dtype=q.dtype))
    # on the kept rows: the float draft's q renormalised there, up to int8's rounding
    renorm = q_float[:, kept] / q_float[:, kept].sum(-1, keepdim=True)
    assert (q[:, kept] - renorm).abs().max() < 0.05
    assert (q[:, kept] - renorm).abs().max() > 0


def test_the_int8_draft_decodes_and_greedy_output_is_the_targets():
    target = tiny_llama(0)
    draft = make_feature_draft(target)
    forward = Int8FeatureDraft(draft, torch.arange(len(SUBSET)))
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(draft, "d", forward=forward), IdsCodec(None))
    run = Decoder(pair, [5, 17, 3], SpecConfig(tau=3, mode="greedy", max_new_tokens=16, seed=2)).run()
    alone = target.generate(torch.tensor([[5, 17, 3]]), do_sample=False, max_new_tokens=16)
    assert run.new_tokens == tuple(alone[0, 3:].tolist())
    again = Decoder(pair, [5, 17, 3], SpecConfig(tau=3, mode="lossless", max_new_tokens=16, seed=2)).run()
    twice = Decoder(pair, [5, 17, 3], SpecConfig(tau=3, mode="lossless", max_new_tokens=16, seed=2)).run()
    assert [s.draft_tokens for s in again.steps] == [s.draft_tokens for s in twice.steps]


def test_the_class_server_counts_the_packed_int8_weights():
    torch.manual_seed(0)
    linear = Int8Linear(torch.randn(1000, 64))
    assert tensor_bytes(linear) == 2 * 64_000 + 16 * 1000  # the int8 weight, its packed copy, a scale a row
    target = tiny_llama(0)
    draft = make_feature_draft(target)
    forward = Int8FeatureDraft(draft, int8=("qkv", "gate_up", "down", "head", "fc", "o"))
    fast = FeatureDraftModel(draft, "d", forward=forward)
    assert tensor_bytes(FeatureDraftModel(draft, "d", forward=Int8FeatureDraft(draft, int8=("head",)))) > tensor_bytes(
        fast
    )  # float32 copies of the other five
    int8 = [p for p in (*forward.products.values(), forward.head_linear) if isinstance(p, Int8Linear)]
    assert len(int8) == 6  # every product, the head among them
    packed = sum(p.held_bytes() for p in int8)
    copies = [p.weight_t for p in forward.products.values() if not isinstance(p, Int8Linear)]
    copies += [forward._cos, forward._sin, forward.head_ids, forward.norm_in, forward.norm_post, forward.norm_out]
    copies.append(forward.inv_freq)  # the rotary tables, the kept rows' ids, the norms and angles copied once
    # what it holds: the target's embeddings (shared, read only), the packed int8 products and the copies; not the
    # draft module, whose float32 weights the forward no longer reads (let go: `draft` None)
    assert fast.draft is None and tensor_bytes(draft) > tensor_bytes(forward.embed)
    assert tensor_bytes(fast) == tensor_bytes(forward.embed) + packed + sum(
        t.numel() * t.element_size() for t in copies
    )


def test_rows_are_ranked_by_how_often_the_target_generated_each_token():
    records = [
        {"ids": torch.tensor([1, 1, 5, 5, 9, 9, 9, 3], dtype=torch.int32), "start": 2},  # prompt [1, 1] not counted
        {"ids": torch.tensor([4, 3, 8], dtype=torch.int32), "start": 1},
    ]
    ids = torch.tensor([1, 3, 5, 7, 8, 9])  # the head's tokens, sorted
    # generated: 5 ×2, 9 ×3, 3 ×2, 8 ×1, 1 and 7 never; 7 always first; ties (3 and 5; 1 and 7) to the lower id
    assert rank_rows(records, ids, always=[7]).tolist() == [3, 5, 1, 2, 4, 0]


def test_the_spec_names_its_head_rows():
    assert specs.parse(INT8) == EmbeddedInt8(text=INT8, rows=DEFAULT_ROWS)
    spec = specs.parse(f"{INT8}:8192")
    assert isinstance(spec, EmbeddedInt8) and spec.rows == 8192 and str(spec) == f"{INT8}:8192"
    assert str(specs.parse(f"{INT8}:{DEFAULT_ROWS}")) == INT8
    assert kind_of(spec).name == INT8
    for bad in (f"{INT8}:", f"{INT8}:0", f"{INT8}:x", f"{INT8}:-5"):
        with pytest.raises(ModelError, match=INT8):
            specs.parse(bad)


def test_the_int8_drafts_rotary_tables_turn_q_and_k_as_the_float_draft_does():
    from specviz.drafts.lean import TABLE_POSITIONS, LeanFeatureDraft

    target = tiny_llama(0)
    draft = make_feature_draft(target)
    fast, lean = Int8FeatureDraft(draft), LeanFeatureDraft(draft)
    width = (fast.heads + fast.kv_heads) * fast.head_dim
    qk = torch.randn(3, width, dtype=torch.float64)
    for positions in (torch.tensor([0, 1, 2]), torch.tensor([7, 3, 5]), torch.tensor([TABLE_POSITIONS + 2] * 3)):
        for got, want in zip(fast._rotated(qk, positions), lean._rotated(qk, positions), strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    assert not torch.allclose(*fast._rotated(qk, torch.tensor([0, 1, 2]))[:1], qk[:, : fast.head_dim][None])


def test_smoothing_keeps_an_outlier_channel_from_taking_the_eight_bit_scale_of_x():
    """One input channel 100× the others (a hidden state's outlier): x's one 8-bit scale goes to it and the other
    channels round to a few steps; smoothed, (x / s)(W s)ᵀ is the same product in exact arithmetic and comes out
    far closer. The scales are calibrated on other rows than those checked."""
    from specviz.drafts.lean import smoothing

    torch.manual_seed(1)
    weight = torch.randn(256, 64)
    rows = torch.randn(40, 64)
    rows[:, 5] *= 100
    seen, checked = rows[:20], rows[20:]
    want = checked @ weight.t()
    plain = (Int8Linear(weight)(checked) - want).norm() / want.norm()
    smooth = (Int8Linear(weight, smoothing(seen.abs().amax(0), weight))(checked) - want).norm() / want.norm()
    assert smooth < plain / 3, (float(plain), float(smooth))


def test_calibration_records_each_products_largest_input_per_channel():
    from specviz.drafts.lean import PRODUCTS
    from specviz.training.int8 import input_maxima

    target = tiny_llama(0)
    draft = make_feature_draft(target)
    records = [{"ids": torch.tensor([5, 17, 3, 88, 42, 9], dtype=torch.int32), "start": 2}]
    maxima = input_maxima(target, draft, records)
    assert set(maxima) == set(PRODUCTS)
    hidden = draft.fc.weight.shape[0]
    assert maxima["fc"].shape == (2 * hidden,) and maxima["head"].shape == (hidden,)
    emb = target.model.embed_tokens.weight[records[0]["ids"].long()].abs().amax(0)
    assert torch.allclose(maxima["fc"][:hidden].double(), emb.double(), rtol=1e-6)  # fc reads emb(x_t) first


def test_beside_another_target_it_is_refused_with_a_message(tmp_path):
    from specviz import load_pair
    from tests.helpers import save_tiny

    with pytest.raises(ModelError, match="drafts for the embedded target only"):
        load_pair(save_tiny(tmp_path / "t", seed=0), INT8)
