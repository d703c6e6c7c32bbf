"""Evaluate drafts of the embedded target on held-out prompts; see `specviz.drafts.evaluate` (--help)."""

from specviz.drafts.evaluate import main

if __name__ == "__main__":
    main()
