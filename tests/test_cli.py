"""The command line on local model folders: run as a user runs it (a subprocess), and in-process
for the error cases (the same `main`, without an interpreter start each)."""

import json
import os
import subprocess
import sys

import pytest

from specviz import RunTrace
from tests.helpers import save_tiny


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return save_tiny(root / "target", seed=0), save_tiny(root / "draft", seed=1, layers=1)


def specviz(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "specviz", *args], capture_output=True, text=True, env=env, timeout=300
    )


def in_process(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m specviz ARGS`, run in this interpreter."""
    from specviz.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow  # a fresh interpreter: in `make test`, not in `make test-fast`
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_json_trace_of_a_run(model_dirs):
    target, draft = model_dirs
    out = specviz(
        "--prompt",
        "w1 w2 w3 w4",
        "--tau",
        "4",
        "--mode",
        "textbook",
        "--seed",
        "0",
        "--max-new-tokens",
        "12",
        "--json",
        "--target",
        target,
        "--draft",
        draft,
    )
    assert out.returncode == 0, out.stderr
    run = RunTrace.from_json(out.stdout)
    assert run.config.tau == 4 and run.config.mode == "textbook"
    assert 1 <= len(run.new_tokens) <= 12
    assert run.metrics.steps == len(run.steps) == json.loads(out.stdout)["metrics"]["steps"]
    assert run.prompt_text == "w1 w2 w3 w4"


@pytest.mark.slow  # a fresh interpreter: in `make test`, not in `make test-fast`
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_same_arguments_give_the_same_tokens(model_dirs, capsys):
    """In a fresh interpreter and in this one: the same tokens."""
    target, draft = model_dirs
    args = [
        "--prompt",
        "w5 w6",
        "--mode",
        "lossless",
        "--seed",
        "3",
        "--json",
        "--target",
        target,
        "--draft",
        draft,
    ]
    first = specviz(*args)
    code, second, _ = in_process(capsys, *args)
    assert first.returncode == code == 0
    assert RunTrace.from_json(first.stdout).new_tokens == RunTrace.from_json(second).new_tokens


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tau", "0"], "tau must be between 1 and"),
        (["--mode", "fast"], "invalid choice: 'fast'"),
        (["--tau", "four"], "invalid int value"),
        (["--prompt", ""], "the prompt is empty"),
        (["--target", "/no/such/dir"], "no such folder"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_code_2(model_dirs, capsys, args, message):
    target, draft = model_dirs
    base = {"--prompt": "w1 w2", "--target": target, "--draft": draft}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    code, _, err = in_process(capsys, *[x for kv in base.items() for x in kv])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specviz: error:") and message in lines[0]


def test_help_names_every_kind_of_model_spec(capsys):
    """Issue 53: --help named none of the GGUF specs the app takes."""
    for argv in (["--help"], ["sweep", "--help"]):
        code, out, _ = in_process(capsys, *argv)
        assert code == 0
        said = " ".join(out.split())  # argparse wraps the help at the terminal's width
        for spec in (".gguf", "ollama:", "hf:ORG/REPO:", "embedded:Q4_0", "prompt-lookup", "vllm:"):
            assert spec in said, (argv, spec)


def test_help_names_the_sweep_subcommand_and_a_gguf_under_any_name(capsys):
    """Issue 67: --help named only PATH.gguf, not the `sweep` subcommand the README uses, nor a GGUF of another name."""
    code, out, _ = in_process(capsys, "--help")
    said = " ".join(out.split())
    assert code == 0 and "python -m specviz sweep --prompt TEXT" in said and "python -m specviz sweep --help" in said
    assert "~/.ollama/models/blobs/sha256-HEX" in said and "a GGUF named .bin" in said
    assert "early-exit:K" in said and "hf:ORG/REPO:Q4_K_M" in said


def test_an_ollama_blob_is_read_as_the_gguf_file_it_is(tmp_path, capsys):
    """Issue 67: an Ollama blob (no extension) gave "no such folder" though the file exists: it is read as a GGUF
    file (here a header-only one, refused for what it holds, never as a missing folder)."""
    from tests.helpers import write_gguf

    blob = write_gguf(tmp_path / "blobs" / "sha256-9f86d081884c7d659a2feaa0c55ad015")
    code, _, err = in_process(capsys, "--prompt", "w1", "--target", str(blob), "--draft", "prompt-lookup")
    assert code == 2 and "no such folder" not in err and "specviz: error:" in err


def test_a_folder_holding_gguf_files_is_named_with_its_files(tmp_path, capsys):
    """Issue 53: a folder of GGUF files given as a model got transformers' "Should have a `model_type` key"; it is
    told which file to give (llama.cpp runs a file, not a folder)."""
    from tests.helpers import write_gguf

    folder = tmp_path / "lmstudio" / "SmolLM2-GGUF"
    write_gguf(folder / "smol.Q8_0.gguf")
    write_gguf(folder / "smol.Q4_0.gguf")
    code, _, err = in_process(capsys, "--prompt", "w1", "--target", str(folder), "--draft", "prompt-lookup")
    assert code == 2 and "model_type" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("specviz: error:")]
    assert line == (
        f"specviz: error: {folder} holds GGUF files, not a transformers model: give the file itself, e.g. "
        f"{folder / 'smol.Q4_0.gguf'} (2 files: smol.Q4_0.gguf, smol.Q8_0.gguf)"
    )
