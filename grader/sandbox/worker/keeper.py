"""A keeper and its worker: made before they are needed, then given one request, watched and cleaned up.

The fork server forks a **keeper** ahead of time (a spare), which prepares all
that no request decides: its own pid, network, IPC, UTS and mount namespaces,
its own scratch tmpfs in the read-only tree, its cgroups; then it forks the
**worker**, which confines itself as far as it can without a request (its
session and cgroups; in the tree, its root, Landlock and uid ``nobody``),
rehearses a few calls of trusted code (``worker_main.rehearse``: the first
touches of memory it shares with the server, taken ahead) and waits. The server hands the keeper a request (limits, environment), the
client's three descriptors (the worker's pipes and output file) and the
client's connection. The keeper sets the limits on the cgroups and the tmpfs,
passes the descriptors to the worker, which finishes (descriptors,
environment, rlimits; without the tree, its scratch folder, Landlock and the
uid change) and says ``hello``; the keeper tells the client the worker's pid,
kills the worker when the client asks or goes away (or a watchdog finds it
over a limit), kills everything it left behind and reports how it ended.

One keeper, one worker, one request: nothing is ever reused.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import select
import shutil
import signal
import socket
import sys
import time

ASSIGNMENT_LIMIT = 1 << 16
WATCH_INTERVAL = 0.05  # seconds between two looks of a watchdog


def run(control: socket.socket, listener: socket.socket, context: dict) -> None:
    """The keeper's whole life (in a process just forked by the server); never returns."""
    code, cgroup, worker = 1, None, None
    marks = [("keeper forked", time.monotonic())]  # when each step of making a worker ended, for the hello
    try:
        listener.close()
        os.close(sys.stdin.fileno())
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        plan = _prepare(context, marks)
        cgroup = plan["cgroup"]
        context["confinement"].become_subreaper()
        channel, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        worker = os.fork()
        if worker == 0:
            control.close()
            channel.close()
            _worker(worker_end, context, plan, marks)  # never returns
        worker_end.close()
        assignment = _receive(control)
        if assignment is not None:  # else the server ended before it needed this spare
            _serve(assignment, worker, channel, context, plan, marks)
        code = 0
    finally:
        if worker:  # whatever happened, nothing of the worker outlives its keeper, nor its cgroups
            try:
                if os.waitpid(worker, os.WNOHANG) == (0, 0):  # not reaped yet: the pid is still the worker's
                    os.kill(worker, signal.SIGKILL)
            except OSError:  # reaped already (its pid may be another process's now)
                pass
            context["confinement"].kill_descendants()
        if cgroup is not None:
            cgroup.remove()
        os._exit(code)


def _prepare(context: dict, marks: list) -> dict:
    """All that no request decides: namespaces, the private scratch tmpfs, cgroups (made without limits yet)."""
    confinement, layout, cgroups = context["confinement"], context["layout"], context["cgroups"]
    plan = {"namespaces": [], "warnings": list(context["warnings"]), "scratch": None, "cgroup": None}
    tree = context["tree"]
    name = cgroups.worker_name(context["server_pid"], secrets.token_hex(6))  # its folder's and its cgroups' name
    if context["namespaces"]:
        plan["namespaces"] = confinement.enter_namespaces()
        marks.append(("namespaces", time.monotonic()))
        if tree is not None and "mount" in plan["namespaces"]:
            scratch = os.path.join(tree.scratch_root, name)
            layout.private_scratch(tree, scratch, context["default_scratch_mb"], context["uid"])
            plan["scratch"] = scratch
            marks.append(("scratch tmpfs", time.monotonic()))
    if context["uid"] is not None and plan["scratch"] is None:
        blocked = sorted(confinement.blocked_folders(context["policy"].readable, context["uid"]))
        if blocked:
            plan["warnings"].append(f"uid {context['uid']} cannot enter {', '.join(blocked)} without a mount "
                                    "namespace: student code can import only the modules the fork server preloaded")
    setup = context["cgroup_setup"]
    if setup.hierarchies:
        try:
            plan["cgroup"] = cgroups.WorkerCgroup(setup, name)
        except OSError as failed:
            plan["warnings"].append(f"no cgroup for this worker ({failed}): a watchdog sums its memory instead")
        marks.append(("cgroups", time.monotonic()))
    return plan


def _receive(control: socket.socket):
    """The request the server hands this keeper: (request, the client's three descriptors, its connection)."""
    try:
        message, fds, _, _ = socket.recv_fds(control, ASSIGNMENT_LIMIT, 4)
    except OSError:
        return None
    if not message or len(fds) != 4:
        for fd in fds:
            os.close(fd)
        return None
    return json.loads(message), fds[:3], socket.socket(fileno=fds[3])


def _serve(assignment, worker: int, channel: socket.socket, context: dict, plan: dict, marks: list) -> None:
    """Give the worker its request, tell the client its pid, watch it, clean up, report."""
    request, fds, client = assignment
    limits, cgroup, cgroups = request["limits"], plan["cgroup"], context["cgroups"]
    client_folder = os.open(os.path.dirname(request["scratch"]), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    if cgroup is not None:
        cgroup.limit(limits)
    if plan["scratch"] is not None and limits["scratch_mb"] != context["default_scratch_mb"]:
        context["layout"].resize_scratch(context["tree"], limits["scratch_mb"])
    memory_watched = cgroup is None or not context["cgroup_setup"].provides("memory")
    watchdog = None
    if memory_watched or plan["scratch"] is None:  # what no cgroup or tmpfs bounds, the keeper watches
        watchdog = cgroups.Watchdog(limits["memory_mb"] if memory_watched else None,
                                    request["scratch"] if plan["scratch"] is None else None, limits["scratch_mb"],
                                    own_ipc="ipc" in plan["namespaces"])
    if request.get("uid") is not None:  # a uid of its own: it must own its folder (the host's, no tree here)
        os.chown(os.path.basename(request["scratch"]), request["uid"], request["uid"], dir_fd=client_folder,
                 follow_symlinks=False)
    marks.append(("assigned", time.monotonic()))
    started = {"request": request, "marks": marks, "memory_watched": memory_watched}
    try:
        socket.send_fds(channel, [json.dumps(started).encode()], fds)
    finally:
        for fd in fds:
            os.close(fd)
        channel.close()
    client.send(json.dumps({"pid": worker}).encode())
    ending: list = []  # when each step of the end came (time.monotonic), for measuring
    status, client_gone, reason = _watch(client, worker, watchdog, ending)
    ending.append(("worker reaped", time.monotonic()))
    context["confinement"].kill_descendants()
    if cgroup is not None:
        if not reason and cgroup.out_of_memory():
            reason = f"its processes needed more than {limits['memory_mb']} MiB together"
        cgroup.remove()  # before the report: once the client hears of the end, nothing of the worker is left
        ending.append(("cgroups removed", time.monotonic()))
    # the client's folder for this worker (the host's) goes now, here beside the grading rather than in it: the
    # client reads what the worker printed through its own descriptor, never by name (and if the grader died,
    # nobody else would clear it)
    shutil.rmtree(os.path.basename(request["scratch"]), dir_fd=client_folder, ignore_errors=True)
    if not client_gone:
        client.send(json.dumps({"status": status, "reason": reason, "phases": ending}).encode())


def _watch(connection: socket.socket, worker: int, watchdog, ending: list) -> tuple[int, bool, str]:
    """Wait for the worker to end; kill it (and its session) when the client asks or disappears, or the
    ``watchdog`` finds it over a limit.

    Returns the worker's exit code, whether the client went away, and the limit the keeper killed it for.
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
            ending.append(("kill sent", time.monotonic()))
            for kill in (lambda: os.killpg(worker, signal.SIGKILL), lambda: os.kill(worker, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass


# ---- the worker ------------------------------------------------------------------------------------
def _worker(channel: socket.socket, context: dict, plan: dict, marks: list) -> None:
    """Confine this fresh process, wait for its request, finish, then serve calls; never returns.

    Student code runs only after all of it; if any step fails, the worker
    refuses to run it (its hello says why).
    """
    marks.append(("worker forked", time.monotonic()))
    failure, enforced = None, None
    try:
        os.setsid()
        if plan["cgroup"] is not None:
            plan["cgroup"].join()  # before anything else: all it starts is counted with it
            marks.append(("joined cgroups", time.monotonic()))
        if plan["scratch"] is not None:  # in the tree: all but the request's own settings, ahead of time
            context["layout"].enter(context["tree"], plan["scratch"])
            enforced = _lock_down(context, plan["scratch"], marks)
    except BaseException as failed:  # noqa: BLE001 - reported in the hello, once there is a pipe to say it on
        failure = failed
    if failure is None and context.get("rehearse", True):
        try:  # the first touches of memory shared with the server, taken while this worker waits (trusted code)
            context["worker_main"].rehearse(context["numpy"])
        except Exception:  # noqa: BLE001 - it only saves time: the request's calls pay for what it did not do
            pass
        marks.append(("rehearsed", time.monotonic()))
    marks.append(("ready", time.monotonic()))
    try:
        message, fds, _, _ = socket.recv_fds(channel, ASSIGNMENT_LIMIT, 3)
        started = json.loads(message)
        to_worker, from_worker, output = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)  # clear of 0-4
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(to_worker, 3)
        os.dup2(from_worker, 4)
        os.closerange(5, 1 << 16)
    except BaseException:  # noqa: BLE001 - no request came (the server ended), or no pipes to serve on
        os._exit(0)
    known = {name for name, _ in marks}
    marks += [(name, at) for name, at in started["marks"] if name not in known]
    marks.append(("request", time.monotonic()))
    try:
        if failure is not None:
            raise failure
        hello = _finish(started["request"], context, plan, enforced, started["memory_watched"], marks)
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


def _finish(request: dict, context: dict, plan: dict, enforced, memory_watched: bool, marks: list) -> dict:
    """The request's own settings (and, without the tree, the rest of the confinement); returns the hello."""
    confinement = context["confinement"]
    scratch = plan["scratch"] or request["scratch"]
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    if plan["scratch"] is None:
        os.chdir(scratch)
    os.environ.clear()
    os.environ.update({str(key): str(value) for key, value in request.get("environment", {}).items()})
    os.environ.update(HOME=scratch, TMPDIR=scratch)
    marks.append(("descriptors, environment", time.monotonic()))
    confinement.apply_limits(request["limits"])
    marks.append(("rlimits", time.monotonic()))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails a write, not the worker
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    if enforced is None:
        enforced = _lock_down(context, scratch, marks, request.get("uid"))
    sys.path[:] = context["policy"].sys_path
    if context["policy"].packages:
        sys.meta_path.append(confinement.PackageFinder(context["policy"].packages))
    sys.argv[:] = ["worker"]
    return _hello(context, plan, request, enforced, memory_watched, marks)


def _lock_down(context: dict, scratch: str, marks: list, uid: int | None = None):
    """Landlock (read the grant, write ``scratch``), then uid ``nobody`` (as root; ``uid``: the one the server
    gave this worker alone) and the parent-death signal."""
    enforced = context["landlock"].restrict_self(readable=context["readable"], writable=[scratch],
                                                 abi=context["landlock_abi"])
    marks.append(("landlock", time.monotonic()))
    if context["uid"] is not None:
        context["confinement"].drop_privileges(uid if uid is not None else context["uid"])
        marks.append(("uid change", time.monotonic()))
    context["confinement"].set_parent_death_signal()  # after the uid change, which clears it
    return enforced


def _hello(context: dict, plan: dict, request: dict, enforced, memory_watched: bool, marks: list) -> dict:
    """What is in force, as the worker itself found it: the trusted side's ``isolation`` is made from it."""
    setup, limits = context["cgroup_setup"], request["limits"]
    return {"op": "hello", "ok": True, "landlock": enforced.describe(), "landlock_abi": enforced.abi,
            "namespaces": plan["namespaces"], "uid": os.getuid(), "session": os.getsid(0) == os.getpid(),
            "rlimits": sorted(limits), "warnings": plan["warnings"], "tree": plan["scratch"] is not None,
            "grants": context["grants"], "cgroup": setup.describe() if plan["cgroup"] is not None else "",
            "memory_watched": memory_watched, "cgroup_missing": setup.missing, "cwd": os.getcwd(),
            "cpu_share": plan["cgroup"] is not None and setup.provides("cpu"), "own_uid": request.get("uid") is not None,
            "workers_apart": context.get("workers_apart", True),
            "scratch": (f"tmpfs of {limits['scratch_mb']} MiB" if plan["scratch"] is not None
                        else f"host folder, watched ({limits['scratch_mb']} MiB)"),
            "phases": [[name, at] for name, at in marks]}
