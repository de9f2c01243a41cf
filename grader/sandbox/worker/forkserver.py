"""A process that has imported NumPy once and forks a fresh, confined worker per request.

Three kinds of process, standard library and NumPy only (the server runs as
``python -I -S forkserver.py``, without the grader package):

- the **server** listens on a UNIX socket in a private folder. Each request
  (a connection) carries the worker's pipes and output file as descriptors,
  its scratch folder, limits and environment; the server forks a keeper and
  goes back to listening. It ends when the process that started it closes
  its stdin (or dies).
- the **keeper** (root: in new pid, network and mount namespaces; always a
  child subreaper) forks the worker, tells the client the worker's pid over
  the connection, kills it when the client asks or goes away, kills
  everything it left behind, and reports its exit status.
- the **worker** confines itself before any student code exists in it:
  new session, fixed descriptors, scratch folder as cwd, scrubbed environment,
  resource limits, Landlock, then uid ``nobody``; then it serves
  ``worker_main``'s protocol, first sending a ``hello`` that says what is in
  force.

The trusted side's handle on this program is ``grader.sandbox.link.ForkServer``.
This file is run as a script; it loads its siblings as the package
``mha_worker`` by path, since the grader package is not importable here.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import socket
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "mha_worker"
REQUEST_LIMIT = 1 << 16


def _load(name: str):
    """A sibling module, imported as part of the package ``mha_worker`` made from this folder."""
    import importlib
    import importlib.util

    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, HERE / "__init__.py", submodule_search_locations=[str(HERE)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{name}")


def serve(address: str, numpy_dir: str, scratch_root: str, hidden: list[str], packages: list[str],
          without: list[str]) -> None:
    confinement, landlock, worker_main = _load("confinement"), _load("landlock"), _load("worker_main")
    site = os.path.dirname(numpy_dir)
    sys.path.append(site)
    import numpy  # the cost every worker is spared

    worker_main.warm_up(numpy)
    sys.path.remove(site)
    policy = confinement.read_policy(numpy_dir, hidden, packages)
    as_root = os.geteuid() == 0
    context = {"numpy": numpy, "policy": policy, "confinement": confinement, "landlock": landlock,
               "worker_main": worker_main, "protocol": _load("protocol"), "uid": confinement.NOBODY if as_root else None,
               "landlock_abi": 0 if "landlock" in without else landlock.abi_version(),
               "namespaces": as_root and "namespaces" not in without, "scratch_root": scratch_root}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    os.chmod(address, 0o600)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ready = {"pid": os.getpid(), "root": as_root, "uid": context["uid"], "landlock_abi": context["landlock_abi"]}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 4096):
            _remove_socket(address)  # also when the process that started it was killed
            return
        if listener in readable:
            connection, _ = listener.accept()
            try:
                _handle(connection, listener, context)
            except Exception as failed:  # noqa: BLE001 - one bad request never ends the server
                print(f"request failed: {failed!r}", file=sys.stderr, flush=True)
            finally:
                connection.close()


def _remove_socket(address: str) -> None:
    for name in ("server.sock", "server.log"):
        try:
            os.unlink(os.path.join(os.path.dirname(address), name))
        except OSError:
            pass
    try:
        os.rmdir(os.path.dirname(address))
    except OSError:
        pass


def _handle(connection: socket.socket, listener: socket.socket, context: dict) -> None:
    connection.settimeout(5)
    _, peer_uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    message, fds, _, _ = socket.recv_fds(connection, REQUEST_LIMIT, 3)
    try:
        request = json.loads(message)
        if peer_uid != os.geteuid():
            raise ValueError(f"uid {peer_uid} may not ask for workers")
        scratch = request["scratch"]
        if len(fds) != 3 or not _is_scratch(scratch, context["scratch_root"]):
            raise ValueError("a request needs three descriptors and a scratch folder of its own")
        pid = os.fork()
        if pid == 0:
            _keeper(connection, listener, request, fds, context)  # never returns
    except (ValueError, KeyError, TypeError) as bad:
        connection.send(json.dumps({"error": str(bad)}).encode())
    finally:
        for fd in fds:
            os.close(fd)


def _is_scratch(path: str, root: str) -> bool:
    """Only a fresh ``mha-worker-*`` folder right inside the scratch root may become writable for a worker."""
    real = os.path.realpath(path)
    return (real == path and os.path.dirname(real) == os.path.realpath(root) and os.path.isdir(real)
            and os.path.basename(real).startswith("mha-worker-"))


def _keeper(connection: socket.socket, listener: socket.socket, request: dict, fds: list[int], context: dict) -> None:
    code = 1
    try:
        listener.close()
        os.close(sys.stdin.fileno())
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        connection.settimeout(None)
        confinement = context["confinement"]
        namespaces, warnings = [], []
        scratch_parent = os.open(os.path.dirname(request["scratch"]), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if context["namespaces"]:
            namespaces = confinement.enter_namespaces()
            if "mount" in namespaces:
                warnings += confinement.arrange_mounts(context["policy"], context["uid"], keep=[request["scratch"]])
        if context["uid"] is not None and "mount" not in namespaces:
            blocked = sorted(confinement.blocked_folders(context["policy"].readable, context["uid"]))
            if blocked:
                warnings.append(f"uid {context['uid']} cannot enter {', '.join(blocked)} without a mount namespace: "
                                "student code can import only the modules the fork server preloaded")
        confinement.become_subreaper()
        worker = os.fork()
        if worker == 0:
            _worker(request, fds, context, namespaces, warnings)  # never returns
        for fd in fds:
            os.close(fd)
        connection.send(json.dumps({"pid": worker}).encode())
        status, client_gone = _watch(connection, worker)
        confinement.kill_descendants()
        if client_gone:  # the grader died: nobody else will clear the scratch folder (the host's, not our /tmp)
            shutil.rmtree(os.path.basename(request["scratch"]), dir_fd=scratch_parent, ignore_errors=True)
        else:
            connection.send(json.dumps({"status": status}).encode())
        code = 0
    finally:
        os._exit(code)


def _watch(connection: socket.socket, worker: int) -> tuple[int, bool]:
    """Wait for the worker to end; kill it (and its session) when the client asks or disappears.

    Returns the worker's exit code and whether the client went away.
    """
    watched, client_gone = [connection], False
    try:
        ended = os.pidfd_open(worker)
    except (AttributeError, OSError):
        ended = None
    while True:
        pid, status = os.waitpid(worker, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status), client_gone
        readable, _, _ = select.select(watched + ([ended] if ended is not None else []), [], [],
                                       None if ended is not None else 0.01)
        if connection in readable:
            try:
                client_gone = not connection.recv(64)
            except OSError:
                client_gone = True
            watched = []  # any word or the end of the connection means the same: stop
            for kill in (lambda: os.killpg(worker, signal.SIGKILL), lambda: os.kill(worker, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass


def _worker(request: dict, fds: list[int], context: dict, namespaces: list[str], warnings: list[str]) -> None:
    """Confine this fresh process, then serve calls; student code runs only after all of it."""
    confinement, landlock = context["confinement"], context["landlock"]
    hello: dict = {"op": "hello", "ok": False}
    try:
        os.setsid()
        to_worker, from_worker, output = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)  # clear of 0-4
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(to_worker, 3)
        os.dup2(from_worker, 4)
        os.closerange(5, 1 << 16)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
        scratch = request["scratch"]
        os.chdir(scratch)
        os.environ.clear()
        os.environ.update({str(key): str(value) for key, value in request.get("environment", {}).items()})
        confinement.apply_limits(request["limits"])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails a write, not the worker
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        enforced = landlock.restrict_self(readable=context["policy"].readable, writable=[scratch],
                                          abi=context["landlock_abi"])
        if context["uid"] is not None:
            confinement.drop_privileges(context["uid"])
        confinement.set_parent_death_signal()  # after the uid change, which clears it
        sys.path[:] = context["policy"].sys_path
        if context["policy"].packages:
            sys.meta_path.append(context["confinement"].PackageFinder(context["policy"].packages))
        sys.argv[:] = ["worker"]
        hello = {"op": "hello", "ok": True, "landlock": enforced.describe(), "landlock_abi": enforced.abi,
                 "namespaces": namespaces, "uid": os.getuid(), "session": os.getsid(0) == os.getpid(),
                 "rlimits": sorted(request["limits"]), "warnings": warnings}
    except BaseException as failed:  # noqa: BLE001 - refuse to run student code half-confined
        hello = {"op": "hello", "ok": False, "error": f"{type(failed).__name__}: {failed}"}
    code = 70
    try:
        if hello["ok"]:
            context["worker_main"].serve(3, 4, context["numpy"], hello=hello)
            code = 0
        else:
            context["protocol"].write_message(os.fdopen(4, "wb"), hello)
    finally:
        os._exit(code)


def main(argv: list[str]) -> None:
    arguments = {"--socket": None, "--numpy-dir": None, "--scratch-root": "/tmp", "--hide": [], "--package": [],
                 "--without": []}
    for flag, value in zip(argv[::2], argv[1::2]):
        if isinstance(arguments[flag], list):
            arguments[flag].append(value)
        else:
            arguments[flag] = value
    serve(arguments["--socket"], arguments["--numpy-dir"], arguments["--scratch-root"], arguments["--hide"],
          arguments["--package"], arguments["--without"])


if __name__ == "__main__":
    main(sys.argv[1:])
