"""The parts of "Would it pay there?": the pair's numbers read from the app, an engine's pasted logs and metrics, the
engine's settings."""
