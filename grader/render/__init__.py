"""Renderers: terminal, Markdown and HTML feedback, CSV, Gradescope, JUnit, the class report, and the
sanitizing of what students wrote. They read results (keys and parameters) and choose the language;
they never compute scores.

May import: content, foundation.
"""
