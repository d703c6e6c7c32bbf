"""Graded drafts (specviz.models.quantize): quantized copies of the embedded target made here with
llama.cpp's own quantizer. Each is made once into the cache (atomically; concurrent callers, threads
or processes, make it once), has the size and file type of its grade, loads on llama.cpp with the
target's tokenizer, and agrees with the float32 target's greedy choice as its grade says. Typed
errors for an unknown grade and a failed quantization."""

import ctypes
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from specviz.errors import ModelError
from specviz.models import embedded, llamacpp, quantize
from specviz.models.ggufcodec import LlamaCodec

MB = 1e6
# measured sizes of the embedded target's copies (docs/performance.md, "The quantized copies' sizes"), MB
SIZES = {"Q8_0": 145, "Q4_0": 92, "Q3_K_M": 94, "Q2_K": 88}
# a held-out prompt and the float32 target's greedy continuation of it (chat-wrapped)
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
CONTINUATION = (
    "As the last light of the day faded, the creaking of the old wooden beam seemed to whisper a message"
    " to the wind. The keeper, a grizzled"
)
POSITIONS = 32


def _need_llama() -> None:
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")


# --- no model needed ----------------------------------------------------------------------------------


def test_the_grades_and_an_unknown_one(tmp_path, monkeypatch):
    assert {kind: grade.bits for kind, grade in quantize.KINDS.items()} == {
        "Q8_0": 8,
        "Q4_0": 4,
        "Q3_K_M": 3,
        "Q2_K": 2,
    }
    assert quantize.KINDS["Q4_0"].label == "4-bit"
    assert quantize.quantized_path(Path("/m/target.gguf"), "Q2_K", tmp_path) == tmp_path / "target.Q2_K.gguf"
    for bad in ("Q5_K", "q4_0", "", None):
        with pytest.raises(ModelError, match=r"unknown quantization .*: choose one of Q8_0, Q4_0, Q3_K_M, Q2_K"):
            quantize.quantized(tmp_path / "target.gguf", bad, tmp_path)

    def no_target(progress=None):
        raise AssertionError("an unknown grade must be refused before the float32 file is written")

    monkeypatch.setattr(embedded, "ensure_f32_gguf", no_target)
    with pytest.raises(ModelError, match="unknown quantization 'Q5_K'"):
        quantize.embedded_quantized("Q5_K")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_missing_source_and_a_failed_quantization_are_model_errors(tmp_path):
    with pytest.raises(ModelError, match=r"cannot make a Q4_0 draft: the model file .*none\.gguf does not exist"):
        quantize.quantized(tmp_path / "none.gguf", "Q4_0", tmp_path / "cache")
    _need_llama()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(100))  # a GGUF header and nothing llama.cpp can read
    said = []
    with pytest.raises(
        ModelError, match=r"llama.cpp could not quantize broken.gguf to Q4_0 \(code \d+\); set SPECVIZ_LLAMA_LOG"
    ):
        quantize.quantized(broken, "Q4_0", tmp_path / "cache", said.append)
    assert said == ["Making the 4-bit draft (Q4_0) from the target, about a second…"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".broken.Q4_0.gguf.lock"]  # no half-written file


# --- the embedded target ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drafts(embedded_cache):
    _need_llama()
    return {kind: quantize.embedded_quantized(kind) for kind in quantize.KINDS}


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_the_four_drafts_are_kept_beside_the_target_with_their_sizes_and_types(drafts):
    source = embedded.ensure_f32_gguf()
    assert {kind: path.parent for kind, path in drafts.items()} == dict.fromkeys(quantize.KINDS, embedded.cache_root())
    assert {kind: path.name for kind, path in drafts.items()} == {
        kind: f"{source.stem}.{kind}.gguf" for kind in quantize.KINDS
    }
    sizes = {kind: path.stat().st_size / MB for kind, path in drafts.items()}
    for kind, size in sizes.items():
        assert abs(size - SIZES[kind]) < 3, sizes
    assert source.stat().st_size / MB > 3 * sizes["Q8_0"]
    assert sizes["Q8_0"] > sizes["Q3_K_M"] > sizes["Q4_0"] > sizes["Q2_K"], sizes  # the K-quants are mixtures here
    assert quantize.embedded_quantized("Q8_0") == drafts["Q8_0"]  # the cached file


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_a_draft_is_made_once_and_then_read_from_the_cache(embedded_cache, tmp_path):
    _need_llama()
    source, said = embedded.ensure_f32_gguf(), []
    made = quantize.quantized(source, "Q4_0", tmp_path, said.append)
    assert said == ["Making the 4-bit draft (Q4_0) from the target, about a second…"]
    stamp = made.stat().st_mtime_ns
    assert quantize.quantized(source, "Q4_0", tmp_path, said.append) == made
    assert len(said) == 1 and made.stat().st_mtime_ns == stamp  # not rewritten
    os.utime(made, ns=(stamp, source.stat().st_mtime_ns - 10**9))  # older than its source: made again
    assert quantize.quantized(source, "Q4_0", tmp_path, said.append) == made
    assert len(said) == 2 and made.stat().st_mtime_ns >= source.stat().st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{made.name}.lock", made.name]  # no temporary files


MAKE_ONCE = """
import sys, time
from pathlib import Path
from specviz.models import quantize
source, cache, go = sys.argv[1:]
print("ready", flush=True)
while not Path(go).exists():
    time.sleep(0.01)
said = []
quantize.quantized(Path(source), "Q2_K", Path(cache), said.append)
print(len(said), flush=True)
"""


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_threads_and_processes_asking_at_once_make_the_draft_once(embedded_cache, tmp_path):
    _need_llama()
    source, cache, go = embedded.ensure_f32_gguf(), tmp_path / "cache", tmp_path / "go"
    env = {**os.environ, llamacpp.THREADS_ENV: "1"}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", MAKE_ONCE, str(source), str(cache), str(go)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parents[1],
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    said, results = [], []

    def ask():
        results.append(quantize.quantized(source, "Q2_K", cache, said.append))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    go.touch()
    for thread in threads:
        thread.start()
    made_by_processes = [int(process.communicate(timeout=120)[0].strip()) for process in processes]
    for thread in threads:
        thread.join()
    assert [process.returncode for process in processes] == [0, 0]
    assert len(said) + sum(made_by_processes) == 1, (said, made_by_processes)
    assert results == [cache / f"{source.stem}.Q2_K.gguf"] * 3
    assert abs(results[0].stat().st_size / MB - SIZES["Q2_K"]) < 3
    assert sorted(p.name for p in cache.iterdir()) == [f".{results[0].name}.lock", results[0].name]


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_the_drafts_load_read_the_targets_tokens_and_agree_with_it_by_grade(drafts):
    """At each of the last 32 positions of a chat prompt and the target's own greedy continuation, whether a
    draft's most likely token is the float32 target's: its greedy acceptance rate. One pass per model."""
    target = llamacpp.load_embedded(context=256)
    codec = LlamaCodec(target)
    ids = [*codec.encode_chat(PROMPT)[1], *codec.encode(CONTINUATION)]
    wanted = target.new_session(256).extend(ids, keep=POSITIONS).argmax(-1)
    agreement = {}
    for kind, path in drafts.items():
        draft = llamacpp.LlamaCppModel(path, f"{embedded.NAME} {kind}", context=256)
        assert draft.vocab_size == target.vocab_size and draft.hidden_size == target.hidden_size
        assert _file_type(draft) == getattr(draft._lib, quantize.KINDS[kind].ftype), kind
        assert LlamaCodec(draft).encode_chat(PROMPT)[1] == codec.encode_chat(PROMPT)[1]  # the target's tokenizer
        guessed = draft.new_session(256).extend(ids, keep=POSITIONS).argmax(-1)
        agreement[kind] = float((guessed == wanted).double().mean())
    assert agreement["Q8_0"] >= 0.8, agreement
    assert agreement["Q8_0"] >= max(agreement.values()) - 1 / POSITIONS, agreement  # the widest grade agrees most
    assert min(agreement.values()) >= 0.4, agreement  # every grade is a real draft of this target


def _file_type(model: llamacpp.LlamaCppModel) -> int:
    """The llama_ftype the file records (general.file_type), read by llama.cpp."""
    buffer = ctypes.create_string_buffer(32)
    assert model._lib.llama_model_meta_val_str(model._model, embedded.FILE_TYPE.encode(), buffer, len(buffer)) > 0
    return int(buffer.value)
