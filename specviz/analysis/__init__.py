"""What the runs measure: SPEC.md's metrics, τ sweeps, the closed-form theory, the lossless check."""
