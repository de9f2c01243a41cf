"""One module per ``mha`` verb: parse options, call one core function, render. ``options.py`` holds
the options several verbs share.

May import every layer; nothing imports a verb but ``cli.py``.
"""
