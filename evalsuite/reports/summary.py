"""The terminal summary of a run: one table per benchmark, a row per engine x parameter."""

from __future__ import annotations

import os
from collections import defaultdict

from evalsuite.reports.results import read_results

MAX_METRICS = 6  # beyond these, see results.json


def summary_lines(results_path: str | os.PathLike[str]) -> list[str]:
    """Aligned text tables of a results.json: value ± half-interval and n per metric."""
    run = read_results(results_path)
    by_benchmark = defaultdict(list)
    for record in run.records:
        by_benchmark[record.benchmark].append(record)
    lines: list[str] = []
    for benchmark in sorted(by_benchmark):
        records = by_benchmark[benchmark]
        # Per-group aggregates (``metric[group]``) stay in results.json, out of this table.
        metrics = sorted({name for r in records for name in r.metrics if "[" not in name})
        shown = [m for m in metrics if not m.endswith("_output_rate")][:MAX_METRICS]
        shown += [m for m in metrics if m.endswith("_output_rate")]
        header = ["engine", "parameter", "n", "failed", *shown]
        rows = [header]
        for record in records:
            failed = sum(1 for s in record.samples if s.error)
            row = [record.engine, record.parameter, str(len(record.samples)), str(failed)]
            for name in shown:
                summary = record.metrics.get(name)
                missing = summary is None or summary.value is None
                row.append("-" if missing else f"{summary.value:.3f}")
            rows.append(row)
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines.append(f"{benchmark}:")
        for row in rows:
            cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            lines.append("  " + "  ".join(cells).rstrip())
    return lines
