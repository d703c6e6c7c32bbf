"""GGUF pairs through load_pair (issue 43): a GGUF target on llama.cpp with its own tokenizer and a GGUF draft, the
pairing check before anything loads, class mode's allowlist, and the embedded target drafting for itself in fewer
bits. The real-model tests share one float32 file and the quantized copies made here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import specviz
from specviz import Decoder, SpecConfig
from specviz.class_policy import ClassPolicy, RefusedError
from specviz.errors import IncompatibleModelsError, ModelError
from specviz.loading import is_gguf, planned_parts
from specviz.models import gguf, llamacpp
from specviz.models.store import ModelStore
from tests.helpers import write_gguf

pytestmark = pytest.mark.numeric  # no clock read: `make test` runs its slow tests on both cores (pyproject.toml)

PROMPT = "The cat sat on the"


def need_llama() -> None:
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")


def test_gguf_specs_are_told_apart_from_other_models(tmp_path):
    assert is_gguf("embedded:Q4_0") and is_gguf(str(tmp_path / "m.gguf")) and is_gguf("ollama:llama3.2")
    assert is_gguf("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M")
    assert not any(is_gguf(s) for s in ("embedded", "self", "prompt-lookup", "early-exit:3", "gpt2", str(tmp_path)))


def test_an_unknown_quantization_of_the_embedded_target_is_refused_before_anything_loads():
    store = ModelStore()
    with pytest.raises(ModelError, match="unknown quantization 'Q5_K': choose one of Q8_0, Q4_0, Q3_K_M, Q2_K"):
        specviz.load_pair("embedded", "embedded:Q5_K", store=store, runtime="torch")
    assert store.parts() == []  # what it took before the draft failed was given back


def test_a_gguf_target_drafts_only_with_what_it_has(tmp_path):
    target = write_gguf(tmp_path / "t.gguf")
    with pytest.raises(ModelError, match="built from torch weights, which a GGUF target does not have"):
        specviz.load_pair(str(target), "early-exit:3")
    with pytest.raises(ModelError, match=r"a GGUF file runs on llama\.cpp"):
        specviz.load_pair(str(target), "self", runtime="torch")


def test_a_draft_of_another_vocabulary_or_bos_is_refused_from_the_headers_with_the_difference(tmp_path):
    """Tiny files written here, never loaded: the check reads both headers first (the files hold no real weights:
    loading them would fail, so the message proves nothing heavy was tried)."""
    tokens = ["<unk>", "<s>", "</s>", "hello", "world", "!"]
    target = write_gguf(tmp_path / "t.gguf", tokens=tokens)
    changed = write_gguf(tmp_path / "d1.gguf", tokens=[*tokens[:4], "World", "!"])
    with pytest.raises(IncompatibleModelsError, match="token 4: 'world' in the target, 'World' in the draft"):
        specviz.load_pair(str(target), str(changed))
    other_bos = write_gguf(tmp_path / "d2.gguf", tokens=tokens, bos=2)
    with pytest.raises(IncompatibleModelsError, match="BOS: id 1 '<s>' in the target, id 2 '</s>' in the draft"):
        specviz.load_pair(str(target), str(other_bos))


@pytest.fixture(scope="module")
def files(embedded_cache):
    """The embedded target's float32 GGUF and two quantized copies, made once for the module."""
    need_llama()
    from specviz.models import embedded, quantize

    return {"F32": embedded.ensure_f32_gguf(), **{k: quantize.embedded_quantized(k) for k in ("Q8_0", "Q4_0")}}


@pytest.mark.slow
def test_the_real_target_refuses_a_draft_whose_vocabulary_was_changed(files, tmp_path):
    """A draft written with gguf's writer: the embedded file's 49152 tokens with one changed, and one with another
    BOS; refused by load_pair with the token named."""
    real = gguf.read_info(files["F32"])
    tokens = list(gguf.vocabulary(files["F32"]))
    changed = tokens.copy()
    changed[1000] = changed[1000] + "x"
    kept = {"bos": real.bos_id, "eos": real.eos_id, "pad": real.pad_id, "template": real.chat_template}
    draft = write_gguf(tmp_path / "changed.gguf", tokens=changed, **kept)
    named = re.escape(f"token 1000: '{tokens[1000]}' in the target, '{changed[1000]}' in the draft")
    with pytest.raises(IncompatibleModelsError, match=named):
        specviz.load_pair(str(files["F32"]), str(draft))
    with pytest.raises(IncompatibleModelsError, match="token 1000"):  # the embedded target checks its draft too
        specviz.load_pair("embedded", str(draft), runtime="llama.cpp")
    other_bos = write_gguf(tmp_path / "bos.gguf", tokens=tokens, **{**kept, "bos": 2})
    with pytest.raises(IncompatibleModelsError, match=r"BOS: id 1 .* in the target, id 2 .* in the draft"):
        specviz.load_pair(str(files["F32"]), str(other_bos))


def _llama_greedy(path, ids: list[int], new: int) -> tuple[list[int], np.ndarray]:
    """llama.cpp's own greedy generation of a file (llama-cpp-python's high-level Llama, float32 KV cache), and its
    first next-token distribution."""
    import llama_cpp

    llm = llama_cpp.Llama(
        model_path=str(path),
        n_ctx=256,
        n_threads=2,
        verbose=False,
        type_k=0,
        type_v=0,
        flash_attn=False,
        logits_all=True,
    )
    llm.eval(ids)
    first = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
    out = []
    for _ in range(new):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(token)
        llm.eval([token])
    llm.close()
    first = np.exp(first - first.max())
    return out, first / first.sum()


@pytest.mark.slow
def test_a_gguf_target_is_llama_cpps_own_model_of_that_file_p_and_greedy_text(files):
    """The f32 file as a target with its Q8_0 copy drafting, through the app: p of the first position equals the
    distribution llama.cpp computes for the file (within float32 sums), and greedy decoding equals llama.cpp's own
    greedy generation token for token; names carry the quantization."""
    pair = specviz.load_pair(str(files["F32"]), str(files["Q8_0"]))
    assert pair.runtime == "llama.cpp" and type(pair.codec).__name__ == "LlamaCodec"
    assert pair.target.name == "SmolLM2-135M-Instruct (F32)" and pair.draft.name == "SmolLM2-135M-Instruct (Q8_0)"
    dec = Decoder(pair, PROMPT, SpecConfig(tau=4, mode="greedy", max_new_tokens=20), chat=False)
    run = dec.run()
    expected, first = _llama_greedy(files["F32"], run.prompt_ids, 20)
    assert list(run.new_tokens) == expected
    top = run.steps[0].p_top[0]
    assert len(top) >= 5 and all(math.isclose(t.prob, first[t.token], abs_tol=1e-5) for t in top)
    assert run.target_name == pair.target.name and run.draft_name == pair.draft.name
    pair.close()


@pytest.mark.slow
def test_lossless_with_a_gguf_draft_keeps_the_targets_distribution(files):
    from specviz.analysis.lossless import check, first_tokens, reference

    pair = specviz.load_pair("embedded", "embedded:Q4_0", runtime="llama.cpp")
    assert pair.draft.name == "SmolLM2-135M-Instruct (Q4_0)"
    config = SpecConfig(tau=3, mode="lossless")
    result = check("lossless", list(first_tokens(pair, PROMPT, config, 400)), reference(pair, PROMPT, config))
    assert result.consistent, result.verdict()
    pair.close()


@pytest.mark.slow
def test_class_mode_loads_gguf_files_only_from_the_operators_folders(files, tmp_path):
    outside = ClassPolicy(on=True, folders=(str(tmp_path),))
    with pytest.raises(RefusedError, match="outside them"):
        specviz.load_pair(str(files["F32"]), "self", guard=outside)
    with pytest.raises(RefusedError, match="not among the models this server offers"):
        specviz.load_pair("ollama:llama3.2:1b", "self", guard=outside)
    allowed = ClassPolicy(on=True, folders=(str(files["F32"].parent),))
    store = ModelStore()
    pair = specviz.load_pair(str(files["F32"]), str(files["Q4_0"]), guard=allowed, store=store)
    planned = planned_parts(str(files["F32"]), str(files["Q4_0"]), guard=allowed)
    assert [k for k, _ in planned] == [p.key for p in store.parts()]  # the class's budget counts the right parts
    assert [p.key[2] for p in store.parts()] == [llamacpp.CLASS_SLOTS, 0]  # the target's runs share decodes
    pair.close()
    assert store.parts() == []


@pytest.mark.slow
def test_a_gguf_pair_runs_token_trees_and_back_gives_the_same_steps(files):
    """The f32 file drafted by its Q4_0 copy: a lossless token tree steps; Back then Step again gives the step that
    never went back, bit for bit; a chain run's pooled streams (a class's shared decodes) give the same trace as
    contexts of their own."""
    pair = specviz.load_pair(str(files["F32"]), str(files["Q4_0"]))
    tree = SpecConfig(topk=2, steps=2, num_draft_tokens=4, mode="lossless", seed=3, max_new_tokens=12)
    dec = Decoder(pair, PROMPT, tree)
    first = [dec.step() for _ in range(2)]
    assert all(s.tree is not None for s in first)
    dec.undo()
    again = dec.step()
    timings = ("draft_ms", "verify_ms")
    assert {k: v for k, v in again.to_dict().items() if k not in timings} == {
        k: v for k, v in first[1].to_dict().items() if k not in timings
    }
    pair.close()
    chain = SpecConfig(tau=3, mode="lossless", seed=5, max_new_tokens=16)
    alone = Decoder(specviz.load_pair(str(files["F32"]), str(files["Q4_0"])), PROMPT, chain).run()
    rules = ClassPolicy(on=True, folders=(str(files["F32"].parent),))
    pooled_pair = specviz.load_pair(str(files["F32"]), str(files["Q4_0"]), guard=rules)
    pooled = Decoder(pooled_pair, PROMPT, chain).run()
    assert pooled.outcome() == alone.outcome()


@pytest.mark.slow
def test_an_hf_spec_is_downloaded_by_the_hub_client_from_a_real_server_with_progress_then_runs(files, tmp_path):
    """hf:ORG/REPO:QUANT through huggingface_hub's own client against a hub stand-in on a loopback port
    (tests/hubserver.py: the listing and resolve endpoints, over HTTP), in a process of its own whose HF_ENDPOINT
    names it: the repository listed, the one Q4_0 file chosen from three, downloaded with progress into the hub cache
    byte for byte, loaded on llama.cpp and stepped; asked again, it comes from the cache with no request at all."""
    import hashlib
    import json
    import os
    import shutil
    import subprocess
    import sys

    from tests.hubserver import hub

    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(files["Q4_0"], repo / "smol-Q4_0.gguf")
    (repo / "smol-Q8_0.gguf").write_bytes(b"never asked for")
    (repo / "README.md").write_text("a model card")
    code = (
        "import json, specviz\n"
        "said = []\n"
        "pair = specviz.load_pair('hf:org/smol:q4_0', 'self', runtime='llama.cpp', progress=said.append)\n"
        "run = specviz.Decoder(pair, 'The cat sat on the', specviz.SpecConfig(tau=2, mode='greedy', max_new_tokens=4),"
        " chat=False).run()\n"
        "print(json.dumps({'said': said, 'name': pair.target.name, 'tokens': list(run.new_tokens),"
        " 'path': str(pair.target.path)}))\n"
    )
    with hub({"org/smol": repo}) as (url, requests):
        env = {**os.environ, "HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")}
        runs = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-2000:]
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            if len(runs) == 1:
                asked = [r for r in requests if "/org/smol" in r[1]]
                requests.clear()
    assert asked == [
        ("GET", "/api/models/org/smol/tree/main?recursive=true&expand=false"),
        ("HEAD", "/org/smol/resolve/main/smol-Q4_0.gguf"),
        ("GET", "/org/smol/resolve/main/smol-Q4_0.gguf"),
    ]
    first, second = runs
    size = f"{files['Q4_0'].stat().st_size / 1e6:.1f} MB"
    assert first["said"][0] == "Reading hf:org/smol:q4_0..."
    assert first["said"][-2] == f"Downloading org/smol smol-Q4_0.gguf: {size} of {size} (100 %)"
    assert len(first["said"]) > 4  # told as it came, not only at the end
    downloaded = first["path"]
    assert downloaded.startswith(str(tmp_path / "hf" / "hub" / "models--org--smol" / "snapshots"))
    digest = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (downloaded, files["Q4_0"])]
    assert digest[0] == digest[1]
    assert first["name"].endswith("(Q4_0)") and len(first["tokens"]) == 4
    assert [r for r in requests if "/org/smol" in r[1]] == []  # the second time: the cache only
    assert second["tokens"] == first["tokens"] and not any(s.startswith("Downloading") for s in second["said"])
