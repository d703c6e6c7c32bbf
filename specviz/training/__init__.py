"""Distilling and judging a draft (scripts/train_draft.py and scripts/eval_draft.py are thin command lines
over it): `prompts` (training and held-out prompts), `data` (the target's own text and distributions),
`train` (the recipes), `pipeline` (the whole run, resumable), `card` (the model card), `evaluate` (α, c
and the measured speedup of a draft). The drafts it makes are loaded by specviz.drafts."""
