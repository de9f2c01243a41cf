"""Content loaders (``loader.py``, ``catalog.py``, ``messages.py``); the TOML files beside them are the content.

May import: foundation (errors, paths, i18n) only.
"""
