"""The terminal summary of a run: per benchmark a row per engine x data x parameter x gated
metric with value, golden, delta, status and n, and the record's failed samples (``errors``),
then the samples its scorer explained as failed (olmOCR-bench's failed tests, with why); then
per engine how many metrics were gated on how many samples, and the run's model calls.
Numbers to 4 significant digits. A table wider than the terminal is split: engine, data and
parameter on a line of their own above a table of their metrics."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Sequence

from evalsuite.records.metadata import ENDPOINT_COUNTS, TOKEN_USAGE
from evalsuite.records.model import BenchmarkRecord
from evalsuite.records.results import RunResults
from evalsuite.textformat import MISSING, format_table, shorten, significant

STATUS_LABELS = {
    "ok": "ok",
    "improved": "improved",
    "regressed": "REGRESSED",
    "no golden": "no golden",
    "no samples": "NO SAMPLES",
    "not gated": "not gated",
    "not measured": "not measured",
    "golden set": "golden set",
}
FAILURES_SHOWN = 10
"""Explained sample failures listed per record in the terminal (all are in the dashboard)."""
GATED_STATUSES = ("ok", "improved", "regressed")
"""Statuses of a metric that was compared with its golden value."""


def summary_lines(run: RunResults, width: int = 100) -> list[str]:
    """The summary tables of ``run``, each no wider than ``width`` where the data allows: a
    table too wide for it is split into one per engine x data x parameter, named on a line of
    its own with its errors (see :func:`_narrow`); the per-engine lines wrap."""
    by_benchmark = defaultdict(list)
    for record in run.records:
        by_benchmark[record.benchmark].append(record)
    lines: list[str] = []
    for benchmark, records in by_benchmark.items():
        rows = []
        for record in records:
            errors = sum(1 for s in record.samples if s.error)
            gates = record.params.get("gates", {})
            first = True
            for metric, gate in gates.items():
                summary = record.metrics.get(metric)
                value = None if summary is None else summary.value
                head = [record.engine, record.data, record.parameter] if first else ["", "", ""]
                rows.append([
                    *head,
                    metric,
                    significant(value),
                    significant(gate.get("golden")),
                    significant(gate.get("delta"), signed=True),
                    STATUS_LABELS.get(gate.get("status"), str(gate.get("status"))),
                    str(summary.n if summary else 0),
                    str(errors) if first else "",
                ])
                first = False
        headers = ["engine", "data", "parameter", "metric", "value", "golden", "delta", "status",
                   "n", "errors"]
        table = format_table(headers, rows, align="llllrrrlrr", indent="  ")
        if max((len(line) for line in table.splitlines()), default=0) > width:
            table = _narrow(headers, rows, width)
        lines.append(f"{benchmark}:")
        lines.extend(table.splitlines())
        for record in records:
            shard = record.params.get("shard")
            if isinstance(shard, dict):
                lines.append(f"  {record.engine} · {record.data} · {record.parameter}: shard "
                             f"{shard['index']}/{shard['count']}, {len(record.samples)} of "
                             f"{shard['total']} samples, gated once `evalsuite merge` joins "
                             "the shards")
            for note in record.params.get("notes", ()):
                lines.extend(textwrap.wrap(
                    f"note ({record.engine} · {record.data}): {note}", width,
                    initial_indent="  ", subsequent_indent="    "))
            lines.extend(explained_failures(record, width))
    lines.extend(endpoint_lines(run, width))
    lines.extend(usage_lines(run, width))
    for line in gated_lines(run):
        lines.extend(textwrap.wrap(line, width, subsequent_indent="  ") or [line])
    return lines


def endpoint_lines(run: RunResults, width: int) -> list[str]:
    """How a served engine's requests spread over its servers, one line per engine that had
    more than one: each URL with its requests sent and, where any, failed."""
    lines = []
    for label, details in sorted(run.metadata.engine_details.items()):
        counts = details.get(ENDPOINT_COUNTS) or {}
        if len(counts) < 2:
            continue
        parts = [
            f"{url} {values.get('requests', 0)}"
            + (f" ({values['failed']} failed)" if values.get("failed") else "")
            for url, values in counts.items()
        ]
        lines.extend(textwrap.wrap(f"{label} requests by server: {' · '.join(parts)}", width,
                                   initial_indent="  ", subsequent_indent="    "))
    return lines


def usage_lines(run: RunResults, width: int) -> list[str]:
    """What each priced engine (an API model's) used: its prompt and completion tokens, their
    cost at its prices, and the requests its provider refused for the rate limit; one line per
    engine with prices or refusals."""
    lines = []
    for label, details in sorted(run.metadata.engine_details.items()):
        usage = details.get(TOKEN_USAGE)
        if not usage or ("cost_usd" not in usage and not usage.get("rate_limited")):
            continue
        text = (f"{label} tokens: {usage['prompt_tokens']:,} prompt + "
                f"{usage['completion_tokens']:,} completion")
        if "cost_usd" in usage:
            prices = details["token_prices"]
            text += (f" = ${usage['cost_usd']:,.4f} (USD per million tokens: "
                     f"{prices['input_usd_per_million']:g} in, "
                     f"{prices['output_usd_per_million']:g} out)")
        if usage.get("rate_limited"):
            text += f"; {usage['rate_limited']} requests refused for the rate limit (HTTP 429)"
        lines.extend(textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="    "))
    return lines


def explained_failures(
    record: BenchmarkRecord, width: int, limit: int = FAILURES_SHOWN
) -> list[str]:
    """The samples a record's scorer explained as failed (``explain["why"]``, e.g. olmOCR-bench
    tests with the official explanation), the first ``limit`` of them, one line each: id,
    page, why. Nothing for records without such samples."""
    failed = [s for s in record.samples if "why" in s.details.get("explain", {})]
    if not failed:
        return []
    lines = [f"  {record.engine} · {record.data} · {record.parameter}: {len(failed)} of "
             f"{len(record.samples)} failed:"]
    for sample in failed[:limit]:
        page = sample.details.get("page")
        head = f"    {sample.sample_id}" + (f" ({page})" if page else "") + ": "
        lines.append(head + shorten(str(sample.details["explain"]["why"]),
                                    max(20, width - len(head))))
    if len(failed) > limit:
        lines.append(f"    … {len(failed) - limit} more in results.json and the dashboard")
    return lines


def _narrow(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """The table split into one per engine x data x parameter: those three and the errors on a
    line of their own (wrapped at ``width``), then a table of their metrics."""
    out: list[str] = []
    body: list[Sequence[str]] = []

    def flush() -> None:
        if body:
            out.append(format_table(headers[3:-1], body, align="lrrrlr", indent="    "))
            body.clear()

    for row in rows:
        if row[0]:
            flush()
            out.extend(_joined([*row[:3], f"{headers[-1]} {row[-1]}"], width))
        body.append(row[3:-1])
    flush()
    return "\n".join(out)


def _joined(pieces: Sequence[str], width: int) -> list[str]:
    """``pieces`` joined by `` · `` on lines of at most ``width`` (a piece too long for one
    line keeps its own); continuation lines start with ``·``."""
    lines = ["  " + pieces[0]]
    for piece in pieces[1:]:
        if len(lines[-1]) + 3 + len(piece) <= width:
            lines[-1] += " · " + piece
        else:
            lines.append("    · " + piece)
    return lines


def gated_lines(run: RunResults) -> list[str]:
    """Per engine: metrics gated, how they fared, samples behind them; then model calls."""
    per_engine: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in run.records:
        counts = per_engine[record.engine]
        counts["samples"] += len(record.samples)
        counts["errors"] += sum(1 for s in record.samples if s.error)
        for gate in record.params.get("gates", {}).values():
            status = gate.get("status")
            counts["gated"] += status in GATED_STATUSES
            counts[status] += 1
    lines = []
    for engine, counts in sorted(per_engine.items()):
        statuses = ", ".join(
            f"{counts[status]} {STATUS_LABELS[status]}"
            for status in STATUS_LABELS
            if counts.get(status)
        )
        lines.append(
            f"{engine}: {counts['gated']} metrics gated on {counts['samples']} samples"
            f" ({statuses or 'no gate'}; {counts['errors']} sample errors)"
        )
    calls = run.metadata.model_calls
    by_mode: dict[str, int] = defaultdict(int)
    for record in run.records:
        for mode, count in record.params.get("model_calls_by_mode", {}).items():
            by_mode[mode] += count
    per_mode = ", ".join(f"{mode} {count}" for mode, count in sorted(by_mode.items()) if count)
    total = MISSING if calls is None else calls
    lines.append(f"model calls: {total}" + (f" ({per_mode})" if per_mode else ""))
    return lines


def gated_count(run: RunResults) -> int:
    """How many metrics of the run were compared with a golden value."""
    return sum(
        gate.get("status") in GATED_STATUSES
        for record in run.records
        for gate in record.params.get("gates", {}).values()
    )
