"""Evaluate drafts of the embedded target on held-out prompts; see `specviz.training.evaluate` (--help)."""

from specviz.training.evaluate import main

if __name__ == "__main__":
    main()
