"""How a call ended when it did not come back: named by the trusted side alone (``CallOutcome.ended``).

Each is decided from what this side saw itself (a deadline it enforced, the
worker's end, a reply its codec refused, a stop it made), never from anything
the worker sends: a student's exception class called ``Timeout`` is only ever
the student's exception.
"""

TIMEOUT = "timeout"  # a deadline this side enforced passed (the call's own, or the submission's)
CRASH = "crash"  # the worker ended or broke the protocol
REFUSED = "refused"  # its reply came back but failed the codec's checks (a malformed tree, an odd array)
STOPPED = "stopped"  # it entered a function of ``stop_on``, as the worker announced it, and was ended there
UNAVAILABLE = "unavailable"  # no worker could make the call (the load failed, no restart was left)
ENDINGS = (TIMEOUT, CRASH, REFUSED, STOPPED, UNAVAILABLE)
DID_NOT_RETURN = (TIMEOUT, CRASH, STOPPED, UNAVAILABLE)  # no reply to judge, only how it ended
