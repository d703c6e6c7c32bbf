"""Figures: Plotly charts and the marked text of a run."""
