"""Distil the embedded draft from the embedded target; see `specviz.drafts.pipeline` (--help)."""

from specviz.drafts.pipeline import main

if __name__ == "__main__":
    main()
