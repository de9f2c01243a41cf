"""Seeing attention: traces of the forward pass, heatmaps, the interactive explainer page."""
