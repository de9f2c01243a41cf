"""A process that has imported NumPy once and forks a fresh, confined worker per request.

Three kinds of process, standard library and NumPy only (the server runs as
``python -I -S forkserver.py``, without the grader package):

- the **server** imports NumPy, decides what workers may read and, as root,
  builds the read-only tree they will see (``layout``) in a mount namespace
  of its own; it finds where worker cgroups can go (``cgroups``). It listens
  on a UNIX socket in a private folder. Each request (a connection) carries
  the worker's pipes and output file as descriptors, the client's folder for
  it, limits and environment; the server hands it to a keeper it forked
  ahead of time (a spare; or a fresh one) and forks the next spare. It ends
  when the process that started it closes its stdin (or dies).
- the **keeper** and the **worker** are ``keeper``'s: namespaces, scratch
  tmpfs and cgroups of their own, made ahead of the request; then one
  request, watched, killed, cleaned up, reported.

The trusted side's handle on this program is ``grader.sandbox.link.ForkServer``.
This file is run as a script; it loads its siblings as the package
``mha_worker`` by path, since the grader package is not importable here.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "mha_worker"
REQUEST_LIMIT = 1 << 16
LIMITS = ("memory_mb", "cpu_seconds", "max_processes", "file_size_mb", "open_files", "scratch_mb")
DEFAULT_SCRATCH_MB = 64  # what a spare's scratch tmpfs holds until its request says otherwise
# Where neither a pid namespace nor Landlock's signal scoping keeps workers apart, each worker alive at once
# gets a uid of its own from this range (as root), so no worker can signal or trace another.
UID_POOL_BASE, UID_POOL_SIZE = 0x6D680000, 1024


def _load(name: str):
    """A sibling module, imported as part of the package ``mha_worker`` made from this folder."""
    import importlib
    import importlib.util

    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, HERE / "__init__.py",
                                                      submodule_search_locations=[str(HERE)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{name}")


def serve(address: str, numpy_dir: str, scratch_root: str, hidden: list[str], packages: list[str],
          without: list[str], spares: int = 1) -> None:
    confinement, landlock, worker_main = _load("confinement"), _load("landlock"), _load("worker_main")
    layout, cgroups = _load("layout"), _load("cgroups")
    site = os.path.dirname(numpy_dir)
    sys.path.append(site)
    import numpy  # the cost every worker is spared

    worker_main.warm_up(numpy)
    sys.path.remove(site)
    import gc

    gc.collect()
    gc.freeze()  # what exists now is never scanned in a worker: its pages stay shared with the server
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
        cgroups.sweep(cgroup_setup, os.getpid())  # what the keepers of servers killed before this one left
    else:
        cgroup_setup = cgroups.Setup(missing="not root" if not as_root else "left out on purpose")
    context = {"numpy": numpy, "policy": policy, "confinement": confinement, "landlock": landlock,
               "worker_main": worker_main, "protocol": _load("protocol"), "layout": layout, "cgroups": cgroups,
               "uid": confinement.NOBODY if as_root else None, "tree": tree, "cgroup_setup": cgroup_setup,
               "landlock_abi": 0 if "landlock" in without else landlock.abi_version(),
               "namespaces": namespaces, "scratch_root": scratch_root, "warnings": warnings,
               "default_scratch_mb": DEFAULT_SCRATCH_MB, "server_pid": os.getpid(),
               "rehearse": "rehearsal" not in without,  # each worker's rehearsal (worker_main.rehearse): it saves time
               # in the tree, the masks hide what a granted folder must not show: Landlock grants them whole
               "readable": tuple(policy.binds) if tree is not None else policy.readable,
               "grants": {"python": policy.sys_path[0], "numpy": os.path.realpath(numpy_dir),
                          **{name: folder for name, folder in policy.packages}}}
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # what keeps workers graded at once from signalling each other: a pid namespace each, Landlock's scoping
    # (ABI 6), or, as root, a uid each; without any, the grader must grade one at a time (``workers_apart``)
    scoped = context["landlock_abi"] >= 6
    pool = as_root and not namespaces and not scoped and "uid-pool" not in without
    context["uid_pool"] = pool
    context["workers_apart"] = namespaces or scoped or pool
    context["apart_by"] = ("pid namespaces" if namespaces else "Landlock signal scoping" if scoped else
                           "a uid per worker" if pool else "")
    keepers = Keepers(listener, context, 0 if "spares" in without else spares)
    keepers.refill()
    ready = {"pid": os.getpid(), "root": as_root, "uid": context["uid"], "landlock_abi": context["landlock_abi"],
             "tree": tree is not None, "cgroups": cgroup_setup.describe(), "warnings": warnings,
             "spares": keepers.count, "workers_apart": context["workers_apart"], "apart_by": context["apart_by"]}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    while True:
        readable, _, _ = select.select([listener, sys.stdin, *keepers.holding], [], [])
        for control in [control for control in keepers.holding if control in readable]:
            keepers.release(control)  # that keeper has ended, with everything its worker started
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 4096):
            keepers.close()
            if tree is not None:
                layout.dismantle(tree)
            _remove_socket(address)  # also when the process that started it was killed
            return
        if listener in readable:
            connection, _ = listener.accept()
            try:
                _handle(connection, keepers, context)
            except Exception as failed:  # noqa: BLE001 - one bad request never ends the server
                print(f"request failed: {failed!r}", file=sys.stderr, flush=True)
            finally:
                connection.close()  # before the next spare is forked: only its keeper holds it
            keepers.refill()


class Keepers:
    """Keepers forked ahead of requests (``count`` spares), each already prepared for a worker of its own."""

    def __init__(self, listener: socket.socket, context: dict, count: int):
        self.listener, self.context, self.count = listener, context, count
        self.ready: list[socket.socket] = []  # the server's ends of the spares' control sockets
        self.holding: dict[socket.socket, int] = {}  # control of a keeper at work -> the uid its worker has
        self.free_uids = list(range(UID_POOL_BASE, UID_POOL_BASE + UID_POOL_SIZE))

    def hand(self, request: dict, fds: list[int]) -> None:
        """Give a request to a spare (or, if none is ready or alive, to a fresh keeper); with a uid pool, the
        worker's uid, held until that keeper ends."""
        uid = None
        if self.context.get("uid_pool"):
            if not self.free_uids:
                raise ValueError(f"all {UID_POOL_SIZE} uids for workers are in use")
            uid = self.free_uids.pop(0)
            request = dict(request, uid=uid)
        while True:
            control = self.ready.pop(0) if self.ready else self._start()
            try:
                socket.send_fds(control, [json.dumps(request).encode()], fds)
                if uid is not None:  # its end (when the keeper exits) frees the uid
                    self.holding[control] = uid
                    control = None
                return
            except OSError:
                if not self.ready:
                    if uid is not None:
                        self.free_uids.append(uid)
                    raise
            finally:
                if control is not None:
                    control.close()

    def release(self, control: socket.socket) -> None:
        self.free_uids.append(self.holding.pop(control))
        control.close()

    def refill(self) -> None:
        while len(self.ready) < self.count:
            self.ready.append(self._start())

    def close(self) -> None:
        for control in self.ready:
            control.close()  # each spare kills its worker and ends
        self.ready = []

    def _start(self) -> socket.socket:
        server_end, keeper_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            server_end.close()
            for control in [*self.ready, *self.holding]:  # other keepers' ends: only the server may hold them
                control.close()
            _load("keeper").run(keeper_end, self.listener, self.context)  # never returns
        keeper_end.close()
        return server_end


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


def _handle(connection: socket.socket, keepers: Keepers, context: dict) -> None:
    connection.settimeout(5)
    _, peer_uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    message, fds, _, _ = socket.recv_fds(connection, REQUEST_LIMIT, 3)
    try:
        request = json.loads(message)
        if peer_uid != os.geteuid():
            raise ValueError(f"uid {peer_uid} may not ask for workers")
        if len(fds) != 3 or not _is_scratch(request["scratch"], context["scratch_root"]):
            raise ValueError("a request needs three descriptors and a scratch folder of its own")
        limits = request["limits"]
        if not all(type(limits.get(name)) is int and limits[name] > 0 for name in LIMITS):
            raise ValueError(f"a request needs the limits {', '.join(LIMITS)} as positive whole numbers")
        request.pop("uid", None)  # only the server gives a uid
        keepers.hand(request, [*fds, connection.fileno()])
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


def main(argv: list[str]) -> None:
    arguments = {"--socket": None, "--numpy-dir": None, "--scratch-root": "/tmp", "--hide": [], "--package": [],
                 "--without": [], "--spares": "1"}
    for flag, value in zip(argv[::2], argv[1::2]):
        if isinstance(arguments[flag], list):
            arguments[flag].append(value)
        else:
            arguments[flag] = value
    serve(arguments["--socket"], arguments["--numpy-dir"], arguments["--scratch-root"], arguments["--hide"],
          arguments["--package"], arguments["--without"], int(arguments["--spares"]))


if __name__ == "__main__":
    main(sys.argv[1:])
