"""A feature-level draft (EAGLE-style): one trained decoder layer that reads the target's own
hidden state.

The target's final hidden state f_t (after its last norm: the LM head's input) at position t is
what the target "knows" after token t. The draft predicts f̂_t from the token x_t and the feature of
the previous position, f_{t−1}: g_t = Layer(W [emb(x_t); f_{t−1}]), then q(x_{t+1}) = head(g_t).
Where the target has already scored position t−1 (the confirmed prefix), f_{t−1} is the target's
own; inside a draft block, where it has not, the draft's own g_{t−1} stands in. After the target
verifies, positions that were drafted on predicted features are recomputed on the true ones.

The target session records f for every token it scores, from its own forward outputs (nothing is
attached to the shared model). The draft session reads them, so a Decoder must create the draft
session with the target session (`ModelPair.new_sessions`). q is exactly the distribution the
draft token is drawn from, so every acceptance rule of docs/algorithm.md applies unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from specviz.drafts.files import TENSORS_FILE, DraftFileError, DraftSpec, write_spec
from specviz.drafts.lean import LeanFeatureDraft
from specviz.drafts.subset import SubsetHead, layer_subset
from specviz.models import threads as torch_threads
from specviz.models.lm import Capabilities, FeatureSession, HFSession, SessionStats, gather_cache

KIND = "feature"


class FeatureDraft(nn.Module):
    """fc: [emb(x_t); f_{t−1}] → hidden; one Llama decoder layer and its own norm (a 1-layer
    LlamaModel); a head over a vocabulary subset. Embeddings are the target's (shared)."""

    def __init__(
        self, target: Any, vocab_ids: torch.Tensor, init_layer: int | None = None, embed_scale: float = 1.0
    ) -> None:
        """The layer starts as a copy of the target's `init_layer` (default: its last); fc starts as
        embed_scale · emb(x_t) + f_{t−1} (features are far larger than embeddings: scale ~15 lets
        training hear both from the start)."""
        super().__init__()
        last = len(target.model.layers) - 1
        body = layer_subset(target, [last if init_layer is None else init_layer], copy_layers=True).model
        body.requires_grad_(True)
        body.embed_tokens.requires_grad_(False)  # shared with the target: never trained, never stored
        self.body = body
        weight = body.embed_tokens.weight
        hidden = weight.shape[1]
        self.fc = nn.Linear(2 * hidden, hidden, bias=False, dtype=weight.dtype, device=weight.device)
        with torch.no_grad():
            eye = torch.eye(hidden, dtype=weight.dtype, device=weight.device)
            self.fc.weight.copy_(torch.cat([embed_scale * eye, eye], dim=1))
        self.head = SubsetHead.from_target(target, vocab_ids)
        self.full_vocab_size = self.head.full_vocab_size

    def new_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.body.config)

    def features(
        self,
        ids: torch.Tensor,
        prev: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: Any = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """g for every position of `ids` (B, T) given the previous positions' features (B, T, H)."""
        embeds = self.body.embed_tokens(ids)
        x = self.fc(torch.cat([embeds, prev.to(embeds.dtype)], dim=-1))
        out = self.body(
            inputs_embeds=x,
            attention_mask=attention_mask,
            past_key_values=cache,
            use_cache=cache is not None,
            position_ids=position_ids,
        )
        return out.last_hidden_state


class FeatureDraftModel:
    """The draft behind the protocol. Its sessions need the target's session: `new_session(target)`."""

    def __init__(
        self,
        draft: FeatureDraft,
        name: str,
        max_length: int | None = None,
        lean: bool = False,
        threads: int | None = None,
        forward: LeanFeatureDraft | None = None,
    ) -> None:
        """`lean`: run the draft with specviz.drafts.lean (the same function, less overhead per
        token); otherwise through its transformers modules (the reference). `forward`: a lean forward made here
        (an Int8FeatureDraft), which holds every weight it reads: the module is then let go (`draft` None), so its
        float32 weights are not kept beside the forward's own. `threads`: the torch threads of every pass, from
        whatever thread (default: the count of the thread that makes it; specviz.models.threads)."""
        self.draft = draft.eval() if forward is None else None
        self.dtype, self.device = draft.fc.weight.dtype, draft.fc.weight.device
        self.threads = threads or torch_threads.current()
        self.capabilities = Capabilities(reads_target=True, can_target=False, threads=self.threads)
        self.name = name
        self.vocab_size = draft.full_vocab_size
        self.max_length = max_length
        self.forward: Any = forward or (LeanFeatureDraft(draft) if lean else draft)

    @property
    def lean(self) -> bool:
        return isinstance(self.forward, LeanFeatureDraft)

    def new_session(self, target: HFSession | None = None) -> FeatureDraftSession:
        """`target`: a session that records its final hidden states (HFSession, LlamaCppSession)."""
        if not isinstance(target, FeatureSession):
            raise TypeError("a feature-level draft reads the target's hidden states: create it with the target session")
        return FeatureDraftSession(self, target)


class FeatureDraftSession(SessionStats):
    def __init__(self, owner: FeatureDraftModel, target: HFSession) -> None:
        super().__init__()
        self._draft = owner.forward
        self._threads = owner.threads
        self._dtype = owner.dtype
        self._target = target
        target.record_features()
        self._cache = owner.forward.new_cache()
        self._device = owner.device
        self._tokens: list[int] = []
        # positions before this one were computed with the target's own f_{t−1}; the rest (always a
        # suffix: a draft block) with the draft's predicted features
        self._true_upto = 0
        self._g: list[torch.Tensor] = []  # the draft's output feature at each position
        # where the pass that computed each position began (−1: a tree pass), so that a crop that cuts a pass in two
        # (Back, or a look ahead such as Decoder.next_rows) has its rows redone in one pass again (`crop`)
        self._pass_start: list[int] = []

    def _known(self) -> int:
        return self._target.features_length

    def extend(self, ids: Sequence[int], keep: int | None = None) -> torch.Tensor:
        self._check_linear()
        start = time.perf_counter()
        keep = len(ids) if keep is None else keep
        ids = list(ids)
        # positions drafted on predicted features whose true features are now known: redo them
        redo = self._true_upto
        if redo < len(self._tokens) and redo - 1 < self._known():
            ids = self._tokens[redo:] + ids
            self._crop(redo)
        outputs: list[torch.Tensor] = []
        i = 0
        with torch.inference_mode(), torch_threads.pinned(self._threads):
            while i < len(ids):
                pos = len(self._tokens)
                known = self._known()
                # every position whose previous feature the target has given in one pass (the prompt; a step's
                # accepted draft tokens redone on true features with the token after them, as EAGLE does), so
                # a step costs one forward per draft token; then one at a time on the draft's own features
                n = max(1, min(len(ids) - i, known - pos + 1))
                prev = self._previous(pos, n, known)
                chunk = torch.tensor([ids[i : i + n]], dtype=torch.long, device=self._device)
                g = self._draft.features(chunk, prev.unsqueeze(0), cache=self._cache)[0]
                self.forwards += 1
                for j in range(n):
                    self._tokens.append(ids[i + j])
                    self._pass_start.append(pos)
                    if pos + j - 1 < known and self._true_upto == pos + j:
                        self._true_upto += 1
                    self._g.append(g[j])
                outputs.append(g)
                i += n
            hidden = torch.cat(outputs)[-keep:]
            logits = self._draft.head(hidden).to("cpu", torch.float64)
        self.forward_seconds += time.perf_counter() - start
        self.length = len(self._tokens)
        return logits

    def extend_tree(self, ids: Sequence[int], parents: Sequence[int]) -> torch.Tensor:
        """Tree nodes in one pass: each reads its parent's feature (the target's where it is known,
        else the draft's own g), at its parent's position + 1, seeing only its ancestors."""
        start = time.perf_counter()
        new, allowed = self._tree_layout(parents)
        known = self._known()
        g_new: list[torch.Tensor] = []
        with torch.inference_mode(), torch_threads.pinned(self._threads):
            prev = []
            for parent in parents:
                if parent >= self.length:  # a node of this same call: its g is not computed yet
                    raise ValueError("a feature draft expands one tree level per call")
                prev.append(self._target.features(parent, parent + 1)[0] if parent < known else self._g[parent])
            dtype = self._dtype
            prev_t = torch.stack([row.to(self._device, dtype) for row in prev])
            chunk = torch.tensor([list(ids)], dtype=torch.long, device=self._device)
            g = self._draft.features(
                chunk, prev_t[None], cache=self._cache, **self._tree_inputs(new, allowed, dtype, self._device)
            )[0]
            g_new = list(g)
            logits = self._draft.head(g).to("cpu", torch.float64)
        self._tokens.extend(int(y) for y in ids)
        self._pass_start.extend(-1 for _ in ids)
        self._g.extend(g_new)
        self._tree.extend(new)
        self.length = len(self._tokens)
        self.forward_seconds += time.perf_counter() - start
        self.forwards += 1
        return logits

    def retain(self, path: Sequence[int]) -> None:
        kept = self._retained(path)
        if len(kept) < self.length:
            gather_cache(self._cache, kept)
            self._tokens = [self._tokens[i] for i in kept]
            self._pass_start = [self._pass_start[i] for i in kept]
            self._g = [self._g[i] for i in kept]
        self._keep_linear(len(kept))

    def _previous(self, pos: int, n: int, known: int) -> torch.Tensor:
        """f_{t−1} for t = pos … pos+n−1: the target's where known (a zero row before position 0),
        else (inside a draft block, one position at a time) the draft's own g_{pos−1}."""
        if pos - 1 >= known:
            return self._g[pos - 1][None]
        rows = self._target.features(max(pos - 1, 0), pos + n - 1)
        rows = rows.to(self._device, self._dtype)
        if pos == 0:
            rows = torch.cat([rows.new_zeros(1, rows.shape[1]), rows])
        return rows

    def _crop(self, length: int) -> None:
        if length < len(self._tokens):
            self._cache.crop(length - len(self._tokens))
            del self._tokens[length:], self._g[length:], self._pass_start[length:]
            self._true_upto = min(self._true_upto, length)
            self.length = length

    def crop(self, length: int) -> None:
        """Back to `length` tokens. Where that cuts a pass in two, its kept rows are redone in the next extend's first
        pass, with the tokens after them, as they were computed before: a pass over n rows rounds its sums differently
        from a pass over fewer, and a Back and the same Step again then give the same q bit for bit."""
        self._check_crop(length)
        if 0 < length < len(self._tokens) and self._pass_start[length] == self._pass_start[length - 1] >= 0:
            self._true_upto = min(self._true_upto, self._pass_start[length])
        self._crop(length)


def save_feature_draft(draft: FeatureDraft, directory: Path, meta: dict | None = None) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {
        name: value.detach().to(torch.float16).contiguous()
        for name, value in draft.named_parameters()
        if not name.startswith("body.embed_tokens")
    }
    tensors["head.ids"] = draft.head.ids.to(torch.int32)
    save_file(tensors, str(directory / TENSORS_FILE))
    write_spec(directory, {"kind": KIND, "layers": [], "rank": 0, "vocab_size": len(draft.head.ids), **(meta or {})})


def load_feature_draft(target: Any, directory: Path, spec: DraftSpec) -> FeatureDraft:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(directory / TENSORS_FILE))
    except (OSError, SafetensorError) as exc:
        raise DraftFileError(f"cannot read {directory / TENSORS_FILE}: {exc}") from exc
    if "head.ids" not in tensors:
        raise DraftFileError(f"the draft in {directory} lacks tensor 'head.ids'")
    ids = tensors.pop("head.ids").long()
    if len(ids) != spec.vocab_size or int(ids.max()) >= int(target.config.vocab_size):
        raise DraftFileError(f"the draft in {directory} was made for another target")
    draft = FeatureDraft(target, ids)
    dtype = target.get_input_embeddings().weight.dtype
    params = {n: p for n, p in draft.named_parameters() if not n.startswith("body.embed_tokens")}
    missing = sorted(set(params) - set(tensors))
    extra = sorted(set(tensors) - set(params))
    if missing or extra:
        raise DraftFileError(
            f"the draft in {directory} does not fit this target: missing {missing[:3]}, extra {extra[:3]}"
        )
    with torch.no_grad():
        for name, param in params.items():
            if param.shape != tensors[name].shape:
                raise DraftFileError(
                    f"the draft in {directory} does not fit this target: {name} {tuple(tensors[name].shape)}"
                )
            param.copy_(tensors[name].to(dtype))
    draft.requires_grad_(False)
    return draft.eval()
