"""What a suite's checks assert, and how a failure is explained.

A failing check raises ``CheckFailure`` carrying bilingual messages, the
misconception it matched (a catalog id or a generic outcome), the function
where the mistake really is, and further mistakes the same values show.
Diagnosis tries, in order: the twins (what each catalogued mistake produces
on the same input, the cheapest and most exact test), the companion case
(the exercise's ``COMPANION`` rule: right on the same call with as many keys
as queries, wrong here, and what that shows in its own words), the
signature rules (the exercise's ``signatures.py``, see ``grader.grading.findings``:
what the mistake does to the values, however it was written), and only then a generic outcome. The
functions the failing call entered (as the worker recorded them) decide
whether a mistake of another function is to blame: only one the call entered.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from grader.content.catalog import load_catalog
from grader.content.messages import Message, TwinLabel, cell_label
from grader.grading import showing
from grader.grading.case import Case, Raised, same_as_each, same_value
from grader.grading.findings import Finding, alone_rule, companion_rule, explain, overflow_kind, quiet_overflow_kind
from grader.grading.reference import load_reference, reference_installed
from grader.sandbox.codec import ForeignObject
from grader.sandbox.endings import DID_NOT_RETURN, TIMEOUT

if TYPE_CHECKING:  # annotations only: diagnosis needs the sandbox's data, never the sandbox
    from grader.grading.student import StudentCode
    from grader.sandbox.client import CallError, CallOutcome


class CheckFailure(AssertionError):
    """A check that did not pass, with its explanation."""

    def __init__(self, *messages: Message, misconception: str | None = None,
                 root_cause: str | None = None, outcome: str = "failed", alternatives: tuple = (),
                 others: tuple = (), function: str | None = None, reached: tuple = (), detail: tuple = ()):
        super().__init__(messages[0].key if messages else "failed")
        self.messages = messages
        self.misconception = misconception
        self.root_cause = root_cause
        self.outcome = outcome
        # other mistakes that explain the same evidence: failures like this one, another root each
        self.alternatives = alternatives
        self.others = others  # further mistakes the values show, each by its own evidence (CheckFailure)
        self.function = function  # the function checked
        self.reached = reached  # the student's functions the failing call entered (worker's record)
        self.detail = detail  # the concrete case: sizes, expected against got
        # the other functions the failing call entered: one of them may hold a mistake charged to this one
        # (the call never entered the function the mistake belongs to, so some function it did enter does that
        # work itself); the runner moves it there when that function's own checks find the same mistake
        self.homes: tuple = ()
        self.case: Case | None = None  # the case whose call failed, when one did


    def _finding_parts(self) -> list[Message]:
        parts = list(self.messages)
        if self.root_cause and self.function and self.root_cause != self.function:
            parts.append(Message("root_cause", {"root": self.root_cause, "function": self.function}))
        for other in self.others:
            parts += other._finding_parts()
        return parts

    def __str__(self) -> str:  # what plain pytest prints: the same text as the grader's feedback
        from grader.i18n import resolve_language

        lang = resolve_language(None)
        named = f"[{self.misconception}] " if self.misconception else ""
        return "\n".join([named + " ".join(message.render(lang) for message in self._finding_parts()),
                          *(message.render(lang) for message in self.detail)])


def expect_value(student: StudentCode, case: Case):
    """The student's value for ``case``; raises CheckFailure unless it is right."""
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise _alone(case, student, failure_from_error(case.function, outcome, case, student=student))
    if same_value(outcome.value, case.expected):
        return outcome.value
    raise _alone(case, student, failure_from_value(case, outcome.value, student=student, reached=outcome.reached))


def _alone(case: Case, student: StudentCode, failure: CheckFailure) -> CheckFailure:
    """The exercise's ``ALONE`` rule (``grader.grading.findings.AloneRule``): the failing call made again
    with the callees it entered stood in for by right ones; a mistake of the checked function's own that
    this call shows is added to ``failure``. Nothing when the values already name one, when the call
    entered no callee, or when the function had its share of such calls. A call that raised before it
    entered any is judged by its companion's call (as many keys as queries) made so."""
    callees = alone_rule(case)
    if not callees or not case.names_mistakes or getattr(student, "alone", None) is None \
            or failure.outcome not in ("failed", "error") or not reference_installed(case.exercise) \
            or failure.messages and failure.messages[0].key == "worker_gone":
        return failure  # a student's own install holds no reference to stand in with
    catalog, own = load_catalog(), _short(case.function)
    named = {part.misconception for part in (failure, *failure.others)}
    tried = student.alone.setdefault(case.function, set())
    if tried is None or case.id in tried or len(tried) >= ALONE_RUNS or any(
            getattr(catalog.get(misconception), "function", None) == own for misconception in named):
        return failure
    entered = tuple((name, kind) for name, kind in callees if name in failure.reached)
    parts = []
    if entered:
        tried.add(case.id)
        outcome = student.stood_in(case, entered, _reference_answer(case))
        if outcome is not None and outcome.error is None and same_value(outcome.value, case.expected):
            student.alone[case.function] = None  # right alone: the mistakes are the callees'
        if outcome is None or outcome.error is None and same_value(outcome.value, case.expected):
            return failure
        parts = _lengths_alone(case, student, callees) if outcome.error is not None else []
        if not parts and outcome.stood_in:
            alone = failure_from_error(case.function, outcome, case) if outcome.error is not None else \
                failure_from_value(case, outcome.value, reached=outcome.reached)
            parts = [_shown_alone(case, outcome, part.misconception, *part.messages) for part in (alone, *alone.others)]
    elif failure.outcome == "error":
        tried.add(case.id)
        parts = _lengths_alone(case, student, callees)
    found = tuple(part for part in parts if getattr(catalog.get(part.misconception), "function", None) == own
                  and part.misconception not in named)
    if found:
        student.alone[case.function] = None  # its own mistake is named: no more such calls
        failure.others = (*failure.others, *found)
    return failure


ALONE_RUNS = 3  # cases a function is called on with stand-ins, per submission


def _lengths_alone(case: Case, student: StudentCode, callees: tuple) -> list[CheckFailure]:
    """The exercise's ``COMPANION`` rule with right callees, for a call that raises here (so too, when it
    was made so): its companion (as many keys as queries) right with the ``callees`` its own call entered
    stood in for takes the keys' length from the queries.
    A broken attention leaves the companion wrong as well, which hides that from the rule itself."""
    rule, companion = companion_rule(case), case.companion_case
    if rule is None or companion is None:
        return []
    callees = tuple((name, kind) for name, kind in callees if name in student.invoke(companion).reached)
    if not callees:
        return []
    there = student.stood_in(companion, callees, _reference_answer(companion))
    if there is None or there.error is not None or not there.stood_in or not same_value(there.value,
                                                                                        companion.expected):
        return []
    return [_shown_alone(case, there, rule.misconception, Message(*rule.evidence(case, companion)))]


def _shown_alone(case: Case, outcome, misconception: str, *messages: Message) -> CheckFailure:
    """A mistake of the checked function's own that the call with stand-ins (``outcome``) shows, told as such."""
    return CheckFailure(Message("alone", {"what": _what(case), "callees": ", ".join(outcome.stood_in)}), *messages,
                        misconception=misconception, function=case.function)


def _reference_answer(case: Case):
    """``answer(name, args)``: the reference's value of its function or method ``name`` on ``args`` (an
    instance of the case's class and sizes for a method); raises where there is no reference."""
    reference = load_reference(case.exercise)

    def answer(name: str, args: tuple):
        with np.errstate(all="ignore"):
            if case.class_name is not None and hasattr(getattr(reference, case.class_name), name):
                return getattr(getattr(reference, case.class_name)(*case.init), name)(*args)
            return getattr(reference, name)(*args)

    return answer


def expect_values(student: StudentCode, cases) -> None:
    """Every case must be right; of several failures the best explained one is raised, with the mistakes
    the others name and it does not.

    A check over several inputs fails on the first wrong one, but another one
    may show the mistake more clearly (a catalogued id rather than an exception),
    and two inputs may show two different mistakes (a row max without keepdims
    raises on a matrix, and the same code overflows on a single row).
    """
    failures = []
    for case in cases:
        try:
            expect_value(student, case)
        except CheckFailure as failure:
            failures.append(failure)
    if failures:
        best = min(failures, key=_unexplained)
        # a mistake named from a raise by the exercise's rules is shown by its values where another input shows
        # the same mistake in them (a fixed axis raises on a 1-D input and gives wrong rows on a matrix)
        if best.outcome == "error":
            best = next((failure for failure in failures
                         if failure.outcome != "error" and failure.misconception == best.misconception), best)
        # a mistake another reading of the same values gives (a twin that matched too) is no further mistake
        named = {part.misconception for part in (best, *best.others, *best.alternatives)}
        further = []
        for failure in failures:
            readings = {failure.misconception, *(part.misconception for part in failure.alternatives)}
            if failure is best or _unexplained(failure):
                continue
            if not readings & named:
                named.add(failure.misconception)
                further.append(failure)
                continue
            # its own mistake is named already; one it names beside it (two mistakes together) may not be
            for part in failure.others:
                if part.misconception not in named and not _unexplained(part):
                    named.add(part.misconception)
                    further.append(part)
        best.others = (*best.others, *further)
        raise best


def expect_raised(student: StudentCode, case: Case, error_type: str, refusal) -> None:
    """The call of ``case`` must raise ``error_type`` (an input it must refuse); otherwise the check fails
    with ``refusal(got)``, a Message saying what the call gave instead (``got``: the exception, or "a value").
    A hang, a crash or a stub is explained as any failed call is."""
    outcome = student.invoke(case)
    if outcome.error is not None and outcome.ended is None and outcome.error.type == error_type:
        return
    if outcome.error is not None and (outcome.ended is not None or outcome.error.type == "NotImplementedError"):
        raise failure_from_error(case.function, outcome, case, student=student)
    got = f"{outcome.error.type}: {outcome.error.message}" if outcome.error is not None else "a value"
    raise CheckFailure(refusal(got), function=case.function)


def _unexplained(failure: CheckFailure) -> int:
    from grader.results import UNEXPLAINED

    return failure.misconception in UNEXPLAINED or failure.misconception == "not-implemented"


def expect_unchanged(student: StudentCode, case: Case) -> None:
    """The call of ``case`` must leave its inputs as they were.

    Only a call that did its work counts: the value must have the expected
    structure and shapes, so an empty body that returns None earns nothing here.
    """
    outcome = student.invoke(case)
    failure = None
    if outcome.error is not None:
        failure = failure_from_error(case.function, outcome, case, student=student)
    elif not _same_structure(outcome.value, case.expected):
        failure = failure_from_value(case, outcome.value, student=student, reached=outcome.reached)
    if failure is not None:
        # a callee that breaks the call hides what it does to its inputs: the call with right callees shows it
        entered = tuple((name, kind) for name, kind in alone_rule(case) if name in failure.reached)
        alone = student.stood_in(case, entered, _reference_answer(case)) if entered and case.names_mistakes and \
            reference_installed(case.exercise) and hasattr(student, "stood_in") else None
        changed = _changed_argument(case, alone) if alone is not None and alone.error is None else None
        if changed is not None and case.mutation_id not in {part.misconception for part in (failure, *failure.others)}:
            failure.others = (*failure.others, _shown_alone(case, alone, case.mutation_id, Message(
                "mutated", {"function": case.function, "argument": changed})))
        raise failure
    changed = _changed_argument(case, outcome)
    if changed is not None:
        raise CheckFailure(Message("mutated", {"function": case.function, "argument": changed}),
                           misconception=case.mutation_id, function=case.function)


def _changed_argument(case: Case, outcome) -> str | None:
    """The name of the first array argument the call left changed (None: it changed none)."""
    names = case.argument_names or ()
    for position, (before, after) in enumerate(zip(case.args, outcome.args_after)):
        if not isinstance(before, np.ndarray):
            continue  # a number (a temperature, a k) cannot be changed in place
        if not isinstance(after, np.ndarray) or before.shape != after.shape or not np.array_equal(
                before, after, equal_nan=True):
            return names[position] if position < len(names) else f"#{position + 1}"
    return None


def _same_structure(got, expected) -> bool:
    if isinstance(expected, tuple):
        return isinstance(got, tuple) and len(got) == len(expected) and all(
            _same_structure(g, e) for g, e in zip(got, expected))
    if isinstance(expected, np.ndarray):
        return isinstance(got, np.ndarray) and got.shape == expected.shape
    return True


def did_not_return(outcome: CallOutcome) -> bool:
    """The call hung or ended its worker, as the trusted side saw it (never as an exception's name says)."""
    return outcome.ended in DID_NOT_RETURN


def is_missing(outcome: CallOutcome) -> bool:
    """The worker found no such function or class to call (its own word, which only this submission's
    feedback depends on)."""
    return outcome.error is not None and outcome.error.kind == "missing-name"


def failure_from_error(function: str, outcome: CallOutcome, case: Case | None = None, *,
                       student: StudentCode | None = None) -> CheckFailure:
    """Explain an exception raised by (or instead of) the student's call."""
    error: CallError = outcome.error
    reached = tuple(outcome.reached)
    if outcome.ended == TIMEOUT:  # only the trusted side names a hang: a student's class "Timeout" is theirs
        return CheckFailure(Message("timeout", {"function": function, "limit": _limit(error)}),
                            misconception="timeout", outcome="timeout", function=function, reached=reached)
    if outcome.ended is not None or error.kind in ("unencodable", "protocol"):
        return CheckFailure(Message("worker_gone", {"function": function, "reason": error.message}),
                            misconception="error", outcome="error", function=function, reached=reached)
    if error.kind == "missing-name":
        return CheckFailure(Message("missing_name", {"name": error.message.strip("'\"")}),
                            misconception="not-implemented", outcome="error", function=function, reached=reached)
    if error.type == "AttributeError" and error.line is None and case is not None and case.class_name \
            and f"attribute '{_short(function)}'" in error.message:
        # the grader's own lookup of the method failed: the class has no method of that name
        return CheckFailure(Message("missing_name", {"name": f"{case.class_name}.{_short(function)}"}),
                            misconception="not-implemented", outcome="error", function=function, reached=reached)
    if error.type == "NotImplementedError":
        inside = error.function
        message = Message("not_implemented_inside", {"function": inside, "caller": function}) \
            if inside and inside != _short(function) and inside != "__init__" \
            else Message("not_implemented", {"function": function})
        return CheckFailure(message, misconception="not-implemented", function=function, reached=reached)
    raised = Message("raised", {"function": function, "type": error.type, "message": error.message,
                                "location": _location(error)})
    detail = tuple(Message(*text) for text in (showing.input_sizes(case),) if text) if case else ()
    named = case is not None and case.names_mistakes
    raised_here = Raised(error.type, error.message)
    matches = _matching_twins(case, raised_here, student) if named else []
    if matches:
        failure = _best([_diagnosed(case, misconception, label, raised, reached) for misconception, label in matches],
                        case)
    else:
        findings = _companion_findings(case, student, raised_here) if named else []
        if findings:
            failure = _from_findings(case, findings, reached, first=Message("raised_sentence", raised.params))
        else:
            failure = CheckFailure(raised, misconception=_by_rules(case, error, reached, function) if named or case
                                   is None else "error", outcome="error", function=function)
    failure.reached, failure.detail, failure.case = reached, detail, case
    _set_homes(failure, case.function if case is not None else function, reached)
    return failure


def _set_homes(failure: CheckFailure, function: str, reached: tuple) -> None:
    homes = tuple(name for name in reached if name != _short(function))
    for part in (failure, *failure.alternatives, *failure.others):
        part.homes = homes


def failure_from_value(case: Case, got, *, student: StudentCode | None = None, reached: tuple = ()) -> CheckFailure:
    """Explain a value that differs from the expected one."""
    what = _what(case)
    reached = tuple(reached)
    matches = [_diagnosed(case, misconception, label, Message("matches_mistake", {"what": what, "label": TwinLabel(label)}),
                          reached)
               for misconception, label in (_matching_twins(case, got, student) if case.names_mistakes else ())]
    if matches:
        failure = _best(matches, case)
    else:
        findings = (_companion_findings(case, student, got) or explain(_rules_case(case, student), got)) \
            if case.names_mistakes else []
        failure = _from_findings(case, findings, reached) if findings else generic_failure(case, got)
        _rule_out_twins(case, student, findings)
        if case.overflow_ids and failure.misconception in case.overflow_ids:
            failure.misconception = _seen_overflow(case, student, failure.misconception, reached)
    failure.function, failure.reached = case.function, reached
    failure.detail = tuple(Message(*text) for text in showing.value_detail(case, got))
    failure.case = case
    _set_homes(failure, case.function, reached)
    return failure


def _matching_twins(case: Case, got, student: StudentCode | None) -> list[tuple[str, str]]:
    """``(misconception, label)`` of the twins whose value is ``got`` (or that raise as ``got``, a ``Raised``, does).

    A mistake shows the same way on every input, so the twins that matched
    this submission's earlier failure of the same function are run first
    (also when that failure raised):
    when one of them matches here too, the others (dozens of runs of the
    reference) are not run. Otherwise every twin is, and what matches becomes
    the function's hint.
    """
    hints = getattr(student, "twin_hints", None)
    hinted = hints.get(case.function) if hints is not None else None
    if hinted and not case.twins_ready:
        found = [(misconception, label) for misconception, label, value in case.twins_among(hinted)
                 if _same_outcome(got, value)]
        if found:
            return found
    ruled_out = getattr(student, "twins_ruled_out", None)
    if ruled_out and not hinted and not case.twins_ready and _size_pattern(case) in ruled_out:
        return []  # no twin explained this function's failure on these sizes: a mistake none of them makes
    twins = case.known_twins()
    found = [(misconception, label) for (misconception, label, _), same in zip(twins, _same_outcomes(got, [
        value for _, _, value in twins])) if same]
    if hints is not None and found:
        hints[case.function] = frozenset(found)
    return found


def _rules_case(case: Case, student: StudentCode | None) -> Case:
    """The case the signature rules see: without twins once they are ruled out for its function and sizes
    (a rule that reads the twins' values, such as a residual on top of a catalogued mistake, has none)."""
    ruled_out = getattr(student, "twins_ruled_out", None)
    if ruled_out and _size_pattern(case) in ruled_out and not case.twins_ready:
        return dataclasses.replace(case, twins=[])
    return case


def _size_pattern(case: Case) -> tuple:
    """``case``'s function and the pattern of its sizes: each array's shape and each whole number of its call
    (arguments, constructor, weights), a one kept as one and every other size by its order of first
    appearance; other values as they are. Cases of one pattern differ only in sizes no mistake can vanish on:
    one head, one key, as many keys as queries (a mistake may give the right value there) are other patterns."""
    labels: dict[int, int] = {}

    def size(n: int):
        return 1 if n == 1 else labels.setdefault(n, len(labels) + 2)

    def pattern(value):
        if isinstance(value, np.ndarray):
            return ("array", value.dtype.kind, tuple(size(n) for n in value.shape))
        if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
            return value
        if isinstance(value, (int, np.integer)):
            return ("int", size(int(value)))
        if isinstance(value, dict):
            return tuple((key, pattern(item)) for key, item in value.items())
        if isinstance(value, (tuple, list)):
            return tuple(pattern(item) for item in value)
        return type(value).__name__

    return (case.function, case.class_name, pattern(case.init), pattern(case.args), pattern(case.kwargs),
            pattern(case.weights), pattern(case.calls))


def _rule_out_twins(case: Case, student: StudentCode | None, findings: list) -> None:
    """After a failure of a case that names mistakes, explained by no twin and by no rule (every twin run on
    it, a rule given their values): on inputs of the same pattern of sizes (``_size_pattern``) the same
    code makes the same mistake, none the twins make alone or under another step, so later failures of
    that pattern are not run through every twin again (the 25 to 100 runs of the reference each would
    cost). Other sizes are tried afresh: with one head, a split that forgets its transpose is right and
    the other mistake's twin matches; the weights of one head are the twin's weights averaged over heads.
    A function whose failure a twin explained keeps its hint instead (``_matching_twins``)."""
    ruled_out = getattr(student, "twins_ruled_out", None)
    if ruled_out is None or findings or not case.names_mistakes or case.function in (student.twin_hints or {}):
        return
    if case.twins_ready:
        ruled_out.add(_size_pattern(case))


def _seen_overflow(case: Case, student: StudentCode | None, guessed: str, reached: tuple) -> str:
    """Which of the case's two overflow mistakes (no shift, one global shift) broke it: the one the function
    holding them (entered by this call) already showed exactly on its own checks, else ``guessed`` from which
    rows broke (rows that a broken step between, such as a head split, moved elsewhere)."""
    hints = getattr(student, "twin_hints", None) or {}
    entry = load_catalog().get(case.overflow_ids[0])
    home = entry.function if entry is not None else None
    if home is None or _root(home, case, reached) != home:
        return guessed  # the call never entered that function: the overflow is in the checked one's own code
    seen = {misconception for misconception, _ in hints.get(home, ())} & set(case.overflow_ids)
    return next(iter(seen)) if len(seen) == 1 else guessed


def _hinted_twins(case: Case, got, student: StudentCode | None) -> list[tuple[str, str]]:
    """Of the twins this submission's function already matched, those whose value is ``got`` here."""
    hints = getattr(student, "twin_hints", None)
    hinted = hints.get(case.function) if hints is not None else None
    return [(misconception, label) for misconception, label, value in case.twins_among(hinted)
            if _same_outcome(got, value)] if hinted else []


def _best(matches: list[CheckFailure], case: Case) -> CheckFailure:
    """A mistake in the function itself comes first; the runner may prefer an
    upstream one once it knows that the upstream function fails its own checks."""
    matches.sort(key=lambda failure: failure.root_cause != case.function)
    first = matches[0]
    first.alternatives = tuple(matches)
    return first


def _from_findings(case: Case, findings: list[Finding], reached: tuple, *,
                   first: Message | None = None) -> CheckFailure:
    """One failure for the signature findings: the checked function's own mistake first, the others after it."""
    ordered = sorted(findings, key=lambda finding: finding.function != case.function)
    failures = []
    for position, finding in enumerate(ordered):
        evidence = Message(*finding.evidence)
        messages = (first, evidence) if first is not None and position == 0 else (evidence,)
        root = _root(finding.function, case, reached)
        own = CheckFailure(*messages, misconception=_inline(finding.misconception, finding.function, root, case),
                           root_cause=root, function=case.function)
        others = [CheckFailure(*messages, misconception=_inline(misconception, function, _root(function, case, reached),
                                                                case),
                               root_cause=_root(function, case, reached), function=case.function)
                  for misconception, function in finding.alternatives]
        own.alternatives = (own, *others) if others else ()
        failures.append(own)
    primary = failures[0]
    primary.others = tuple(failures[1:])
    return primary


def _companion_findings(case: Case, student: StudentCode | None, here) -> list[Finding]:
    """Right on the same call with as many keys as queries (S = T), wrong here: the exercise's ``COMPANION`` rule.

    ``here`` is what the student's call gave on ``case`` (its value, or ``Raised``). The companion may be
    wrong too, by another mistake: when a twin gives exactly the companion's outcome there but not the
    student's here, that mistake alone does not explain this case, and the rest is the lengths (two
    mistakes, each named). Without such a twin, a call that raises here and returns there counts when the
    value returned there shows a mistake that has nothing to do with the lengths.
    """
    companion = case.companion_case
    rule = companion_rule(case) if companion is not None else None
    if rule is None or student is None:
        return []
    outcome = student.invoke(companion)
    there = Raised(outcome.error.type, outcome.error.message) if outcome.error is not None else outcome.value
    if outcome.error is not None and outcome.error.type in ("Timeout", "WorkerGone", "MissingName"):
        return []
    if not same_value(there, companion.expected):
        # a raise here is the common sign of the lengths: every twin is tried on the companion then; a wrong
        # value here, only the twins this function already matched (no run of the others on their account)
        explaining = set(_matching_twins(companion, there, student) if isinstance(here, Raised)
                         else _hinted_twins(companion, there, student))
        if explaining:
            differing = {(misconception, label): value for misconception, label, value in case.twins_among(explaining)}
            if any(_same_outcome(here, differing.get(key, case.expected)) or _raises_alike(
                    here, differing.get(key, case.expected), rule.alike_errors) for key in explaining):
                return []  # that mistake gives this case's value too: nothing is left for the lengths
            if not isinstance(here, Raised) and {misconception for misconception, _ in explaining} & {
                    finding.misconception for finding in explain(case, here)}:
                # the same mistake written another way (its own epsilon, float32): its twin shows it there, a
                # signature rule here, so it explains both calls and nothing is left for the lengths
                return []
        elif not isinstance(here, Raised) or isinstance(there, Raised):
            return []
        else:
            named = {finding.misconception for finding in explain(companion, there)}
            if not named or named & rule.length_like:
                return []
    upstream = ((rule.misconception, rule.upstream[case.function]),) if case.function in rule.upstream else ()
    return [Finding(rule.misconception, case.function, rule.evidence(case, companion),
                    alternatives=upstream + tuple(rule.stand_ins.get(case.function, ())))]


def _raises_alike(got, value, fragments: tuple) -> bool:
    """Both raise one kind of error (the same type, each message holding one of ``fragments``): the mistake
    the companion shows, written another way (an einsum or a broadcast product where its twin has a
    matmul), raises here as its twin does, in other words."""
    if not (isinstance(got, Raised) and isinstance(value, Raised) and got.type == value.type):
        return False
    return all(any(fragment in message.lower() for fragment in fragments) for message in (got.message, value.message))


def _same_outcomes(got, values: list) -> list[bool]:
    """``[_same_outcome(got, value) for value in values]``, the values compared at once (``same_as_each``)."""
    if isinstance(got, Raised):
        return [isinstance(value, Raised) and got == value for value in values]
    values_alike = [value for value in values if not isinstance(value, Raised)]
    alike = iter(same_as_each(got, values_alike))
    return [False if isinstance(value, Raised) else next(alike) for value in values]


def _same_outcome(got, value) -> bool:
    """The same value, or the same exception (type and message)."""
    if isinstance(got, Raised) or isinstance(value, Raised):
        return isinstance(got, Raised) and isinstance(value, Raised) and got == value
    return same_value(got, value)


def generic_failure(case: Case, got) -> CheckFailure:
    """A failure with no catalogued explanation: type, shape, NaN or numbers."""
    expected, what = case.expected, _what(case)
    legends = case.legend if case.legend is not None else "?"
    structure_mistake = case.structure_mistake if case.names_mistakes else None
    if structure_mistake and not isinstance(expected, tuple) and isinstance(got, tuple):
        # a tuple where the array alone was asked for: what the function returns is the structure mistake
        return CheckFailure(Message("wrong_type", {"what": what, "got": describe(got)}),
                            misconception=structure_mistake, function=case.function)
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            return CheckFailure(Message("wrong_tuple", {"what": what, "count": len(expected), "got": describe(got)}),
                                misconception=structure_mistake or "wrong-type", function=case.function)
        for position, (got_item, expected_item) in enumerate(zip(got, expected)):
            if not same_value(got_item, expected_item):
                part_what = f"{what}[{position}]"
                if expected_item is None or isinstance(expected_item, (bool, int, float, str)):
                    # a step that gives no array (a method returning None, a count): say what it should give
                    kind = "wrong-type" if type(got_item) is not type(expected_item) else "numeric-mismatch"
                    return CheckFailure(Message("wrong_item", {"what": part_what, "expected": repr(expected_item),
                                                               "got": describe(got_item)}),
                                        misconception=kind, function=case.function)
                failure = _compare_item(case, got_item, expected_item, part_what, position, structure_mistake)
                if structure_mistake and failure.misconception != structure_mistake:
                    # an item after it with axes left out or of size 1 is a mistake of its own, whatever this one's is
                    afters = [after for after in range(position + 1, len(expected))
                              if isinstance(expected[after], np.ndarray) and not same_value(got[after], expected[after])
                              and _picked_wrongly(got[after], expected[after])]
                    later = [_compare_item(case, got[after], expected[after], f"{what}[{after}]", after,
                                           structure_mistake) for after in afters]
                    failure.others = tuple(other for other in later if other.misconception == structure_mistake)[:1]
                return failure
    return _compare_array(case, got, expected, what, legends if isinstance(legends, str) else legends[0])


def _picked_wrongly(got, expected: np.ndarray) -> bool:
    """An array with axes left out, or of size 1 where the expected one has more (one head, or the heads
    averaged), or the expected axes in another order, each told apart by its size (the heads stacked ahead
    of the batch): what was picked to return is wrong. A size of another kind (the keys' length, a head
    count fixed in the code) is a mistake upstream of it."""
    shape = getattr(got, "shape", None)
    if shape is None or len(shape) > expected.ndim:
        return False
    if len(shape) == expected.ndim and shape != expected.shape and sorted(shape) == sorted(expected.shape) \
            and len(set(expected.shape)) == expected.ndim:
        return True
    return len(shape) < expected.ndim or all(got_size in (1, size) for got_size, size in zip(shape, expected.shape))


def _compare_item(case: Case, got_item, expected_item: np.ndarray, what: str, position: int,
                  structure_mistake: str | None) -> CheckFailure:
    """The failure of one array of a returned tuple; an item after the first of the wrong shape or type is the
    structure mistake."""
    legend = case.legend[position] if isinstance(case.legend, tuple) else (case.legend or "?")
    failure = _compare_array(case, got_item, expected_item, what, legend)
    if structure_mistake and position > 0 and failure.misconception in ("wrong-shape", "wrong-type"):
        failure.misconception = structure_mistake
    return failure


def _compare_array(case: Case, got, expected: np.ndarray, what: str, legend: str) -> CheckFailure:
    if not isinstance(got, np.ndarray):
        return CheckFailure(Message("wrong_type", {"what": what, "got": describe(got)}), misconception="wrong-type",
                            function=case.function)
    if got.shape != expected.shape:
        return CheckFailure(Message("wrong_shape", {"what": what, "got": got.shape, "expected": expected.shape,
                                                    "legend": legend}), misconception="wrong-shape",
                            function=case.function)
    got64 = got.astype(np.float64)
    if not np.isfinite(got64).all() and np.isfinite(expected).all():
        logits = (case.evidence or {}).get("logits", case.args[0])  # the scores, where the case knows them
        misconception = overflow_kind(np.asarray(logits, dtype=np.float64), got64, case.overflow_ids,
                                       expected) \
            if case.overflow_ids and case.names_mistakes else "numeric-mismatch"
        return CheckFailure(Message("non_finite", {"what": what}), misconception=misconception, function=case.function)
    if case.overflow_ids and case.names_mistakes and np.isfinite(expected).all():
        logits = (case.evidence or {}).get("logits", case.args[0])
        misconception = quiet_overflow_kind(np.asarray(logits, dtype=np.float64), got64, case.overflow_ids, expected)
        if misconception in case.overflow_ids:
            return CheckFailure(Message("wrong_where_logits_are_large", {"what": what}), misconception=misconception,
                                function=case.function)
    difference = np.abs(np.nan_to_num(got64 - expected, nan=np.inf))
    index = np.unravel_index(int(np.argmax(difference)), difference.shape) if difference.size else ()
    return CheckFailure(Message("mismatch", {"what": what, "difference": f"{float(difference.max(initial=0)):.3g}",
                                             "index": tuple(int(i) for i in index)}),
                        misconception="numeric-mismatch", function=case.function)


def _diagnosed(case: Case, misconception: str, label: str, first: Message, reached: tuple) -> CheckFailure:
    entry = load_catalog().get(misconception)
    function = entry.function if entry is not None and entry.function not in (None, "__init__") else case.function
    root = _root(function, case, reached)
    return CheckFailure(first, misconception=_inline(misconception, function, root, case), root_cause=root,
                        function=case.function)


def _inline(misconception: str, function: str, root: str, case: Case) -> str:
    """The id of ``function``'s mistake when it sits in the checked function's own code instead."""
    if root == function or root != case.function:
        return misconception
    return (case.inline_ids or {}).get(misconception, misconception)


def _root(function: str, case: Case, reached: tuple) -> str:
    """Where the mistake is: ``function``, unless the worker recorded that the call never entered it
    (then the checked function does that work itself, and the mistake is in its own code)."""
    if function == case.function or not reached or _short(function) in reached:
        return function
    return case.function


def _by_rules(case: Case | None, error: CallError, reached: tuple, function: str) -> str:
    """The first of the case's error rules that the exception matches, else the generic ``error``."""
    for rule in case.error_rules if case is not None else ():
        if rule.matches(error.message, error.source_line, type=error.type, reached=reached,
                        raised_in=error.function, function=function):
            return rule.misconception
    return "error"


def _short(function: str | None) -> str | None:
    return function.rpartition(".")[2] if function else function


def _what(case: Case) -> str:
    return case.call_text or f"{case.function}(...)"


def describe(value) -> str:
    if isinstance(value, ForeignObject):
        return value.description
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return type(value).__name__ if value is not None else "None"


def _location(error: CallError) -> Message | str:
    """Where in the student's file the error was raised, said in the reader's language ("" when unknown)."""
    if error.cell and error.line:
        return Message("cell_line", {"cell": cell_label(error.cell), "line": error.line})
    if error.cell:
        return Message("cell", {"cell": cell_label(error.cell)})
    return Message("line", {"line": error.line}) if error.line else ""


def _limit(error: CallError) -> str:
    return error.message
