"""The places GGUF models are found (specviz.models.gguf): each tool's default folders, a fake Hugging Face cache,
LM Studio folder and Ollama store in a temporary folder, Ollama names resolved to their blobs, and the found files
that can draft for a target. No network."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from gguf import LlamaFileType

from specviz.errors import ModelError
from specviz.models import gguf as g
from tests.helpers import write_gguf


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
    # the library's own: huggingface_hub's cache as the hub client set it, the other places as at home
    assert g.default_places(env, home, hf_cache=Path("/hub"))[0].path == Path("/hub")


def test_the_librarys_places_are_the_usual_ones_with_the_hub_clients_own_cache():
    """One place locates the model caches (specviz.models.gguf.default_places): load_pair's default places are the
    usual ones at home with the Hugging Face cache where huggingface_hub keeps it."""
    from huggingface_hub import constants

    from specviz.loading.options import LoadSettings

    found = LoadSettings().found_in()
    assert found == g.default_places({}, Path.home(), hf_cache=Path(constants.HF_HUB_CACHE))
    assert found[0] == g.Place(source=g.HF_CACHE, path=Path(constants.HF_HUB_CACHE))


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
