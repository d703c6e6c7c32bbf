"""Models behind the protocol (lm: a model shared and never changed, a session per run) on each runtime: torch
(hub: one model from the hub or a folder, kernels: per-shape kernels), llama.cpp in process (llamacpp, llamapool:
runs sharing decodes, quantize: graded drafts), a served target (remote/); the offline default target
(embedded), GGUF files (gguf/: headers, pairing, places, specs; ggufcodec: a GGUF file's own tokenizer), the pair
(pair), text codecs (text), one copy of each model part (store), thread counts and CPU time (threads, cpu). Loading
a pair from the user's specs is specviz.loading's."""
