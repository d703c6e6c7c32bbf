"""Per-shape kernel choice (specviz.models.kernels): every kernel computes the Linear's function,
whatever the row count; a model prepared with chosen kernels gives the logits of the model as loaded
(up to the order of float32 sums), its weights untouched and still tied; each shape is timed once."""

import copy

import pytest
import torch

from specviz.models import kernels
from specviz.models.kernels import ROWS, ChosenLinear, KernelLinear, with_chosen_kernels
from tests.helpers import full_logits, tiny_llama

KINDS = [k for k in kernels.KINDS if k != "onednn" or kernels.onednn_available()]


@pytest.mark.parametrize("kind", KINDS)
def test_each_kernel_computes_the_linear_function_for_any_row_count(kind):
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 80)
    chosen = ChosenLinear(linear.weight, linear.bias, choice=dict.fromkeys(ROWS, kind))
    for rows in (1, 3, 5, 16, 40):  # 40: past the largest row count timed
        x = torch.randn(rows, 48)
        assert torch.allclose(chosen(x), linear(x), atol=1e-5), (kind, rows)
    assert set(chosen.choice.values()) == {kind}
    assert set(chosen._prepared) == {kind} - {"linear"}  # a given choice prepares only its own kernel


def test_the_timed_choice_names_a_kernel_for_every_row_count_and_keeps_only_those_prepared():
    chosen = ChosenLinear(torch.randn(256, 64))
    assert set(chosen.choice) == set(ROWS) and set(chosen.choice.values()) <= set(KINDS)
    assert set(chosen._prepared) == set(chosen.choice.values()) - {"linear"}  # F.linear needs no copy


def test_a_model_on_chosen_kernels_gives_the_same_logits_and_keeps_its_weights():
    model = tiny_llama(3, layers=2).float()  # float32: every kernel is a candidate
    model.config.tie_word_embeddings = True
    model.tie_weights()
    before = copy.deepcopy(model)
    weights = {name: p.detach().clone() for name, p in model.named_parameters()}
    timed = []
    with_chosen_kernels(model, log=timed.append)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert not linears and any(isinstance(m, KernelLinear) for m in model.modules())
    shapes = {tuple(m.weight.shape) for m in before.modules() if isinstance(m, torch.nn.Linear)}
    assert len(timed) == len(shapes)  # each distinct shape timed once, however many layers share it
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied weights stay tied
    for name, p in model.named_parameters():
        assert torch.equal(p, weights[name]), name
    ids = [5, 17, 42, 7, 9, 3]
    assert torch.allclose(full_logits(model, ids), full_logits(before, ids), atol=1e-4)
