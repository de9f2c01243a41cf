"""The workers a grading process holds for a server live in that server handle's WorkerPool.

The worker reserved while one submission is graded serves the next one
opened with the same handle; a box given only an address keeps nothing
behind; a grading lane holds one handle per server for all its tasks and
settles it as it ends.
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from grader.batch import lanes
from grader.batch.settings import Task
from grader.sandbox.client import Limits, Sandbox, SandboxWarning, start_server
from grader.sandbox.link import ForkServer
from grader.sandbox.source import Cell, SubmissionSource

FAST = Limits(call_timeout=2.0, submission_timeout=20.0, max_restarts=1)


@pytest.fixture(scope="module")
def server():
    shared = start_server()
    yield shared
    shared.stop()


def opened(server, code: str = "x = 1") -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        box = Sandbox.open(source=SubmissionSource(cells=(Cell(textwrap.dedent(code), "s.py", "s.py"),),
                                                   mode="module"), limits=FAST, server=server)
    assert box.load_report.ok, box.load_report.error
    return box


def test_the_worker_reserved_during_one_submission_serves_the_next(server):
    if not server.info.get("spares", 1):
        pytest.skip("this server keeps no worker made ahead")
    with opened(server) as first:
        reserved = server.pool.reserved
        assert reserved is not None and reserved is not first.worker
    with opened(server) as second:
        assert second.worker is reserved  # asked for while the first was graded, used now
    server.pool.settle()
    assert server.pool.waiting == 0


def test_a_box_given_only_an_address_reserves_nothing_and_leaves_nothing(server):
    server.pool.release()
    with opened(server.address) as box:
        pid, scratch = box.worker.pid, box.scratch
        assert server.pool.reserved is None
    assert server.pool.reserved is None and server.pool.waiting == 0
    assert not scratch.exists() and not Path(f"/proc/{pid}").exists()  # settled as the box closed


class Connection:
    """A lane's end of the pipe: the tasks to hand out, then the end; what the lane sends back."""

    def __init__(self, tasks):
        self.tasks, self.sent = list(tasks) + [None], []

    def recv(self):
        return self.tasks.pop(0)

    def send(self, result):
        self.sent.append(result)


def test_a_lane_holds_one_handle_per_server_for_all_its_tasks():
    tasks = [Task(student=name, path=Path(f"{name}.py"), submission=f"{name}.py", run=None, server=address)
             for name, address in (("ann", "/tmp/a.sock"), ("bob", "/tmp/a.sock"), ("cem", "/tmp/b.sock"),
                                   ("dan", None))]
    handles = []
    servers: dict = {}
    connection = Connection(tasks)
    lanes._serve_tasks(connection, lambda task: handles.append(task.server) or task.student, servers)
    assert connection.sent == ["ann", "bob", "cem", "dan"]
    assert handles[0] is handles[1] is servers["/tmp/a.sock"] and isinstance(handles[0], ForkServer)
    assert handles[2] is servers["/tmp/b.sock"] is not handles[0] and handles[3] is None
    assert set(servers) == {"/tmp/a.sock", "/tmp/b.sock"}
