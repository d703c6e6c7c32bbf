"""Many runs' target passes in one llama.cpp decode, the way llama.cpp's own server serves parallel slots.

A class server steps 80 runs at once. Each run in a context of its own pays a whole pass over the weights
for its 5 tokens; 8 runs' 40 tokens in one pass cost about a third of their 8 passes (docs/performance.md,
"The numbers behind the code's defaults"). A `SlotPool` is one llama.cpp context whose KV cache is split
into `slots` streams (`kv_unified` off): a run leases a stream, its tokens carry the stream's sequence id, and
whichever passes are waiting when the context is free go through one `llama_decode` together (the first
waiting caller decodes for all, "continuous batching"). Every token attends only to its own stream, and each
output row of llama.cpp's matrix products is summed in the same order whatever the other rows: a run's logits
and hidden states are the same bit for bit alone, in a context of its own, or beside others
(tests/test_llamapool.py checks it against runs in their own contexts, stepped concurrently and alone).

Only plain (chain) runs lease a stream: a token tree needs sequences of its own (specviz.models.llamacpp).
When every stream is taken, or a run needs more than a stream holds, the run gets a context of its own.

Also here, because both kinds of llama.cpp session use them: `RecordingSession` (the hidden states the feature
draft reads, and a pass's bookkeeping), the output-buffer readers and `BATCH`; specviz.models.llamacpp imports
this module, never the reverse (the pool reaches the model through the owner it is given).
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import torch

from specviz.models import threads as torch_threads
from specviz.models.lm import SessionStats

BATCH = 512  # tokens per llama_decode call


def context_bytes(*, size: int, streams: int, kv_bytes_per_token: int, vocab: int, hidden: int, heads: int) -> int:
    """What a llama.cpp context of `streams` KV streams of `size` tokens each holds once a long prompt was read into it
    (a run's context of its own: one stream; the shared batched context: its slots): its float32 KV cache; the output
    buffer, which grows to a batch's rows of logits and hidden states; and the compute buffer of a batch's pass (its
    logits and attention scores over one stream's cells). An upper bound: a context that never reads a whole batch
    touches less (measured against real contexts: docs/class-server.md, "Each student's share")."""
    output = BATCH * (vocab + hidden) * 4
    compute = BATCH * vocab * 4 + BATCH * size * heads * 4
    return size * streams * kv_bytes_per_token + output + compute


PREFIXES = 4  # prompts whose streams a pool keeps to copy (a class opens the lecturer's link: one prompt for all)


class RecordingSession(SessionStats):
    """A llama.cpp session's record of every scored position's final hidden state (what the feature draft
    reads, as from an HFSession), and the bookkeeping of a pass."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self._features = torch.empty(0, hidden_size)

    def record_features(self) -> None:
        if self.length:
            raise ValueError("record features from the start of a session")

    @property
    def features_length(self) -> int:
        return len(self._features)

    def features(self, start: int, stop: int) -> torch.Tensor:
        return self._features[start:stop]

    def _scored(self, feats: list[torch.Tensor], tokens: int, since: float) -> None:
        """A pass of `tokens` tokens begun at `since` (perf_counter) is done; `feats`: their hidden states."""
        self._features = torch.cat([self._features, *feats])
        self.length += tokens
        self.forward_seconds += time.perf_counter() - since
        self.forwards += 1


class Stream:
    """A run's place in a SlotPool: the sequence id (and KV stream) its cells are in now. The pool may move a run's
    cells to another stream between decodes (`SlotPool._line_up`) and then changes `seq`; it reads and sets it
    holding its lock, so a run's pass, crop or release always reaches the stream its cells are in."""

    __slots__ = ("seq",)

    def __init__(self, seq: int) -> None:
        self.seq = seq

    def __repr__(self) -> str:
        return f"Stream({self.seq})"


@dataclass(eq=False)
class _Pass:
    stream: Stream
    tokens: Sequence[tuple[int, int]]  # (token, position)
    keep: int  # the last `keep` rows' logits are returned
    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = None
    error: BaseException | None = None
    done: bool = False


class SlotPool:
    """One llama.cpp context with `slots` streams of `tokens` each, shared by the runs of one model."""

    def __init__(self, owner, slots: int, tokens: int, threads: int) -> None:
        lib = owner._lib
        self._lib, self._owner = lib, owner
        self.slots, self.tokens = slots, tokens
        self._ctx = owner._new_context(threads, tokens, streams=slots)  # a stream per run: its own cells only
        self._threads = threads
        self._set = (owner.one_token_threads(threads), threads)  # the counts the context runs on now
        self._memory = lib.llama_get_memory(self._ctx)
        self._batch = lib.llama_batch_init(BATCH, 0, 1)
        self._cond = threading.Condition()
        self._held: dict[int, Stream] = {}  # streams in use (a run's or a kept prompt's), by sequence id
        self._released: list[Stream] = []  # given back (from any thread, even a finaliser): emptied lazily
        self._waiting: list[_Pass] = []
        self._busy = False
        # A run's first pass (its prompt) already decoded for another run: (tokens, keep) -> (the stream kept
        # holding them, their logits, their hidden states), the oldest first. The stream is copied whole.
        self._prefixes: OrderedDict[tuple, tuple[Stream, torch.Tensor, torch.Tensor]] = OrderedDict()
        self.decodes = 0  # llama_decode calls
        self.passes = 0  # runs' passes they served
        self.prefix_hits = 0  # prompts copied from a kept stream instead of decoded
        self.moves = 0  # streams copied to line a decode's runs up (`line_up`)

    # --- streams ----------------------------------------------------------------------------------

    def lease(self) -> Stream | None:
        """The lowest free stream, empty; None when every stream is taken (a kept prompt's stream is given up for a
        run first)."""
        with self._cond:
            self._idle()
            if len(self._held) == self.slots and self._prefixes:
                self._forget_oldest()
            return self._hold() if len(self._held) < self.slots else None

    def can_lease(self) -> bool:
        """Whether `lease` would give a stream now (one free, or a kept prompt's to give up)."""
        with self._cond:
            return len(self._held) - len(self._released) < self.slots or bool(self._prefixes)

    def release(self, stream: Stream) -> None:
        """Give a stream back. Safe from a finaliser in any thread: the stream is emptied at the next lease."""
        self._released.append(stream)  # list.append is atomic; nothing here waits

    def crop(self, stream: Stream, length: int) -> None:
        """Drop the stream's cells from `length` on (between decodes: the context is never touched by two)."""
        with self._cond:
            self._idle()
            self._lib.llama_memory_seq_rm(self._memory, stream.seq, length, -1)

    def _hold(self) -> Stream:
        """(Holding the lock, a stream free.) The lowest free stream, now held."""
        stream = Stream(min(set(range(self.slots)) - self._held.keys()))
        self._held[stream.seq] = stream
        return stream

    def _empty(self, stream: Stream) -> None:
        """(Holding the lock, no decode running.) The stream's cells dropped, and the stream free."""
        self._lib.llama_memory_seq_rm(self._memory, stream.seq, -1, -1)
        del self._held[stream.seq]

    # --- prompts decoded once for every run that starts with them (prefix caching) ----------------------------

    def copy_prefix(self, tokens: Sequence[int], keep: int, stream: Stream) -> tuple[torch.Tensor, torch.Tensor] | None:
        """If a stream holds exactly `tokens` (a pass of another run, from an empty stream, with the same `keep`):
        copy it into the empty `stream` and return that pass's logits and hidden states; else None. The cells
        are copied whole (llama.cpp copies a stream's buffer at the next decode, before it computes anything), so
        `stream` then holds what decoding the same pass into it gives: what llama.cpp's server calls a cached
        prompt."""
        key = (tuple(tokens), keep)
        with self._cond:
            self._idle()
            entry = self._prefixes.get(key)
            if entry is None:
                return None
            self._prefixes.move_to_end(key)
            holder, logits, hidden = entry
            self._lib.llama_memory_seq_cp(self._memory, holder.seq, stream.seq, -1, -1)
            self.prefix_hits += 1
            return logits.clone(), hidden.clone()

    def keep_prefix(
        self, tokens: Sequence[int], keep: int, stream: Stream, logits: torch.Tensor, hidden: torch.Tensor
    ) -> None:
        """`stream` holds just `tokens`, decoded in one pass from empty: keep a copy of it in a free stream (if
        one is free) for the next run with the same first pass; the least recently used of PREFIXES goes."""
        key = (tuple(tokens), keep)
        with self._cond:
            self._idle()
            if key in self._prefixes or len(self._held) == self.slots:
                return
            holder = self._hold()
            self._lib.llama_memory_seq_cp(self._memory, stream.seq, holder.seq, -1, -1)
            self._prefixes[key] = (holder, logits.clone(), hidden.clone())
            while len(self._prefixes) > PREFIXES:
                self._forget_oldest()

    def _forget_oldest(self) -> None:
        """(Holding the lock, no decode running.) The least recently used kept prompt's stream, emptied and free."""
        _, (holder, _, _) = self._prefixes.popitem(last=False)
        self._empty(holder)

    def _idle(self) -> None:
        """Wait (holding the lock) until no decode runs, then empty the streams given back."""
        while self._busy:
            self._cond.wait()
        while self._released:
            self._empty(self._released.pop())

    # --- passes -----------------------------------------------------------------------------------

    def decode(self, stream: Stream, tokens: Sequence[tuple[int, int]], keep: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One run's pass (at most BATCH tokens) in its `stream`: the float32 logits of its last `keep` tokens and
        the hidden states of all. Passes that wait together go through one decode; this caller may run it."""
        if not 0 < len(tokens) <= BATCH:
            raise ValueError(f"a pass holds 1 to {BATCH} tokens, not {len(tokens)}")
        me = _Pass(stream, tokens, keep)
        with self._cond:
            self._waiting.append(me)
            while not me.done:
                if self._busy:
                    self._cond.wait()
                    continue
                self._idle()
                group = self._take()
                self._line_up(group)
                self._busy = True
                self._cond.release()
                try:
                    self._run(group)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if me.error is not None:
            raise me.error
        return me.logits, me.hidden

    def _take(self) -> list[_Pass]:
        """The first waiting pass and, as many as one decode holds, the others of its length (first come first
        served), in the order of their streams: llama.cpp splits a batch of unequal runs into micro-batches, and a
        run's pass split there sums differently from the same pass alone."""
        n = len(self._waiting[0].tokens)
        group = [p for p in self._waiting if len(p.tokens) == n][: BATCH // n]
        self._waiting = [p for p in self._waiting if p not in group]
        return group

    def _line_up(self, group: list[_Pass]) -> None:
        """(Holding the lock, no decode running.) Move runs' cells so that the group's streams lie side by side,
        and sort the group by stream. With streams of their own, llama.cpp puts into one micro-batch only runs in
        consecutive streams, in order (its "equal split"): the group's runs in streams 3, 9 and 40 were three
        passes over the weights, each as dear as a run's pass alone (docs/performance.md). A move copies a
        stream's buffer whole at the next decode, as a kept prompt's copy does: the run's cells lie as before, and
        its numbers are the same bits."""
        for source, target in line_up([p.stream.seq for p in group], self._held.keys(), self.slots):
            self._move(self._held[source], target)
        group.sort(key=lambda p: p.stream.seq)

    def _move(self, stream: Stream, target: int) -> None:
        """(Holding the lock, no decode running.) The stream's cells into the free stream `target` (copied whole at
        the next decode), its own stream emptied and free."""
        assert target not in self._held, f"stream {target} is not free"
        self._lib.llama_memory_seq_cp(self._memory, stream.seq, target, -1, -1)
        self._empty(stream)
        stream.seq = target
        self._held[target] = stream
        self.moves += 1

    def _run(self, group: list[_Pass]) -> None:
        lib, batch, vocab, hidden = self._lib, self._batch, self._owner.vocab_size, self._owner.hidden_size
        try:
            i = 0
            for p in group:
                for token, position in p.tokens:
                    batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, position, 1, 1
                    batch.seq_id[i][0] = p.stream.seq
                    i += 1
            batch.n_tokens = i
            with self._owner.decoding:  # one llama.cpp decode of this model at a time: its threads take every core
                self._set = self._owner.fit_threads(self._ctx, self._threads, self._set)
                code = lib.llama_decode(self._ctx, batch)
            if code != 0:
                raise RuntimeError(f"llama.cpp could not decode {i} tokens of {len(group)} runs (code {code})")
            i = 0
            for p in group:
                n = len(p.tokens)
                rows = range(i + n - p.keep, i + n)
                p.logits = torch.stack([floats(lib.llama_get_logits_ith(self._ctx, r), vocab) for r in rows])
                states = [lib.llama_get_embeddings_ith(self._ctx, r) for r in range(i, i + n)]
                p.hidden = torch.stack([floats(state, hidden) for state in states])
                i += n
        except BaseException as exc:  # every pass of the group hears it; none waits forever
            for p in group:
                p.error = exc
        finally:
            self.decodes += 1
            self.passes += len(group)
            for p in group:
                p.done = True

    def close(self) -> None:
        """Free the context and its KV cache now (the model gives its pool back with nobody leasing a stream)."""
        lib = getattr(self, "_lib", None)
        if lib is not None and getattr(self, "_ctx", None):
            lib.llama_batch_free(self._batch)
            lib.llama_free(self._ctx)
            self._ctx = None
            self._prefixes.clear()

    def __del__(self) -> None:
        self.close()


def line_up(members: Sequence[int], held: Collection[int], slots: int) -> list[tuple[int, int]]:
    """The stream copies (from, to), in the order to make them, that put the streams `members` side by side among
    `slots` streams, of which `held` are in use (the members and others: another run's, a kept prompt's; the rest
    are free). Each copy's target is free when it is made, and the stream it leaves is then free. A member moves
    into a free stream of the window chosen; a stream of another's in the window moves out first, to a free stream
    outside it (two copies for that place). The window is the one that costs the fewest copies (the lowest of
    those); none where no window can be cleared (every stream held, none free to move another's to). Already side
    by side: no copy."""
    k = len(members)
    if k < 2 or max(members) - min(members) == k - 1:
        return []
    inside = set(members)
    others = set(held) - inside
    best: tuple[int, int] | None = None  # (copies, window start)
    for start in range(slots - k + 1):
        window = range(start, start + k)
        blocked = sum(s in others for s in window)
        holes = sum(s not in inside and s not in others for s in window)
        free_outside = slots - len(inside | others) - holes
        if blocked and not free_outside + holes:
            continue  # a blocker has nowhere to go
        copies = holes + 2 * blocked
        if best is None or copies < best[0]:
            best = (copies, start)
    if best is None:
        return []
    window = range(best[1], best[1] + k)
    outside = [s for s in members if s not in window]  # the members to move in, lowest first
    free = sorted(set(range(slots)) - inside - others - set(window), reverse=True)  # outside the window
    moves = []
    for place in [s for s in window if s not in inside and s not in others]:  # holes first: each frees a stream
        moves.append((source := outside.pop(0), place))
        free.append(source)
    for place in [s for s in window if s in others]:
        moves.append((place, free.pop()))  # the other's cells out of the way
        moves.append((source := outside.pop(0), place))
        free.append(source)
    return moves


class PooledSession(RecordingSession):
    """One chain run's stream in a SlotPool: the Session a LlamaCppSession is, minus token trees."""

    def __init__(self, pool: SlotPool, stream: Stream, closed: Callable[[int], None] | None = None) -> None:
        super().__init__(pool._owner.hidden_size)
        self._pool, self.stream = pool, stream
        self.size = pool.tokens
        self._closed = closed  # told once the stream is given back (the model counts its open sessions)

    @property
    def seq(self) -> int:
        """The sequence id (and stream) the run's cells are in now: the pool may move them between decodes."""
        return self.stream.seq

    def close(self) -> None:
        """Give the stream back now (also when the session is dropped)."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            self._pool = None
            pool.release(self.stream)
            if self._closed is not None:
                self._closed(0)

    def __del__(self) -> None:
        self.close()

    @torch_threads.on_one_thread  # copying its rows starts no torch team to spin beside llama.cpp's threads
    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        self._check_linear()
        keep = len(ids) if keep is None else keep
        if self.length + len(ids) > self.size:
            raise ValueError(f"this llama.cpp session holds at most {self.size} tokens")
        clock = time.perf_counter()
        first = self.length == 0 and 0 < keep <= len(ids) <= BATCH  # a prompt: another run's copy may hold it
        if first and (copied := self._pool.copy_prefix(ids, keep, self.stream)) is not None:
            logits, hidden = copied
            self._scored([hidden], len(ids), clock)
            return logits.to(torch.float64)
        tokens = [(int(y), self.length + i) for i, y in enumerate(ids)]
        rows, feats = [], []
        for at in range(0, len(tokens), BATCH):  # a long prompt: passes of BATCH tokens, in order
            chunk = tokens[at : at + BATCH]
            wanted = min(len(chunk), at + len(chunk) - (len(tokens) - keep))  # its rows among the last `keep`
            logits, hidden = self._pool.decode(self.stream, chunk, max(wanted, 1))
            if wanted > 0:
                rows.append(logits.to(torch.float64))
            feats.append(hidden)
        if first:
            self._pool.keep_prefix(ids, keep, self.stream, logits, hidden)
        self._scored(feats, len(tokens), clock)
        vocab = self._pool._owner.vocab_size
        return torch.cat(rows) if rows else torch.empty(0, vocab, dtype=torch.float64)

    def crop(self, length: int) -> None:
        self._check_crop(length)
        if length < self.length:
            self._pool.crop(self.stream, length)
            self.length = length
            self._features = self._features[:length]


def floats(pointer, count: int) -> torch.Tensor:
    """The `count` floats at a llama.cpp output pointer, copied."""
    return torch.frombuffer(float_buffer(pointer, count), dtype=torch.float32).clone()


def float_buffer(pointer, count: int) -> bytearray:
    """The `count` floats at a llama.cpp output pointer, as a buffer torch can read (copied by the caller)."""
    return (ctypes.c_float * count).from_address(ctypes.addressof(pointer.contents))
