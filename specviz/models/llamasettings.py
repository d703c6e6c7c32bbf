"""How llama.cpp runs on a server: the settings a server reads from $SPECVIZ_LLAMA_* (specviz.server.config) and
hands to specviz.models.llamacpp; the defaults are the library's own."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT = 2048  # tokens a session holds; its float32 KV cache: 46 KB per token for the embedded model
THREADS_ENV = "SPECVIZ_LLAMA_THREADS"
BEND_ENV = "SPECVIZ_LLAMA_BEND"  # "0": every pass on the context's threads, whatever other processes hold
ONE_TOKEN_THREADS_ENV = "SPECVIZ_LLAMA_ONE_TOKEN_THREADS"  # threads for a one-token pass, instead of timing them
CPU_ENV = "SPECVIZ_LLAMA_CPU"  # one of ggml's CPU variants by name (haswell, zen4, …) instead of the best for this CPU
CONTEXT_ENV = "SPECVIZ_LLAMA_CONTEXT"  # tokens per session; each session allocates its whole KV cache at once
SLOTS_ENV = "SPECVIZ_LLAMA_SLOTS"  # chain runs whose passes share decodes (specviz.models.llamapool); 0: none
SLOT_TOKENS_ENV = "SPECVIZ_LLAMA_SLOT_TOKENS"  # tokens each of them holds
CLASS_SLOTS, SLOT_TOKENS = 96, 512  # class mode's default: 96 streams of 512 tokens, 2.3 GB of KV cache


@dataclass(frozen=True, kw_only=True)
class LlamaSettings:
    """How a server runs llama.cpp (read from $SPECVIZ_LLAMA_* by specviz.server.config, handed in here); the
    defaults are the library's own."""

    threads: int | None = None  # per decode; None: every core up to 8 (default_threads)
    one_token_threads: int | None = None  # for a one-token pass; None: the fastest, timed once per model
    context: int = DEFAULT_CONTEXT  # tokens per session
    slots: int | None = None  # streams of the shared batched context; None: the caller's count (slots_for)
    slot_tokens: int = SLOT_TOKENS  # tokens each stream holds
    bend: bool = True  # each pass on at most the cores no other process holds now
    cpu: str = ""  # one of ggml's CPU variants by name; "": the best for this CPU
    log: bool = False  # llama.cpp's own log on stderr

    def slots_for(self, class_on: bool) -> int:
        """The streams a model opens: the operator's count where set, else CLASS_SLOTS on a class server, else 0."""
        return self.slots if self.slots is not None else (CLASS_SLOTS if class_on else 0)
