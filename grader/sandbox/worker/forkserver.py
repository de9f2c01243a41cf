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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "mha_worker"
REQUEST_LIMIT = 1 << 16
LIMITS = ("memory_mb", "cpu_seconds", "max_processes", "file_size_mb", "open_files", "scratch_mb")
WATCH_INTERVAL = 0.05  # seconds between two looks of a watchdog


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
    layout, cgroups = _load("layout"), _load("cgroups")
    site = os.path.dirname(numpy_dir)
    sys.path.append(site)
    import numpy  # the cost every worker is spared

    worker_main.warm_up(numpy)
    sys.path.remove(site)
    scratch_root = os.path.realpath(scratch_root)
    policy = confinement.read_policy(numpy_dir, hidden, packages)
    as_root = os.geteuid() == 0
    namespaces = as_root and "namespaces" not in without
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    os.chmod(address, 0o600)
    listener.listen(64)
    tree, warnings = None, []
    if namespaces:  # the read-only tree, once for all workers, in a mount namespace of the server's own
        try:
            if not confinement.unshare_mounts():
                raise OSError("unshare(CLONE_NEWNS) was refused")
            root = os.path.join(os.path.dirname(address), "root")
            os.mkdir(root, 0o700)
            tree = layout.build(layout.plan(policy.binds, policy.masks, scratch_root), root, scratch_root,
                                policy.links)
        except OSError as failed:
            warnings.append(f"no read-only tree for the workers ({failed}): Landlock alone decides what they read")
    if as_root and "cgroups" not in without:
        cgroup_setup = cgroups.discover()
    else:
        cgroup_setup = cgroups.Setup(missing="not root" if not as_root else "left out on purpose")
    context = {"numpy": numpy, "policy": policy, "confinement": confinement, "landlock": landlock,
               "worker_main": worker_main, "protocol": _load("protocol"), "layout": layout, "cgroups": cgroups,
               "uid": confinement.NOBODY if as_root else None, "tree": tree, "cgroup_setup": cgroup_setup,
               "landlock_abi": 0 if "landlock" in without else landlock.abi_version(),
               "namespaces": namespaces, "scratch_root": scratch_root, "warnings": warnings,
               # in the tree, the masks hide what a granted folder must not show: Landlock grants them whole
               "readable": tuple(policy.binds) if tree is not None else policy.readable,
               "grants": {"python": policy.sys_path[0], "numpy": os.path.realpath(numpy_dir),
                          **{name: folder for name, folder in policy.packages}}}
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ready = {"pid": os.getpid(), "root": as_root, "uid": context["uid"], "landlock_abi": context["landlock_abi"],
             "tree": tree is not None, "cgroups": cgroup_setup.describe(), "warnings": warnings}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 4096):
            if tree is not None:
                layout.dismantle(tree)
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
        os.rmdir(os.path.join(os.path.dirname(address), "root"))  # a mount point only in the server's namespace
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
        limits = request["limits"]
        if not all(type(limits.get(name)) is int and limits[name] > 0 for name in LIMITS):
            raise ValueError(f"a request needs the limits {', '.join(LIMITS)} as positive whole numbers")
        pid = os.fork()
        if pid == 0:
            _keeper(connection, listener, request, fds, context)  # never returns
    except (ValueError, KeyError, TypeError, AttributeError) as bad:
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
    marks = [("keeper forked", time.monotonic())]  # when each step of making a worker ended, for the hello
    cgroup = None
    try:
        listener.close()
        os.close(sys.stdin.fileno())
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        connection.settimeout(None)
        confinement, layout, cgroups = context["confinement"], context["layout"], context["cgroups"]
        limits, scratch, tree = request["limits"], request["scratch"], context["tree"]
        namespaces, warnings, private = [], list(context["warnings"]), False
        scratch_parent = os.open(os.path.dirname(scratch), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if context["namespaces"]:
            namespaces = confinement.enter_namespaces()
            marks.append(("namespaces", time.monotonic()))
            if tree is not None and "mount" in namespaces:
                layout.private_scratch(tree, scratch, limits["scratch_mb"], context["uid"])
                private = True
                marks.append(("scratch tmpfs", time.monotonic()))
        if context["uid"] is not None and not private:
            blocked = sorted(confinement.blocked_folders(context["policy"].readable, context["uid"]))
            if blocked:
                warnings.append(f"uid {context['uid']} cannot enter {', '.join(blocked)} without a mount namespace: "
                                "student code can import only the modules the fork server preloaded")
        setup = context["cgroup_setup"]
        if setup.hierarchies:
            try:
                cgroup = cgroups.WorkerCgroup(setup, os.path.basename(scratch), limits)
            except OSError as failed:
                warnings.append(f"no cgroup for this worker ({failed}): a watchdog sums its memory instead")
            marks.append(("cgroups", time.monotonic()))
        memory_watched = cgroup is None or not setup.provides("memory")
        watchdog = None
        if memory_watched or not private:  # what no cgroup or tmpfs bounds, the keeper watches
            watchdog = cgroups.Watchdog(limits["memory_mb"] if memory_watched else None,
                                        None if private else scratch, limits["scratch_mb"])
        confinement.become_subreaper()
        worker = os.fork()
        if worker == 0:
            _worker(request, fds, context, namespaces, warnings, marks,
                    {"cgroup": cgroup, "memory_watched": memory_watched, "private": private})  # never returns
        for fd in fds:
            os.close(fd)
        connection.send(json.dumps({"pid": worker}).encode())
        status, client_gone, reason = _watch(connection, worker, watchdog)
        confinement.kill_descendants()
        if cgroup is not None:
            if not reason and cgroup.out_of_memory():
                reason = f"its processes needed more than {limits['memory_mb']} MiB together"
            cgroup.remove()
        if client_gone:  # the grader died: nobody else will clear the scratch folder (the host's)
            shutil.rmtree(os.path.basename(scratch), dir_fd=scratch_parent, ignore_errors=True)
        else:
            connection.send(json.dumps({"status": status, "reason": reason}).encode())
        code = 0
    finally:
        if cgroup is not None:
            cgroup.remove()
        os._exit(code)


def _watch(connection: socket.socket, worker: int, watchdog) -> tuple[int, bool, str]:
    """Wait for the worker to end; kill it (and its session) when the client asks or disappears, or the
    ``watchdog`` finds it over a limit.

    Returns the worker's exit code, whether the client went away, and why the keeper killed it (if it did
    for a limit).
    """
    watched, client_gone, reason = [connection], False, ""
    try:
        ended = os.pidfd_open(worker)
    except (AttributeError, OSError):
        ended = None
    interval = WATCH_INTERVAL if watchdog is not None else None if ended is not None else 0.01
    while True:
        pid, status = os.waitpid(worker, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status), client_gone, reason
        readable, _, _ = select.select(watched + ([ended] if ended is not None else []), [], [], interval)
        stop = False
        if connection in readable:
            try:
                client_gone = not connection.recv(64)
            except OSError:
                client_gone = True
            watched, stop = [], True  # any word or the end of the connection means the same: stop
        if watchdog is not None and not stop and not reason:
            reason = watchdog.over() or ""
            stop = bool(reason)
        if stop:
            for kill in (lambda: os.killpg(worker, signal.SIGKILL), lambda: os.kill(worker, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass


def _worker(request: dict, fds: list[int], context: dict, namespaces: list[str], warnings: list[str],
            marks: list, resources: dict) -> None:
    """Confine this fresh process, then serve calls; student code runs only after all of it."""
    confinement, landlock = context["confinement"], context["landlock"]
    hello: dict = {"op": "hello", "ok": False}
    marks.append(("worker forked", time.monotonic()))
    try:
        os.setsid()
        if resources["cgroup"] is not None:
            resources["cgroup"].join()  # before anything else: all it starts is counted with it
            marks.append(("joined cgroups", time.monotonic()))
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
        if resources["private"]:
            context["layout"].enter(context["tree"], scratch)
        else:
            os.chdir(scratch)
        os.environ.clear()
        os.environ.update({str(key): str(value) for key, value in request.get("environment", {}).items()})
        marks.append(("descriptors, root, environment", time.monotonic()))
        confinement.apply_limits(request["limits"])
        marks.append(("rlimits", time.monotonic()))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails a write, not the worker
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        enforced = landlock.restrict_self(readable=context["readable"], writable=[scratch],
                                          abi=context["landlock_abi"])
        marks.append(("landlock", time.monotonic()))
        if context["uid"] is not None:
            confinement.drop_privileges(context["uid"])
        marks.append(("uid change", time.monotonic()))
        confinement.set_parent_death_signal()  # after the uid change, which clears it
        sys.path[:] = context["policy"].sys_path
        if context["policy"].packages:
            sys.meta_path.append(context["confinement"].PackageFinder(context["policy"].packages))
        sys.argv[:] = ["worker"]
        setup = context["cgroup_setup"]
        hello = {"op": "hello", "ok": True, "landlock": enforced.describe(), "landlock_abi": enforced.abi,
                 "namespaces": namespaces, "uid": os.getuid(), "session": os.getsid(0) == os.getpid(),
                 "rlimits": sorted(request["limits"]), "warnings": warnings,
                 "tree": resources["private"], "grants": context["grants"],
                 "cgroup": setup.describe() if resources["cgroup"] is not None else "",
                 "memory_watched": resources["memory_watched"], "cgroup_missing": setup.missing,
                 "scratch": (f"tmpfs of {request['limits']['scratch_mb']} MiB" if resources["private"]
                             else f"host folder, watched ({request['limits']['scratch_mb']} MiB)"),
                 "phases": [[name, at] for name, at in marks]}
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
