"""The sandbox's trusted side: opening a confined worker, talking to it, decoding its replies.

``worker/`` is the untrusted side's code (fork server, worker, confinement): the
standard library and NumPy only, loaded by path.

May import: content, foundation; nothing above it.
"""
