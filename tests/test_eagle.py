"""The feature-level draft (specviz.drafts.feature) on tiny random Llamas: its q follows the rule "the
target's own feature where the target has scored the previous token, the draft's own prediction
elsewhere", including after verification and rejection; it decodes in every mode (greedy output
= the target's); it saves and reloads exactly."""

from __future__ import annotations

import pytest
import torch

from specviz import Decoder, HFModel, ModelPair, SpecConfig, drafts, load_pair
from specviz.drafts.feature import FeatureDraft, FeatureDraftModel, save_feature_draft
from specviz.models.text import IdsCodec
from tests.helpers import SUBSET, make_feature_draft, save_tiny, tiny_llama


def target_features(target, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return target.model(torch.tensor([ids])).last_hidden_state[0]  # after the final norm


def reference_logq(draft: FeatureDraft, feats: torch.Tensor, ids: list[int], known: int) -> torch.Tensor:
    """log q after every position of `ids`, recomputed from scratch: position t reads the target's
    f_{t−1} when t − 1 < known, else the draft's own g_{t−1}."""
    g = []
    with torch.inference_mode():
        for t in range(len(ids)):
            prev = [
                torch.zeros(feats.shape[1], dtype=feats.dtype)
                if p == 0
                else feats[p - 1]
                if p - 1 < known
                else g[p - 1]
                for p in range(t + 1)
            ]
            g.append(draft.features(torch.tensor([ids[: t + 1]]), torch.stack(prev)[None])[0, -1])
        logits = draft.head(torch.stack(g))
    return logits.log_softmax(-1)


def test_draft_sessions_follow_the_feature_rule_through_verification_and_rejection():
    target = tiny_llama(0)
    draft = make_feature_draft(target)
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(draft, "d"), IdsCodec(None))
    t_session, d_session = pair.new_sessions()
    confirmed = [5, 17, 3, 88]
    t_session.extend(confirmed[:-1], keep=1)
    d_session.extend(confirmed[:-1], keep=1)
    # three steps: draft 3 tokens, verify, keep `accepted` of them plus one more token
    for drafts_, accepted, bonus in (([9, 40, 2], 1, 60), ([7, 7, 1], 3, 11), ([30, 8, 4], 0, 12)):
        known = len(confirmed) - 1
        feed = confirmed[d_session.length :]
        for i, token in enumerate(drafts_):
            logq = d_session.extend(feed, keep=1)[-1].log_softmax(-1)
            ids = confirmed + drafts_[:i]
            full = reference_logq(draft, target_features(target, ids), ids, known)[-1]
            torch.testing.assert_close(logq[SUBSET], full[SUBSET], atol=1e-9, rtol=0)
            assert torch.isneginf(logq[[1 + 2 * k for k in range(3, 40)]]).all()  # odd tokens > 5: outside
            feed = [token]
        t_session.extend(confirmed[t_session.length :] + drafts_, keep=len(drafts_) + 1)
        confirmed = confirmed + drafts_[:accepted] + [bonus]
        for session in (t_session, d_session):
            session.crop(min(session.length, len(confirmed) - 1))
    assert t_session.features_length == t_session.length


class CountedPasses:
    """A feature draft's forward that counts its passes (a test's own object: no shared model is touched)."""

    def __init__(self, draft: FeatureDraft) -> None:
        self.draft, self.passes = draft, 0

    def features(self, ids, *args, **kwargs):
        self.passes += 1
        return self.draft.features(ids, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.draft, name)


def test_a_back_redoes_the_same_rows_in_the_same_pass():
    """A step's accepted draft tokens are redone on the target's features in the next step's first pass, and after
    Back in that same pass again: the q of the Step again equals the q of the Step before the Back bit for bit (in
    float32 a pass over 3 rows rounds its sums differently from a pass over 1)."""
    target = tiny_llama(0).float()
    draft = CountedPasses(make_feature_draft(target))
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(draft.draft, "d", forward=draft), IdsCodec(None))
    t_session, d_session = pair.new_sessions()
    t_session.extend([5, 17, 3], keep=1)
    d_session.extend([5, 17, 3], keep=1)
    for token in (88, 9):  # the draft proposes 9, then 40 (on its own feature), and the target accepts both
        d_session.extend([token], keep=1)
    t_session.extend([88, 9, 40], keep=3)
    confirmed = [5, 17, 3, 88, 9, 40, 60]
    for session in (t_session, d_session):
        session.crop(min(session.length, len(confirmed) - 1))
    assert draft.passes == 3
    first = d_session.extend(confirmed[d_session.length :], keep=1)
    assert draft.passes == 4  # 9 redone beside 40 and 60 in one pass
    d_session.crop(len(confirmed) - 1)  # Back
    again = d_session.extend(confirmed[d_session.length :], keep=1)
    assert draft.passes == 5
    assert torch.equal(again, first)


@pytest.mark.parametrize("mode", ["greedy", "textbook", "lossless"])
def test_decodes_in_every_mode_and_greedy_output_is_the_targets(mode):
    target = tiny_llama(0)
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(make_feature_draft(target), "d"), IdsCodec(None))
    run = Decoder(pair, [5, 17, 3], SpecConfig(tau=3, mode=mode, max_new_tokens=20, seed=2)).run()
    assert len(run.new_tokens) == 20
    assert all(t in SUBSET.tolist() for s in run.steps for t in s.draft_tokens)
    if mode == "greedy":
        alone = target.generate(torch.tensor([[5, 17, 3]]), do_sample=False, max_new_tokens=20)
        assert run.new_tokens == tuple(alone[0, 3:].tolist())


def test_undo_replays_the_same_step():
    target = tiny_llama(0)
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(make_feature_draft(target), "d"), IdsCodec(None))
    decoder = Decoder(pair, [5, 17, 3], SpecConfig(tau=3, mode="lossless", max_new_tokens=20, seed=4))
    first = [decoder.step() for _ in range(3)]
    decoder.undo()
    again = decoder.step()
    assert again.draft_tokens == first[-1].draft_tokens and again.emitted == first[-1].emitted


def test_a_session_without_the_target_is_refused():
    target = tiny_llama(0)
    with pytest.raises(TypeError, match="target"):
        FeatureDraftModel(make_feature_draft(target), "d").new_session()


def test_saved_feature_draft_loads_as_a_pair(tmp_path):
    target_dir = save_tiny(tmp_path / "target", seed=0)
    target = tiny_llama(0)
    draft = make_feature_draft(target, seed=3)
    save_feature_draft(draft, tmp_path / "draft", meta={"note": "test"})
    pair = load_pair(target_dir, str(tmp_path / "draft"), dtype="float64")
    assert isinstance(pair.draft, FeatureDraftModel)
    ids = [5, 17, 3, 88, 42]
    t_session, d_session = pair.new_sessions()
    t_session.extend(ids[:-1])
    got = d_session.extend(ids).log_softmax(-1)
    want = reference_logq(draft, target_features(target, ids), ids, known=len(ids) - 1)
    torch.testing.assert_close(got[:, SUBSET], want[:, SUBSET], atol=1e-9, rtol=0)
    (tmp_path / "draft" / drafts.TENSORS_FILE).write_bytes(b"broken")
    with pytest.raises(drafts.DraftFileError, match="cannot read"):
        load_pair(target_dir, str(tmp_path / "draft"))


def test_the_lean_caches_keys_and_values_grow_in_place_crop_and_gather_a_tree_path():
    from specviz.drafts.lean import LeanCache
    from specviz.models.lm import gather_cache

    keys = torch.arange(2 * 70 * 3, dtype=torch.float64).reshape(1, 2, 70, 3)
    values = keys + 1000
    cache = LeanCache()
    cache.append(keys[..., :3, :], values[..., :3, :])
    for t in range(3, 70):  # past its first 64 positions: it grows, keeping what it held
        cache.append(keys[..., t : t + 1, :], values[..., t : t + 1, :])
    assert len(cache) == 70 and torch.equal(cache.keys, keys) and torch.equal(cache.values, values)
    cache.crop(-60)
    assert len(cache) == 10 and torch.equal(cache.values, values[..., :10, :])
    gather_cache(cache, [0, 2, 9])  # a tree's path: the keys set first, then the values gathered
    assert torch.equal(cache.keys, keys[..., [0, 2, 9], :]) and torch.equal(cache.values, values[..., [0, 2, 9], :])
    got_k, got_v = cache.append(keys[..., 40:41, :], values[..., 40:41, :])
    assert torch.equal(got_k, keys[..., [0, 2, 9, 40], :]) and torch.equal(got_v, values[..., [0, 2, 9, 40], :])
