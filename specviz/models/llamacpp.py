"""Any GGUF model on llama.cpp, in process (llama-cpp-python's low-level API): the embedded target, a GGUF file
found on this computer or named by the user, a quantized copy drafting for its target.

For the embedded target, the same weights as the torch runtime: the shipped GGUF de-quantised to float32 (the very
tensors transformers de-quantises for the torch runtime), with a float32 KV cache and no flash attention,
so both compute the same function in float32 and only the order of the sums differs (p agrees
within 1e-4: tests/test_llamacpp.py). llama.cpp runs the model at about the memory-bandwidth floor
of a laptop CPU, where eager torch spends most of a one-token pass in Python and small kernels.

Sharing follows the seams of specviz.models.lm: the model (weights) is loaded once and shared; each
session owns its own llama.cpp context, whose KV cache holds that run's tokens and nothing else.
Every scored position returns its logits and its final hidden state (the LM head's input, llama.cpp's
"embeddings" with no pooling) from the same decode, so the feature draft reads this target as it
reads the torch one.

Token trees use llama.cpp's sequences: every tree node gets a sequence of its own, which holds
exactly its root-to-node path (the prefix and its ancestors carry the id too), and a node attends to
the cells of its first sequence. `retain` turns the kept path into the plain sequence 0.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from specviz import pieces
from specviz.errors import ModelError
from specviz.limits import MAX_TREE_NODES
from specviz.models import cpu
from specviz.models import threads as torch_threads
from specviz.models.llamabackend import (  # noqa: F401 (re-exported: the names every caller knows)
    INSTALL_HINT,
    available,
    backend,
    cpu_variant,
    cpu_variants,
)
from specviz.models.llamapool import BATCH, PooledSession, RecordingSession, SlotPool, context_bytes, float_buffer
from specviz.models.llamasettings import (  # noqa: F401 (re-exported: the names every caller knows)
    BEND_ENV,
    CLASS_SLOTS,
    CONTEXT_ENV,
    CPU_ENV,
    DEFAULT_CONTEXT,
    ONE_TOKEN_THREADS_ENV,
    SLOT_TOKENS,
    SLOT_TOKENS_ENV,
    SLOTS_ENV,
    THREADS_ENV,
    LlamaSettings,
)
from specviz.models.lm import Capabilities

RUNTIME = "llama.cpp"
# sequence 0 (the text), one per tree node, and one per pending token verified with the tree
MAX_SEQUENCES = 1 + MAX_TREE_NODES + 1


class LlamaCppModel:
    """A GGUF causal LM on llama.cpp behind the NextTokenModel protocol; shared, never mutated."""

    def __init__(
        self,
        path: Path,
        name: str = "",
        context: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        slots: int = 0,
        bend: bool = True,
        watch: cpu.CoreWatch | None = None,
        *,
        one_token_threads: int | None = None,
        slot_tokens: int = SLOT_TOKENS,
        cpu_variant: str = "",  # noqa: F811 (a name; the function of that name is llamabackend's)
        log: bool = False,
    ) -> None:
        """`slots`: chain runs whose passes share decodes (specviz.models.llamapool; 0: none), of `slot_tokens`
        tokens each. A class server asks for CLASS_SLOTS (LlamaSettings.slots_for). `bend`: each pass runs on at most
        the cores no other process holds now (`pass_threads`; `watch` reads them, default this process's CoreWatch).
        `one_token_threads`: a one-token pass's threads (None: timed, `one_token_threads()`). `cpu_variant`, `log`:
        the backend's (`backend`). A server hands them all from its LlamaSettings (`from_settings`)."""
        lib = backend(log, cpu_variant)
        self._lib = lib
        params = lib.llama_model_default_params()
        params.use_mmap = True
        model = lib.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            raise ModelError(f"llama.cpp could not load {path}")
        self._model = model
        self._free = lib.llama_model_free
        vocab = lib.llama_model_get_vocab(model)
        self.vocab_size = int(lib.llama_vocab_n_tokens(vocab))
        self.hidden_size = int(lib.llama_model_n_embd(model))
        self.name = name or path.stem
        self.path = path
        self.context = min(context, int(lib.llama_model_n_ctx_train(model)))
        self.max_length = self.context
        self.threads = threads  # None: default_threads() when a session opens
        self.bend = bend
        self.one_token = one_token_threads
        self.slot_tokens = slot_tokens
        self._watch = watch
        self.capabilities = Capabilities(runtime=RUNTIME, threads=threads or default_threads(), sized_sessions=True)
        self._pool_lock = threading.Lock()
        self._one_token: dict[int, int] = {}  # threads → the threads a one-token pass runs fastest on (timed once)
        self._one_token_lock = threading.RLock()
        self.decoding = threading.Lock()  # held by every decode: llama.cpp's threads already take every core
        self._pool = None  # the shared batched context (specviz.models.llamapool), opened on first use
        self.slots = slots
        self._life = threading.Lock()  # guards the counts below and the freeing
        self._sessions = 0  # sessions open on this model (own contexts and pooled streams)
        self._session_bytes = 0  # what their own contexts hold (`context_bytes`)
        self._closing = False
        n_head = max(1, int(lib.llama_model_n_head(model)))
        self.n_head = n_head
        head_dim = self.hidden_size // n_head
        # a float32 K and V per layer, per KV head: 46 KB a token for the embedded model
        self.kv_bytes_per_token = (
            2 * int(lib.llama_model_n_layer(model)) * int(lib.llama_model_n_head_kv(model)) * head_dim * 4
        )

    def new_session(self, tokens: int | None = None, linear: bool = False) -> LlamaCppSession | PooledSession:
        """A session whose KV cache holds `tokens` (rounded up to 256; default and at most `context`): a
        class server holding 80 runs of a few hundred tokens allocates 80 small caches, not 80 of 2048.
        A `linear` run (no token tree) of at most `slot_tokens` tokens takes a stream of the shared
        batched context instead while one is free (`slots`; class mode: 96): its passes share
        decodes with the other runs', its numbers unchanged (specviz.models.llamapool)."""
        self._opened(0)  # refused on a model given back (close)
        try:
            if linear and tokens and (pool := self.pool()) is not None and tokens <= pool.tokens:
                stream = pool.lease()
                if stream is not None:
                    return PooledSession(pool, stream, self._session_closed)
            size = self._size(tokens)
            session = LlamaCppSession(self, size)
        except BaseException:
            self._session_closed(0)
            raise
        with self._life:
            self._session_bytes += self.context_bytes(size)
        return session

    def context_bytes(self, size: int, streams: int = 1) -> int:
        """What a context of this model with `streams` KV streams of `size` tokens each holds, its buffers included
        (llamapool.context_bytes)."""
        return context_bytes(
            size=size,
            streams=streams,
            kv_bytes_per_token=self.kv_bytes_per_token,
            vocab=self.vocab_size,
            hidden=self.hidden_size,
            heads=self.n_head,
        )

    def opening_bytes(self, tokens: int | None = None, linear: bool = False) -> int:
        """What `new_session(tokens, linear)` would add to `nbytes()` now: nothing for a stream of the shared batched
        context while one is free; the whole batched context where it would open for this run; else a context of
        the run's own (`context_bytes`). Read before a run starts, so that a budget counts it before it is held."""
        if linear and tokens and self.slots and tokens <= min(self.context, self.slot_tokens):
            with self._pool_lock:
                pool = self._pool
            if pool is None:
                return self.context_bytes(min(self.context, self.slot_tokens), self.slots)
            if pool.can_lease():
                return 0
        return self.context_bytes(self._size(tokens))

    def _size(self, tokens: int | None) -> int:
        """The tokens a context of a run's own holds: `tokens` rounded up to 256, at most (and by default) the
        model's context."""
        return self.context if not tokens else min(self.context, -(-tokens // 256) * 256)

    # --- memory: what it holds, and giving it back ----------------------------------------------------

    def nbytes(self) -> int:
        """What this model holds now: its weights, the shared batched context once opened, and what the sessions
        open in contexts of their own hold (`context_bytes`: their KV caches and buffers)."""
        weights = int(self._lib.llama_model_size(self._model)) if self._model else 0
        pool = self._pool
        pooled = self.context_bytes(pool.tokens, pool.slots) if pool is not None else 0
        return weights + pooled + self._session_bytes

    def close(self) -> None:
        """Give the model back: its batched context and weights are freed now, or, while runs still hold sessions
        on it, when the last of them closes; no session opens on it after this."""
        with self._life:
            self._closing = True
            if self._sessions:
                return
        self._free_all()

    @property
    def closed(self) -> bool:
        """Given back: no session opens on it any more (its weights stay while sessions hold them: `held`)."""
        return self._closing

    def held(self) -> bool:
        """Its weights are still in memory."""
        return self._model is not None

    def _opened(self, tokens: int) -> None:
        with self._life:
            if self._closing:
                raise ModelError(f"{self.name} on llama.cpp was given back; load the pair again")
            self._sessions += 1

    def _session_closed(self, tokens: int) -> None:
        with self._life:
            self._sessions -= 1
            self._session_bytes -= self.context_bytes(tokens) if tokens else 0
            last = self._closing and not self._sessions
        if last:
            self._free_all()

    def _free_all(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        with self._life:
            model, self._model = self._model, None
        if model:
            self._free(model)

    def pool(self) -> SlotPool | None:
        """The shared batched context, opened on first use; None when `slots` is 0."""
        with self._pool_lock:
            if self._pool is None:
                if not self.slots:
                    return None
                tokens = min(self.context, self.slot_tokens)
                self._pool = SlotPool(self, self.slots, tokens, self.threads or default_threads())
            return self._pool

    def one_token_threads(self, threads: int) -> int:
        """The threads a pass over one token runs on, when passes over several run on `threads`: the fastest of 1,
        threads / 2 and threads, timed once per model and count in a context of its own (passes over one token
        at one cache length, interleaved, medians), or the model's `one_token` where set. Such a pass reads
        every weight for little arithmetic: where one thread already reads as fast as the memory allows, or where
        the other cores are taken (a busy server, or torch's OpenMP workers waiting for work in the same process),
        a second thread only adds the graph's synchronisation, while a pass over several tokens computes and wants
        them all (measurements: docs/performance.md). Whichever count runs, the numbers are the same bits
        (specviz.models.threads)."""
        if self.one_token is not None:
            return min(threads, self.one_token)
        with self._one_token_lock:
            if threads not in self._one_token:
                self._one_token[threads] = threads  # the context that times them runs as before meanwhile
                self._one_token[threads] = self._time_one_token(threads)
            return self._one_token[threads]

    def pass_threads(self, threads: int) -> tuple[int, int]:
        """(threads for a pass over one token, for a pass over several) now, for a context made for `threads`: the
        one-token count timed fastest (`one_token_threads`) and `threads`, each at most the cores no other process
        holds now where the model bends (specviz.models.cpu.CoreWatch: a window of a few tenths of a second, not the
        load average). llama.cpp's threads meet at hundreds of barriers a pass: where another process holds one of
        two cores, two threads wait at every barrier for a time slice (a pass 2.4× slower and worse), one thread
        loses ~10 %. The bits are the same whatever the count."""
        one = self.one_token_threads(threads)
        if not self.bend:
            return one, threads
        free = (self._watch or cpu.watch()).free_cores()
        return max(1, min(one, free)), max(1, min(threads, free))

    def fit_threads(self, ctx, threads: int, current: tuple[int, int]) -> tuple[int, int]:
        """Set the context `ctx` (made for `threads`) to `pass_threads` now, where that is not what it runs on
        (`current`); returns what it runs on."""
        wanted = self.pass_threads(threads)
        if wanted != current:
            self._lib.llama_set_n_threads(ctx, *wanted)
        return wanted

    def _time_one_token(self, threads: int, rounds: int = 5) -> int:
        candidates = sorted({1, max(1, threads // 2), threads})
        if len(candidates) == 1:
            return threads
        session = self.new_session(BATCH)  # counted like any run's, and given back below
        try:
            head = [min(i + 1, self.vocab_size - 1) for i in range(16)]
            session.extend(head, keep=1)
            times: dict[int, list[float]] = {n: [] for n in candidates}
            for round_ in range(rounds + 1):  # the first round warms up
                for n in candidates[round_ % len(candidates) :] + candidates[: round_ % len(candidates)]:
                    session.pinned = True
                    self._lib.llama_set_n_threads(session._ctx, n, threads)
                    start = time.perf_counter()
                    session.extend([head[-1]], keep=1)
                    if round_:
                        times[n].append(time.perf_counter() - start)
                    session.crop(len(head))
        finally:
            session.close()
        medians = {n: statistics.median(t) for n, t in times.items()}
        best = min(medians, key=medians.__getitem__)
        return best if medians[best] < 0.97 * medians[threads] else threads  # fewer threads only when clearly faster

    def _new_context(self, threads: int, size: int, streams: int = 0):
        """A context of `size` tokens whose sequences (tree nodes) share one KV cache; or, with `streams`, one of
        `streams` separate KV streams of `size` tokens each (a run's tokens then see only its own stream's cells,
        laid out as in a context of its own: specviz.models.llamapool)."""
        lib = self._lib
        params = lib.llama_context_default_params()
        params.n_ctx = size * (streams or 1)
        params.n_batch = params.n_ubatch = BATCH
        params.n_seq_max = streams or MAX_SEQUENCES
        params.kv_unified = not streams  # tree nodes of many sequences share one cache
        params.n_threads = self.one_token_threads(threads)  # llama.cpp's count for a pass over one token
        params.n_threads_batch = threads  # and for a pass over several
        params.embeddings = True  # the final hidden state of every output position, beside its logits
        params.pooling_type = lib.LLAMA_POOLING_TYPE_NONE
        params.type_k = params.type_v = lib.GGML_TYPE_F32  # float32 like the torch runtime
        params.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED  # its float16 path moves p by ~1e-3
        params.no_perf = True
        ctx = lib.llama_init_from_model(self._model, params)
        if not ctx:
            held = f"{streams} streams of {size} tokens" if streams else f"a context of {size} tokens"
            raise ModelError(f"llama.cpp could not open {held} for {self.name}")
        return ctx

    def __del__(self) -> None:
        if getattr(self, "_model", None):
            self._free(self._model)
            self._model = None


class LlamaCppSession(RecordingSession):
    """One run's llama.cpp context. Implements Session and TreeSession; records features always."""

    def __init__(self, owner: LlamaCppModel, size: int | None = None) -> None:
        super().__init__(owner.hidden_size)
        lib = owner._lib
        self._lib = lib
        self._owner = owner  # keeps the shared model alive as long as this context
        self.size = size or owner.context  # the tokens its KV cache holds
        self._threads = owner.threads or default_threads()
        self._ctx = owner._new_context(self._threads, self.size)
        self._set = (owner.one_token_threads(self._threads), self._threads)  # the counts the context runs on now
        self.pinned = False  # True: its passes keep the counts set on it (the one-token timing), never bend
        self._memory = lib.llama_get_memory(self._ctx)
        self._batch = lib.llama_batch_init(BATCH, 0, MAX_SEQUENCES)
        self._seqs: list[int] = []  # the sequence id of each held tree node

    def close(self) -> None:
        """Free this run's context now (also when the session is dropped); the model is freed after its last
        session if it was given back meanwhile."""
        lib = getattr(self, "_lib", None)
        if lib is None:
            return
        self._lib = None
        if getattr(self, "_batch", None) is not None:
            lib.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_ctx", None):  # opened: the model counted it
            lib.llama_free(self._ctx)
            self._ctx = None
            self._owner._session_closed(self.size)

    def __del__(self) -> None:
        self.close()

    # --- Session ----------------------------------------------------------------------------------

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        self._check_linear()
        keep = len(ids) if keep is None else keep
        start = self.length
        tokens = [(int(y), start + i, (0,)) for i, y in enumerate(ids)]
        return self._decode(tokens, keep)

    def crop(self, length: int) -> None:
        base = self.linear_length
        self._check_crop(length)
        if length < self.length:
            kept_nodes = max(0, length - base)
            for seq in self._seqs[kept_nodes:]:  # a dropped node's descendants are dropped too
                self._lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
            del self._seqs[kept_nodes:]
            self._lib.llama_memory_seq_rm(self._memory, 0, length, -1)
            self.length = length
            self._features = self._features[:length]

    # --- TreeSession --------------------------------------------------------------------------------

    def extend_tree(self, ids: Sequence[int], parents: Sequence[int]) -> torch.Tensor:
        new, _ = self._tree_layout(parents)
        if len(self._seqs) + len(ids) >= MAX_SEQUENCES:
            raise ValueError(f"a llama.cpp session holds at most {MAX_SEQUENCES - 1} tree nodes")
        base, held = self.linear_length, self.length
        first = len(self._seqs) + 1
        seqs = [*self._seqs, *range(first, first + len(ids))]
        # each new node's own sequence: the path to its nearest held ancestor (copied from that
        # ancestor's sequence, positions up to its own), then its ancestors of this call and the node
        # (they carry the id in the batch); so every sequence of the call starts from the same cells
        for j, parent in enumerate(parents):
            anchor = parent
            while anchor >= held:
                anchor = parents[anchor - held]
            anchor_seq = 0 if anchor < base else seqs[anchor - base]
            position = self._position(anchor) + 1 if anchor >= 0 else 0
            self._lib.llama_memory_seq_cp(self._memory, anchor_seq, seqs[held - base + j], -1, position)
        carried: list[list[int]] = [[seqs[held - base + j]] for j in range(len(ids))]
        for j in reversed(range(len(ids))):
            parent = parents[j]
            if parent >= held:
                carried[parent - held].extend(carried[j])
        tokens = [(int(y), new[j][1], tuple(carried[j])) for j, y in enumerate(ids)]
        logits = self._decode(tokens, len(ids))
        self._tree.extend(new)
        self._seqs = seqs
        return logits

    def retain(self, path: Sequence[int]) -> None:
        kept = self._retained(path)
        if len(kept) < self.length or self._seqs:
            last = self._seqs[path[-1] - self.linear_length] if path else 0
            for seq in self._seqs:
                if seq != last:
                    self._lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
            if last:
                self._lib.llama_memory_seq_cp(self._memory, last, 0, -1, -1)
                self._lib.llama_memory_seq_rm(self._memory, last, -1, -1)
            self._features = self._features[kept]
        self._seqs = []
        self._keep_linear(len(kept))

    # --- the decode ---------------------------------------------------------------------------------

    @torch_threads.on_one_thread  # copying its rows starts no torch team to spin beside llama.cpp's threads
    def _decode(self, tokens: Sequence[tuple[int, int, tuple[int, ...]]], keep: int) -> torch.Tensor:
        """Decode (token, position, sequences) in batches; every position outputs its hidden state
        (the feature draft reads all of them) and its logits; return the last `keep` logits rows."""
        if self.length + len(tokens) > self.size:
            raise ValueError(f"this llama.cpp session holds at most {self.size} tokens")
        lib, batch, vocab = self._lib, self._batch, self._owner.vocab_size
        clock = time.perf_counter()
        rows, feats = [], []
        for at in range(0, len(tokens), BATCH):
            if at:
                pieces.between()  # a long prompt's next pass: more urgent work (the lecturer's) may go first
            chunk = tokens[at : at + BATCH]
            batch.n_tokens = len(chunk)
            for i, (token, position, seqs) in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = position
                batch.n_seq_id[i] = len(seqs)
                for s, seq in enumerate(seqs):
                    batch.seq_id[i][s] = seq
                batch.logits[i] = 1
            with self._owner.decoding:  # runs stepping at once (a class server) decode in turn, not all at once
                if not self.pinned:
                    self._set = self._owner.fit_threads(self._ctx, self._threads, self._set)
                code = lib.llama_decode(self._ctx, batch)
            if code != 0:
                raise RuntimeError(f"llama.cpp could not decode {len(chunk)} tokens (code {code})")
            n = len(chunk)
            logits = torch.frombuffer(float_buffer(lib.llama_get_logits(self._ctx), n * vocab), dtype=torch.float32)
            hidden = float_buffer(lib.llama_get_embeddings(self._ctx), n * self._owner.hidden_size)
            if at + n > len(tokens) - keep:
                rows.append(logits.view(n, vocab)[max(0, len(tokens) - keep - at) :].to(torch.float64))
            feats.append(torch.frombuffer(hidden, dtype=torch.float32).view(n, -1).clone())
        self._scored(feats, len(tokens), clock)
        if len(rows) == 1:  # one chunk (every step's decode): its rows, not a copy of them
            return rows[0]
        return torch.cat(rows) if rows else torch.empty(0, vocab, dtype=torch.float64)


def from_settings(path: Path, name: str, settings: LlamaSettings, slots: int = 0) -> LlamaCppModel:
    """A GGUF file on llama.cpp as `settings` ask (a server's, from $SPECVIZ_LLAMA_*), with `slots` streams."""
    return LlamaCppModel(
        path,
        name,
        settings.context,
        settings.threads,
        slots,
        settings.bend,
        one_token_threads=settings.one_token_threads,
        slot_tokens=settings.slot_tokens,
        cpu_variant=settings.cpu,
        log=settings.log,
    )


def load_embedded(
    progress=None, context: int | None = None, slots: int = 0, settings: LlamaSettings | None = None
) -> LlamaCppModel:
    """The embedded target on llama.cpp: its float32 GGUF (written once into the cache); `context`
    tokens per session, default the settings' (2048: a session's KV cache, 46 KB per token,
    is allocated whole when it opens: a small server holding many runs may want fewer)."""
    from specviz.models import embedded

    if not available():
        raise ModelError(f"the llama.cpp runtime is not installed: {INSTALL_HINT}")
    settings = settings or LlamaSettings()
    if context:
        settings = dataclasses.replace(settings, context=context)
    return from_settings(embedded.ensure_f32_gguf(progress), embedded.NAME, settings, slots)


def default_threads() -> int:
    """Every core up to 8 (a server's $SPECVIZ_LLAMA_THREADS is handed to the model instead). Unlike torch's (the
    app gives torch one thread: its idle threads cost more than they save), llama.cpp's threads pay: on 2 cores a
    5-token pass took little more than half the time with two threads as with one (docs/performance.md, "The numbers
    behind the code's defaults"), and the server's turn queue runs one model step at a time, so a step may use the
    whole CPU. Its threads spin at the graph's
    barriers, though: on a busy class server one thread costs less CPU per Step (docs/performance.md).
    The numbers are the same bit for bit whatever the count."""
    return min(os.cpu_count() or 1, 8)
