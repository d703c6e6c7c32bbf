"""What every page uses: the session's shell (the link's settings, kept settings, the runtime picker), the widgets, the
pair picker and the GGUF files found, snapshots, the presentation view."""
