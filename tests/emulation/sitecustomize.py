"""Python with the import surface of Windows, on Linux: what `mha check` may rely on on a student's laptop.

On ``PYTHONPATH`` this runs at start-up (``site`` imports it) and removes the
POSIX-only modules (fcntl, resource, termios, pwd, grp...) and calls
(``os.fork``, ``os.setsid``, ``os.getuid``, ``os.killpg``, ``os.pipe2``,
``socket.AF_UNIX``, the signals Windows lacks...), and makes ``select.select``
refuse pipes and files as Windows does (sockets only). NumPy, pytest, click,
rich and ``subprocess`` still work: subprocess keeps its POSIX internals
(``_posixsubprocess``, ``select.poll``), which are below the surface the
grader sees.

The worker is started as ``sys.executable -I -S script``, which loads no
``sitecustomize``; so when ``MHA_EMULATED_EXECUTABLE`` names a wrapper that
runs ``python -I -S <this file> -I -S script args`` (the test writes it),
``sys.executable`` becomes that wrapper, and run as a script this file
removes the same surface before it runs the worker's script.

Named pipes: with ``MHA_EMULATED_PIPES`` set to a folder, ``multiprocessing.connection``
has the families Windows gives it (``AF_INET``, ``AF_PIPE``) and its ``AF_PIPE``
listener and client are Unix sockets in that folder, one per pipe name (its own
copy of the socket module keeps ``AF_UNIX``): the relayed warm server runs as on
Windows, the transport under the pipe aside.

``MHA_EMULATE=macos`` emulates macOS's surface instead: what Linux has and macOS
lacks (``os.pipe2``, ``SO_PEERCRED``, so the Linux sandbox does not run and the
portable worker is the sandbox) goes, and ``socket.LOCAL_PEERCRED`` is answered
(a ``struct xucred`` at level 0, as getpeereid asks) from Linux's own peer credentials.
"""

import os
import runpy
import select
import signal
import socket
import stat
import sys

MODULES = ("fcntl", "resource", "termios", "tty", "pty", "pwd", "grp", "crypt", "spwd", "posix_ipc", "syslog",
           "_posixshmem", "readline")
OS_CALLS = ("fork", "forkpty", "setsid", "getsid", "setpgid", "getpgid", "getpgrp", "killpg", "getuid", "geteuid",
            "getgid", "getegid", "setuid", "seteuid", "setgid", "getresuid", "getresgid", "setresuid", "setresgid",
            "setgroups", "getgroups", "pipe2", "pidfd_open", "wait3", "wait4", "sched_getaffinity",
            "getloadavg", "nice", "sysconf", "fchown", "chown", "lchown", "mkfifo")
SOCKET_NAMES = ("AF_UNIX", "SOCK_SEQPACKET", "send_fds", "recv_fds", "SO_PEERCRED", "CMSG_LEN", "CMSG_SPACE")
SIGNALS = ("SIGKILL", "SIGCHLD", "SIGXFSZ", "SIGXCPU", "SIGPIPE", "SIGALRM", "SIGHUP", "SIGQUIT", "SIGUSR1",
           "SIGUSR2", "SIGSTOP", "SIGCONT", "SIGTSTP", "alarm", "setitimer", "getitimer", "pthread_kill",
           "pthread_sigmask", "sigwait", "siginterrupt")


class _Absent:
    """Finds nothing for the removed modules: importing one raises ModuleNotFoundError, as on Windows."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in MODULES:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _tcp_socketpair(family=socket.AF_INET, type=socket.SOCK_STREAM, proto=0):
    """socket.socketpair as Windows has it (no AF_UNIX): two TCP sockets joined over the loopback, which is
    what asyncio's self-pipe and Jupyter's kernel rely on there."""
    with socket.socket(family, type, proto) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        one = socket.socket(family, type, proto)
        try:
            one.connect(listener.getsockname())
            other, _ = listener.accept()
        except OSError:
            one.close()
            raise
    return one, other


def _sockets_only(select_select=select.select):
    def windows_select(readable, writable, exceptional, *timeout):
        for item in (*readable, *writable, *exceptional):
            fd = item if isinstance(item, int) else item.fileno()
            mode = os.fstat(fd).st_mode
            if not stat.S_ISSOCK(mode):
                raise OSError(10038, "An operation was attempted on something that is not a socket")
        return select_select(readable, writable, exceptional, *timeout)
    return windows_select


# Pick their implementation by sys.platform (here Linux's, which needs os.getuid, pwd...): imported before the surface
# goes, as on Windows it would load its Windows implementation
PLATFORM_PICKED = ("platformdirs", "psutil")
# a Jupyter kernel's own modules (ipykernel, IPython, zmq, tornado) do the same: loaded first in a kernel's process
KERNEL = ("ipykernel_launcher", "ipykernel.kernelapp")


def pipes_over_unix_sockets(folder: str, kept_socket) -> None:
    """``multiprocessing.connection``'s AF_PIPE as Unix sockets in ``folder`` (named after each pipe)."""
    from multiprocessing import connection

    def path(address: str) -> str:
        return os.path.join(folder, "pipe-" + address.rsplit("\\", 1)[-1])

    def validate(family):
        if family not in connection.families:
            raise ValueError(f"Family {family} is not recognized.")

    connection.socket = kept_socket
    connection.families[:] = ["AF_INET", "AF_PIPE"]
    connection._validate_family = validate
    connection.PipeListener = lambda address, backlog=None: connection.SocketListener(path(address), "AF_UNIX",
                                                                                      backlog or 1)
    connection.PipeClient = lambda address: connection.SocketClient(path(address))


XUCRED = "=IIh16I"
LOCAL_PEERCRED = 0x001


def emulate_macos() -> None:
    """What macOS lacks of Linux's surface, and its LOCAL_PEERCRED in place of SO_PEERCRED."""
    import struct

    linux_peercred = socket.SO_PEERCRED

    class MacSocket(socket.socket):
        def getsockopt(self, level, name, *size):
            if (level, name) == (0, LOCAL_PEERCRED):
                _, uid, gid = struct.unpack("3i", super().getsockopt(socket.SOL_SOCKET, linux_peercred, 12))
                return struct.pack(XUCRED, 0, uid, 1, gid, *([0] * 15))
            return super().getsockopt(level, name, *size)

    socket.socket = MacSocket
    socket.LOCAL_PEERCRED = LOCAL_PEERCRED
    for module, name in ((os, "pipe2"), (socket, "SO_PEERCRED")):
        if hasattr(module, name):
            delattr(module, name)


def remove_posix_surface() -> None:
    import subprocess
    import types

    pipes = os.environ.get("MHA_EMULATED_PIPES")
    if pipes:
        import multiprocessing.connection  # noqa: F401 - its families are picked at import, as on Windows
    kept_socket = types.ModuleType("socket")
    kept_socket.__dict__.update(vars(socket))

    for name in PLATFORM_PICKED + (KERNEL[1:] if KERNEL[0] in sys.orig_argv else ()):
        try:
            __import__(name)
        except ImportError:
            pass

    # subprocess's and psutil's POSIX internals (kill sends SIGKILL) stand for what they do on Windows with
    # TerminateProcess: they keep a copy of the signal module as it was; everything else sees it without
    kept = types.ModuleType("signal")
    kept.__dict__.update(vars(signal))
    for name, module in list(sys.modules.items()):
        if (name == "subprocess" or name.split(".")[0] in PLATFORM_PICKED) and getattr(module, "signal", None) is signal:
            module.signal = kept
    for name in MODULES:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, _Absent())
    for module, names in ((os, OS_CALLS), (socket, SOCKET_NAMES), (signal, SIGNALS)):
        for name in names:
            if hasattr(module, name):
                delattr(module, name)
    socket.socketpair = _tcp_socketpair
    if pipes:
        pipes_over_unix_sockets(pipes, kept_socket)
    select.select = _sockets_only()
    for name in ("epoll", "kqueue", "devpoll"):
        if hasattr(select, name):
            delattr(select, name)


def _run_script(argv: list[str]) -> None:
    """``<this file> [-flags] script args`` (or ``-c code``): the surface removed, then ``script`` as ``__main__``."""
    while argv and argv[0].startswith("-"):
        if argv[0] == "-c":
            sys.argv[:] = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
            return
        argv = argv[1:]
    script, *arguments = argv
    sys.argv[:] = [script, *arguments]
    runpy.run_path(script, run_name="__main__")


if not getattr(sys, "_mha_emulated", False):  # once: as sitecustomize, and again when run as a script after it
    sys._mha_emulated = True
    if os.environ.get("MHA_EMULATE") == "macos":
        emulate_macos()
    else:
        remove_posix_surface()
if os.environ.get("MHA_EMULATED_EXECUTABLE"):
    sys.executable = os.environ["MHA_EMULATED_EXECUTABLE"]
if __name__ == "__main__":
    _run_script(sys.argv[1:])
