"""pytest plugin: the ``mha`` marker that carries a check's points and function.

Registered through the ``pytest11`` entry point so that suites run under plain
pytest as well as under the grader's own runner.
"""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "mha(points=1, function=None, visibility='public', probes=()): a graded check of mha-lab",
    )
