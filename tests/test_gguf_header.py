"""What a GGUF file's header says (specviz.models.gguf), on tiny files written here by `gguf`'s own writer (tests/
helpers.py's write_gguf): the numbers worked out by hand, files that are not whole models refused, a split model,
agreement with gguf.GGUFReader, and the embedded SmolLM2 GGUF read too. No network."""

import time

import numpy as np
import pytest
from gguf import GGUFReader, GGUFWriter, LlamaFileType

from specviz.errors import ModelError
from specviz.models import embedded
from specviz.models import gguf as g
from tests.helpers import TEMPLATE, TOKENS, write_gguf

# --- what a header says --------------------------------------------------------------------------------------


def test_read_info_gives_the_numbers_of_a_file_written_here(tiny):
    info = g.read_info(tiny)
    assert info.path == tiny
    assert info.architecture == "llama"
    assert info.name == "tiny"
    assert info.parameters == 6 * 8 + 8  # the embedding's 6 × 8 and the norm's 8
    assert info.quantization == "F32"
    assert info.file_bytes == tiny.stat().st_size
    assert (info.context_length, info.n_layer, info.n_embd) == (64, 2, 8)
    # 2 (key, value) × 2 layers × 1 KV head × head_dim 8 / 2 heads = 4 × 4 bytes
    assert info.kv_bytes_per_token == 2 * 2 * 1 * 4 * 4 == 64
    assert info.vocab_size == 6
    assert (info.bos_id, info.bos_text, info.eos_id, info.eos_text) == (1, "<s>", 2, "</s>")
    assert (info.pad_id, info.pad_text) == (0, "<unk>")
    assert info.chat_template == TEMPLATE
    assert g.vocabulary(tiny) == tuple(TOKENS)


def test_the_tail_of_the_file_is_checked_against_the_tensors_it_declares(tiny):
    # the header is followed, 32-aligned, by the embedding's 6 × 8 × 4 = 192 bytes and the norm's 8 × 4 = 32: the
    # last tensor ends at the end of the file, so the declared end is the file's size
    whole = tiny.stat().st_size
    tiny.write_bytes(tiny.read_bytes()[:-16])
    with pytest.raises(ModelError) as info:
        g.read_info(tiny)
    assert str(info.value) == (
        f"{tiny} is truncated: its tensors end at byte {whole:,}, the file holds {whole - 16:,} "
        "(an interrupted download?)"
    )


def test_quantization_is_the_file_type_or_else_the_type_holding_most_elements(tmp_path):
    q4 = write_gguf(tmp_path / "q4.gguf", file_type=LlamaFileType.MOSTLY_Q4_K_M)
    assert g.read_info(q4).quantization == "Q4_K_M"
    q8 = write_gguf(tmp_path / "q8.gguf", file_type=LlamaFileType.MOSTLY_Q8_0)
    assert g.read_info(q8).quantization == "Q8_0"
    # no file type: the F16 embedding holds 48 elements, the one F32 tensor 8
    f16 = write_gguf(tmp_path / "f16.gguf", file_type=None, embd_dtype=np.float16)
    assert g.read_info(f16).quantization == "F16"
    assert g.read_info(f16).name == "tiny"
    unnamed = write_gguf(tmp_path / "no-name.gguf", name=None)
    assert g.read_info(unnamed).name == "no-name"  # the file's stem


def test_the_kv_heads_default_to_the_heads_and_the_head_width_may_be_given(tmp_path):
    path = tmp_path / "gqa.gguf"
    writer = GGUFWriter(path, "qwen2")
    writer.add_block_count(3)
    writer.add_embedding_length(16)
    writer.add_head_count(4)
    writer.add_token_list(TOKENS)
    writer.add_tensor("token_embd.weight", np.zeros((6, 16), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    info = g.read_info(path)
    assert info.kv_bytes_per_token == 2 * 3 * 4 * 4 * 4 == 384  # no head_count_kv: 4 KV heads of width 16 / 4
    assert (info.bos_id, info.pad_id, info.chat_template, info.context_length) == (None, None, None, None)
    assert info.quantization == "F32"  # no file type, one F32 tensor

    path = tmp_path / "wide.gguf"
    writer = GGUFWriter(path, "llama")
    writer.add_block_count(2)
    writer.add_embedding_length(16)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_key_length(8)
    writer.add_value_length(6)
    writer.add_token_list(TOKENS)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert g.read_info(path).kv_bytes_per_token == 2 * 2 * (8 + 6) * 4 == 224  # layers × KV heads × (k + v) × 4


def test_files_that_are_not_whole_gguf_models_are_refused_with_what_is_wrong(tmp_path, tiny):
    with pytest.raises(ModelError, match=r"no such GGUF file: .*missing\.gguf"):
        g.read_info(tmp_path / "missing.gguf")
    with pytest.raises(ModelError, match="is a folder, not a GGUF file"):
        g.read_info(tmp_path)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(ModelError, match="is empty, not a GGUF file"):
        g.read_info(empty)
    text = tmp_path / "notes.gguf"
    text.write_text("just some notes\n")
    with pytest.raises(ModelError) as info:
        g.read_info(text)
    assert str(info.value) == f"{text} is not a GGUF file: it begins with b'just', not b'GGUF'"
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny.read_bytes()[:40])
    with pytest.raises(ModelError) as info:
        g.read_info(cut)
    assert str(info.value) == (
        f"{cut} is truncated: its header runs past the end of the file (40 bytes; an interrupted download?)"
    )
    version1 = tmp_path / "v1.gguf"
    version1.write_bytes(b"GGUF" + (1).to_bytes(4, "little") + bytes(16))
    with pytest.raises(ModelError, match="version 1"):
        g.read_info(version1)
    projector = tmp_path / "clip.gguf"
    writer = GGUFWriter(projector, "clip")
    writer.add_tensor("v.patch_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelError, match=r"holds no vocabulary \(tokenizer.ggml.tokens\)"):
        g.read_info(projector)


def test_a_split_model_is_read_as_one_from_its_first_part(tmp_path):
    first = tmp_path / "big-00001-of-00002.gguf"
    write_gguf(tmp_path / "big.gguf", split_max_tensors=1)  # the writer names the parts itself
    second = tmp_path / "big-00002-of-00002.gguf"
    info = g.read_info(first)
    assert info.parameters == 48 + 8  # the embedding in part 1, the norm in part 2
    assert info.file_bytes == first.stat().st_size + second.stat().st_size
    second.unlink()
    with pytest.raises(ModelError, match=r"part 1 of 2 of a split model, and part 2 \(big-00002-of-00002.gguf\)"):
        g.read_info(first)


def test_the_reader_agrees_with_gguf_readers_own(tmp_path, tiny):
    reader = GGUFReader(tiny)
    info = g.read_info(tiny)
    assert g.vocabulary(tiny) == tuple(reader.fields["tokenizer.ggml.tokens"].contents())
    assert info.parameters == sum(int(t.n_elements) for t in reader.tensors)
    assert info.chat_template == reader.fields["tokenizer.chat_template"].contents()


def test_a_150k_vocabulary_is_read_well_under_a_second(tmp_path):
    tokens = [f"tok{i}" for i in range(150_000)]
    path = tmp_path / "big-vocab.gguf"
    writer = GGUFWriter(path, "llama")
    writer.add_token_list(tokens)
    writer.add_token_merges([f"t o{i}" for i in range(150_000)])  # walked over, not kept
    writer.add_token_types([1] * 150_000)
    writer.add_tensor("output_norm.weight", np.ones(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    start = time.perf_counter()
    info = g.read_info(path)
    vocab = g.vocabulary(path)
    elapsed = time.perf_counter() - start
    assert info.vocab_size == 150_000 and vocab[149_999] == "tok149999"
    assert elapsed < 1.0, f"{elapsed:.2f} s"


# --- the embedded model --------------------------------------------------------------------------------------


def test_a_gguf_files_chat_default_comes_from_its_template_and_metadata_not_its_name():
    """Issue 53: "instruct" in general.name decided it, and SmolLM2-135M-Instruct's own file is named "Smollm2 135M 8k
    Lc100K Mix1 Ep2". Each case is the file's template and naming keys (general.finetune, basename, name)."""
    from specviz.models.ggufcodec import NAMING_KEYS, chat_default_of

    def naming(finetune="", basename="", name=""):
        return dict(zip(NAMING_KEYS, (finetune, basename, name), strict=True))

    smollm2 = naming("8k-lc100k-mix1-ep2", "smollm2", "Smollm2 135M 8k Lc100K Mix1 Ep2")  # the embedded file's own
    assert chat_default_of(TEMPLATE, smollm2) is True
    assert chat_default_of(None, smollm2) is None and chat_default_of("", naming("Instruct")) is None  # no template
    assert chat_default_of(TEMPLATE, naming()) is True  # a template and nothing said: the template's word
    assert chat_default_of(TEMPLATE, naming("Base", "Qwen2.5", "Qwen2.5 0.5B Base")) is False  # a base model's file
    assert chat_default_of(TEMPLATE, naming("", "pythia", "pythia-160m-pretrained")) is False
    assert chat_default_of(TEMPLATE, naming("Instruct", "Qwen2.5", "Qwen2.5 0.5B Instruct")) is True
    assert chat_default_of(TEMPLATE, naming("base-sft", "x", "x")) is True  # tuned from a base: tuned
    assert chat_default_of(TEMPLATE, naming("", "gemma-2", "gemma 2 2b it")) is True
    assert chat_default_of(TEMPLATE, naming("", "database-coder", "Database Coder")) is True  # "base" inside a word


def test_the_embedded_gguf_reads_as_smollm2_and_pairs_with_itself():
    info = g.read_info(embedded.gguf_path())
    assert (info.architecture, info.vocab_size, info.quantization) == ("llama", 49152, "Q4_1")
    assert info.parameters == 134_515_008  # SmolLM2-135M's published count (tied embeddings)
    assert (info.n_layer, info.n_embd, info.context_length) == (30, 576, 8192)
    assert info.kv_bytes_per_token == 2 * 30 * 3 * 64 * 4 == 46_080  # 3 KV heads of 576 / 9 = 64
    assert (info.bos_id, info.bos_text, info.eos_id, info.eos_text) == (1, "<|im_start|>", 2, "<|im_end|>")
    assert (info.pad_id, info.pad_text) == (2, "<|im_end|>")
    assert info.chat_template.startswith("{% for message in messages %}")
    assert "'<|im_start|>assistant\n'" in info.chat_template  # a newline in a Jinja string
    g.check_pair(info, info)
    # one mapping of the file, a 2048-token KV cache for each side
    assert g.memory_needed(info, info) == 98_362_432 + 2048 * 2 * 46_080 == info.file_bytes + 188_743_680


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_the_embedded_gguf_reads_as_gguf_reader_reads_it():
    path = embedded.gguf_path()
    reader = GGUFReader(path)  # about 2 s: it builds a view of every array element
    info = g.read_info(path)
    assert g.vocabulary(path) == tuple(reader.fields["tokenizer.ggml.tokens"].contents())
    assert info.parameters == sum(int(t.n_elements) for t in reader.tensors)
    assert info.bos_id == reader.fields["tokenizer.ggml.bos_token_id"].contents()
    assert info.chat_template == reader.fields["tokenizer.chat_template"].contents()
    assert info.name == reader.fields["general.name"].contents()
