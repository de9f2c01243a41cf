"""Seeds: hidden inputs drawn from a secret course key and the student id.

The key is made on first use and kept in the instructor's config folder
(``MHA_COURSE_KEY`` overrides it, e.g. in CI). A student cannot predict their
inputs, two students get different inputs, and grading one submission again
gives the same inputs.

An autograder bundle handed to a platform (``mha release --gradescope``)
carries ``assignment_key``, an HMAC of the course key and the assignment's
name, instead of the course key: a bundle that leaks gives away the seeds of
that assignment only, and the course key cannot be recovered from it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

import platformdirs

from grader.paths import overrides


def course_key_file() -> Path:
    base = overrides().config_dir or os.environ.get("MHA_CONFIG_DIR") or platformdirs.user_config_dir("mha-lab")
    return Path(base) / "course_key"


def course_key() -> str:
    """The secret course key: the one ``grader.paths.overridden`` gives, else MHA_COURSE_KEY, else the config
    file (made on first use)."""
    if overrides().course_key:
        return overrides().course_key
    if os.environ.get("MHA_COURSE_KEY"):
        return os.environ["MHA_COURSE_KEY"]
    path = course_key_file()
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    return key


def student_seed(student: str, *, key: str | None = None, purpose: str = "hidden") -> int:
    """A 63-bit seed for one student and one purpose."""
    material = f"{key if key is not None else course_key()}\0{purpose}\0{student}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big") >> 1


def derived_seed(seed: int, purpose: str) -> int:
    """A second 63-bit seed drawn from ``seed`` for another use (e.g. a graded run's public inputs)."""
    material = f"{seed}\0{purpose}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big") >> 1


def assignment_key(assignment: str, *, key: str | None = None) -> str:
    """The key of one assignment: HMAC-SHA256 of the course key and the assignment's name, in hex.

    Grading with it as the course key (``MHA_COURSE_KEY``) reproduces what a
    bundle made for ``assignment`` gives.
    """
    course = key if key is not None else course_key()
    return hmac.new(course.encode(), f"assignment\0{assignment}".encode(), hashlib.sha256).hexdigest()
