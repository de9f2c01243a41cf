"""Seeing attention: traces of the forward pass, heatmaps, the interactive explainer page.

May import the layers below it: entries (the student's own file), practice, assignments (the
reference), grading, render, sandbox, tinymodel (the trained heads), content, foundation.
"""
