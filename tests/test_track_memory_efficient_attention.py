"""The memory-efficient attention exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""


def test_the_worker_measures_the_peak_a_call_allocates(tmp_path):
    from grader.sandbox.client import Sandbox

    submission = tmp_path / "allocate.py"
    submission.write_text("import numpy as np\n\ndef allocate(n):\n    return float(np.ones((n, n)).sum())\n")
    with Sandbox.open(path=submission) as box:
        small, large = box.call_measured("allocate", 100), box.call_measured("allocate", 1000)
        plain = box.call("allocate", 1000)
    assert small.peak_memory < 200_000 < 8_000_000 <= large.peak_memory < 9_000_000
    assert plain.peak_memory is None and plain.value == 1e6
