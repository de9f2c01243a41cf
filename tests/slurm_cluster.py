"""A single-node Slurm cluster of Debian's packages (slurm-wlm, munge), private to one test, in a folder.

``SlurmCluster.start`` writes a munge key and a ``slurm.conf`` in the folder,
starts ``munged``, ``slurmctld`` and ``slurmd`` in the foreground on free
ports (nothing in /etc or /run is touched: ``SLURM_CONF`` points the client
commands at the folder's configuration), and waits until the node is idle;
``stop`` ends the three daemons it started, by their process ids. The node
claims 16 CPUs and 40 GB (``SlurmdParameters=config_overrides``) so the
shipped array job's ``--cpus-per-task=4 --mem=8G`` runs unchanged, its four
tasks at once, on a small machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "sinfo", "scancel")


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    absent = [name for name in DAEMONS + CLIENTS if shutil.which(name) is None
              and not Path("/usr/sbin", name).exists()]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their user and must start as root"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _program(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class SlurmCluster:
    folder: Path
    node: str = "mhanode"
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    def environment(self, base: dict) -> dict:
        return dict(base, SLURM_CONF=str(self.conf))

    def start(self, timeout: float = 60.0) -> SlurmCluster:
        folder = self.folder
        for name in ("munge", "state", "spool", "log"):
            (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / "munge").chmod(0o700)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        socket_path = folder / "munge" / "munge.socket"
        self._run([_program("munged"), "--foreground", "--force", f"--socket={socket_path}", f"--key-file={key}",
                   f"--pid-file={folder / 'munge' / 'munged.pid'}", f"--log-file={folder / 'log' / 'munged.log'}",
                   f"--seed-file={folder / 'munge' / 'seed'}"], "munged")
        self._wait(lambda: socket_path.exists(), timeout, "munged to open its socket")
        self.conf.write_text("\n".join([
            # slurmctld runs only on the host it is configured for: this one, by its short name
            "ClusterName=mhatest", f"SlurmctldHost={socket.gethostname().split('.')[0]}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={socket_path}", f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool'}", f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}", f"SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",  # no cgroup of its own in a container
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "SchedulerType=sched/backfill",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none", "ReturnToService=2", "SlurmdParameters=config_overrides",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs=16 RealMemory=40000 State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]), encoding="utf-8")
        self._run([_program("slurmctld"), "-D", "-f", str(self.conf)], "slurmctld")
        self._run([_program("slurmd"), "-D", "-f", str(self.conf), "-N", self.node], "slurmd")
        self._wait(self._idle, timeout, "the node to be idle")
        return self

    def _run(self, command: list[str], name: str) -> None:
        log = open(self.folder / "log" / f"{name}.out", "wb")
        self.processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                               env=self.environment(dict(os.environ))))
        log.close()

    def _idle(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                              env=self.environment(dict(os.environ)))
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{process.args[0]} ended ({process.returncode}) while waiting for {what}: "
                                       + self.logs())
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}: " + self.logs())
            time.sleep(0.2)

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}"
                         for path in sorted((self.folder / "log").glob("*")) if path.is_file())

    def stop(self) -> None:
        subprocess.run(["scancel", "--user=root"], capture_output=True, env=self.environment(dict(os.environ)))
        for process in reversed(self.processes):  # slurmd, slurmctld, then munged
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
