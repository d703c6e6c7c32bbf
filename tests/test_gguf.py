"""GGUF files as models (specviz.models.gguf), on tiny files written here by `gguf`'s own writer: what a header
says (numbers worked out by hand), the pairing check and its messages, the memory a pair needs, the places models
are found (fake Hugging Face cache, LM Studio folder and Ollama store in a temporary folder), and GGUF specs,
with no network. The embedded SmolLM2 GGUF is read too, and against gguf.GGUFReader."""

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader, GGUFWriter, LlamaFileType

from specviz.errors import ConfigError, IncompatibleModelsError, ModelError
from specviz.models import embedded, llamacpp
from specviz.models import gguf as g
from specviz.models.hub import HubUnreachableError, ModelTooLargeError

TOKENS = ["<unk>", "<s>", "</s>", "hello", "world", "!"]
TEMPLATE = "{{ messages }}"


def write_gguf(
    path: Path,
    *,
    tokens=TOKENS,
    bos=1,
    eos=2,
    pad=0,
    template=TEMPLATE,
    file_type=LlamaFileType.ALL_F32,
    embd_dtype=np.float32,
    width=8,
    name="tiny",
    split_max_tensors=0,
    output=False,
) -> Path:
    """A llama-shaped GGUF: 2 layers, hidden size `width`, 2 heads, 1 KV head, and two tensors: the token
    embedding (len(tokens) × width) and the output norm (width); with `output`, an output matrix as well."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = GGUFWriter(path, "llama", split_max_tensors=split_max_tensors)
    if name is not None:
        writer.add_name(name)
    writer.add_context_length(64)
    writer.add_block_count(2)
    writer.add_embedding_length(width)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    for role, token in (("bos", bos), ("eos", eos), ("pad", pad)):
        if token is not None:
            getattr(writer, f"add_{role}_token_id")(token)
    if template is not None:
        writer.add_chat_template(template)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), width), dtype=embd_dtype))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    if output:  # an output matrix of its own: not tied to the embedding
        writer.add_tensor("output.weight", np.zeros((len(tokens), width), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def tiny(tmp_path) -> Path:
    return write_gguf(tmp_path / "tiny.gguf")


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
def test_the_embedded_gguf_reads_as_gguf_reader_reads_it():
    path = embedded.gguf_path()
    reader = GGUFReader(path)  # about 2 s: it builds a view of every array element
    info = g.read_info(path)
    assert g.vocabulary(path) == tuple(reader.fields["tokenizer.ggml.tokens"].contents())
    assert info.parameters == sum(int(t.n_elements) for t in reader.tensors)
    assert info.bos_id == reader.fields["tokenizer.ggml.bos_token_id"].contents()
    assert info.chat_template == reader.fields["tokenizer.chat_template"].contents()
    assert info.name == reader.fields["general.name"].contents()


# --- pairing -------------------------------------------------------------------------------------------------


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


# --- memory --------------------------------------------------------------------------------------------------


def sized(path: str, file_bytes: int, kv: int | None) -> g.GGUFInfo:
    info = g.read_info(embedded.gguf_path())
    return dataclasses.replace(info, path=Path(path), file_bytes=file_bytes, kv_bytes_per_token=kv)


def test_memory_needed_adds_both_files_and_a_kv_cache_for_each():
    target, draft = sized("/m/t.gguf", 4_000_000_000, 131_072), sized("/m/d.gguf", 500_000_000, 16_384)
    # 4.5e9 of files + 2048 × (131072 + 16384) = 2048 × 147456 = 301,989,888 of caches
    assert g.memory_needed(target, draft, tokens=2048) == 4_801_989_888
    assert g.memory_needed(target, draft, tokens=0) == 4_500_000_000
    assert g.memory_needed(target, target, tokens=10) == 4_000_000_000 + 10 * 2 * 131_072  # one mapping
    assert g.memory_needed(target, sized("/m/x.gguf", 100, None), tokens=10) == 4_000_000_100 + 10 * 131_072
    assert g.memory_needed(target, draft) == g.memory_needed(target, draft, tokens=llamacpp.DEFAULT_CONTEXT)
    with pytest.raises(ConfigError):
        g.memory_needed(target, draft, tokens=-1)


def test_a_pair_over_the_free_memory_is_refused_with_the_numbers(tmp_path):
    with pytest.raises(g.NotEnoughMemoryError) as info:
        g.check_fits(4_801_989_888, available=3_200_000_000)
    assert str(info.value).startswith("this pair needs 4.8 GB of memory; 3.2 GB is free: ")
    assert isinstance(info.value, ModelTooLargeError) and isinstance(info.value, ModelError)
    g.check_fits(3_200_000_000, available=3_200_000_000)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24684084 kB\nMemFree:        19025324 kB\nMemAvailable:   23305316 kB\n")
    assert g.free_memory(meminfo) == 23_305_316 * 1024 == 23_864_643_584
    assert g.free_memory(tmp_path / "none") is None
    assert [g.format_bytes(n) for n in (999, 1000, 98_362_432, 5_100_000_000)] == [
        "999 bytes",
        "1.0 KB",
        "98.4 MB",
        "5.1 GB",
    ]


# --- places --------------------------------------------------------------------------------------------------


def test_default_places_follow_each_tools_own_rules():
    home = Path("/h")
    assert g.default_places({}, home) == [
        g.Place(source=g.HF_CACHE, path=Path("/h/.cache/huggingface/hub")),
        g.Place(source=g.LM_STUDIO, path=Path("/h/.lmstudio/models")),
        g.Place(source=g.LM_STUDIO, path=Path("/h/.cache/lm-studio/models")),
        g.Place(source=g.OLLAMA, path=Path("/h/.ollama/models")),
        g.Place(source=g.OLLAMA, path=Path("/usr/share/ollama/.ollama/models")),
    ]
    env = {"HF_HOME": "/x", "OLLAMA_MODELS": "/o", "SPECVIZ_MODELS_DIR": "~/m", "XDG_CACHE_HOME": "/c"}
    places = g.default_places(env, home)
    assert places[0] == g.Place(source=g.HF_CACHE, path=Path("/x/hub"))
    assert [p.path for p in places if p.source == g.OLLAMA] == [Path("/o")]
    assert places[-1] == g.Place(source="$SPECVIZ_MODELS_DIR", path=Path("/h/m"))
    assert g.default_places({**env, "HF_HUB_CACHE": "/hc"}, home)[0].path == Path("/hc")
    assert g.default_places({"XDG_CACHE_HOME": "/c"}, home)[0].path == Path("/c/huggingface/hub")


def ollama_store(root: Path, model: Path) -> Path:
    blob = root / "blobs" / "sha256-abc123"
    blob.parent.mkdir(parents=True)
    shutil.copy(model, blob)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:0000"},
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:abc123"},
    ]
    manifests = root / "manifests"
    for where in ("registry.ollama.ai/library/tiny/latest", "registry.ollama.ai/someone/tiny/q4", "hf.co/org/r/Q8_0"):
        (manifests / where).parent.mkdir(parents=True)
        (manifests / where).write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    (manifests / "registry.ollama.ai/library/broken").mkdir(parents=True)
    (manifests / "registry.ollama.ai/library/broken/latest").write_text("{not json")
    (manifests / "registry.ollama.ai/library/gone").mkdir(parents=True)
    gone = [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:ffff"}]
    (manifests / "registry.ollama.ai/library/gone/1b").write_text(json.dumps({"layers": gone}))
    return blob


def test_models_are_found_in_each_place_with_their_names_and_specs(tmp_path, tiny):
    hub = tmp_path / "hub"
    repo = hub / "models--org--name"
    write_gguf(repo / "snapshots/abc/x.gguf")
    write_gguf(repo / "snapshots/old/x.gguf")  # an older revision of the same file
    write_gguf(repo / "snapshots/abc/mmproj-x-f16.gguf")  # a projector: not a model of its own
    write_gguf(repo / "snapshots/abc/Q8/big.gguf", split_max_tensors=1)  # big-00001-of-00002.gguf and its part 2
    (repo / "refs").mkdir()
    (repo / "refs/main").write_text("abc")
    write_gguf(hub / "models--solo/snapshots/r1/y.gguf")
    lms = tmp_path / "lms"
    write_gguf(lms / "pub/repo/m-Q4_K_M.gguf")
    store = tmp_path / "ollama"
    blob = ollama_store(store, tiny)
    mine = tmp_path / "mine"
    write_gguf(mine / "a/b/c.gguf")
    write_gguf(mine / "1/2/3/4/5/too-deep.gguf")
    write_gguf(mine / ".hidden/h.gguf")
    (mine / "broken.gguf").write_text("not a model")
    places = [
        g.Place(source=g.HF_CACHE, path=hub),
        g.Place(source=g.LM_STUDIO, path=lms),
        g.Place(source=g.LM_STUDIO, path=tmp_path / "absent"),
        g.Place(source=g.OLLAMA, path=store),
        g.Place(source=g.MODELS_DIR, path=mine),
        g.Place(source=g.MODELS_DIR, path=mine),  # named twice, listed once
    ]
    found = g.find_models(places)
    listed = [(m.source, m.name, m.spec) for m in found]
    assert listed == [
        (
            "Hugging Face cache",
            "org/name Q8/big-00001-of-00002.gguf",
            f"{repo}/snapshots/abc/Q8/big-00001-of-00002.gguf",
        ),
        ("Hugging Face cache", "org/name x.gguf", str(repo / "snapshots/abc/x.gguf")),
        ("Hugging Face cache", "solo y.gguf", str(hub / "models--solo/snapshots/r1/y.gguf")),
        ("LM Studio", "pub/repo m-Q4_K_M.gguf", str(lms / "pub/repo/m-Q4_K_M.gguf")),
        ("Ollama", "hf.co/org/r:Q8_0", "ollama:hf.co/org/r:Q8_0"),
        ("Ollama", "broken:latest", "ollama:broken:latest"),
        ("Ollama", "gone:1b", "ollama:gone:1b"),
        ("Ollama", "tiny:latest", "ollama:tiny:latest"),
        ("Ollama", "someone/tiny:q4", "ollama:someone/tiny:q4"),
        ("$SPECVIZ_MODELS_DIR", "broken.gguf", str(mine / "broken.gguf")),  # a folder's files before its folders
        ("$SPECVIZ_MODELS_DIR", "a/b c.gguf", str(mine / "a/b/c.gguf")),
    ]
    by_name = {m.name: m for m in found}
    assert by_name["org/name Q8/big-00001-of-00002.gguf"].info.parameters == 56  # both parts
    assert by_name["tiny:latest"].path == blob and by_name["tiny:latest"].info.vocab_size == 6
    assert by_name["someone/tiny:q4"].path == blob
    assert by_name["broken:latest"].info is None and "cannot be read" in by_name["broken:latest"].error
    assert by_name["gone:1b"].info is None
    assert by_name["gone:1b"].error.startswith("the model blob sha256-ffff of the Ollama manifest")
    assert by_name["broken.gguf"].info is None
    assert by_name["broken.gguf"].error == f"{mine}/broken.gguf is not a GGUF file: it begins with b'not ', not b'GGUF'"
    unreadable = {"broken:latest", "gone:1b", "broken.gguf"}
    assert all(m.error is None and m.info is not None for m in found if m.name not in unreadable)


def test_an_ollama_name_resolves_to_its_blob_or_says_where_it_looked(tmp_path, tiny):
    store = tmp_path / "ollama"
    blob = ollama_store(store, tiny)
    places = [g.Place(source=g.OLLAMA, path=tmp_path / "other"), g.Place(source=g.OLLAMA, path=store)]
    assert g.resolve_ollama("tiny", places) == blob
    assert g.resolve_ollama("ollama:tiny:latest", places) == blob
    assert g.resolve_ollama("someone/tiny:q4", places) == blob
    assert g.resolve("ollama:hf.co/org/r:Q8_0", places) == blob
    with pytest.raises(ModelError) as info:
        g.resolve_ollama("llama3.2:1b", places)
    assert str(info.value) == (
        f"no Ollama model 'llama3.2:1b' here: looked for "
        f"{tmp_path}/other/manifests/registry.ollama.ai/library/llama3.2/1b, "
        f"{store}/manifests/registry.ollama.ai/library/llama3.2/1b; pull it with `ollama pull llama3.2:1b`"
    )
    with pytest.raises(ModelError, match="none is known"):
        g.resolve_ollama("tiny", [])
    with pytest.raises(ModelError, match="names no model layer"):
        (store / "manifests/registry.ollama.ai/library/tiny/latest").write_text('{"layers": []}')
        g.resolve_ollama("tiny", places)


def test_ollama_messages_show_the_home_folder_as_a_tilde_never_its_path(tmp_path, tiny, monkeypatch):
    """A class server's students see these messages: the account it runs as (its home folder) is never named."""
    home = tmp_path / "home" / "lecturer"
    monkeypatch.setenv("HOME", str(home))
    store = home / ".ollama" / "models"
    ollama_store(store, tiny)
    places = g.default_places({}, home)
    messages = []
    for name in ("llama3.2:1b", "gone:1b", "broken"):
        with pytest.raises(ModelError) as info:
            g.resolve_ollama(name, places)
        messages.append(str(info.value))
    assert messages[0] == (
        "no Ollama model 'llama3.2:1b' here: looked for "
        "~/.ollama/models/manifests/registry.ollama.ai/library/llama3.2/1b, "
        "/usr/share/ollama/.ollama/models/manifests/registry.ollama.ai/library/llama3.2/1b; pull it with "
        "`ollama pull llama3.2:1b`"
    )
    assert messages[1] == (
        "the model blob sha256-ffff of the Ollama manifest "
        "~/.ollama/models/manifests/registry.ollama.ai/library/gone/1b is missing from ~/.ollama/models/blobs"
    )
    assert messages[2].startswith(
        "the Ollama manifest ~/.ollama/models/manifests/registry.ollama.ai/library/broken/latest cannot be read: "
    )
    manifest = store / "manifests/registry.ollama.ai/library/tiny/latest"
    manifest.chmod(0)  # unreadable: the reason is said without the file's path
    try:
        if not os.access(manifest, os.R_OK):  # (root reads it anyway)
            with pytest.raises(ModelError) as info:
                g.resolve_ollama("tiny", places)
            assert str(info.value).endswith("tiny/latest cannot be read: Permission denied")
            messages.append(str(info.value))
    finally:
        manifest.chmod(0o644)
    assert not [m for m in messages if str(home) in m or "lecturer" in m]


def test_compatible_drafts_pair_and_are_smaller(tmp_path):
    write_gguf(tmp_path / "target.gguf", width=64)
    write_gguf(tmp_path / "fewer.gguf", width=8)  # fewer parameters, same vocabulary
    f16 = {"embd_dtype": np.float16, "file_type": LlamaFileType.MOSTLY_F16}
    write_gguf(tmp_path / "f16.gguf", width=64, **f16)  # as many parameters, a smaller file
    write_gguf(tmp_path / "copy.gguf", width=64)  # the same size: not smaller
    write_gguf(tmp_path / "other-bos.gguf", width=8, bos=2)
    write_gguf(tmp_path / "bigger.gguf", width=128)
    (tmp_path / "bad.gguf").write_text("nope")
    found = {m.name: m for m in g.find_models([g.Place(source=g.MODELS_DIR, path=tmp_path)])}
    everything = list(found.values())  # in name order
    assert [m.name for m in g.compatible_drafts(found["target.gguf"], everything)] == ["f16.gguf", "fewer.gguf"]
    assert [m.name for m in g.compatible_drafts(found["bigger.gguf"], everything)] == [
        "copy.gguf",
        "f16.gguf",
        "fewer.gguf",
        "target.gguf",
    ]
    assert g.compatible_drafts(found["bad.gguf"], everything) == []


# --- specs ---------------------------------------------------------------------------------------------------


def test_parse_spec_recognises_the_three_kinds_of_gguf_spec():
    assert g.parse_spec("~/models/x.GGUF") == str(Path.home() / "models/x.GGUF")
    assert g.parse_spec(" /m/x.gguf ") == "/m/x.gguf"
    assert g.parse_spec("ollama:llama3.2") == "ollama:llama3.2:latest"
    assert g.parse_spec("ollama:llama3.2:1b") == "ollama:llama3.2:1b"
    assert g.parse_spec("ollama:someone/tiny:q4") == "ollama:someone/tiny:q4"
    assert g.parse_spec("ollama:registry.ollama.ai/library/tiny") == "ollama:tiny:latest"
    assert g.parse_spec("hf:org/repo:Q4_K_M") == "hf:org/repo:Q4_K_M"
    assert g.parse_spec("hf:org/repo:sub/x.gguf") == "hf:org/repo:sub/x.gguf"
    for other in ("embedded", "HuggingFaceTB/SmolLM2-135M-Instruct", "./folder", "vllm:http://host:8000/v1#m"):
        assert g.parse_spec(other) is None
    for malformed in ("hf:org", "hf:org/repo:", "hf:org--x/repo:x.gguf", "ollama:", "ollama:a/b/c/d"):
        with pytest.raises(ModelError):
            g.parse_spec(malformed)


def test_resolve_finds_local_files_and_hub_files_in_the_cache_offline(tmp_path, tiny):
    assert g.resolve(str(tiny), []) == tiny
    with pytest.raises(ModelError, match="no such GGUF file"):
        g.resolve(str(tmp_path / "nope.gguf"), [])
    with pytest.raises(ModelError, match="names no GGUF file"):
        g.resolve("gpt2", [])
    hub = tmp_path / "hub"
    snapshot = hub / "models--org--name/snapshots/abc"
    x = write_gguf(snapshot / "x.gguf")
    q4 = write_gguf(snapshot / "name-Q4_K_M.gguf")
    write_gguf(snapshot / "mmproj-name-Q4_K_M.gguf")  # not a model: never chosen for Q4_K_M
    places = [g.Place(source=g.HF_CACHE, path=tmp_path / "empty-hub"), g.Place(source=g.HF_CACHE, path=hub)]
    # no refs/main here: any snapshot holding the file will do
    assert g.resolve("hf:org/name:x.gguf", places) == x
    assert g.resolve("hf:org/name:q4_k_m", places) == q4
    (hub / "models--org--name/refs").mkdir()
    (hub / "models--org--name/refs/main").write_text("abc")
    assert g.resolve("hf:org/name:Q4_K_M", places) == q4
    write_gguf(snapshot / "other/name-Q4_K_M.gguf")
    with pytest.raises(ModelError, match="'Q4_K_M' names several files in the Hugging Face cache of org/name"):
        g.resolve("hf:org/name:Q4_K_M", places)


def test_a_hub_file_not_in_the_cache_is_refused_offline_with_where_it_looked(tmp_path):
    hub = tmp_path / "hub"
    places = [g.Place(source=g.HF_CACHE, path=hub)]
    with pytest.raises(HubUnreachableError) as info:
        g.resolve("hf:org/name:Q2_K", places)
    assert str(info.value) == (
        "cannot download hf:org/name:Q2_K: the hub is switched off (HF_HUB_OFFLINE) and Q2_K of org/name is not in "
        f"the Hugging Face cache ({hub}); choose a GGUF file on this computer, or the embedded pair (works offline)"
    )


def test_an_unreachable_hub_is_named(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(HubUnreachableError, match=r"the Hugging Face hub is unreachable \(.*\) and x.gguf of org/name"):
        g.resolve("hf:org/name:x.gguf", [g.Place(source=g.HF_CACHE, path=tmp_path)])


def test_download_progress_is_told_once_per_percent():
    messages = []
    bar = g.progress_bar(messages.append, "org/name x.gguf")(total=1000, unit="B", unit_scale=True, desc="x.gguf")
    for _ in range(4):
        bar.update(125)
    bar.update(1)  # still 50 %
    bar.close()
    assert messages == [
        "Downloading org/name x.gguf: 125 bytes of 1.0 KB (12 %)",
        "Downloading org/name x.gguf: 250 bytes of 1.0 KB (25 %)",
        "Downloading org/name x.gguf: 375 bytes of 1.0 KB (37 %)",
        "Downloading org/name x.gguf: 500 bytes of 1.0 KB (50 %)",
    ]


def test_the_default_kv_cache_is_the_llama_runtimes_session_length():
    assert g.DEFAULT_TOKENS == llamacpp.DEFAULT_CONTEXT


@pytest.fixture
def reachable_hub(monkeypatch):
    """The hub switched on and 'reachable' (a local socket listens at its endpoint); listing and downloading are
    replaced below, so nothing leaves this machine."""
    import socket

    from huggingface_hub import constants

    server = socket.create_server(("127.0.0.1", 0))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    yield
    server.close()


def test_a_hub_file_is_chosen_from_the_repository_and_downloaded_with_progress(tmp_path, monkeypatch, reachable_hub):
    import huggingface_hub

    files = ["README.md", "a-Q4_K_M.gguf", "b-Q8_0.gguf", "mmproj-Q8_0.gguf"]
    files += ["c-Q6_K-00001-of-00002.gguf", "c-Q6_K-00002-of-00002.gguf"]
    downloads = []

    def download(repo_id, filename, *, cache_dir, tqdm_class):
        downloads.append((repo_id, filename, cache_dir))
        if tqdm_class is not None:
            bar = tqdm_class(total=100, unit="B", unit_scale=True, desc=filename)
            bar.update(100)
            bar.close()
        return str(write_gguf(Path(cache_dir) / "models--org--name/snapshots/rev" / filename))

    monkeypatch.setattr(huggingface_hub, "list_repo_files", lambda repo_id: files)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    hub = tmp_path / "hub"
    places = [g.Place(source=g.HF_CACHE, path=hub)]
    messages = []
    path = g.resolve("hf:org/name:q8_0", places, progress=messages.append)
    assert path == hub / "models--org--name/snapshots/rev/b-Q8_0.gguf"  # the projector is no candidate
    assert downloads == [("org/name", "b-Q8_0.gguf", hub)]
    assert messages == ["Downloading org/name b-Q8_0.gguf: 100 bytes of 100 bytes (100 %)"]
    assert g.resolve("hf:org/name:Q8_0", places) == path  # now from the cache: no second download
    assert len(downloads) == 1
    first = g.resolve("hf:org/name:Q6_K", places)  # a split model: every part
    assert first.name == "c-Q6_K-00001-of-00002.gguf"
    assert [d[1] for d in downloads[1:]] == ["c-Q6_K-00001-of-00002.gguf", "c-Q6_K-00002-of-00002.gguf"]
    with pytest.raises(ModelError) as info:
        g.resolve("hf:org/name:Q2_K", places)
    assert str(info.value) == (
        "org/name has no GGUF file 'Q2_K'; it has a-Q4_K_M.gguf, b-Q8_0.gguf, c-Q6_K-00001-of-00002.gguf"
    )

    def refused(repo_id):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(huggingface_hub, "list_repo_files", refused)
    with pytest.raises(HubUnreachableError, match=r"the download of org/name failed: .*Connection refused"):
        g.resolve("hf:org/name:Q4_K_M", places)
