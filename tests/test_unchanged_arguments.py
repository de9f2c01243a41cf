"""A worker says which positional arguments a call left exactly as they came (``{"__unchanged__": true}``)
instead of sending their bytes back; the trusted side puts a plain copy of its own array in their place. Every
change a call makes in place, however small, still comes back as the worker's bytes."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

from grader.sandbox.client import start_server
from grader.sandbox.codec import BadReply, decode_arguments_after, encode_request
from grader.sandbox.worker import worker_main
from test_worker_pool import opened as open_box  # a box of the code given, on a shared server

CODE = """
import numpy as np

def keeps(x, y):
    return float(x.sum())

def bumps(x, y):
    x[0, 0] += 1
    return None

def rewrites(x, y):
    x[...] = x.copy()  # the same bytes written over themselves
    return None

def negates_zero(x, y):
    x[x == 0] = -0.0  # equal as numbers, not as bytes
    return None

def reshapes(x, y):
    x.shape = (x.size,)
    return None
"""


@pytest.fixture(scope="module")
def box():
    if not sys.platform.startswith("linux"):
        pytest.skip("the fork server is Linux's")
    server = start_server()
    opened = open_box(server, CODE)
    yield opened
    opened.close()
    server.stop()


def arguments():
    x = np.array([[0.0, 1.5], [np.nan, -2.0]])
    return x, 3


@pytest.mark.parametrize("batched", [False, True])
def test_arguments_come_back_as_the_call_left_them(box, batched):
    def outcome(function):
        x, y = arguments()
        if batched:
            return box.call_batch([({"function": function}, (x, y), {})])[0], x
        return box.call(function, x, y), x

    for function in ("keeps", "rewrites"):
        got, sent = outcome(function)
        assert got.ok, got.error
        after = got.args_after[0]
        assert type(after) is np.ndarray and after is not sent and after.tobytes() == sent.tobytes()
        assert after.dtype == sent.dtype and after.shape == sent.shape and after.flags.writeable
        assert got.args_after[1] == 3
    got, sent = outcome("bumps")
    assert got.args_after[0][0, 0] == 1.0 and sent[0, 0] == 0.0
    got, sent = outcome("negates_zero")
    assert np.signbit(got.args_after[0][0, 0]) and not np.signbit(sent[0, 0])
    got, sent = outcome("reshapes")
    assert got.args_after[0].shape == (4,) and sent.shape == (2, 2)


def serve(function: str, x) -> dict:
    """One call through the worker's own code, in this process (trusted code only): its reply."""
    worker = worker_main.Worker(np)
    cells = [json.dumps([["w.py", "w.py"]]).encode(), textwrap.dedent(CODE).encode()]
    assert worker.load({"mode": "module"}, cells)["ok"]
    blobs: list[bytes] = []
    request = {"target": {"function": function}, "args": encode_request([x, 3], blobs), "kwargs": {}}
    reply, _ = worker.call(request, blobs)
    return reply


def test_the_worker_sends_no_bytes_for_an_argument_left_unchanged():
    x, _ = arguments()
    assert serve("keeps", x)["args_after"] == [{"__unchanged__": True}, 3]
    assert serve("rewrites", x)["args_after"][0] == {"__unchanged__": True}
    for function in ("bumps", "negates_zero", "reshapes"):
        assert serve(function, x)["args_after"][0] == {"__array__": 0}, function


def test_a_claim_of_an_unchanged_argument_is_checked_against_what_was_sent():
    x = np.arange(4.0)
    kept = decode_arguments_after([{"__unchanged__": True}, 2], [], 1 << 20, (x, 2))
    assert kept[0] is not x and kept[0].tobytes() == x.tobytes() and kept[1] == 2
    for items, sent in [([{"__unchanged__": True}], ()),  # no such argument
                        ([5, {"__unchanged__": True}], (x, 5)),  # that argument was a number
                        ([{"__unchanged__": 1}], (x,)),  # not the marker
                        ([{"__unchanged__": True, "__array__": 0}], (x,)),
                        ({"__unchanged__": True}, (x,))]:  # not a list
        with pytest.raises(BadReply):
            decode_arguments_after(items, [], 1 << 20, sent)
