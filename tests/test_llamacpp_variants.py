"""The llama.cpp build's CPU variants (`make llama`: one ggml CPU library per x86 level, the best for this CPU loaded
at start, specviz.models.llamacpp): the one chosen uses AVX-512 where the CPU has it, and every variant this CPU
can run gives the torch reference's p within tests/test_llamacpp.py's bound (1e-4), each in a process of its own
(a process loads one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import specviz
from specviz import Decoder, SpecConfig
from specviz.models import llamacpp

pytestmark = pytest.mark.numeric  # no clock read: `make test` runs its slow tests on both cores (pyproject.toml)

AVX512 = {"skylakex", "cannonlake", "cascadelake", "icelake", "cooperlake", "zen4", "sapphirerapids"}
PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a Python function that returns the n-th Fibonacci number.",
)
CHILD = """
import os, sys, torch
from specviz.errors import ModelError
from specviz.models import embedded, llamacpp
from specviz.server.config import ServerConfig

server = ServerConfig.from_environ(os.environ)  # as the app and the CLI read it: SPECVIZ_LLAMA_CPU, the cache
embedded.use_cache(server.cache_dir)
try:
    model = llamacpp.load_embedded(settings=server.llama)
except ModelError as exc:
    print("cannot run:", exc)
    sys.exit(0)
worst = 0.0
for ids, p in torch.load(sys.argv[1]):
    session = model.new_session()
    worst = max(worst, float((session.extend(ids).softmax(-1) - p).abs().max()))
print(llamacpp.cpu_variant(), worst)
"""


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def child(reference: Path, variant: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != llamacpp.CPU_ENV}
    if variant:
        env[llamacpp.CPU_ENV] = variant
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(reference)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_every_variant_this_cpu_runs_gives_the_reference_p(embedded_cache, tmp_path):
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    variants = llamacpp.cpu_variants()
    if not variants:
        pytest.skip("this llama.cpp build has its CPU backend linked in: no variants")
    reference = specviz.load_pair("embedded", "embedded", runtime="torch")
    rows = []
    for prompt in PROMPTS:
        run = Decoder(reference, prompt, SpecConfig(mode="greedy", max_new_tokens=24)).run()
        ids = [*run.prompt_ids, *run.new_tokens]
        rows.append((ids, reference.target.new_session().extend(ids).softmax(-1).float()))
    torch.save(rows, tmp_path / "reference.pt")

    chosen, worst = child(tmp_path / "reference.pt", None).split()
    assert chosen in variants and float(worst) <= 1e-4, (chosen, worst)
    if "avx512f" in cpu_flags():
        assert chosen in AVX512, f"this CPU has AVX-512; llama.cpp runs {chosen}"
    ran = {chosen: float(worst)}
    for variant in variants:
        line = child(tmp_path / "reference.pt", variant)
        if line.startswith("cannot run:"):
            assert "this CPU cannot run that variant" in line
            continue
        loaded, worst = line.split()
        assert loaded == variant
        ran[variant] = float(worst)
    assert {"x64", "haswell"} <= ran.keys() or "avx2" not in cpu_flags(), ran
    assert max(ran.values()) <= 1e-4, ran


# --- llama-cpp-python on its own (issue 53): the installed package loads its CPU variant ----------------------------


def fake_package(root: Path, variants: bool = True) -> Path:
    """A llama_cpp package as the Makefile installs it, minus llama.cpp: bindings whose llama_backend_init records its
    calls, and a lib folder holding CPU variant files (no libggml: the block then only calls llama.cpp's own init)."""
    package = root / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "llama_cpp.py").write_text("CALLS = []\n\n\ndef llama_backend_init():\n    CALLS.append('init')\n")
    if variants:
        for name in ("haswell", "zen4"):
            (package / "lib" / f"libggml-cpu-{name}.so").write_bytes(b"")
    return package


def test_the_install_step_adds_its_block_once_and_keeps_llama_cpps_own_init(tmp_path):
    import importlib.util

    from scripts import llamainstall

    package = fake_package(tmp_path)
    assert llamainstall.patch(package) is True
    once = (package / "llama_cpp.py").read_text()
    assert once.count(llamainstall.MARK) == 1 and once.startswith("CALLS = []\n")
    assert llamainstall.patch(package) is False and (package / "llama_cpp.py").read_text() == once  # run twice
    spec = importlib.util.spec_from_file_location("patched_bindings", package / "llama_cpp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.llama_backend_init()
    assert module.CALLS == ["init"]  # llama.cpp's own init, once, after the (here absent) libggml was looked for
    plain = fake_package(tmp_path / "plain", variants=False)  # a build with its CPU backend linked in: left alone
    assert llamainstall.patch(plain) is False and llamainstall.MARK not in (plain / "llama_cpp.py").read_text()


ON_ITS_OWN = """
import sys
import llama_cpp
model = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_threads=1, verbose=False)
maps = [line.rsplit("/", 1)[-1].strip() for line in open("/proc/self/maps") if "libggml-cpu-" in line]
print(maps[0][len("libggml-cpu-") : -len(".so")] if maps else "none", flush=True)
out = model.create_completion("The cat sat on the", max_tokens=4, temperature=0.0)
print(len(out["choices"][0]["text"]), flush=True)
"""


def plain_script(model: Path, folder: Path, **env: str) -> tuple[int, list[str]]:
    """A fresh interpreter importing only llama_cpp, run from `folder`: (exit code, [variant loaded, text length])."""
    clean = {k: v for k, v in os.environ.items() if k not in ("GGML_BACKEND_PATH", llamacpp.CPU_ENV)}
    done = subprocess.run(
        [sys.executable, "-c", ON_ITS_OWN, str(model)],
        env={**clean, **env},
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout.split()


@pytest.mark.slow
def test_plain_llama_cpp_opens_a_gguf_without_specviz(tmp_path):
    """Issue 53: in the project's venv, `llama_cpp.Llama(path)` failed ("Failed to load model": no CPU backend) until
    specviz had loaded one. A fresh interpreter that imports only llama_cpp, run from an empty folder, with no
    GGML_BACKEND_PATH: it loads the best variant for this CPU from the package's folder and writes text. With
    GGML_BACKEND_PATH naming a variant (llama.cpp's own variable), it loads that one. A machine whose CPU reports AMX
    but traps its tile instructions (a VM that does not keep the tile state: found on a Firecracker VM, 2026-11-27)
    dies with SIGILL in the AMX variant, as specviz itself does there: the variant was still loaded from the package,
    and the text is then written on the AVX-512 one, named."""
    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    variants = llamacpp.cpu_variants()
    if not variants:
        pytest.skip("this llama.cpp build has its CPU backend linked in: no variants")
    import importlib.util

    from specviz.models import embedded

    code, lines = plain_script(embedded.gguf_path(), tmp_path)
    assert lines and lines[0] in variants, (code, lines)  # loaded from the package's folder, not "none"
    if "avx512f" in cpu_flags():
        assert lines[0] in AVX512
    if code == -4 and lines[0] == "sapphirerapids":  # SIGILL in an AMX tile instruction
        assert len(lines) == 1
    else:
        assert code == 0 and int(lines[1]) > 0, (code, lines)
    named = "skylakex" if "skylakex" in variants and "avx512f" in cpu_flags() else "haswell"
    lib = Path(importlib.util.find_spec("llama_cpp").origin).parent / "lib"
    code, lines = plain_script(embedded.gguf_path(), tmp_path, GGML_BACKEND_PATH=str(lib / f"libggml-cpu-{named}.so"))
    assert code == 0 and lines[0] == named and int(lines[1]) > 0, (code, lines)
