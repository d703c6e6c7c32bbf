"""The GGUF pairing check (specviz.models.gguf) and its messages, on tiny files written here (tests/helpers.py's
write_gguf): a draft with the same vocabulary, specials and template pairs; each difference is named."""

import numpy as np
import pytest
from gguf import LlamaFileType

from specviz.errors import IncompatibleModelsError
from specviz.models import gguf as g
from tests.helpers import TOKENS, write_gguf


def refusal(tmp_path, **draft) -> str:
    target = g.read_info(write_gguf(tmp_path / "target.gguf", name="target"))
    other = g.read_info(write_gguf(tmp_path / "draft.gguf", name="draft", **draft))
    assert not g.can_pair(target, other)
    with pytest.raises(IncompatibleModelsError) as info:
        g.check_pair(target, other)
    prefix = "draft (draft.gguf) cannot draft for target (target.gguf): "
    assert str(info.value).startswith(prefix)
    return str(info.value).removeprefix(prefix)


def test_a_draft_with_the_same_vocabulary_specials_and_template_pairs(tmp_path, tiny):
    target = g.read_info(tiny)
    draft = g.read_info(write_gguf(tmp_path / "d.gguf", file_type=LlamaFileType.MOSTLY_F16, embd_dtype=np.float16))
    assert g.can_pair(target, draft)
    g.check_pair(target, draft)
    assert g.pair_differences(target, draft) == []


def test_a_changed_token_text_is_named(tmp_path):
    tokens = [*TOKENS[:4], "World", TOKENS[5]]
    assert refusal(tmp_path, tokens=tokens) == "token 4: 'world' in the target, 'World' in the draft"


def test_an_extra_token_is_named(tmp_path):
    assert refusal(tmp_path, tokens=[*TOKENS, "<extra>"]) == (
        "vocabulary: 6 tokens in the target, 7 in the draft; token 6: absent in the target, '<extra>' in the draft"
    )


def test_another_bos_is_named(tmp_path):
    assert refusal(tmp_path, bos=2) == "BOS: id 1 '<s>' in the target, id 2 '</s>' in the draft"


def test_a_missing_padding_token_is_named(tmp_path):
    assert refusal(tmp_path, pad=None) == "padding: id 0 '<unk>' in the target, none in the draft"


def test_another_chat_template_is_named_where_it_starts_to_differ(tmp_path):
    # "{{ messages }}" and "{{ messages | join }}" agree on their first 12 characters, "{{ messages "
    assert refusal(tmp_path, template="{{ messages | join }}") == (
        "chat template: differs from character 12: '}}' in the target, '| join }}' in the draft"
    )
    assert refusal(tmp_path, template=None) == "chat template: one in the target, none in the draft"


def test_a_wholly_other_vocabulary_names_the_first_differences_and_counts_the_rest(tmp_path):
    assert refusal(tmp_path, tokens=list("abcdef")) == (
        "token 0: '<unk>' in the target, 'a' in the draft; token 1: '<s>' in the target, 'b' in the draft; "
        "token 2: '</s>' in the target, 'c' in the draft; 3 more tokens differ; and 3 more"  # BOS, EOS, padding
    )
