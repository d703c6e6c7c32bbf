"""The memory a GGUF pair needs (specviz.models.gguf): both files and a KV cache for each, worked out by hand, and a
pair over the free memory refused with the numbers."""

import dataclasses
from pathlib import Path

import pytest

from specviz.errors import ConfigError, ModelError
from specviz.models import embedded, llamacpp
from specviz.models import gguf as g
from specviz.models.hub import ModelTooLargeError


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
