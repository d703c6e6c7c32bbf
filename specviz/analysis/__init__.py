"""What the runs measure: docs/algorithm.md's metrics, τ sweeps, the closed-form theory, the lossless check."""
