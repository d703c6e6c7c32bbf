"""The trained-draft machinery on tiny random Llamas: the student, saving and reloading (adapters
merged, restricted head), loading a draft folder as a pair, the training pieces, the evaluation."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch

from specviz import Decoder, HFModel, ModelPair, SpecConfig, drafts, load_pair
from specviz.models.text import IdsCodec
from specviz.training import data, prompts, train
from specviz.training.evaluate import evaluate_draft
from tests.helpers import VOCAB, full_logits, save_tiny, tiny_llama

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

    model = drafts.load_trained(target, tmp_path, "reloaded")
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


def test_pad_marks_the_positions_whose_next_token_the_target_generated():
    records = [{"ids": torch.tensor([1, 2, 3, 4, 5, 6]), "start": 3}, {"ids": torch.tensor([7, 8, 9]), "start": 2}]
    ids, mask, labelled = data.pad(records)
    assert ids.tolist() == [[1, 2, 3, 4, 5, 6], [7, 8, 9, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]]
    # the logits at t predict token t + 1: generated tokens 4, 5, 6 are predicted at 2, 3, 4; token 9 at 1
    assert labelled.tolist() == [[False, False, True, True, True, False], [False, True, False, False, False, False]]


def test_soft_cross_entropy_and_overlap_worked_by_hand():
    p = torch.tensor([[0.5, 0.5, 0.0]])
    q = torch.tensor([[0.25, 0.25, 0.5]])
    logp = torch.log(p.clamp(min=1e-30))
    # −(0.5 ln 0.25 + 0.5 ln 0.25 + 0 · ln 0.5) = ln 4
    assert train.soft_cross_entropy(q.log(), logp).item() == pytest.approx(math.log(4))
    t = train.Teacher(*(torch.zeros(1),) * 4, logp=logp, best=torch.tensor([0]))
    beta, hits = train.overlap(q.log(), t)
    assert beta == pytest.approx(0.5)  # min(.5, .25) + min(.5, .25) + min(0, .5)
    assert hits == 0  # argmax q is token 2, the target's is token 0


def test_choose_vocab_keeps_the_most_generated_tokens_and_the_always_list():
    # generated tokens (after start): 3, 3, 5 and 5, 3 → counts 3: 3, 5: 2, 8: 0 (8 is in a prompt only)
    records = [{"ids": torch.tensor([8, 3, 3, 5]), "start": 1}, {"ids": torch.tensor([8, 8, 5, 3]), "start": 2}]
    assert data.choose_vocab(records, 2, always=[]).tolist() == [3, 5]
    assert data.choose_vocab(records, 2, always=[77]).tolist() == [3, 77]
    assert data.choose_vocab(records, 3, always=[]).tolist() == [0, 3, 5]  # a tie at 0 goes to the lowest id


def test_teacher_gives_the_targets_distribution_over_the_draft_vocabulary():
    target = tiny_llama(0)
    record = {"ids": torch.tensor(SEQ), "start": 4}
    full = full_logits(target, SEQ).log_softmax(-1)[3:-1]  # positions 3 … 8 predict tokens 4 … 9
    vocab = torch.tensor([1, 3, 5, 7, 42])
    index_of = torch.full((VOCAB,), -1)
    index_of[vocab] = torch.arange(5)
    t = train.teacher(target, [record], vocab, index_of, "fp32")
    torch.testing.assert_close(t.logp, full[:, vocab].float(), rtol=1e-4, atol=1e-5)
    argmax = full.argmax(-1)
    assert t.best.tolist() == [int(index_of[a]) for a in argmax]
    assert t.features.shape == (1, len(SEQ), target.config.hidden_size)


def teacher_data(target, n: int = 6, length: int = 20, seed: int = 0) -> list[dict]:
    gen = torch.Generator().manual_seed(seed)
    return [{"ids": torch.randint(0, VOCAB, (length,), generator=gen), "start": 6} for _ in range(n)]


@pytest.mark.parametrize("kind", ["feature", "lora"])
def test_a_few_training_steps_move_the_draft_towards_the_teacher(kind, tmp_path):
    target = tiny_llama(0, layers=3)
    with torch.no_grad():
        target.lm_head.weight.mul_(20)  # a peaked teacher (random tiny models are near uniform)
    records = teacher_data(target)
    opts = train.Options(
        kind=kind,
        vocab=VOCAB,
        layers=[0],
        rank=4,
        epochs=30,
        lr=1e-2,
        batch_tokens=60,
        precision="fp32",
        unrolls=2,
        noise=0.0,
    )
    recipe = train.train(target, records, records, torch.arange(VOCAB), opts, tmp_path / "ckpt", log=lambda m: None)
    first, last = recipe.history[0], recipe.history[-1]
    assert len(recipe.history) == 31 and last["step"] == 30 * 2  # two batches of three records per epoch
    assert last["alpha"] > first["alpha"] + 0.05
    assert last["vocab_mass"] == pytest.approx(1.0)  # the whole vocabulary is the draft's
    assert (tmp_path / "ckpt" / "latest.pt").exists()


def test_training_resumes_from_its_checkpoint(tmp_path):
    target = tiny_llama(0, layers=3)
    records = teacher_data(target, n=3)
    opts = train.Options(vocab=VOCAB, epochs=2, batch_tokens=200, precision="fp32", unrolls=1)
    done = train.train(target, records, records, torch.arange(VOCAB), opts, tmp_path, log=lambda m: None)
    said: list[str] = []
    again = train.train(target, records, records, torch.arange(VOCAB), opts, tmp_path, log=said.append)
    assert said[0] == "resumed at step 2/2"
    assert again.history == done.history  # nothing left to do: the finished run's numbers


def test_held_out_prompts_share_no_subject_or_template_with_training():
    train_text = [text for text, _ in prompts.all_train_prompts(stories=500, corpus=500)]
    held_out = prompts.eval_prompts()
    assert len(held_out) == 16 and sum(chat for _, chat in held_out) == 9
    for text, _ in held_out:
        opening = " ".join(text.split()[:3])
        assert not any(t.startswith(opening) for t in train_text), opening
    for subject in prompts.EVAL_SUBJECTS:
        assert not any(subject.lower() in t.lower() for t in train_text), subject


def test_data_batches_respect_the_token_budget():
    records = [{"ids": torch.zeros(n, dtype=torch.int32), "start": 1} for n in (5, 5, 6, 12, 30)]
    batches = data.token_batches(records, 16, random.Random(0))
    sizes = sorted(sorted(len(r["ids"]) for r in b) for b in batches)
    assert sizes == [[5, 5], [6], [12], [30]]  # 3 × 6 > 16 would overflow; 30 stands alone


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


def test_the_model_card_has_a_row_per_evaluated_draft_and_a_speedup_per_tau():
    from specviz.training.card import eval_table, speedup_table

    base = {"alpha": 0.0437, "greedy_agreement": 0.043, "mean_acceptance_length": 1.0417, "c": 0.2444, "best_tau": 1}
    reports = [
        {
            **base,
            "spec": "embedded",
            "draft": "distilled",
            "alpha": 0.4504,
            "mean_acceptance_length": 1.8667,
            "best_tau": 3,
            "best_speedup": 0.8249,
            "baseline_tokens_per_second": 16.63,
            "speedup": {"1": 0.72, "3": 0.8249},
        },
        {
            **base,
            "draft": "first 8 layers",
            "best_speedup": 0.4512,
            "baseline_tokens_per_second": 16.2,
            "speedup": {"1": 0.4512, "2": 0.3158},
        },  # an older report: no spec
    ]
    assert speedup_table(reports).splitlines() == [
        "| draft | spec | target alone | τ = 1 | τ = 2 | τ = 3 |",
        "|---|---|---|---|---|---|",
        "| distilled | `embedded` | 16.6 tok/s | 0.72× | – | 0.82× |",
        "| first 8 layers | – | 16.2 tok/s | 0.45× | 0.32× | – |",
    ]
    assert eval_table(reports).splitlines()[2:] == [
        "| distilled | `embedded` | 0.450 | 0.043 | 1.87 | 0.244 | 3 | 0.82× |",
        "| first 8 layers | – | 0.044 | 0.043 | 1.04 | 0.244 | 1 | 0.45× |",
    ]


def test_the_model_card_states_the_run_its_report_records_and_no_other():
    from specviz.errors import ConfigError
    from specviz.training.card import run_of

    assert run_of({"draft": "d", "date": "2027-01-02", "hardware": "8 cores, x86_64"}) == "2027-01-02, 8 cores, x86_64"
    with pytest.raises(ConfigError, match="names no date and no hardware"):
        run_of({"draft": "d"})  # an older report: the card asks for a new one rather than guess a day and a machine
    with pytest.raises(ConfigError, match="names no hardware"):
        run_of({"draft": "d", "date": "2027-01-02", "hardware": ""})


def test_the_model_card_says_how_the_int8_draft_was_calibrated_and_what_it_measured():
    from specviz.training.card import int8_text

    made = {
        "strength": 0.7,
        "ranked_on": {"sequences": 320, "tokens": 28088},
        "calibrated_on": {"sequences": 96, "tokens": 8464},
        "command": "python scripts/train_draft.py int8 --work runs/rank",
        "measured": {
            "command": "python -m benchmarks.learned_draft",
            "when": "2026-12-06, a 2-core CPU",
            "prompts": "8 held-out prompts",
            "rows": [
                {
                    "spec": "embedded-int8",
                    "c": 0.0821,
                    "alpha": 0.3794,
                    "greedy": [1, 1.094, 1.04],
                    "textbook": [2, 1.155, None],
                }
            ],
        },
    }
    text = int8_text(made)
    assert "strength\n0.7" in text or "strength 0.7" in text.replace("\n", " ")
    assert "96 of the target's continuations (8464 tokens)" in text.replace("\n", " ")
    assert "python scripts/train_draft.py int8 --work runs/rank" in text
    assert "| `embedded-int8` | 0.082 | 0.379 | τ 1: 1.09× / 1.04× | τ 2: 1.16× / – |" in text.splitlines()
    assert "Measured by" not in int8_text({**made, "measured": None})
