"""One error hierarchy; ``grader.cli`` turns it into exit codes in one place.

Exit codes: 0 everything passed (or a batch finished), 1 checks failed (or
``mha merge`` refused some folders and merged the rest), 2 usage or
configuration error.
"""


class MhaError(Exception):
    """Base of every error the grader reports to a user.

    ``texts`` holds the message in each language where it has been written in both (``usage_error``);
    ``str(error)`` is the English one.
    """

    exit_code = 2

    def __init__(self, *args, texts: dict[str, str] | None = None) -> None:
        super().__init__(*(args or ((texts or {}).get("en", ""),)))
        self.texts = dict(texts or {})

    def in_language(self, lang: str) -> str:
        """The message in ``lang`` when it was written in that language, else as raised."""
        return self.texts.get(lang) or str(self)


class UsageError(MhaError):
    """The command line or a file named on it is wrong; the message says what to type."""


class ConfigError(MhaError):
    """A configuration value is invalid; the message names where it came from."""


class ContentError(MhaError):
    """A content file (catalog, questions, translations) is malformed; names file and key."""


class ChecksFailed(MhaError):
    """Some checks failed; the report has already been printed."""

    exit_code = 1


class ShardsRefused(MhaError):
    """``mha merge`` refused some folders (each named already) and merged the others."""

    exit_code = 1
