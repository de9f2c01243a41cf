"""Every exercise's student release, in both languages, names in its README only commands that work there.

Each release is built, installed alone in a fresh venv (tests/test_release.py's, nothing of this checkout on
its path), and every ``mha`` command of its English and Chinese README is run in it: on the stub as handed
out (a check fails, it is no usage error) and on the reference (every command succeeds).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import PROJECT
from grader.grading.assignment import ASSIGNMENTS
from test_release import make_venv_with_our_dependencies

pytestmark = pytest.mark.slow
EXERCISES = sorted(ASSIGNMENTS)
COMMAND = re.compile(r"`(mha [^`]+)`")  # a command: the word alone names the program


def readme_commands(text: str) -> list[str]:
    """The ``mha`` commands a README names in backticks, in order, each once (``mha`` alone is the program)."""
    return list(dict.fromkeys(match.group(1).strip() for match in COMMAND.finditer(text)))


def test_the_scan_finds_every_command_and_only_commands():
    text = "run `mha check` (or `mha check --function x`), then `mha drill`; `pip install .` and `mha` alone."
    assert readme_commands(text) == ["mha check", "mha check --function x", "mha drill"]


@pytest.fixture(scope="module", params=EXERCISES)
def installed(request, tmp_path_factory):
    """(assignment, the English release installed alone, its `mha`, a clean environment, both READMEs)."""
    from grader.authoring.release import build_student_release

    assignment = request.param
    root = tmp_path_factory.mktemp(f"readme-{assignment}")
    readmes = {}
    for lang in ("en", "zh"):
        folder = build_student_release(target=root / f"release-{lang}", assignment=assignment, lang=lang,
                                       archive=False).folder
        readmes[lang] = (folder / "README.md").read_text(encoding="utf-8")
    python = make_venv_with_our_dependencies(root / "venv")
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("wheel") else []  # as tests/test_release.py
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", *isolation, "--ignore-installed",
                              "--quiet", str(root / "release-en")], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "MHA_SOLUTIONS", "MHA_EXERCISES", "VIRTUAL_ENV", "MHA_CONFIG_DIR")}
    env |= {"HOME": str(root / "home"), "MHA_DATA_DIR": str(root / "data"), "MPLCONFIGDIR": str(root / "mpl")}
    return assignment, root / "release-en", root / "venv" / "bin" / "mha", env, readmes


def _run(installed, command: str, folder):
    _, _, mha, env, _ = installed
    words = shlex.split(command)
    done = subprocess.run([str(mha), *words[1:]], cwd=folder, env=env, input="", capture_output=True, text=True,
                          timeout=600)
    shown = f"{command!r} in {folder.name}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, shown
    return done, shown


def _student_copy(installed, tmp_path, source=None):
    """A copy of the release folder, where a student works: its stub, or ``source`` as the exercise's file."""
    assignment, release, _, _, _ = installed
    copy = tmp_path / "student"
    shutil.copytree(release, copy, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    if source is not None:
        shutil.copy(source, copy / "exercises" / f"{assignment}.py")
    return copy


def test_both_readmes_name_the_same_commands_and_only_this_exercise(installed):
    assignment, _, _, _, readmes = installed
    english, chinese = (readme_commands(readmes[lang]) for lang in ("en", "zh"))
    assert english and sorted(english) == sorted(chinese)
    functions = ASSIGNMENTS[assignment].functions
    for command in english:
        named = re.search(r"--function (\w+)", command)
        assert named is None or named.group(1) in functions, command
        assert "exercises/" not in command or f"exercises/{assignment}.py" in command, command


def test_every_readme_command_works_on_the_reference(installed, tmp_path):
    assignment, _, _, _, readmes = installed
    folder = _student_copy(installed, tmp_path, PROJECT / "solutions" / f"{assignment}.py")
    for command in readme_commands(readmes["en"] + readmes["zh"]):
        done, shown = _run(installed, command, folder)
        if "--unlock" in command:  # no answer given: the checks of what needs no question, or a sentence
            assert (done.returncode == 0 and "Every check passed" in done.stdout) or (
                done.returncode == 2 and "no function is unlocked yet" in done.stderr), shown
        else:
            assert done.returncode == 0, shown


def test_every_readme_check_finds_the_stub_and_fails_it(installed, tmp_path):
    """On the stub handed out, every check command the README names checks it: checks fail (exit 1), no
    command stops at finding the file or the exercise (exit 2)."""
    assignment, _, _, _, readmes = installed
    folder = _student_copy(installed, tmp_path)
    for command in readme_commands(readmes["en"]):
        if not command.startswith("mha check") or "--unlock" in command:
            continue
        done, shown = _run(installed, command, folder)
        assert done.returncode == 1, shown
