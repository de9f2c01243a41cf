"""How long `mha check` takes, against the floor of a Python process that only imports NumPy.

All run as whole processes, side by side in one run (round-robin, so load on
a shared machine falls on every command alike), on the public checks:

    python benchmarks/bench_check.py [--repeat 7] [--cold] [--pytest]

Commands, each timed ``--repeat`` times (the median counts), through the installed ``mha`` a student runs:

- the floor: ``python -c "import numpy"``;
- ``mha check`` on the reference (correct code) and on the reference with one
  catalogued mistake (``attention-no-scale``: every check that depends on the
  scale fails, with its diagnosis), and the same two with ``--function``
  (``softmax`` on correct code, ``scaled_dot_product_attention`` on the mistake);
  each twice: **warm**, answered by the user's warm check server (``grader.warm``:
  every check of a session after its first), and **cold**, with the server
  switched off (``MHA_CHECK_SERVER=off``: what the first check of a session
  costs, and every check where the server cannot run);
- with ``--portable``, correct code and one mistake with ``--isolation
  portable`` too (a fresh interpreter per worker), and both as on Windows: the
  import surface of Windows emulated (``tests/emulation/sitecustomize.py``, its
  named pipes as Unix sockets), so the portable worker is the sandbox, warm
  (answered by the relayed server's standby, ``grader.warm.standby``) and cold,
  as multiples of the floor under the same emulation (whose start-up every
  emulated process pays, and a real Windows does not);
- with ``--pytest``, plain pytest on the same public suite files, the
  submission imported into pytest's own process (``--mha-unsandboxed``).

``--no-reference`` times all of it as in the student release: no reference,
so no calibration (fixed limits).

Each command is run once before timing (the first warm one starts the server,
in a private runtime folder of the benchmark's own, ended at the end; the
benchmark fails unless the server answered every warm check timed); ``--cold``
also times one check with the cache folder emptied and no server. The cache
folder is a temporary one (``XDG_CACHE_HOME``), so the benchmark neither reads
nor leaves the user's own; bytecode is written (``PYTHONDONTWRITEBYTECODE`` is
dropped), as for an installed package. Goals (issue 24), for the warm checks:
correct code at most 2x the floor, one mistake at most 2.5x, the same with
``--function``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
PUBLIC = PROJECT / "grader" / "assignments" / "multihead_attention" / "public"
MISTAKE = ("/ np.sqrt(d_k)", "")  # attention-no-scale, as in generated_class.MISTAKES
# the goals hold for the checks a student waits on all evening: those the warm server answers
GOALS = {"correct (warm)": 2.0, "mistake (warm)": 2.5, "correct --function (warm)": 2.0,
         "mistake --function (warm)": 2.5, "correct (Windows, warm)": 2.0, "mistake (Windows, warm)": 2.5}
EMULATION = PROJECT / "tests" / "emulation" / "sitecustomize.py"


def wall_time(command: list[str], expect: int, env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def installed_mha() -> str:
    """The ``mha`` a student runs: the console script beside this interpreter."""
    found = shutil.which("mha", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("no installed `mha` beside this interpreter: pip install -e . first")
    return found


def commands(folder: Path, with_pytest: bool, portable: bool = False) -> dict[str, tuple[list[str], int, str]]:
    """name -> (command, expected exit status, which environment: floor, cold or warm)."""
    reference_text = REFERENCE.read_text(encoding="utf-8")
    if MISTAKE[0] not in reference_text:
        raise SystemExit("the reference no longer contains the text the benchmark's mistake replaces")
    buggy = folder / "multihead_attention.py"
    buggy.write_text(reference_text.replace(*MISTAKE, 1), encoding="utf-8")
    check = [installed_mha(), "check"]
    checks = {
        "correct": ([*check, str(REFERENCE)], 0),
        "mistake": ([*check, str(buggy)], 1),
        "correct --function": ([*check, str(REFERENCE), "--function", "softmax"], 0),
        "mistake --function": ([*check, str(buggy), "--function", "scaled_dot_product_attention"], 1),
    }
    chosen = {"floor": ([sys.executable, "-c", "import numpy"], 0, "floor")}
    for temperature in ("warm", "cold"):
        chosen.update({f"{name} ({temperature})": (command, expect, temperature)
                       for name, (command, expect) in checks.items()})
    if portable:
        chosen["correct --isolation portable"] = ([*check, str(REFERENCE), "--isolation", "portable"], 0, "cold")
        chosen["mistake --isolation portable"] = ([*check, str(buggy), "--isolation", "portable"], 1, "cold")
        # what every emulated process pays first (its sitecustomize imports psutil and platformdirs), which
        # a real Windows does not: the Windows rows are measured against this floor
        chosen["floor (Windows)"] = ([sys.executable, "-c", "import numpy"], 0, "windows-cold")
        for temperature in ("warm", "cold"):
            chosen[f"correct (Windows, {temperature})"] = ([*check, str(REFERENCE)], 0, f"windows-{temperature}")
            chosen[f"mistake (Windows, {temperature})"] = ([*check, str(buggy)], 1, f"windows-{temperature}")
    if with_pytest:
        chosen["plain pytest"] = ([sys.executable, "-m", "pytest", str(PUBLIC), "-q", "-p", "no:cacheprovider",
                                   "--submission", str(REFERENCE), "--mha-unsandboxed"], 0, "cold")
    return chosen


def end_servers(runtime: Path) -> None:
    """End the warm servers the benchmark started (their logs name their pids)."""
    for log in runtime.glob("check-*.log"):
        for pid in re.findall(r"^pid (\d+) listening", log.read_text(), re.M):
            try:
                if b"grader.warm." not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue  # ended already (idle), its pid perhaps another process's now
                os.kill(int(pid), signal.SIGTERM)
            except (ProcessLookupError, FileNotFoundError):
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pytest", action="store_true", help="also time plain pytest on the public suites")
    parser.add_argument("--cold", action="store_true",
                        help="also time one check with the cache folder emptied and no warm server")
    parser.add_argument("--portable", action="store_true", help="also time the checks with the portable worker")
    parser.add_argument("--no-reference", action="store_true", help="as in the student release: no reference")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mha-bench-check-") as scratch:
        folder = Path(scratch)
        cache, runtime = folder / "cache", folder / "run"
        runtime.mkdir(mode=0o700)
        env = {**os.environ, "XDG_CACHE_HOME": str(cache), "NO_COLOR": "1", "MHA_RUNTIME_DIR": str(runtime)}
        env.pop("MHA_CACHE_DIR", None)
        # an installed package has its bytecode compiled (pip does it at install; NumPy's, the floor's, is):
        # a shell that forbids writing it would have every run compile the grader afresh
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if options.no_reference:
            env["MHA_SOLUTIONS"] = str(folder / "no-solutions-here")
        environments = {"floor": env, "cold": {**env, "MHA_CHECK_SERVER": "off"},
                        "warm": {**env, "MHA_CHECK_SERVER": "on"}}
        windows = windows_environment(folder, env)
        environments.update({"windows-warm": {**windows, "MHA_CHECK_SERVER": "on"},
                             "windows-cold": {**windows, "MHA_CHECK_SERVER": "off"}})
        chosen = commands(folder, options.pytest, options.portable)
        try:
            cold = None
            if options.cold:
                shutil.rmtree(cache, ignore_errors=True)
                cold = wall_time(*chosen["correct (cold)"][:2], environments["cold"])
            for command, expect, kind in chosen.values():  # warm the file cache; the first warm check starts
                wall_time(command, expect, environments[kind])  # the server
            if not wait_listening(runtime, servers=1 + options.portable):
                raise SystemExit(f"no warm server started: {[p.read_text() for p in runtime.glob('*.log')]}")
            already = served_count(runtime)
            times: dict[str, list[float]] = {name: [] for name in chosen}
            for _ in range(options.repeat):
                for name, (command, expect, kind) in chosen.items():
                    times[name].append(wall_time(command, expect, environments[kind]))
            served = served_count(runtime) - already
        finally:
            end_servers(runtime)
    warm_runs = options.repeat * sum(kind.endswith("warm") for _, _, kind in chosen.values())
    if served != warm_runs:
        raise SystemExit(f"the warm server answered {served} of the {warm_runs} warm checks timed")
    medians = {name: statistics.median(spent) for name, spent in times.items()}
    floor = medians["floor"]
    print(f"medians of {options.repeat}, whole processes, side by side in one run")
    print("  warm: answered by the warm check server (every check of a session after its first);"
          " cold: no server (the first check)")
    label = 'python -c "import numpy" (floor)'
    print(f"  {label:<46} {floor:.3f} s")
    figures = {"repeat": options.repeat, "floor": floor, "medians": medians, "ratios": {}}
    for name, median in medians.items():
        if name == "floor":
            continue
        ratio = median / (medians["floor (Windows)"] if "Windows, " in name else floor)
        figures["ratios"][name] = ratio
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"  (goal <= {goal:g}x: {'met' if ratio <= goal else 'MISSED'})"
        shown = name if name in ("plain pytest", "floor (Windows)") else "mha check " + name
        against = " (Windows)" if "Windows, " in name else ""
        print(f"  {shown:<46} {median:.3f} s  {ratio:5.2f}x floor{against}{verdict}")
    if cold is not None:
        figures["cold"] = cold
        print(f"  {'mha check correct, first check, cache emptied':<46} {cold:.3f} s  {cold / floor:5.2f}x floor")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


def windows_environment(folder: Path, env: dict) -> dict:
    """``env`` with the import surface of Windows emulated (as tests/test_portable.py has it): the grader and
    its standby through ``sitecustomize``, the workers through a wrapper that removes the same surface."""
    wrapper = folder / "python-windows"
    wrapper.write_text(f'#!/bin/sh\ncase "$1" in\n  -c) exec "{sys.executable}" "{EMULATION}" "$@";;\n'
                       f'  *) exec "{sys.executable}" -I -S "{EMULATION}" "$@";;\nesac\n', encoding="utf-8")
    wrapper.chmod(0o755)
    pipes = folder / "pipes"
    pipes.mkdir(mode=0o700, exist_ok=True)
    return {**env, "PYTHONPATH": str(EMULATION.parent), "MHA_EMULATED_EXECUTABLE": str(wrapper),
            "MHA_EMULATED_PIPES": str(pipes), "MHA_ISOLATION": "auto"}


def served_count(runtime: Path) -> int:
    """How many checks the warm servers have answered (one line each in their logs)."""
    return sum(len(re.findall(r"^check \d+:", log.read_text(), re.M)) for log in runtime.glob("check-*.log"))


def wait_listening(runtime: Path, servers: int = 1, timeout: float = 60.0) -> bool:
    """Whether ``servers`` warm servers (one per log: the Linux one, the emulated Windows standby) listen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(" listening on " in log.read_text() for log in runtime.glob("check-*.log")) >= servers:
            return True
        time.sleep(0.1)
    return False


if __name__ == "__main__":
    main()
