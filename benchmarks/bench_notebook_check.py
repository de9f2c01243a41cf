"""How long the notebook's ``check(...)`` cell takes in a warm kernel.

    python benchmarks/bench_notebook_check.py [--repeat 7]

A real Jupyter kernel (``python3``, through jupyter_client) runs the
reference's code as a student's cell, then ``from grader import check``; the
first ``check()`` warms the kernel (the grader's imports, the fork server the
kernel's checks share, the calibration). Then each of these cells is run
``--repeat`` times, round-robin, timed from the request to the kernel's reply
(the HTML report included, as a student waits for it):

- ``check()`` on correct code;
- ``check("softmax")``;
- ``check()`` after a cell that redefines ``scaled_dot_product_attention``
  without its scale (one mistake, diagnosis included), and ``check()`` again
  after a cell that puts the right one back.

The goal (issue 24): each within 0.3 s. The cache folder is a temporary one.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
GOAL = 0.3
MISTAKE = ("/ np.sqrt(d_k)", "")  # attention-no-scale, as in generated_class.MISTAKES


def attention_cells() -> tuple[str, str]:
    """A cell redefining scaled_dot_product_attention with the mistake, and one putting the right one back."""
    sys.path.insert(0, str(REFERENCE.parent))
    import multihead_attention as reference

    right = inspect.getsource(reference.scaled_dot_product_attention)
    if MISTAKE[0] not in right:
        raise SystemExit("the reference's attention no longer contains the text the benchmark's mistake replaces")
    return "import numpy as np\n\n" + right.replace(*MISTAKE, 1), "import numpy as np\n\n" + right


def run_cell(client, code: str, timeout: float = 120.0) -> tuple[float, list[dict]]:
    """Seconds from the request to the reply, and the cell's output messages; SystemExit on an error."""
    started = time.perf_counter()
    outputs = []
    reply = client.execute_interactive(code, timeout=timeout, output_hook=outputs.append, store_history=True)
    elapsed = time.perf_counter() - started
    if reply["content"]["status"] != "ok":
        raise SystemExit(f"cell failed: {code!r}: {reply['content'].get('evalue')}")
    return elapsed, outputs


def shown_html(outputs: list[dict]) -> str:
    return "".join(message["content"].get("data", {}).get("text/html", "") for message in outputs
                   if message["msg_type"] in ("execute_result", "display_data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    from jupyter_client.manager import start_new_kernel

    broken, fixed = attention_cells()
    with tempfile.TemporaryDirectory(prefix="mha-bench-notebook-") as scratch:
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(scratch) / "cache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as bench_check.py: bytecode as an installed package has it
        manager, client = start_new_kernel(kernel_name="python3", cwd=scratch, env=env)
        try:
            run_cell(client, REFERENCE.read_text(encoding="utf-8"))
            run_cell(client, "from grader import check")
            first, _ = run_cell(client, "check()")
            cells = {"check() on correct code": [("check()", "Every check passed")],
                     'check("softmax")': [('check("softmax")', "Every check passed")],
                     "check() with one mistake": [(broken, None), ("check()", "attention-no-scale")],
                     "check() once it is put right": [(fixed, None), ("check()", "Every check passed")]}
            times: dict[str, list[float]] = {name: [] for name in cells}
            for _ in range(options.repeat):
                for name, steps in cells.items():
                    for code, expect in steps:
                        elapsed, outputs = run_cell(client, code)
                        if expect is not None:
                            html = shown_html(outputs)
                            if expect not in html:
                                raise SystemExit(f"{name}: the report does not show {expect!r}")
                            times[name].append(elapsed)
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    medians = {name: statistics.median(spent) for name, spent in times.items()}
    print(f"warm kernel, medians of {options.repeat}, request to reply (goal <= {GOAL:g} s)")
    print(f"  {'first check() of the kernel (cold, once)':<36} {first:.3f} s")
    for name, median in medians.items():
        print(f"  {name:<36} {median:.3f} s  ({'met' if median <= GOAL else 'MISSED'})")
    if options.json:
        options.json.write_text(json.dumps({"first": first, "medians": medians, "repeat": options.repeat},
                                           indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
