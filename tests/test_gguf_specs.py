"""GGUF specs (specviz.models.gguf): the three kinds parsed, local files and hub files resolved from the cache
offline, a hub file not in the cache or an unreachable hub named, and a hub file chosen and downloaded with
progress from a fake hub. No network."""

from pathlib import Path

import pytest

from specviz.errors import ModelError
from specviz.models import gguf as g
from specviz.models import llamacpp
from specviz.models.hub import HubUnreachableError
from tests.helpers import write_gguf


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


def test_a_gguf_under_any_name_is_read_by_its_magic_bytes_not_its_suffix(tmp_path):
    """Issue 67: an Ollama blob path (sha256-<hex>, no extension) said "no such folder", and a GGUF named .bin was
    called "built from torch weights": a file that begins with b"GGUF" is a GGUF file, whatever its name."""
    from specviz import specs
    from specviz.drafts import kinds

    blob = write_gguf(tmp_path / ".ollama/models/blobs/sha256-0123abcd")
    named_bin = write_gguf(tmp_path / "smol-q2_k.bin")
    for path in (blob, named_bin):
        assert path.read_bytes()[:4] == b"GGUF" and g.parse_spec(str(path)) == str(path)
        spec = specs.parse(str(path))
        assert isinstance(spec, specs.GGUFFile) and spec.is_gguf and spec.ref == str(path)
        assert g.resolve(str(path), []) == path and g.read_info(path).vocab_size > 0
        assert kinds.FILE in kinds.kind_of(spec).needs  # a draft file of its own, checked against the target
    torch_bin = tmp_path / "pytorch_model.bin"
    torch_bin.write_bytes(b"PK\x03\x04" + bytes(60))  # a torch checkpoint (a zip): not a GGUF, whatever its suffix
    assert g.parse_spec(str(torch_bin)) is None and isinstance(specs.parse(str(torch_bin)), specs.Named)
    assert g.parse_spec(str(tmp_path / "missing-blob")) is None and g.parse_spec(str(tmp_path)) is None
    assert g.parse_spec(str(tmp_path / "x.gguf")) == str(tmp_path / "x.gguf")  # a .gguf name needs no file yet
