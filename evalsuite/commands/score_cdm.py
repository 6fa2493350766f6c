"""``evalsuite score cdm --version 1.5|1.6 --pairs FILE.jsonl [--json] [--workers N]``: CDM, the
formula metric of OmniDocBench v1.5/v1.6, of formula pairs, exactly as that version's official
code computes it.

``FILE.jsonl`` holds one JSON object per line, ``{"id": ..., "gt": LATEX, "pred": LATEX}`` (ids
unique). Prints each pair's F1, recall and precision and their means; ``--json`` prints
``{"version", "pairs": {id: {"F1_score", "recall", "precision"}}}``. Renderings are cached
between runs by content and toolchain (``$EVALSUITE_CDM_CACHE``, else
``~/.cache/evalsuite/cdm``). Exit status 2 on bad input or a missing toolchain (the message
names the command that installs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalsuite.commands.arguments import add_workers_argument
from evalsuite.errors import DatasetFormatError, EvalsuiteError
from evalsuite.metrics.cdm import CDM_VERSIONS, cdm_scores
from evalsuite.metrics.cdm.common.toolchain import default_cache_dir
from evalsuite.textformat import echo, format_table


@dataclass(frozen=True)
class FormulaPair:
    """One line of a pairs file."""

    pair_id: str
    gt: str
    pred: str


def add_parser(benchmarks: argparse._SubParsersAction) -> None:
    """The ``cdm`` subcommand of ``evalsuite score``."""
    cdm = benchmarks.add_parser(
        "cdm", help="CDM of formula pairs, as OmniDocBench v1.5's or v1.6's official code",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cdm.add_argument("--version", required=True, choices=CDM_VERSIONS,
                     help="the OmniDocBench version whose CDM to compute")
    cdm.add_argument("--pairs", required=True, help='JSONL of {"id", "gt", "pred"}')
    cdm.add_argument("--json", action="store_true", help="print the results as JSON")
    add_workers_argument(cdm, "renderings at once")


def read_pairs(path: Path) -> list[FormulaPair]:
    """The pairs of a JSONL file, checked.

    Raises:
        DatasetFormatError: not UTF-8, a line that is not a JSON object with string ``id``,
            ``gt`` and ``pred``, a repeated id, or no pair at all (the message names the line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DatasetFormatError(f"{path} is not UTF-8 text (byte {error.start}); save it as "
                                 "UTF-8") from None
    pairs: list[FormulaPair] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetFormatError(f"{where}: not JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise DatasetFormatError(f'{where}: expected an object {{"id", "gt", "pred"}}')
        for key in ("id", "gt", "pred"):
            if not isinstance(row.get(key), str):
                raise DatasetFormatError(f"{where}: {key!r} must be a string")
        if row["id"] in seen:
            raise DatasetFormatError(f"{where}: id {row['id']!r} is repeated")
        seen.add(row["id"])
        pairs.append(FormulaPair(row["id"], row["gt"], row["pred"]))
    if not pairs:
        raise DatasetFormatError(f"{path} holds no pair")
    return pairs


def run_cdm(args: argparse.Namespace) -> int:
    try:
        pairs = read_pairs(Path(args.pairs))
        scores = cdm_scores([(pair.gt, pair.pred) for pair in pairs], version=args.version,
                            workers=args.workers, cache_dir=default_cache_dir())
    except (EvalsuiteError, OSError) as error:
        echo(f"error: {error}", file=sys.stderr)
        return 2
    results = {pair.pair_id: {"F1_score": score.F1_score, "recall": score.recall,
                              "precision": score.precision}
               for pair, score in zip(pairs, scores, strict=True)}
    if args.json:
        print(json.dumps({"version": args.version, "pairs": results}, ensure_ascii=False,
                         indent=1))
    else:
        echo(cdm_summary(args.version, results))
    return 0


def cdm_summary(version: str, results: dict[str, dict[str, float]]) -> str:
    """Each pair's figures, then their means."""
    keys = ("F1_score", "recall", "precision")
    rows: list[Sequence[str]] = [(pair_id, *(f"{figures[key]:.3f}" for key in keys))
                                 for pair_id, figures in results.items()]
    rows.append(("mean", *(f"{sum(f[key] for f in results.values()) / len(results):.3f}"
                           for key in keys)))
    return (f"CDM as OmniDocBench v{version}'s official code computes it: {len(results)} "
            f"pair(s)\n\n" + format_table(("pair", "F1", "recall", "precision"), rows,
                                          align="lrrr"))
