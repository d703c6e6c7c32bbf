"""specviz.server.config: every SPECVIZ_* variable read once, each parsed, a bad value a typed error naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specviz.class_policy import ClassPolicy
from specviz.errors import ConfigError, ModelError, SpecvizError
from specviz.models import gguf
from specviz.models.llamacpp import CLASS_SLOTS, LlamaSettings
from specviz.server.config import VARIABLES, ServerConfig


def test_an_empty_environment_is_the_librarys_defaults(tmp_path):
    read = ServerConfig.from_environ({}, home=tmp_path)
    cache = tmp_path / ".cache" / "specviz"
    assert read == ServerConfig(cache_dir=cache, timings_dir=cache / "timings", places=read.places)
    assert read.class_policy == ClassPolicy() and read.llama == LlamaSettings() and read.runtime == "auto"
    assert read.llama_slots == 0 and read.compute == "turns" and read.torch_threads == 1
    assert [p.source for p in read.places] == [gguf.HF_CACHE, gguf.LM_STUDIO, gguf.LM_STUDIO, gguf.OLLAMA, gguf.OLLAMA]


def test_every_variable_is_parsed(tmp_path):
    settings = tmp_path / "class.toml"
    settings.write_text('[class]\nmax_new_tokens = 64\nurls = ["http://engine:8000/v1"]\n')
    env = {
        "SPECVIZ_CLASS_MODE": "yes",
        "SPECVIZ_CLASS_SETTINGS": str(settings),
        "SPECVIZ_RUNTIME": "torch",
        "SPECVIZ_MAX_PARAMS": "500000000",
        "SPECVIZ_CACHE_DIR": str(tmp_path / "cache"),
        "SPECVIZ_MODELS_DIR": str(tmp_path / "models"),
        "SPECVIZ_REMOTE_TIMEOUT": "2.5",
        "SPECVIZ_LLAMA_THREADS": " 3 ",
        "SPECVIZ_LLAMA_ONE_TOKEN_THREADS": "1",
        "SPECVIZ_LLAMA_CONTEXT": "512",
        "SPECVIZ_LLAMA_SLOTS": "4",
        "SPECVIZ_LLAMA_SLOT_TOKENS": "300",
        "SPECVIZ_LLAMA_BEND": "0",
        "SPECVIZ_LLAMA_CPU": "haswell",
        "SPECVIZ_LLAMA_LOG": "1",
        "SPECVIZ_COMPUTE": "free",
        "SPECVIZ_TORCH_THREADS": "2",
        "SPECVIZ_TIMINGS_DIR": str(tmp_path / "kept"),
    }
    assert set(env) == set(VARIABLES)  # this test sets every variable the server reads
    read = ServerConfig.from_environ(env, home=tmp_path)
    assert read.class_policy.on and read.class_policy.max_new_tokens == 64
    assert (
        read.class_policy.urls == ("http://engine:8000/v1",) and read.class_policy.sweep_runs == 40
    )  # the rest: defaults
    assert (read.runtime, read.max_params, read.remote_timeout_s) == ("torch", 500_000_000, 2.5)
    assert read.cache_dir == tmp_path / "cache" and read.timings_dir == tmp_path / "kept"
    assert read.places[-1] == gguf.Place(source=gguf.MODELS_DIR, path=tmp_path / "models")
    assert read.llama == LlamaSettings(
        threads=3, one_token_threads=1, context=512, slots=4, slot_tokens=300, bend=False, cpu="haswell", log=True
    )
    assert read.llama_slots == 4  # the operator's count, not the class's 96
    assert (read.compute, read.torch_threads) == ("free", 2)


def test_a_class_server_shares_decodes_unless_the_operator_says_otherwise(tmp_path):
    assert ServerConfig.from_environ({"SPECVIZ_CLASS_MODE": "1"}, home=tmp_path).llama_slots == CLASS_SLOTS == 96
    off = ServerConfig.from_environ({"SPECVIZ_CLASS_MODE": "1", "SPECVIZ_LLAMA_SLOTS": "0"}, home=tmp_path)
    assert off.llama_slots == 0
    assert ServerConfig.from_environ({"SPECVIZ_LLAMA_SLOTS": "4"}, home=tmp_path).llama_slots == 4


def test_the_cache_follows_xdg_where_specviz_names_none(tmp_path):
    assert ServerConfig.from_environ({"XDG_CACHE_HOME": "/x"}, home=tmp_path).cache_dir == Path("/x/specviz")
    read = ServerConfig.from_environ({"SPECVIZ_CACHE_DIR": "/c"}, home=tmp_path)  # the calibrations: beside its files
    assert read.timings_dir == Path("/c/timings")


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        (
            "SPECVIZ_LLAMA_SLOTS",
            "many",
            ModelError,
            "SPECVIZ_LLAMA_SLOTS='many': set it to a whole number of runs, 0 or",
        ),
        ("SPECVIZ_LLAMA_THREADS", "0", ModelError, "SPECVIZ_LLAMA_THREADS='0': set it to a whole number of threads, 1"),
        ("SPECVIZ_LLAMA_THREADS", "٣", ModelError, "whole number of threads"),  # digits 0-9 only
        (
            "SPECVIZ_LLAMA_CONTEXT",
            "32",
            ModelError,
            "SPECVIZ_LLAMA_CONTEXT='32': set it to a whole number of tokens, 64",
        ),
        ("SPECVIZ_LLAMA_ONE_TOKEN_THREADS", "-1", ModelError, "whole number of threads, 1 or more"),
        ("SPECVIZ_LLAMA_SLOT_TOKENS", "1_024", ModelError, "whole number of tokens, 64 or more"),
        ("SPECVIZ_MAX_PARAMS", "2e9", ModelError, "SPECVIZ_MAX_PARAMS='2e9': set it to a whole number of parameters"),
        ("SPECVIZ_TORCH_THREADS", "two", ModelError, "SPECVIZ_TORCH_THREADS='two'"),
        ("SPECVIZ_REMOTE_TIMEOUT", "soon", ModelError, "SPECVIZ_REMOTE_TIMEOUT must be a number of seconds"),
        ("SPECVIZ_REMOTE_TIMEOUT", "nan", ModelError, "SPECVIZ_REMOTE_TIMEOUT must be a number of seconds"),
        ("SPECVIZ_RUNTIME", "cuda", ModelError, "SPECVIZ_RUNTIME='cuda': unknown runtime; use auto, llama.cpp"),
        ("SPECVIZ_COMPUTE", "fast", ConfigError, "SPECVIZ_COMPUTE='fast': use turns or free"),
    ],
)
def test_a_bad_value_is_a_typed_error_naming_the_variable(tmp_path, name, value, error, message):
    with pytest.raises(error, match=re.escape(message)):
        ServerConfig.from_environ({name: value}, home=tmp_path)


def test_a_class_settings_file_that_cannot_be_read_says_which(tmp_path):
    with pytest.raises(
        SpecvizError, match=r"SPECVIZ_CLASS_SETTINGS=.*nowhere\.toml: the class settings cannot be read"
    ):
        ServerConfig.from_environ(
            {"SPECVIZ_CLASS_MODE": "1", "SPECVIZ_CLASS_SETTINGS": str(tmp_path / "nowhere.toml")}, home=tmp_path
        )
    # outside class mode the file is not read at all
    assert not ServerConfig.from_environ({"SPECVIZ_CLASS_SETTINGS": str(tmp_path / "nowhere.toml")}).class_policy.on


def test_docs_list_every_variable_with_its_meaning():
    table = (Path(__file__).resolve().parents[1] / "docs" / "app.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in table.splitlines() if line.startswith("| `SPECVIZ_")}
    assert rows == set(VARIABLES)
