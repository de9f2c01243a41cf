"""One error hierarchy; ``grader.cli`` turns it into exit codes in one place.

Exit codes: 0 everything passed (or a batch finished), 1 checks failed (or
``mha merge`` refused some folders and merged the rest), 2 usage or
configuration error.
"""


class MhaError(Exception):
    """Base of every error the grader reports to a user."""

    exit_code = 2


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
