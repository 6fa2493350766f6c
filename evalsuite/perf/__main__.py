"""``python -m evalsuite.perf``: print the speed table; exit 1 if any case fails.

``python -m evalsuite.perf --serving`` measures serving instead (:mod:`evalsuite.perf.serving`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evalsuite.perf import collect_cases, run

CASE_MODULES = (
    "evalsuite.perf.text", "evalsuite.perf.boxes", "evalsuite.perf.tables", "evalsuite.perf.cdm"
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalsuite.perf", description=__doc__)
    parser.add_argument(
        "--serving",
        action="store_true",
        help="measure evalsuite serve's batching and the openai engine's client overhead",
    )
    if parser.parse_args(argv).serving:
        from evalsuite.perf.serving import run_serving

        return run_serving(sys.stdout)
    cases, unavailable = collect_cases(CASE_MODULES)
    return run(cases, unavailable, out=sys.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
