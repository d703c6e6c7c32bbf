"""The llama.cpp runtime (specviz.models.llamacpp) and the draft's lean forward (specviz.drafts.lean):
the same target and the same draft as the torch reference, faster. p agrees with the transformers
float32 p within 1e-4 on held-out prompts of four kinds; greedy speculative output equals the
runtime's own greedy decoding (chains and trees); a tree pass equals each path scored alone; the
cache after a crop or a retain equals a fresh prefill; lossless passes the page's χ² check; sessions
sharing the model never see each other. Runtime choice: typed errors that say what to do."""

import pytest
import torch

import specviz
from specviz import Decoder, SpecConfig, loading
from specviz.analysis.lossless import check, first_tokens, reference
from specviz.classroom.settings import runtime_line
from specviz.errors import ModelError
from specviz.loading import resolve_runtime
from specviz.models import embedded, llamacpp
from specviz.server.config import ServerConfig
from tests.test_tree import PARENTS, TOKENS, path_of

# held out from the draft's training prompts (benchmarks/runtime.py): a story, an instruction, code, a fact
PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain in three sentences how a refrigerator keeps food cold.",
    "Write a Python function that returns the n-th Fibonacci number.",
    "What is the capital of Australia, and why was it chosen?",
)

pytestmark = pytest.mark.numeric  # no clock read: `make test` runs its slow tests on both cores (pyproject.toml)


# --- choosing the runtime (no model needed) ------------------------------------------------------


def test_runtime_choice_is_checked_with_messages_that_say_what_to_do(monkeypatch):
    with pytest.raises(ModelError, match="unknown runtime 'onnx'"):
        resolve_runtime("embedded", "onnx")
    with pytest.raises(ModelError, match="the embedded target and GGUF files"):
        resolve_runtime("gpt2", "llama.cpp")
    with pytest.raises(ModelError, match="the embedded target and GGUF files"):
        resolve_runtime("vllm:http://host:8000/v1#m", "llama.cpp")
    with pytest.raises(ModelError, match="float32"):
        resolve_runtime("embedded", "llama.cpp", torch.device("cpu"), torch.bfloat16)
    assert resolve_runtime("gpt2") == "torch"  # auto: other targets run on torch
    assert resolve_runtime("embedded", "torch") == "torch"
    monkeypatch.setattr(llamacpp, "available", lambda: False)
    assert resolve_runtime("embedded") == "torch-kernels"  # auto without llama-cpp-python: torch, faster kernels
    assert resolve_runtime("gpt2", "torch-kernels") == "torch-kernels"  # any local target may ask for them
    with pytest.raises(ModelError, match="torch-kernels runtime runs a local target on the CPU in float32"):
        resolve_runtime("vllm:http://host:8000/v1#m", "torch-kernels")
    with pytest.raises(ModelError, match="CPU in float32"):
        resolve_runtime("embedded", "torch-kernels", torch.device("cpu"), torch.bfloat16)
    with pytest.raises(ModelError, match="make llama"):
        resolve_runtime("embedded", "llama.cpp")
    monkeypatch.setattr(llamacpp, "available", lambda: True)
    assert resolve_runtime("embedded") == "llama.cpp"  # auto prefers the faster runtime
    assert resolve_runtime("embedded", "auto", torch.device("cpu"), torch.float16) == "torch"
    server = ServerConfig.from_environ({loading.RUNTIME_ENV: "torch"})  # the server's default
    assert resolve_runtime("embedded", default=server.runtime) == "torch"
    assert resolve_runtime("embedded", "llama.cpp", default=server.runtime) == "llama.cpp"  # an explicit choice wins
    assert resolve_runtime("embedded") == "llama.cpp"  # the library reads no environment: SPECVIZ_RUNTIME is set here


def test_the_thread_count_and_the_context_are_read_from_the_environment_and_checked(monkeypatch):
    monkeypatch.setattr(llamacpp.os, "cpu_count", lambda: 12)
    assert llamacpp.default_threads() == 8  # every core, up to 8
    assert ServerConfig.from_environ({}).llama.threads is None  # unset: the default count
    monkeypatch.setattr(llamacpp, "available", lambda: True)
    assert "(float32, in process, 8 threads;" in runtime_line("llama.cpp")
    server = ServerConfig.from_environ({llamacpp.THREADS_ENV: "1"})  # a class server: one thread per decode
    assert server.llama.threads == 1
    assert "(float32, in process, 1 thread;" in runtime_line("llama.cpp", threads=server.llama.threads)  # said so
    for bad in ("0", "two", "-2", "1.5"):
        with pytest.raises(ModelError, match="whole number of threads, 1 or more"):
            ServerConfig.from_environ({llamacpp.THREADS_ENV: bad})
    opened = []
    monkeypatch.setattr(llamacpp, "from_settings", lambda path, name, settings, slots=0: opened.append(settings))
    monkeypatch.setattr(embedded, "ensure_f32_gguf", lambda progress=None: None)  # no model loaded
    llamacpp.load_embedded()
    assert opened.pop().context == 2048  # tokens per session
    small = ServerConfig.from_environ({llamacpp.CONTEXT_ENV: "512"}).llama  # a small server: a quarter per run
    llamacpp.load_embedded(settings=small)
    llamacpp.load_embedded(context=300, settings=small)
    assert [s.context for s in opened] == [512, 300]
    with pytest.raises(ModelError, match="SPECVIZ_LLAMA_CONTEXT='32': set it to a whole number of tokens, 64 or more"):
        ServerConfig.from_environ({llamacpp.CONTEXT_ENV: "32"})


# --- the real model on both runtimes ---------------------------------------------------------------


@pytest.fixture(scope="module")
def pairs(embedded_cache):
    return {
        "torch": specviz.load_pair("embedded", "embedded", runtime="torch"),
        "llama.cpp": specviz.load_pair("embedded", "embedded", runtime="llama.cpp"),
        "torch-kernels": specviz.load_pair("embedded", "embedded", runtime="torch-kernels"),
    }


FAST = ("llama.cpp", "torch-kernels")  # the faster runtimes: the same target as the torch reference


@pytest.mark.slow
@pytest.mark.parametrize("runtime", FAST)
def test_same_p_as_the_torch_reference_on_held_out_prompts(pairs, runtime):
    """Every position of each prompt and of 32 tokens of its greedy continuation: |Δp| ≤ 1e-4, and
    the final hidden states (what the feature draft reads) agree to float32 precision."""
    torch_pair, fast = pairs["torch"], pairs[runtime]
    assert (fast.runtime, torch_pair.runtime) == (runtime, "torch")
    worst = 0.0
    for prompt in PROMPTS:
        run = Decoder(fast, prompt, SpecConfig(mode="greedy", max_new_tokens=32)).run()
        ids = [*run.prompt_ids, *run.new_tokens]
        reference_session, fast_session = torch_pair.target.new_session(), fast.target.new_session()
        reference_session.record_features()
        fast_session.record_features()
        p_ref = reference_session.extend(ids).softmax(-1)
        p_fast = fast_session.extend(ids).softmax(-1)
        worst = max(worst, float((p_ref - p_fast).abs().max()))
        features = fast_session.features(0, len(ids))
        torch.testing.assert_close(features, reference_session.features(0, len(ids)), rtol=0, atol=5e-3)
    assert worst <= 1e-4, worst


@pytest.mark.slow
@pytest.mark.parametrize("runtime", FAST)
def test_greedy_speculation_reproduces_the_runtimes_own_greedy_text(pairs, runtime):
    """For the distilled draft (lean forward), the untrained draft and prompt lookup, in chains and in
    trees: the emitted tokens are the target's greedy decoding on the same runtime, token for token."""
    fast = pairs[runtime]
    for prompt in PROMPTS[:1]:  # one prompt: three drafts × chain and tree, 40 tokens each, on two runtimes
        alone = Decoder(fast, prompt, SpecConfig(tau=1, mode="greedy", max_new_tokens=40))
        expected = _target_greedy(fast, list(alone.prompt_ids), 40)
        for draft in ("embedded", "early-exit:8", "prompt-lookup"):
            pair = fast if draft == "embedded" else specviz.load_pair("embedded", draft, runtime=runtime)
            for config in (
                SpecConfig(tau=4, mode="greedy", max_new_tokens=40),
                SpecConfig(topk=3, steps=4, num_draft_tokens=10, mode="greedy", max_new_tokens=40),
            ):
                run = Decoder(pair, prompt, config).run()
                assert list(run.new_tokens) == expected, (prompt, draft, config.tree)


def _target_greedy(pair, ids, count):
    """Plain greedy decoding with the target's own session, one token per pass."""
    session = pair.target.new_session()
    logits = session.extend(ids, keep=1)[-1]
    out = []
    for _ in range(count):
        out.append(int(logits.argmax()))
        logits = session.extend(out[-1:])[-1]
    return out


@pytest.mark.slow
def test_a_tree_pass_equals_each_path_alone_and_retain_leaves_a_fresh_prefill(pairs):
    fast = pairs["llama.cpp"]
    ids = list(Decoder(fast, PROMPTS[3], SpecConfig()).prompt_ids)
    for cut in (3, len(ids) - 1):  # a short and a long held prefix
        session = fast.target.new_session()
        session.extend(ids[:cut])
        base = session.length
        parents = [base - 1] + [base if up < 0 else base + 1 + up for up in PARENTS]
        rows = session.extend_tree([ids[cut], *TOKENS], parents)
        for j in range(len(TOKENS)):
            alone = fast.target.new_session().extend([*ids[: cut + 1], *(TOKENS[i] for i in path_of(j))])[-1]
            torch.testing.assert_close(rows[1 + j].softmax(-1), alone.softmax(-1), rtol=0, atol=1e-5)
        # keep the path to node 7 (11 → 21 → 32): the cache then scores like a fresh prefill of that text
        session.retain([base, *(base + 1 + i for i in path_of(7))])
        kept = [*ids[: cut + 1], *(TOKENS[i] for i in path_of(7))]
        assert session.length == len(kept)
        after = session.extend([5, 6])
        fresh = fast.target.new_session().extend([*kept, 5, 6])[-2:]
        torch.testing.assert_close(after.softmax(-1), fresh.softmax(-1), rtol=0, atol=1e-5)
        features = _features(fast, [*kept, 5, 6])
        torch.testing.assert_close(session.features(0, len(kept) + 2), features, rtol=0, atol=1e-3)
        # a crop back into the prefix, then new text: again a fresh prefill
        session.crop(cut)
        torch.testing.assert_close(
            session.extend([7, 8]).softmax(-1),
            fast.target.new_session().extend([*ids[:cut], 7, 8])[-2:].softmax(-1),
            rtol=0,
            atol=1e-5,
        )


def _features(pair, ids):
    session = pair.target.new_session()
    session.extend(ids)
    return session.features(0, len(ids))


@pytest.mark.slow
def test_the_lean_draft_computes_the_transformers_drafts_numbers(pairs):
    """q from the lean forward against the draft's transformers modules, on the same target features:
    a prompt, then one token at a time, then a tree level, then after a retain."""
    reference_pair, fast = pairs["torch"], pairs["llama.cpp"]
    assert fast.draft.lean and not reference_pair.draft.lean
    target = reference_pair.target.new_session()
    lean = fast.draft.new_session(target)
    slow = reference_pair.draft.new_session(target)
    ids = list(Decoder(fast, PROMPTS[0], SpecConfig()).prompt_ids)
    target.extend(ids)
    for a, b in (
        (lean.extend(ids), slow.extend(ids)),
        (lean.extend([42]), slow.extend([42])),
        (lean.extend([43]), slow.extend([43])),
    ):
        torch.testing.assert_close(a.softmax(-1), b.softmax(-1), rtol=0, atol=1e-4)
    n = lean.length
    parents = [n - 1, n - 1, n - 1]
    torch.testing.assert_close(
        lean.extend_tree([7, 8, 9], parents).softmax(-1),
        slow.extend_tree([7, 8, 9], parents).softmax(-1),
        rtol=0,
        atol=1e-4,
    )
    lean.retain([n + 1])
    slow.retain([n + 1])
    torch.testing.assert_close(lean.extend([5]).softmax(-1), slow.extend([5]).softmax(-1), rtol=0, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", FAST)
def test_lossless_on_the_fast_runtimes_passes_the_pages_check_chain_and_tree(pairs, runtime):
    fast = pairs[runtime]
    tree = SpecConfig(topk=3, steps=2, num_draft_tokens=6, mode="lossless")
    for config in (SpecConfig(tau=3, mode="lossless"), tree):
        result = check(
            "lossless",
            list(first_tokens(fast, "The cat sat on the", config, 200)),  # the page's default trials
            reference(fast, "The cat sat on the", config),
        )
        assert result.consistent, result.verdict()


@pytest.mark.slow
def test_sessions_sharing_the_model_never_see_each_other(pairs):
    """Two runs interleaved step by step give the traces each gives alone (own contexts, own caches)."""
    fast = pairs["llama.cpp"]
    configs = [
        SpecConfig(tau=3, mode="lossless", seed=4, max_new_tokens=20),
        SpecConfig(topk=2, steps=3, num_draft_tokens=6, mode="textbook", seed=5, max_new_tokens=20),
    ]
    alone = [Decoder(fast, p, c).run() for p, c in zip(PROMPTS[:2], configs, strict=True)]
    together = [Decoder(fast, p, c) for p, c in zip(PROMPTS[:2], configs, strict=True)]
    while not all(d.done for d in together):
        for d in together:
            if not d.done:
                d.step()
    for a, b in zip(alone, together, strict=True):
        assert list(a.new_tokens) == list(b.trace().new_tokens)
        assert [s.emitted for s in a.steps] == [s.emitted for s in b.trace().steps]


@pytest.mark.slow
def test_the_races_copying_presets_keep_runs_of_tokens_per_pass_on_llama_cpp(pairs):
    """What the race's prompt-lookup presets say on screen, on the default runtime: greedy, both lanes
    write the same text; where the answer copies the prompt (repeat, quote), a target pass keeps more
    than two tokens on average (counted, not timed); the code edit keeps fewer, as its note says."""
    from specviz.analysis.race import PRESETS, Race
    from specviz.viz.render import RACE_STYLE, lane_html, lane_text

    lookup = specviz.load_pair("embedded", "prompt-lookup", runtime="llama.cpp")
    per_pass = {}
    for preset in (p for p in PRESETS if p.draft == "prompt-lookup"):
        race = Race(lookup, preset.prompt, SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=48))
        shown = [(lane_text(lookup.codec, a.tokens), lane_text(lookup.codec, s.tokens)) for a, s in race.frames()]
        result = race.result()
        assert result.same_text, preset.label
        per_pass[preset.label.split(": ")[1]] = result.tokens_per_pass
        final = lookup.codec.decode(list(result.alone.tokens))
        # what streams is each time a prefix of the final text, its spaces and line breaks as the final has them
        assert all(final.startswith(a) and final.startswith(s) for a, s in shown), preset.label
        assert shown[-1] == (final, final)
        if "code" in preset.label:
            assert "\n    " in final and "\n    " in lane_html(final)  # the indentation is in the box...
            assert "white-space: pre-wrap" in RACE_STYLE and "<br>" not in lane_html(final)  # ...and shows
    copying = [v for k, v in per_pass.items() if not k.startswith("edit code")]
    assert len(copying) == 2 and min(copying) > 2.0, per_pass
    assert per_pass["edit code"] < min(copying), per_pass


@pytest.mark.slow
def test_the_numbers_are_the_same_bit_for_bit_whatever_the_thread_count(pairs):
    """The thread count changes only the time: logits and hidden states at 1 and 3 threads equal
    those at the default, exactly (a class server may run one thread, a laptop every core)."""
    shared = pairs["llama.cpp"].target
    ids = list(Decoder(pairs["llama.cpp"], PROMPTS[2], SpecConfig()).prompt_ids)
    numbers = {}
    for threads in (None, 1, 3):
        model = shared if threads is None else llamacpp.LlamaCppModel(shared.path, shared.name, threads=threads)
        session = model.new_session()
        logits = torch.cat([session.extend(ids), session.extend([100, 200, 300, 400]), session.extend([7])])
        numbers[threads] = (logits, session.features(0, session.length))
    for threads in (1, 3):
        assert torch.equal(numbers[threads][0], numbers[None][0]) and torch.equal(numbers[threads][1], numbers[None][1])


@pytest.mark.slow
def test_a_one_token_pass_runs_on_the_threads_timed_fastest_and_gives_the_same_bits(pairs, monkeypatch):
    """Passes over several tokens run on every thread asked for; a pass over one token on the count timed fastest
    for it (1, half or all: on 2 cores 1 or 2), chosen once per model and count, or on the count the model is handed
    ($SPECVIZ_LLAMA_ONE_TOKEN_THREADS on a server); the logits and hidden states are the same bits either way."""
    shared = pairs["llama.cpp"].target
    lib = shared._lib
    ids = list(Decoder(pairs["llama.cpp"], PROMPTS[1], SpecConfig()).prompt_ids)
    model = llamacpp.LlamaCppModel(shared.path, shared.name, threads=2)
    timed = model.new_session()
    chosen = model.one_token_threads(2)
    assert chosen in (1, 2) and model.one_token_threads(2) == chosen  # timed once, then kept
    assert (lib.llama_n_threads(timed._ctx), lib.llama_n_threads_batch(timed._ctx)) == (chosen, 2)
    numbers = {}
    for one in ("1", "2"):
        monkeypatch.setattr(model, "one_token", int(one))  # as one_token_threads= hands it
        session = model.new_session()
        assert (lib.llama_n_threads(session._ctx), lib.llama_n_threads_batch(session._ctx)) == (int(one), 2)
        logits = torch.cat([session.extend(ids), session.extend([7]), session.extend([100, 200]), session.extend([9])])
        numbers[one] = (logits, session.features(0, session.length))
    assert torch.equal(numbers["1"][0], numbers["2"][0]) and torch.equal(numbers["1"][1], numbers["2"][1])
    monkeypatch.setattr(model, "one_token", 5)
    assert model.one_token_threads(2) == 2  # never more than the passes over several tokens have


@pytest.mark.slow
def test_a_run_allocates_the_cache_it_needs_and_its_numbers_do_not_change(pairs, monkeypatch):
    """A class server holds one llama.cpp session per student: each is sized to its run (prompt + max new tokens +
    the longest draft, rounded up to 256), not the model's 2048 tokens, and the trace is the same bit for bit as
    with the whole context (a cache of 80 × 2048 tokens was ~9 GB)."""
    fast = pairs["llama.cpp"]
    config = SpecConfig(tau=4, mode="textbook", seed=3, max_new_tokens=40)
    sized = Decoder(fast, PROMPTS[0], config)
    need = len(sized.prompt_ids) + 40 + 64 + 2
    assert sized._target.size == -(-need // 256) * 256 < fast.target.context
    sized_run = sized.run().outcome()
    monkeypatch.setattr(
        llamacpp.LlamaCppModel, "new_session", lambda self, tokens=None, linear=False: llamacpp.LlamaCppSession(self)
    )
    whole = Decoder(fast, PROMPTS[0], config)
    assert whole._target.size == fast.target.context
    assert whole.run().outcome() == sized_run
