"""Distil the embedded draft from the embedded target; see `specviz.training.pipeline` (--help)."""

from specviz.training.pipeline import main

if __name__ == "__main__":
    main()
