"""The warm check server: ``mha check`` answered by a process that has the grader and NumPy imported already.

A student runs ``mha check`` dozens of times an evening; most of a cold
check is two interpreters importing NumPy (the check's own and its fork
server's). The first check of a session runs as it always did and then starts
a server (``server.py``) in the background; the next checks are sent to it by
a thin client (``client.py``: no NumPy, no click, no rich), which passes its
terminal's descriptors, arguments, folder and environment over a socket in the
user's private runtime folder (``place.py``). The server forks one process per
check from its warm state (``child.py``), which runs exactly the command a cold
check runs, writing to the student's own terminal; the student's code still
runs only in a sandboxed worker, made by the server's long-lived fork server.

Nothing stale is trusted: the socket's name holds what the client's
interpreter is (``place.server_key``), and before each check the server makes
sure no file its warm state was built from has changed since (``snapshot``);
otherwise it refuses, ends, and the client checks the cold way. A server
serves only its own user (a folder only they can enter, and the peer's
credentials on both sides) and ends after some idle minutes.

May import every layer (an entry point, beside ``grader.cli``).
"""
