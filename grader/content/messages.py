"""Bilingual message templates of the checks (``content/messages.toml``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from grader.content.loader import load_bilingual
from grader.errors import ContentError
from grader.paths import ASSIGNMENTS_DIR, CONTENT_DIR

MESSAGES_FILE = CONTENT_DIR / "messages.toml"
CHECKS_NAME = "checks.toml"  # the check titles, in each exercise's folder
TWINS_NAME = "twins.toml"  # the twins' labels in both languages, in each exercise's folder


@dataclass(frozen=True)
class Message:
    """A message key and its parameters, rendered late in the reader's language."""

    key: str
    params: dict = field(default_factory=dict)

    def render(self, lang: str) -> str:
        if any(isinstance(value, Message) for value in self.params.values()):
            return render_parts((self.to_data(),), lang)  # a message inside another, in the same language
        return render(self.key, self.params, lang)

    def to_data(self) -> dict:
        """The message as JSON-ready data (``render_parts`` renders it in any language)."""
        return {"key": self.key, "params": {name: _plain(value) for name, value in self.params.items()}}


@dataclass(frozen=True)
class CheckName:
    """A check named inside a message: rendered as its title in the reader's language."""

    name: str

    def to_data(self) -> dict:
        return {"check": self.name}

    def __format__(self, spec: str) -> str:  # rendered straight from a Message: the English title
        return check_title(self.name, "en")


@dataclass(frozen=True)
class TwinLabel:
    """A buggy twin's label named inside a message ("no scaling"): rendered in the reader's language."""

    label: str

    def to_data(self) -> dict:
        return {"twin": self.label}

    def __format__(self, spec: str) -> str:
        return self.label


def _plain(value):
    """A parameter as JSON keeps it and ``format`` shows it: shapes and other tuples as their text."""
    if isinstance(value, (Message, CheckName, TwinLabel)):
        return value.to_data()
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return value
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # a NumPy scalar
        return value.item()
    return str(value)


def parts_of(*items) -> tuple[dict, ...]:
    """Message parts from ``Message`` objects and plain strings, in order."""
    return tuple(item.to_data() if isinstance(item, Message) else {"plain": str(item)} for item in items)


def render_parts(parts, lang: str) -> str:
    """Render message parts (see ``parts_of``) in ``lang``; nested messages in parameters too."""
    def nested(value):
        if isinstance(value, dict) and "parts" in value:
            return "".join(one(item) for item in value["parts"])
        if isinstance(value, dict) and ("key" in value or "plain" in value):
            return one(value)
        if isinstance(value, dict) and "check" in value:
            return check_title(str(value["check"]), lang)
        if isinstance(value, dict) and "twin" in value:
            return twin_label(str(value["twin"]), lang)
        return value

    def one(part) -> str:
        if "plain" in part:
            return part["plain"]
        params = {name: nested(value) for name, value in part.get("params", {}).items()}
        return render(part["key"], params, lang)
    return "".join(one(part) for part in parts)


def check_text(test, lang: str) -> str:
    """A check's message in ``lang`` (its stored text when the result has no message data)."""
    return render_parts(test.messages, lang) if test.messages else test.message


def case_text(test, lang: str) -> str:
    """A failed check's concrete case (sizes, where it differs, expected against got) in ``lang``."""
    return render_parts(test.case_messages, lang) if getattr(test, "case_messages", ()) else getattr(test, "case", "")


def error_text(result, lang: str) -> str:
    """Why a submission could not be loaded, in ``lang``."""
    return render_parts(result.error_messages, lang) if result.error_messages else (result.error or "")


def note_texts(result, lang: str) -> tuple[str, ...]:
    """A result's loading notes in ``lang``."""
    if result.note_messages and len(result.note_messages) == len(result.notes):
        return tuple(render_parts(parts, lang) for parts in result.note_messages)
    return tuple(result.notes)


@functools.cache
def templates() -> dict[str, dict[str, str]]:
    return load_bilingual(MESSAGES_FILE, "message")

def render(key: str, params: dict, lang: str) -> str:
    """Message ``key`` in ``lang``; its ``<key>_one`` form where English needs a singular ("1 check")."""
    if any(params.get(name) == 1 for name in ("count", "checks")) and f"{key}_one" in templates():
        key = f"{key}_one"
    try:
        texts = templates()[key]
    except KeyError:
        raise ContentError(f"{MESSAGES_FILE}: no message.{key}") from None
    try:
        return texts.get(lang, texts["en"]).format(**{name: _in(value, lang) for name, value in params.items()})
    except (KeyError, IndexError) as bad:
        raise ContentError(f"{MESSAGES_FILE}: message.{key} ({lang}) uses an unknown field {bad}") from None


def _in(value, lang: str):
    """A parameter as the reader of ``lang`` sees it: a check's title, a twin's label, a nested message."""
    if isinstance(value, CheckName):
        return check_title(value.name, lang)
    if isinstance(value, TwinLabel):
        return twin_label(value.label, lang)
    if isinstance(value, Message):
        return value.render(lang)
    return value


@functools.cache
def twin_labels() -> dict[str, dict[str, str]]:
    """Every twin label (its English form, as the exercise's Twin names it) -> its texts by language
    (each exercise folder's ``twins.toml``)."""
    from grader.content.loader import checked_pair, load_toml

    labels: dict[str, dict[str, str]] = {}
    for path in sorted(ASSIGNMENTS_DIR.glob(f"[!_]*/{TWINS_NAME}")):
        for index, entry in enumerate(load_toml(path).get("twin", [])):
            pair = checked_pair(entry, f"twin[{index}]", path)
            if labels.setdefault(pair["en"], pair) != pair:
                raise ContentError(f"{path}: twin[{index}] says {pair['en']!r} another way than another exercise")
    return labels


def cell_label(text: str | None):
    """A notebook cell as the worker names it ("cell 3"), said in the reader's language; other text as given."""
    found = re.fullmatch(r"cell (\d+)", text or "")
    return Message("cell_number", {"number": int(found.group(1))}) if found else (text or "")


def twin_label(label: str, lang: str) -> str:
    """A twin's label in ``lang`` (as given when it has no entry)."""
    return twin_labels().get(label, {}).get(lang) or label


@functools.cache
def check_titles() -> dict[str, dict[str, str]]:
    """The student-facing title of every check by test name (each exercise folder's ``checks.toml``)."""
    titles: dict[str, dict[str, str]] = {}
    for path in sorted(ASSIGNMENTS_DIR.glob(f"[!_]*/{CHECKS_NAME}")):
        for name, texts in load_bilingual(path, "check").items():
            if titles.get(name, texts) != texts:
                raise ContentError(f"{path}: check.{name} has another title in another exercise's {CHECKS_NAME}")
            titles[name] = texts
    return titles

def check_title(name: str, lang: str = "en") -> str:
    """``test_split_heads_shape`` -> its title in ``lang``, or ``split heads shape`` when it has none."""
    texts = check_titles().get(name)
    if texts:
        return texts.get(lang) or texts["en"]
    return name.removeprefix("test_").replace("_", " ")
