"""Model specs parsed once (specviz.specs) and drafts as plug-ins (specviz.drafts.kinds): every registered kind parses
and gives its canonical text back; the store's keys and the memory plan come from the spec; a kind added by a test
(one class, registered) loads through load_pair and appears among the Decode sidebar's draft choices."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

import specviz
from specviz import Decoder, SpecConfig, specs
from specviz.drafts import DEFAULT_DIR, kinds
from specviz.drafts.lookup import PromptLookupDrafter
from specviz.errors import ModelError
from specviz.loading import planned_parts
from specviz.models.store import ModelStore
from tests.app_helpers import app
from tests.helpers import save_tiny

ROOT_DOCS = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

# (text as a user writes it, its canonical text), by hand, for every kind the registry holds
EXAMPLES = {
    "self": [(" self ", "self")],
    "prompt-lookup": [("prompt-lookup", "prompt-lookup")],
    "suffix": [
        ("suffix", "suffix"),
        ("suffix:max_tree_depth=24,min_token_prob=0.10", "suffix"),
        ("suffix: max_cached_requests=0 ,max_spec_offset=1.5", "suffix:max_spec_offset=1.5,max_cached_requests=0"),
    ],
    "early-exit": [("early-exit:08", "early-exit:8"), ("early-exit:3", "early-exit:3")],
    "embedded": [("embedded", "embedded")],
    "embedded-int8": [("embedded-int8", "embedded-int8"), ("embedded-int8:08192", "embedded-int8:8192")],
    "trained": [(str(DEFAULT_DIR), str(DEFAULT_DIR))],
    "gguf": [
        ("ollama:llama3.2", "ollama:llama3.2:latest"),
        ("hf:bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", "hf:bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"),
        ("~/models/m.gguf", str(Path.home() / "models" / "m.gguf")),
    ],
    "quantized": [("embedded:Q4_0", "embedded:Q4_0"), ("embedded:Q2_K", "embedded:Q2_K")],
    "model": [("gpt2", "gpt2"), (" HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct")],
}


def test_every_registered_kind_parses_its_texts_and_gives_its_canonical_text_back():
    assert set(EXAMPLES) == {kind.name for kind in kinds.kinds()}  # a new kind comes with its examples here
    for name, pairs in EXAMPLES.items():
        for text, canonical in pairs:
            spec = specs.parse(text)
            assert kinds.kind_of(spec).name == name, text
            assert str(spec) == canonical and specs.parse(str(spec)) == spec, text
    for kind in kinds.kinds():  # each kind's own example is its own
        assert kinds.kind_of(specs.parse(kind.example)) is kind, kind.name


def test_specs_are_typed_and_a_served_target_or_a_bad_early_exit_is_read_once():
    served = specs.parse("vllm:http://h:8000/v1/#m")
    assert isinstance(served, specs.Served) and str(served) == "vllm:http://h:8000/v1#m"
    assert served.served.url == "http://h:8000/v1" and served.served.model == "m"
    assert specs.parse("early-exit:08") == specs.parse("early-exit:8") == specs.EarlyExit(text="x", layers=8)
    assert specs.parse(served) is served  # a spec is given back as it is
    assert [specs.parse(t).is_gguf for t in ("embedded:Q4_0", "a.gguf", "embedded", "gpt2")] == [1, 1, 0, 0]
    with pytest.raises(ModelError, match="write the early-exit draft as early-exit:K"):
        specs.parse("early-exit:²")


@dataclass(frozen=True, kw_only=True)
class FixedToken(specs.ModelSpec):
    """A test kind's spec: "fixed-token:N"."""

    kind: ClassVar[str] = "fixed-token"
    token: int

    def __str__(self) -> str:
        return f"fixed-token:{self.token}"


class FixedDrafter(PromptLookupDrafter):
    """Proposes one token whatever the context, through prompt lookup's proposer (one-hot q)."""

    def __init__(self, vocab_size: int, token: int) -> None:
        super().__init__(vocab_size, name=f"always token {token}")
        self.token = token

    def propose(self, context):
        return self.token


class FixedKind(kinds.DraftKind):
    name = "fixed-token"
    rank = 95
    label = "always token 7 (a test kind)"
    help = "proposes one token, whatever the context"
    hint = "fixed-token:N"
    offer = "fixed-token:7"
    example = "fixed-token:7"
    needs = frozenset({kinds.TARGET})

    def parse(self, text):
        head, _, token = text.partition(":")
        return FixedToken(text=text, token=int(token)) if head == "fixed-token" and token.isdecimal() else None

    def claims(self, spec):
        return isinstance(spec, FixedToken)

    def build(self, spec, beside):
        return FixedDrafter(beside.model.vocab_size, spec.token)


@pytest.fixture
def fixed_kind():
    kind = kinds.register(FixedKind())
    yield kind
    kinds.unregister(kind.name)


def test_a_registered_kind_is_parsed_loaded_and_proposes_its_token_then_is_gone(fixed_kind, tmp_path):
    folder = save_tiny(tmp_path / "tiny", seed=0)
    spec = specs.parse(" fixed-token:05")
    assert spec == FixedToken(text="", token=5) and str(spec) == "fixed-token:5" and kinds.kind_of(spec) is fixed_kind
    store = ModelStore()
    pair = specviz.load_pair(folder, spec, runtime="torch", store=store)
    step = Decoder(pair, [1, 2, 3], SpecConfig(tau=3, max_new_tokens=8)).step()
    assert step.draft_tokens == (5, 5, 5)
    assert [p.key for p in store.parts()] == [k for k, _ in planned_parts(folder, "fixed-token:5", "torch")]
    pair.close()
    kinds.unregister(fixed_kind.name)
    assert isinstance(specs.parse("fixed-token:5"), specs.Named)  # its text is no longer read
    assert "fixed-token:N" not in kinds.hints()


def test_the_store_keys_and_the_plan_come_from_the_canonical_spec(tmp_path):
    """The same draft written two ways is one part: load_pair and planned_parts make the key from the spec."""
    folder = save_tiny(tmp_path / "tiny", seed=0)
    store = ModelStore()
    a = specviz.load_pair(folder, " early-exit:01", runtime="torch", store=store)
    b = specviz.load_pair(specs.parse(folder), specs.parse("early-exit:1"), runtime="torch", store=store)
    keys = [(p.key, p.users) for p in store.parts()]
    draft_key = ("draft", folder, "early-exit:1", "cpu", "torch.float32", False)
    assert keys == [(("torch", folder, "cpu", "torch.float32", "eager"), 2), (draft_key, 2)]
    assert [k for k, _ in planned_parts(folder, "early-exit:001", "torch")] == [k for k, _ in keys]
    assert a.draft is b.draft
    a.close()
    b.close()
    assert store.parts() == []


def test_a_registered_kind_appears_among_the_decode_sidebars_draft_choices(fixed_kind, loads, found_files):
    """The Decode page's found pair offers the registry's target-only kinds beside the found drafts, and the custom
    pair's draft help names how each kind is written; a kind unregistered is gone from both."""
    from specviz.classroom import settings

    def choices():
        at = app(panels_open=False)
        at.selectbox(key="decode_preset").set_value(settings.ON_THIS_COMPUTER).run()
        at.selectbox(key="decode_local_target").set_value(found_files["big"]).run()
        assert not at.exception
        box = at.selectbox(key="decode_local_draft")
        at.selectbox(key="decode_preset").set_value(settings.CUSTOM).run()
        return box.options, at.text_input(key="decode_draft").help

    options, help_text = choices()
    assert options[-4:] == [
        "the target itself (self)",
        "prompt lookup (no model)",
        "suffix decoding (no model)",
        "always token 7 (a test kind)",
    ]
    assert "small.gguf" in options[1] and "fixed-token:N" in help_text
    kinds.unregister(fixed_kind.name)
    options, help_text = choices()
    assert "always token 7 (a test kind)" not in options and "fixed-token:N" not in help_text


def test_a_gguf_model_found_on_this_computer_stays_an_object_its_header_read_once(tmp_path, monkeypatch):
    from specviz import loading
    from specviz.models import gguf
    from tests.helpers import write_gguf

    write_gguf(tmp_path / "m.gguf", width=8)
    (model,) = gguf.find_models([gguf.Place(source=gguf.FOLDER, path=tmp_path)])
    spec = specs.found(model)
    assert spec == specs.parse(model.spec) and str(spec) == str(tmp_path / "m.gguf")
    monkeypatch.setattr(gguf, "read_info", lambda *_: pytest.fail("read again"))
    monkeypatch.setattr(gguf, "resolve", lambda *_: pytest.fail("looked for again"))
    opened = loading.open_gguf(spec)
    assert opened.path == model.path and opened.info is model.info
    assert opened.name == f"m.gguf ({model.info.quantization})"  # the user's file by its own name (issue 67.2)


# A draft kind as a newcomer adds one: this one file, imported, and nothing else changed (docs/architecture.md,
# "Adding a draft kind").
TOY_MODULE = """
from dataclasses import dataclass
from typing import ClassVar

from specviz import specs
from specviz.analysis.engine_flags import Flag
from specviz.drafts.kinds import TARGET, DraftKind, register
from tests.test_draft_kinds import FixedDrafter


@dataclass(frozen=True, kw_only=True)
class Toy(specs.ModelSpec):
    kind: ClassVar[str] = "toy"
    token: int

    def __str__(self):
        return f"toy:{self.token}"


class ToyKind(DraftKind):
    name = "toy"
    rank = 97
    label = "toy (a newcomer's kind)"
    help = "always proposes one token"
    hint = "toy:N"
    offer = "toy:4"
    example = "toy:4"
    needs = frozenset({TARGET})
    across = "toy"

    def parse(self, text):
        head, _, token = text.partition(":")
        return Toy(text=text, token=int(token)) if head == "toy" and token.isdecimal() else None

    def claims(self, spec):
        return isinstance(spec, Toy)

    def build(self, spec, beside):
        return FixedDrafter(beside.model.vocab_size, spec.token)

    def engine_settings(self, target, *, label, spec, file, name, tau):
        flag = Flag("toy-engine", f"toy-serve {target.model_id} --draft {spec} --tau {tau}", "the toy's own")
        return (flag,), "only the toy engine"


register(ToyKind())
"""


def test_a_kind_added_as_one_file_is_listed_loaded_swept_and_given_its_own_engine_flags(tmp_path, monkeypatch):
    """Issue 66.1: a kind in a module of its own is in the command line's help, loads through load_pair, is the pair's
    own draft in Across drafts as a class of its own (not a hub model with vLLM's draft_model flags), runs in its
    benchmark and gets the settings it names."""
    import importlib

    from specviz import cli
    from specviz.analysis.clock import FakeTimer
    from specviz.analysis.pairtimes import TimingBook
    from specviz.analysis.sweep import SweepSettings
    from specviz.classroom import across
    from tests.helpers import fake_ms

    (tmp_path / "toy_kind_of_a_newcomer.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("toy_kind_of_a_newcomer")
    try:
        kind = kinds.kind_of(specs.parse("toy:5"))
        assert kind.name == "toy" and "toy:N" in " ".join(cli.spec_forms().split())
        folder = save_tiny(tmp_path / "tiny", seed=0)
        pair = specviz.load_pair(folder, "toy:5", runtime="torch")
        assert Decoder(pair, [1, 2, 3], SpecConfig(tau=2, max_new_tokens=4)).step().draft_tokens == (5, 5)
        drafts = across.drafts_for(folder, "toy:5", [], layers=2, llama=False)
        own = drafts.by_label()["the pair's draft (toy:5)"]
        assert (own.kind, own.spec, own.file) == ("toy", "toy:5", "")
        settings = SweepSettings(taus=(2,), prompts=("a b c",), mode="greedy", max_new_tokens=4)
        result = across.run(
            drafts, (own.label,), settings, lambda spec: pair, TimingBook(), {}, timer=FakeTimer(fake_ms)
        )
        (row,) = result.table()
        assert row["draft"] == own.label and row["best τ"] == "2" and row["tokens per step"] != "–"
        flags, note = across.run_settings(drafts, own, 3)
        assert [f.text for f in flags] == [
            f"toy-serve {folder} --draft toy:5 --tau 3"
        ] and note == "only the toy engine"
    finally:
        kinds.unregister("toy")
    assert "toy:N" not in cli.spec_forms()


def test_each_shipped_kind_names_its_class_and_its_engine_settings_in_across_drafts():
    """The pair's own draft of every shipped kind as Across drafts lists it beside a hub target (what it is, what an
    engine loads) and the engines it is given settings for: suffix decoding and the int8 draft were hub models with
    vLLM's draft_model flags before their kinds said what they are."""
    from specviz.classroom import across

    hub = "HuggingFaceTB/SmolLM2-360M-Instruct"
    expected = {  # draft: (class, file, engines with settings)
        "prompt-lookup": ("lookup", "", ["vLLM", "SGLang"]),
        "suffix:min_token_prob=0.2": ("suffix", "", ["vLLM", "SGLang"]),
        "early-exit:4": ("early exit", "", []),
        "embedded-int8": ("trained", "", []),
        str(DEFAULT_DIR): ("trained", "", []),
        "HuggingFaceTB/SmolLM2-135M-Instruct": ("model", "HuggingFaceTB/SmolLM2-135M-Instruct", ["vLLM", "SGLang"]),
    }
    for draft, (kind, file, engines) in expected.items():
        drafts = across.drafts_for(hub, draft, [], layers=32, llama=True)
        own = next(c for c in drafts.fit if c.spec == draft)
        assert (own.kind, own.file) == (kind, file), draft
        flags, note = across.run_settings(drafts, own, 3)
        assert [f.engine for f in flags] == engines and note, draft
    drafts = across.drafts_for(hub, "suffix:min_token_prob=0.2", [], layers=32, llama=True)
    (vllm, sglang), _ = across.run_settings(drafts, drafts.by_label()["suffix decoding (suffix:min_token_prob=0.2)"], 3)
    assert vllm.text == (
        f"vllm serve {hub} --speculative-config "
        '\'{"method": "suffix", "num_speculative_tokens": 3, "suffix_decoding_min_token_prob": 0.2}\''
    )
    assert "--speculative-algorithm SUFFIX" in sglang.text and "--speculative-draft-model-path" not in sglang.text


def test_every_shipped_kind_has_its_row_in_the_docs_table_of_models():
    table = ROOT_DOCS.read_text().split("| spec | draft kind | meaning |")[1].split("\n\n")[0]
    listed = {row.split(" | ")[1].strip("`") for row in table.strip().splitlines()[1:]} - {"(a target)"}
    assert listed == {kind.name for kind in kinds.kinds()}
