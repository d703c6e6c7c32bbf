"""The trained-draft machinery on tiny random Llamas: the student, saving and reloading (adapters
merged, restricted head), loading a draft folder as a pair, the training pieces, the evaluation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from specviz import Decoder, HFModel, ModelPair, SpecConfig, load_pair
from specviz import draft as drafts
from specviz.draft_eval import evaluate_draft
from specviz.text import IdsCodec
from tests.helpers import VOCAB, full_logits, save_tiny, tiny_llama

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import train_draft

SEQ = [5, 17, 3, 88, 42, 42, 7, 60, 1, 23]


def randomise(student: drafts.Student, seed: int = 0) -> None:
    """Non-zero adapters and changed norms/head, rounded to fp16 so that saving loses nothing."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in student.trainable():
            p.add_(0.3 * torch.randn_like(p) * p.abs().mean().clamp(min=0.05))
            p.copy_(p.half().to(p.dtype))


def draft_logprobs(model: HFModel, ids: list[int]) -> torch.Tensor:
    """Log q at every position, fed one token at a time through the KV cache."""
    session = model.new_session()
    return torch.cat([session.extend([t]) for t in ids]).log_softmax(-1)


def test_untrained_student_with_every_layer_and_token_is_the_target():
    target = tiny_llama(0)
    student = drafts.Student(target, drafts.DraftSpec([0, 1], rank=4, vocab_size=VOCAB), torch.arange(VOCAB))
    got = student.subset_logprobs(torch.tensor([SEQ]), torch.ones(1, len(SEQ), dtype=torch.long))[0]
    torch.testing.assert_close(got, full_logits(target, SEQ).log_softmax(-1), atol=1e-10, rtol=0)


def test_saved_draft_reloads_to_the_students_distribution(tmp_path):
    target = tiny_llama(0, layers=3)
    subset = torch.tensor(sorted({*SEQ, *range(0, VOCAB, 3)}))
    student = drafts.Student(target, drafts.DraftSpec([0, 2], rank=4, vocab_size=len(subset)), subset)
    randomise(student)
    drafts.save_draft(student, tmp_path, meta={"note": "test"})
    assert json.loads((tmp_path / drafts.SPEC_FILE).read_text())["layers"] == [0, 2]

    model = HFModel(drafts.load_trained(target, tmp_path), "reloaded")
    assert model.vocab_size == VOCAB
    logq = draft_logprobs(model, SEQ)
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[subset] = False
    assert torch.isneginf(logq[:, outside]).all() and torch.isfinite(logq[:, subset]).all()
    expected = student.subset_logprobs(torch.tensor([SEQ]), torch.ones(1, len(SEQ), dtype=torch.long))[0]
    torch.testing.assert_close(logq[:, subset], expected, atol=1e-9, rtol=0)
    # the adapters changed the copied layers, not the target's own
    assert not torch.equal(model.model.model.layers[1].mlp.up_proj.weight, target.model.layers[2].mlp.up_proj.weight)
    assert model.model.model.embed_tokens is target.model.embed_tokens


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("drafts")
    target_dir = save_tiny(root / "target", seed=0)
    target = HFModel(tiny_llama(0)).model  # same seed, same weights as the saved target
    subset = torch.arange(0, VOCAB, 2)
    student = drafts.Student(target, drafts.DraftSpec([1], rank=2, vocab_size=len(subset)), subset)
    randomise(student, seed=1)
    drafts.save_draft(student, root / "draft")
    return {"target": target_dir, "draft": root / "draft", "subset": subset}


def test_a_draft_folder_loads_as_the_draft_and_proposes_only_its_tokens(folders):
    pair = load_pair(folders["target"], str(folders["draft"]))
    assert pair.draft.vocab_size == pair.target.vocab_size == VOCAB
    run = Decoder(pair, "w5 w17 w3", SpecConfig(tau=3, mode="lossless", max_new_tokens=24, seed=3)).run()
    drafted = [t for s in run.steps for t in s.draft_tokens]
    assert drafted and set(drafted) <= set(folders["subset"].tolist())
    assert all(b < 1.0 for s in run.steps for b in s.beta)  # q misses the odd tokens p gives mass to


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / drafts.SPEC_FILE).write_text('{"format": 99}'), "format"),
        (lambda d: (d / drafts.SPEC_FILE).write_text("not json"), "cannot read"),
        (lambda d: (d / drafts.TENSORS_FILE).write_bytes(b"broken"), "cannot read"),
        (lambda d: _edit_spec(d, layers=[0, 7]), "do not fit"),
        (lambda d: _drop_tensor(d, "layers.0.mlp.up_proj.lora_A"), "lacks tensor"),
    ],
)
def test_damaged_draft_folders_raise_a_typed_error(folders, tmp_path, damage, message):
    import shutil

    copy = tmp_path / "draft"
    shutil.copytree(folders["draft"], copy)
    damage(copy)
    with pytest.raises(drafts.DraftFileError, match=message):
        load_pair(folders["target"], str(copy))


def _edit_spec(directory: Path, **changes) -> None:
    spec = json.loads((directory / drafts.SPEC_FILE).read_text())
    (directory / drafts.SPEC_FILE).write_text(json.dumps({**spec, **changes}))


def _drop_tensor(directory: Path, name: str) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(directory / drafts.TENSORS_FILE))
    del tensors[name]
    save_file(tensors, str(directory / drafts.TENSORS_FILE))


# --- training pieces --------------------------------------------------------------------------------


def teacher_record(target, ids: list[int], start: int, k: int = 8) -> dict:
    """What the data stage stores: the target's top-k log-probs at every generated position."""
    logp = full_logits(target, ids).log_softmax(-1)[start - 1 : len(ids) - 1]
    top = logp.topk(k, dim=-1)
    return {"ids": torch.tensor(ids, dtype=torch.int32), "start": start, "top_values": top.values.half(),
            "top_ids": top.indices.int()}  # fmt: skip


def test_collate_lines_up_each_label_with_the_position_that_predicts_it():
    record = {"ids": torch.tensor([1, 2, 3, 4, 5, 6]), "start": 3,
              "top_values": torch.log(torch.tensor([[0.5, 0.5]] * 3)).half(),
              "top_ids": torch.tensor([[4, 90], [5, 4], [6, 91]], dtype=torch.int32)}  # fmt: skip
    index_of = torch.full((VOCAB,), -1)
    index_of[torch.arange(10)] = torch.arange(10)
    _, _, rows, cols, tgt_idx, tgt_p = train_draft.collate([record], index_of)
    assert cols.tolist() == [2, 3, 4] and rows.tolist() == [0, 0, 0]
    assert tgt_idx.tolist() == [[4, -1], [5, 4], [6, -1]]  # 90 and 91 are outside the draft's vocabulary
    logp = torch.log_softmax(torch.randn(3, 10, dtype=torch.float64), -1)
    expected = -(0.5 * (logp[0, 4] + logp[1, 5] + logp[1, 4] + logp[2, 6])) / 3
    loss = train_draft.soft_loss(logp, tgt_idx, tgt_p.double())
    torch.testing.assert_close(loss, expected, rtol=1e-3, atol=0)  # the labels are stored in fp16


def test_choose_vocab_keeps_the_heaviest_tokens_and_the_always_list():
    records = [
        {"top_ids": torch.tensor([[3, 4], [3, 5]]), "top_values": torch.log(torch.tensor([[0.9, 0.1], [0.6, 0.4]]))}
    ]
    assert train_draft.choose_vocab(records, 2, always=[]).tolist() == [3, 5]
    assert train_draft.choose_vocab(records, 2, always=[77]).tolist() == [3, 77]


def test_a_few_training_steps_move_the_student_towards_the_teacher():
    target = tiny_llama(0, layers=3)
    with torch.no_grad():
        target.lm_head.weight.mul_(20)  # a peaked teacher (random tiny models are near uniform)
    gen = torch.Generator().manual_seed(0)
    seqs = [torch.randint(0, VOCAB, (20,), generator=gen).tolist() for _ in range(6)]
    records = [teacher_record(target, ids, 6, k=VOCAB) for ids in seqs]
    vocab = torch.arange(VOCAB)
    index_of = torch.arange(VOCAB)
    student = drafts.Student(target, drafts.DraftSpec([0], rank=4, vocab_size=VOCAB), vocab)
    before = train_draft.evaluate(student, records, index_of)
    opt = torch.optim.Adam(list(student.trainable()), lr=1e-2)
    ids, mask, rows, cols, tgt_idx, tgt_p = train_draft.collate(records, index_of)
    losses = []
    for _ in range(40):
        loss = train_draft.soft_loss(student.subset_logprobs(ids, mask, rows, cols), tgt_idx, tgt_p.double())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    after = train_draft.evaluate(student, records, index_of)
    assert losses[-1] < losses[0] - 0.05
    assert after["alpha_top32"] > before["alpha_top32"] + 0.02


# --- evaluation -------------------------------------------------------------------------------------


def test_evaluation_of_a_self_draft_finds_full_agreement():
    target = HFModel(tiny_llama(0), "tiny")
    pair = ModelPair(target, target, IdsCodec(None))
    report = evaluate_draft(pair, [("5 17 3", False), ("42 42 7 60", False)], new_tokens=25, taus=(2, 4))
    assert report.alpha == pytest.approx(1.0) and report.greedy_agreement == 1.0
    assert report.mean_acceptance_length == 5.0  # 25 tokens in five steps of τ + 1 = 5
    assert set(report.speedup) == {1, 2, 4} and report.greedy_acceptance_rate_tau4 == 1.0
    assert report.c > 0 and report.baseline_tokens_per_second > 0
    assert any("best τ" in line for line in report.lines())


def test_evaluation_of_an_unrelated_draft_finds_partial_agreement():
    pair = ModelPair(HFModel(tiny_llama(0), "t"), HFModel(tiny_llama(1, layers=1), "d"), IdsCodec(None))
    report = evaluate_draft(pair, [("5 17 3", False)], new_tokens=16, taus=(3,))
    assert 0.0 < report.alpha < 0.999  # near-uniform random models overlap a lot, never fully
    assert set(report.speedup) == {1, 3, 4}  # τ = 1 and 4 always run: they give the greedy rates
    assert 1.0 <= report.mean_acceptance_length < 5.0
