"""Each student's share of a class server (issue 68; specviz.server.quotas, specviz.server.paircache): tabs, open
runs and pair places per student, each refusal naming only the student's own use; the lecturer exempt and first for
memory and places; a run's memory estimated from its token counts and its models' KV bytes per token (checked by
hand and against the caches a real run holds), and given back when its tab closes."""

import pytest

import specviz
from specviz.class_policy import RefusedError
from specviz.drafts.typed import TypedDraft
from specviz.models.store import ModelStore
from specviz.server.paircache import PairCache
from specviz.server.quotas import TOP_ENTRY_BYTES, Quotas, RunMemory, kv_bytes_per_token, run_memory
from tests.helpers import hf_pair, table_pair

GB = 1_000_000_000


# --- a run's memory, by hand -----------------------------------------------------------------------------


def test_kv_bytes_per_token_by_hand():
    """tests.helpers' tiny Llama: 2 layers, 2 KV heads of 32 / 4 = 8 values, float64: a key and a value each,
    2 × 2 × 2 × 8 × 8 = 512 bytes a token; its 1-layer draft 256; a table keeps no cache."""
    pair = hf_pair(draft_layers=1)
    assert kv_bytes_per_token(pair.target) == 2 * 2 * 2 * 8 * 8 == 512
    assert kv_bytes_per_token(pair.draft) == 256
    assert kv_bytes_per_token(table_pair([0.5, 0.5], [0.5, 0.5]).target) == 0
    assert kv_bytes_per_token(TypedDraft(pair.draft)) == 256  # through the Decode page's typed-draft wrapper

    class Llama:  # llama.cpp's own figure wins: the embedded target, 30 layers × 2 × 3 KV heads × 64 × 4 bytes
        kv_bytes_per_token = 30 * 2 * 3 * 64 * 4

    assert kv_bytes_per_token(Llama()) == 46_080


def test_the_estimate_is_what_the_caches_of_a_real_run_hold():
    """A run of the tiny pair on 7 prompt tokens, τ = 3, 4 new tokens: its estimate counts (7 + 4 + 3 + 1) = 15
    positions in both models, 15 × (512 + 256) = 11,520 bytes; the DynamicCaches the finished run holds are no more
    than that, and after the prompt is read (all but its last token: the first step feeds that one) exactly 6 × 512 and
    6 × 256."""
    pair = hf_pair(draft_layers=1)
    prompt = [3, 1, 4, 1, 5, 9, 2]
    config = specviz.SpecConfig(tau=3, max_new_tokens=4, mode="greedy")
    memory = run_memory(
        prompt_tokens=len(prompt),
        max_new_tokens=4,
        tau=3,
        target_kv=kv_bytes_per_token(pair.target),
        draft_kv=kv_bytes_per_token(pair.draft),
        vocab=pair.target.vocab_size,
    )
    assert memory.kv == 15 * 768 == 11_520
    dec = specviz.Decoder(pair, prompt, config)
    held = [_cache_bytes(s) for s in (dec._target, dec._draft)]
    assert held == [6 * 512, 6 * 256]
    dec.run()
    assert 0 < sum(_cache_bytes(s) for s in (dec._target, dec._draft)) <= memory.kv


def _cache_bytes(session) -> int:
    cache = session._cache  # the HFSession's DynamicCache
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return sum(t.nbytes for layer in layers for t in (layer.keys, layer.values) if t is not None)
    return sum(t.nbytes for t in (*cache.key_cache, *cache.value_cache))


def test_the_issue_probes_run_by_hand():
    """The issue's tab: a prompt of 1,680 tokens, 256 new, τ = 4, the target on llama.cpp (its context allocated when
    the run opens it: `opens`, here the 0.33 GB the embedded target's 2,048-token context would take) and a torch
    draft of 15,360 bytes a token, whose cache grows with the run: 1,680 + 256 + 5 = 1,941 positions × 15,360 =
    29,813,760 bytes; beside it 2 × 5 rows × 49,152 × 4 bytes of logits = 1,966,080 and 256 steps × 5 positions × 3
    lists × 10 entries of TOP_ENTRY_BYTES."""
    memory = run_memory(
        prompt_tokens=1_680, max_new_tokens=256, tau=4, target_kv=0, draft_kv=15_360, vocab=49_152, opens=330_000_000
    )
    assert memory.kv == 1_941 * 15_360 == 29_813_760
    assert memory.rest == 1_966_080 + 256 * 5 * 3 * 10 * TOP_ENTRY_BYTES == 1_966_080 + 7_680_000
    assert memory.total == 29_813_760 + 9_646_080 + 330_000_000
    assert memory.grows == memory.total - 330_000_000  # the store counts the context once the run opens it
    torch_only = run_memory(prompt_tokens=1_680, max_new_tokens=256, tau=4, target_kv=46_080, draft_kv=0, vocab=49_152)
    assert torch_only.kv == 1_941 * 46_080 and torch_only.opens == 0 and torch_only.grows == torch_only.total


def test_a_trees_run_is_estimated_with_its_nodes_not_its_depth():
    """A tree of 3 levels × 2 children with 6 nodes scores 6 draft positions a step (and keeps 7 rows of logits), not
    its depth 3: 100 + 20 + 6 + 1 = 127 positions of KV at 1,000 bytes, 2 × 7 rows × 50 words × 4 bytes of logits."""
    tree = specviz.SpecConfig(topk=2, steps=3, num_draft_tokens=6, mode="greedy")
    assert (tree.scored_per_step, specviz.SpecConfig(tau=4).scored_per_step) == (6, 4)
    memory = run_memory(
        prompt_tokens=100, max_new_tokens=20, tau=tree.scored_per_step, target_kv=1_000, draft_kv=0, vocab=50, top=0
    )
    assert (memory.kv, memory.rest) == (127_000, 2 * 7 * 50 * 4)


def test_a_llama_cpp_context_of_its_own_is_counted_with_its_buffers_and_given_back(tmp_path):
    """The tiny GGUF (vocabulary 320, width 64, 4 heads, 2 layers × 2 KV heads × 16 wide: 512 bytes of float32 KV a
    token), a session of 200 tokens in a context of its own, rounded up to 256: its KV 256 × 512 = 131,072 B; the
    output buffer 512 rows × (320 + 64) × 4 = 786,432; the compute buffer 512 × 320 × 4 = 655,360 of logits and
    512 × 256 × 4 heads × 4 = 2,097,152 of attention scores: 3,670,016 bytes more while it is open, none after; and
    read before it opens, as a class server's budget counts it."""
    from specviz.models import llamacpp
    from tests.helpers import write_tiny_gguf

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    model = llamacpp.LlamaCppModel(write_tiny_gguf(tmp_path / "tiny.gguf"), "tiny", context=256)
    before = model.nbytes()
    assert model.opening_bytes(200) == model.context_bytes(256) == 131_072 + 786_432 + 655_360 + 2_097_152 == 3_670_016
    session = model.new_session(tokens=200)
    assert model.nbytes() - before == 3_670_016
    session.close()
    assert model.nbytes() == before


def test_the_shared_batched_context_is_counted_with_its_buffers_before_it_opens(tmp_path):
    """The tiny GGUF with 2 streams of 256 tokens shared by linear runs: the first such run opens the batched
    context, 2 × 256 × 512 = 262,144 B of KV and the same buffers as one context of 256 (786,432 + 655,360 +
    2,097,152): 3,801,088 bytes, read before it opens; the second takes the other stream (0 more); a third finds
    none free and would open a context of its own (3,670,016); a tree's run always does. Through the pair: both
    models that size their sessions are summed, a draft that reads the target's session is not."""
    from specviz.models import llamacpp
    from tests.helpers import write_tiny_gguf

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    model, draft = (
        llamacpp.LlamaCppModel(
            write_tiny_gguf(tmp_path / f"{n}.gguf", seed=n), str(n), context=256, slots=2, slot_tokens=256
        )
        for n in (1, 2)
    )
    before = model.nbytes()
    assert specviz.ModelPair(model, draft, None).opening_bytes(200, linear=True) == 2 * 3_801_088
    assert model.opening_bytes(200, linear=True) == 262_144 + 786_432 + 655_360 + 2_097_152 == 3_801_088
    first = model.new_session(tokens=200, linear=True)
    assert model.nbytes() - before == 3_801_088
    assert model.opening_bytes(200, linear=True) == 0
    second = model.new_session(tokens=200, linear=True)
    assert model.nbytes() - before == 3_801_088
    assert model.opening_bytes(200, linear=True) == 3_670_016 == model.opening_bytes(200, linear=False)
    first.close()
    assert model.opening_bytes(200, linear=True) == 0  # its stream is free again
    second.close()
    model.close()
    draft.close()


# --- tabs and runs per student --------------------------------------------------------------------------


def quotas(**kwargs) -> tuple[Quotas, list, list]:
    now, given = [0.0], []
    q = Quotas(clock=lambda: now[0], give_back=given.append, **kwargs)
    return q, now, given


def test_a_students_tabs_are_bounded_and_the_lecturer_is_not():
    q, _, _ = quotas(sessions=3)
    for tab in range(3):
        q.open_session(("a", tab), "student-a")
    with pytest.raises(RefusedError) as refused:
        q.open_session(("a", 3), "student-a")
    assert str(refused.value).startswith("class mode: you have 3 tabs of this app open already, the most one student")
    q.open_session(("b", 0), "student-b")  # another student: their own count
    for tab in range(10):
        q.open_session(("lecturer", tab), "lecturer-browser", lecturer=True)
    q.close_session(("a", 0))
    q.open_session(("a", 3), "student-a")  # a tab closed: room for one more


def test_a_students_open_runs_are_bounded_and_the_refusal_names_only_their_own():
    q, _, _ = quotas(runs=2)
    for tab in range(3):
        q.open_session(("a", tab), "student-a")
    q.open_session(("b", 0), "student-b")
    q.open_session(("l", 0), "lecturer-browser", lecturer=True)
    run = RunMemory(kv=1, rest=1)
    q.start_run(("a", 0), run)
    q.start_run(("a", 1), run)
    q.start_run(("a", 1), run)  # a new run in the same tab replaces its own
    with pytest.raises(RefusedError) as refused:
        q.start_run(("a", 2), run)
    said = str(refused.value)
    assert said.startswith("class mode: you have 2 runs open in your other tabs, the most one student may have (2)")
    assert "student-b" not in said and "lecturer" not in said
    q.start_run(("b", 0), run)  # the other student is not refused for the first one's runs
    q.start_run(("l", 0), run)
    assert q.use("student-a") == (3, 2, 4) and q.use("student-b") == (1, 1, 2)


def test_memory_past_the_budget_refuses_a_student_with_their_own_use_and_the_lecturer_evicts_a_students_run():
    """4 GB of models, a budget of 6 GB, runs of 0.6 GB (0.5 of KV the store does not count, 0.1 beside): student A's
    three tabs take 1.8 GB (5.8 held); B's first run would make 6.4: refused, told of B's own use only (none), A's
    fourth told of A's own three; the lecturer's run gives back the student run stepped longest ago."""
    q, now, given = quotas(budget_bytes=6 * GB, held=lambda: 4 * GB, idle_s=60.0)
    run = RunMemory(kv=500_000_000, rest=100_000_000)
    for tab in range(3):
        q.open_session(("a", tab), "student-a")
        now[0] += 1.0
        q.start_run(("a", tab), run)
    q.open_session(("b", 0), "student-b")
    with pytest.raises(RefusedError) as refused:
        q.start_run(("b", 0), run)
    said = str(refused.value)
    assert said.startswith("Cannot start this run: it needs about 0.60 GB, and the server's models and the class's")
    assert "hold 5.8 GB of the 6.0 GB" in said and "you have no other run open" in said
    q.open_session(("a", 3), "student-a")
    with pytest.raises(RefusedError, match=r"your 3 other open runs hold about 1\.80 GB"):
        q.start_run(("a", 3), run)
    q.open_session(("l", 0), "lecturer-browser", lecturer=True)
    now[0] = 10.0
    q.touch(("a", 0))  # A's first tab steps again: its run is the most recently used now
    q.start_run(("l", 0), run)  # nobody idle: the least recently stepped student run, A's second, is given back
    assert given == [("a", 1)] and q.runs_bytes() == 3 * run.total  # A's first and third, the lecturer's
    now[0] = 100.0  # every student run idle: a student's run takes an idle one's memory too
    q.start_run(("b", 0), run)
    assert given == [("a", 1), ("a", 2)]


def test_a_closed_tabs_run_gives_its_memory_back():
    q, _, _ = quotas(budget_bytes=6 * GB, held=lambda: 4 * GB)
    run = RunMemory(kv=1 * GB, rest=0)
    q.open_session("tab-1", "student-a")
    q.open_session("tab-2", "student-a")
    q.start_run("tab-1", run)
    q.start_run("tab-2", run)
    assert q.runs_bytes() == 2 * GB
    open_tabs = {"tab-2"}
    given = []
    q.give_back = given.append
    assert q.reap(lambda session: session in open_tabs) == 1  # tab-1's websocket closed
    assert given == ["tab-1"]  # its run dropped now, not when Streamlit lets the closed session go
    assert q.runs_bytes() == 1 * GB and q.use("student-a") == (1, 1, 1 * GB)


def test_a_run_that_fails_to_start_leaves_the_run_the_tab_keeps_counted():
    """A tab with a 1 GB run asks for a 2 GB one: counted at 2 GB, then its prompt cannot be read; the page keeps the
    old run, and so does the count (1 GB, not 2); a tab whose first run fails holds nothing."""
    q, _, _ = quotas(budget_bytes=6 * GB, held=lambda: 2 * GB)
    old, new = RunMemory(kv=1 * GB, rest=0), RunMemory(kv=2 * GB, rest=0)
    q.open_session("tab", "student-a")
    assert q.start_run("tab", old) is None
    replaced = q.start_run("tab", new)
    assert replaced == old and q.runs_bytes() == 2 * GB
    q.restore_run("tab", replaced)
    assert q.runs_bytes() == 1 * GB and q.use("student-a") == (1, 1, 1 * GB)
    q.end_run("tab")
    q.restore_run("tab", q.start_run("tab", new))  # a tab's first run that failed to start: it holds none
    assert q.runs_bytes() == 0


def test_what_a_run_opens_is_counted_by_the_run_until_it_is_open_then_by_the_store():
    """5 GB of models, a budget of 6: a run whose llama.cpp context takes 0.6 GB when it opens is counted at 0.6 GB
    (and its 100 bytes beside) from the moment it is let start, so a second such run is refused before the first has
    opened anything (5 + 0.6 + 0.6 > 6: the budget cannot be passed by one run at a time); once the first has opened
    (the store now counts 5.6), the run counts only its 100 bytes, and its context is not counted twice."""
    held = [5 * GB]
    q, _, _ = quotas(budget_bytes=6 * GB, held=lambda: held[0])
    run = RunMemory(kv=0, rest=100, opens=600_000_000)
    q.open_session("tab", "student-a")
    q.open_session("other", "student-b")
    q.start_run("tab", run)
    assert q.runs_bytes() == 600_000_100
    with pytest.raises(RefusedError, match=r"needs about 0\.60 GB.* hold 5\.6 GB of the 6\.0 GB"):
        q.start_run("other", run)
    q.opened("tab")
    held[0] += 600_000_000
    assert q.runs_bytes() == 100
    q.restore_run("tab", run)  # a later run failed to start: the run kept is open
    assert q.runs_bytes() == 100


# --- pair places ----------------------------------------------------------------------------------------


def places(**kwargs):
    now, loads = [0.0], []

    def load(target, draft, runtime):
        loads.append(target)
        return table_pair([0.5, 0.5], [0.5, 0.5])

    cache = PairCache(load, pinned=lambda key: key[0] == "default", clock=lambda: now[0], **kwargs)
    return cache, now, loads


def test_one_students_tabs_hold_one_place_and_another_student_is_not_refused_for_them():
    """The issue's probe: one student's tabs of early-exit:2, :3 and :4 took every place. With one place a student,
    each new pair gives that student's own older one back; another student still gets a place."""
    cache, now, _ = places(most=3, idle_s=60.0, per_owner=1)
    cache.get("default", "default", "torch")
    for k in (2, 3, 4):
        now[0] += 1.0
        cache.get(f"early-exit:{k}", "self", "torch", owner="student-a")
    assert {key[0] for key in cache.held()} == {"default", "early-exit:4"}
    cache.get("b-pair", "self", "torch", owner="student-b")
    cache.get("c-pair", "self", "torch", owner="student-c")
    with pytest.raises(RefusedError) as refused:  # every place in use by others: said without naming their pairs
        cache.get("d-pair", "self", "torch", owner="student-d")
    said = str(refused.value)
    assert "early-exit" not in said and "b-pair" not in said and "c-pair" not in said
    assert said.startswith("this server holds its most pairs besides the default (3)")


def test_the_lecturer_gets_a_place_by_evicting_a_students_pair():
    cache, now, _ = places(most=2, idle_s=60.0, per_owner=1)
    a = cache.get("a-pair", "self", "torch", owner="student-a")
    now[0] = 5.0
    b = cache.get("b-pair", "self", "torch", owner="student-b")
    now[0] = 10.0  # both used in the last minute: a student is refused, the lecturer is not
    with pytest.raises(RefusedError):
        cache.get("c-pair", "self", "torch", owner="student-c")
    mine = cache.get("lecturer-pair", "self", "torch", lecturer=True)
    assert a.closed and not b.closed and not mine.closed  # the least recently used student pair gave its place
    assert {key[0] for key in cache.held()} == {"b-pair", "lecturer-pair"}
    now[0] = 12.0
    cache.get("lecturer-2", "self", "torch", lecturer=True)  # and again: b's, never the lecturer's own
    assert b.closed and {key[0] for key in cache.held()} == {"lecturer-pair", "lecturer-2"}
    with pytest.raises(RefusedError):  # only the lecturer's pairs left: another lecturer pair is refused
        cache.get("lecturer-3", "self", "torch", lecturer=True)


def test_the_lecturer_gets_memory_by_evicting_a_students_pair_in_use():
    store, sizes = ModelStore(), {"default": 4 * GB, "a": 1_500_000_000, "lect": 1_500_000_000}

    def load(target, draft, runtime):
        store.take(("t", target), lambda: object(), name=target, size=lambda _: sizes[target])
        return table_pair([0.5, 0.5], [0.5, 0.5]).owning(lambda: store.give(("t", target)))

    now = [0.0]
    cache = PairCache(
        load,
        pinned=lambda key: key[0] == "default",
        idle_s=60.0,
        clock=lambda: now[0],
        store=store,
        budget_bytes=6 * GB,
        estimate=lambda key: [(("t", key[0]), sizes[key[0]])],
        per_owner=1,
    )
    cache.get("default", "d", "torch")
    a = cache.get("a", "d", "torch", owner="student-a")
    with pytest.raises(RefusedError) as refused:  # a student: "a" was used a moment ago
        cache.get("lect", "d", "torch", owner="student-b")
    assert "You hold" not in str(refused.value) and " a + d" not in str(refused.value)  # b holds none; a's unnamed
    cache.get("lect", "d", "torch", lecturer=True)
    assert a.closed and store.total_bytes() == 5_500_000_000
