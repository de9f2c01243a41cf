"""Renderers: terminal, Markdown and HTML feedback, CSV, Gradescope, JUnit, the class report. They read results, never compute scores."""
