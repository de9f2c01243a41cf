"""What confined a worker, in one line: made from the worker's own ``hello``, with a warning for each layer
this machine lacks (raised once per process as a ``SandboxWarning``)."""

from __future__ import annotations

import contextlib
import functools
import re
import warnings

from grader.sandbox.isolation_texts import ISOLATION_TEXTS
from grader.sandbox.isolation_texts import say as _say
from grader.sandbox.worker.confinement import NOBODY

NAMESPACES = ("pid", "net", "ipc", "uts", "mount")


class SandboxWarning(UserWarning):
    """Part of the confinement is missing on this machine."""


_WARNED: set[str] = set()


def describe_isolation(hello: dict, *, lang: str = "en") -> str:
    """One line saying what confined the worker, from its own report, in ``lang``; warns once about what is missing.

    The worker's report is data: its known forms ("landlock ABI 7 (fs, net)", "cgroup per worker
    (v2 memory+pids)", "tmpfs of 64 MiB") are rendered in the reader's language, anything else as given.
    """
    if hello.get("portable"):  # the portable worker's own line: it is not the Linux sandbox
        from grader.sandbox.portable import describe_portable

        return describe_portable(hello, lang=lang)
    say = functools.partial(_say, lang=lang)
    parts = [_landlock(str(hello.get("landlock", "no landlock"))[:80], say)]
    namespaces = [str(name) for name in hello.get("namespaces", ()) if str(name) in NAMESPACES]
    if namespaces:
        parts.append(say("namespaces", names="/".join(namespaces)))
    grants = hello.get("grants") if isinstance(hello.get("grants"), dict) else {}
    where = say("separator").join(say("grant", name=str(name)[:20], folder=str(folder)[:120])
                                  for name, folder in list(grants.items())[:4])
    if hello.get("tree"):
        parts.append(say("tree_from", grants=where) if where else say("tree"))
    elif where:
        parts.append(say("reads", grants=where))
    if hello.get("cgroup"):
        parts.append(_cgroup(str(hello["cgroup"])[:80], say))
    if hello.get("memory_watched"):
        parts.append(say("memory_watched"))
    parts.append(say("rlimits"))
    if hello.get("session"):
        parts.append(say("session"))
    uid = hello.get("uid")
    parts.append(say("uid_nobody") if uid == NOBODY else say("uid_own", uid=uid) if hello.get("own_uid")
                 else say("uid", uid=uid))
    parts.append(say("scratch", scratch=_scratch(str(hello.get("scratch", "folder"))[:60], say)))
    missing: list[tuple[str, dict]] = []  # (text key, its parameters), said in English and in ``lang``
    if not str(hello.get("landlock", "")).startswith("landlock"):
        missing.append(("warn_no_landlock" if "net" in namespaces else "warn_no_landlock_network", {}))
    elif "net" not in str(hello.get("landlock")) and "net" not in namespaces:
        missing.append(("warn_no_tcp", {}))
    if uid == 0:
        missing.append(("warn_root", {}))
    if hello.get("memory_watched") or ("cgroup" in hello and not hello.get("cgroup")):
        reason = str(hello.get("cgroup_missing") or "")[:200]  # the worker's own diagnosis
        missing.append(("warn_no_cgroup", {"reason": reason} if reason else {}))
    elif "cpu_share" in hello and not hello.get("cpu_share"):
        reason = str(hello.get("cgroup_missing") or "")[:200]
        missing.append(("warn_no_cpu_share", {"reason": reason} if reason else {}))
    if hello.get("workers_apart") is False:
        missing.append(("warn_workers_together", {}))
    if "ipc" not in namespaces:
        missing.append(("warn_no_ipc", {}))
    if not hello.get("tree") and "unix" not in str(hello.get("landlock")):
        missing.append(("warn_no_tree", {}))
    said = []
    default_reason = {"warn_no_cgroup": "warn_cgroup_reason", "warn_no_cpu_share": "warn_cpu_reason"}
    for key, params in missing:
        if key in default_reason and not params:
            in_english, in_lang = ({"reason": _say(default_reason[key], lang=lang)} for lang in ("en", lang))
        else:
            in_english, in_lang = params, {name: worker_words(value, lang) for name, value in params.items()}
        said.append((_say(key, lang="en", **in_english), say(key, **in_lang)))
    said += [(str(text)[:200], worker_words(str(text)[:200], lang)) for text in hello.get("warnings", ())[:5]]
    for english, _ in said:
        if english not in _WARNED:
            _WARNED.add(english)
            warnings.warn(english, SandboxWarning, stacklevel=3)
    return say("separator").join(parts) + "".join(say("warning", text=text) for _, text in said)


def in_process_isolation(lang: str) -> str:
    """The isolation line of code run in the grading process itself (benchmarks only)."""
    return _say("in_process", lang=lang)


def _landlock(text: str, say) -> str:
    found = re.fullmatch(r"landlock ABI (\d+) \(([a-z, ]*)\)", text)
    if found:
        return say("landlock", abi=found.group(1), rights=say("list_separator").join(found.group(2).split(", ")))
    return say("no_landlock") if text == "no landlock" else text


def _cgroup(text: str, say) -> str:
    found = re.fullmatch(r"cgroup per worker \((.*)\)", text)
    if found:
        return say("cgroup", controllers=say("list_separator").join(found.group(1).split(", ")))
    return say("no_cgroup") if text == "no cgroup" else text


def _scratch(text: str, say) -> str:
    for key in ("scratch_tmpfs", "scratch_host"):
        found = _form(key).fullmatch(text)
        if found:
            return say(key, **found.groupdict())
    return say("scratch_folder") if text == "folder" else text


_WORKER_SAYS = ("reason_not_root", "reason_left_out", "reason_no_controller", "reason_not_delegated",
                "reason_cannot_make", "reason_unreadable", "worker_no_tree", "worker_uid_blocked", "worker_no_cgroup")


@functools.cache
def _form(key: str) -> re.Pattern:
    """The English text of ``key`` as a pattern, each placeholder a group (what the worker's words look like)."""
    pieces = re.split(r"\{(\w+)\}", ISOLATION_TEXTS.template(key, "en"))
    return re.compile("".join(re.escape(piece) if i % 2 == 0 else f"(?P<{piece}>.+?)"
                              for i, piece in enumerate(pieces)))


def worker_words(text: str, lang: str) -> str:
    """A worker's or fork server's report ("not root; no pids controller is mounted") in ``lang``.

    Each known form is said in ``lang`` with its operating-system part as given; an unknown one as given.
    """
    if lang == "en":
        return text
    said = []
    for piece in text.split("; "):
        for key in _WORKER_SAYS:
            found = _form(key).fullmatch(piece)
            if found:
                piece = _say(key, lang=lang, **found.groupdict())
                break
        said.append(piece)
    return "；".join(said)


@contextlib.contextmanager
def quiet_sandbox():
    """No ``SandboxWarning`` inside: what confined the code stays in the result's ``isolation`` (``--json``,
    ``--verbose``); a student checking their own code on their own machine is not grading a class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        yield
