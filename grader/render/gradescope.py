"""One student's result as Gradescope's ``results.json`` (its autograder specification).

A renderer: it reads a ``SubmissionResult`` and computes no score. Each check becomes a test named by its title, numbered
``<function>.<check>``, with the check's message, its case (sizes, and for a
public check the expected-against-returned rows the terminal shows) and the
diagnosis of the mistake (title, explanation, hint) as its output, in
Markdown or HTML.
Public checks are ``visible``; hidden ones get ``hidden_visibility``
(``after_published`` unless told), so their results, and with them the total,
reach students only when the instructor allows. Text a student controls
(exception messages) is escaped for the chosen format.
"""

from __future__ import annotations

import html

from grader.content.catalog import load_catalog
from grader.content.loader import TextTable
from grader.content.messages import check_title, render_parts
from grader.paths import CONTENT_DIR
from grader.render.text_safety import html_text, markdown_code_block, markdown_inline
from grader.results import SubmissionResult, TestResult

OUTPUT_FORMATS = ("md", "html")  # of the tests' outputs
HIDDEN_VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")  # Gradescope's, for hidden checks
TEXTS_FILE = CONTENT_DIR / "platforms.toml"


PLATFORM_TEXTS = TextTable(TEXTS_FILE)  # the texts students read on the platforms
say = PLATFORM_TEXTS.say


def gradescope_results(result: SubmissionResult, *, lang: str = "en", output_format: str = "md",
                       hidden_visibility: str = "after_published", summary: str = "") -> dict:
    """Gradescope's results object for ``result``; ``summary`` is the top-level output students see at once."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}, got {output_format!r}")
    if hidden_visibility not in HIDDEN_VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {HIDDEN_VISIBILITIES}, got {hidden_visibility!r}")
    data = {"score": float(result.final), "execution_time": round(float(result.duration or 0.0), 3),
            "output": summary, "output_format": "md", "test_output_format": output_format,
            "test_name_format": "text", "stdout_visibility": "hidden", "tests": []}
    if result.status != "graded":
        data["tests"] = [{"name": say("load_title", lang), "number": "0", "score": 0.0, "max_score": result.max_score,
                          "status": "failed", "output": _block(result.error or "", output_format),
                          "output_format": output_format, "visibility": "visible"}]
    else:
        data["tests"] = _tests(result, lang=lang, output_format=output_format, hidden_visibility=hidden_visibility)
    if result.adjustments:
        data["tests"].append(_adjustment_test(result.adjustments, lang=lang, output_format=output_format))
    return data


def summary_of(result: SubmissionResult, *, graded_file: str | None, lang: str) -> str:
    """The top-level output (Markdown) students see at once: the file graded and the public checks' tally.

    Hidden checks are only counted, so their results show when their visibility allows.
    """
    tests = result.tests
    public = [test for test in tests if test.visibility != "hidden"]
    if graded_file is None:
        return say("gradescope_not_graded", lang, error=markdown_inline(result.error or ""))
    if result.status != "graded":
        return say("gradescope_load_error", lang, error=markdown_code_block(result.error or ""))
    summary = say("gradescope_summary", lang, file=markdown_inline(graded_file).replace("`", "'"), public=len(public),
                  passed=sum(test.outcome == "passed" for test in public))
    if len(tests) > len(public):
        summary += "\n\n" + say("gradescope_hidden", lang, hidden=len(tests) - len(public))
    if result.set_aside:
        shown = ", ".join(markdown_inline(str(name)).replace("`", "'") for name in result.set_aside)
        summary += "\n\n" + say("gradescope_set_aside", lang, files=shown)
    return summary


def _tests(result: SubmissionResult, *, lang: str, output_format: str, hidden_visibility: str) -> list[dict]:
    functions: dict[str, int] = {}
    counts: dict[str, int] = {}
    tests = []
    for test in result.tests:
        index = functions.setdefault(test.function, len(functions) + 1)
        counts[test.function] = counts.get(test.function, 0) + 1
        tests.append({
            "name": f"{test.function}: {check_title(test.name, lang)}",
            "number": f"{index}.{counts[test.function]}",
            "score": test.score,
            "max_score": test.max_score,
            "status": "passed" if test.outcome == "passed" else "failed",
            "output": _output(test, lang=lang, output_format=output_format),
            "output_format": output_format,
            "visibility": hidden_visibility if test.visibility == "hidden" else "visible",
            "tags": [tag for tag in (test.function, test.misconception) if tag],
        })
    return tests


def _output(test: TestResult, *, lang: str, output_format: str) -> str:
    """The check's message, then the diagnosis: what the mistake is, why it is wrong, a hint."""
    if test.outcome == "passed":
        return ""
    message = render_parts(test.messages, lang) if test.messages else test.message or ""
    parts = [_text(message, output_format)]
    case = render_parts(test.case_messages, lang) if test.case_messages else test.case or ""
    if case:  # sizes, and for a public check expected against returned: the rows the terminal shows
        parts.append(_block(case, output_format))
    entry = load_catalog().get(test.misconception or "")
    if entry is not None:
        title, why, hint = (entry.text(key, lang) for key in ("title", "explanation", "hint"))
        if output_format == "html":
            parts.append(f"<p><b>{html.escape(title)}</b> (<code>{html.escape(entry.id)}</code>)</p>"
                         f"<p>{html.escape(why)}</p><p><i>{say('hint', lang)}</i>: {html.escape(hint)}</p>")
        else:
            parts.append(f"**{_md(title)}** (`{entry.id}`)\n\n{_md(why)}\n\n*{say('hint', lang)}*: {_md(hint)}")
    return "\n\n".join(part for part in parts if part)


def _adjustment_test(adjustments, *, lang: str, output_format: str) -> dict:
    """Adjustments made after grading, as one informational test (its points are in the top-level score)."""
    lines = []
    for item in adjustments:
        waived = f" ({say('adjustment_waived', lang)})" if item.waived else ""
        lines.append(f"{item.kind} {item.change:+g}{waived}: {item.reason}")
    body = "\n".join(lines)
    return {"name": say("adjustments_title", lang), "number": "99", "status": "passed",
            "output": _block(body, output_format), "output_format": output_format, "visibility": "visible"}


def _md(text: str) -> str:
    """Text made inert in Markdown: no HTML."""
    return html.escape(text, quote=False)


def _text(text: str, output_format: str) -> str:
    """Student-controlled text (a message quoting their exception): inert in either format."""
    return f"<p>{html_text(text)}</p>" if output_format == "html" else markdown_inline(text)


def _block(text: str, output_format: str) -> str:
    if output_format == "html":
        return f"<pre>{html_text(text)}</pre>"
    return "```text\n" + markdown_code_block(text) + "\n```"
