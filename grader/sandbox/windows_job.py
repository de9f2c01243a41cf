"""A Windows Job Object for the portable worker: its whole tree bounded in memory and ended together.

Windows has no process groups to kill and no rlimits; a Job Object is its
kernel's own way: every process the worker starts joins the job (no
breakaway), the job's committed memory is bounded (an allocation past it
fails: NumPy raises MemoryError, as under ``RLIMIT_AS``), the number of its
processes too, and ``TerminateJobObject`` (or the grader's end, which closes
the last handle: ``KILL_ON_JOB_CLOSE``) ends them all, orphans included.

ctypes and the documented kernel32 calls only, no pywin32: the structures are
small and fixed. Anything refused (an older Windows, a job that forbids
nesting) leaves ``make`` returning None; the psutil tree and the watchdog
(``grader.sandbox.tree``, ``grader.sandbox.portable``) do the work then.
"""

from __future__ import annotations

import ctypes
import os

JOB_OBJECT_LIMIT_ACTIVE_PROCESS = 0x0008
JOB_OBJECT_LIMIT_JOB_MEMORY = 0x0200
JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION = 0x0400  # a crash ends the worker, no error dialog waits
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
EXTENDED_LIMIT_INFORMATION = 9  # JobObjectExtendedLimitInformation


class _BasicLimits(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32), ("SchedulingClass", ctypes.c_uint32)]


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("ReadOperationCount", "WriteOperationCount",
                                                     "OtherOperationCount", "ReadTransferCount",
                                                     "WriteTransferCount", "OtherTransferCount")]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]


class WindowsJob:
    """One worker's job: ``assign`` the worker right after it starts, ``terminate`` to end all of it."""

    def __init__(self, kernel32, handle):
        self.kernel32, self.handle = kernel32, handle

    @classmethod
    def make(cls, *, memory_mb: int, max_processes: int) -> WindowsJob | None:
        """A job bounding memory and processes; None where this is not Windows or the kernel refuses."""
        if os.name != "nt":
            return None
        try:
            kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
            kernel32.CreateJobObjectW.restype = ctypes.c_void_p
            handle = kernel32.CreateJobObjectW(None, None)
            if not handle:
                return None
            limits = _ExtendedLimits()
            limits.BasicLimitInformation.LimitFlags = (JOB_OBJECT_LIMIT_JOB_MEMORY | JOB_OBJECT_LIMIT_ACTIVE_PROCESS
                                                       | JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
                                                       | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION)
            limits.BasicLimitInformation.ActiveProcessLimit = max_processes
            limits.JobMemoryLimit = memory_mb << 20
            if not kernel32.SetInformationJobObject(ctypes.c_void_p(handle), EXTENDED_LIMIT_INFORMATION,
                                                    ctypes.byref(limits), ctypes.sizeof(limits)):
                kernel32.CloseHandle(ctypes.c_void_p(handle))
                return None
            return cls(kernel32, handle)
        except (OSError, AttributeError):
            return None

    def assign(self, process) -> bool:
        """Put the started ``process`` (a ``subprocess.Popen``) in the job; False if the kernel refused."""
        try:
            return bool(self.kernel32.AssignProcessToJobObject(ctypes.c_void_p(self.handle),
                                                               ctypes.c_void_p(int(process._handle))))
        except (OSError, AttributeError, ValueError):
            return False

    def terminate(self) -> None:
        """End every process of the job, at once."""
        if self.handle:
            self.kernel32.TerminateJobObject(ctypes.c_void_p(self.handle), 1)

    def close(self) -> None:
        if self.handle:
            self.kernel32.CloseHandle(ctypes.c_void_p(self.handle))
            self.handle = None
