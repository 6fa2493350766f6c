"""``python -m evalsuite.perf``: print the speed table; exit 1 if any case fails."""

from __future__ import annotations

import sys

from evalsuite.perf import collect_cases, run

CASE_MODULES = ("evalsuite.perf.text", "evalsuite.perf.boxes", "evalsuite.perf.tables")


def main() -> int:
    cases, unavailable = collect_cases(CASE_MODULES)
    return run(cases, unavailable, out=sys.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
