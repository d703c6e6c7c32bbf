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

AVX512 = {"skylakex", "cannonlake", "cascadelake", "icelake", "cooperlake", "zen4", "sapphirerapids"}
PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a Python function that returns the n-th Fibonacci number.",
)
CHILD = """
import sys, torch
from specviz.errors import ModelError
from specviz.models import llamacpp
try:
    model = llamacpp.load_embedded()
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
