"""Ranking several OCR models' outputs against a ground truth, for ``evalsuite compare DIR``
(:mod:`evalsuite.commands.compare`).

DIR is in one of two layouts (:func:`detect_layout`; the run says which it read):

- ``gt.txt`` and ``<model>_out.txt`` files (the OCR Metrics Evaluator's batch upload), or a
  folder of such folders, one per document;
- a ground-truth folder (``gt/``, ``gts/``, ``ground_truth/`` or ``groundtruth/``) of
  ``<document>.txt`` / ``.md`` files and one folder per model holding the same file stems.

Each output is scored with
:func:`evalsuite.metrics.word_metrics` (precision, recall, F1, CRR; the words options apply),
:func:`evalsuite.metrics.edit_precision` on the raw texts and
:func:`evalsuite.metrics.order_metrics` (reading order, Biblicus's normalisation); a model's
score is the mean over the documents it has an output for. Models are ranked by word F1, then
CRR. Model names that differ only in case or punctuation (``qwen2.5`` and ``qwen2_5``) are one
model. Empty outputs and degenerate ones (the benchmarks' repetition rule,
:func:`evalsuite.metrics.repetition.is_degenerate`) are flagged per model and document; their
shares are ``empty_output_rate`` and ``degenerate_output_rate``. The ranking renders as text, CSV
and HTML (ranking with medals, per-document scores, word drill-down).
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from evalsuite.metrics import edit_precision, order_metrics, word_metrics
from evalsuite.metrics.repetition import DEFAULT_MAX_REPEATS, DEFAULT_MIN_WORDS
from evalsuite.reports.charts import slug
from evalsuite.reports.html import Cell, Column, DrillItem, drilldown, ranked_table, render_page
from evalsuite.reports.wordalign import align_words
from evalsuite.runner import DEGENERATE_OUTPUT, EMPTY_OUTPUT, output_health
from evalsuite.textformat import format_table, significant

GROUND_TRUTH = "gt.txt"
OUTPUT_SUFFIX = "_out.txt"
GROUND_TRUTH_FOLDERS = ("gt", "gts", "ground_truth", "groundtruth")
TEXT_SUFFIXES = (".txt", ".md")
PER_DOCUMENT = "gt.txt + <model>_out.txt"
FOLDER_PER_MODEL = "ground-truth folder + one folder per model"
EMPTY, DEGENERATE = EMPTY_OUTPUT.name, DEGENERATE_OUTPUT.name
DEGENERATE_RULE = (
    f"degenerate: an n-gram of {DEFAULT_MIN_WORDS}+ words repeated more than "
    f"{DEFAULT_MAX_REPEATS} times"
)


@dataclass(frozen=True)
class ScoreColumn:
    key: str
    label: str
    direction: str = "higher"


SCORE_COLUMNS = (
    ScoreColumn("precision", "precision"),
    ScoreColumn("recall", "recall"),
    ScoreColumn("f1", "F1"),
    ScoreColumn("crr", "CRR"),
    ScoreColumn("edit_precision", "edit prec"),
    ScoreColumn("order_wer", "WER", "lower"),
    ScoreColumn("order_lcs_ratio", "LCS"),
    ScoreColumn("order_sequence_accuracy", "seq acc"),
    ScoreColumn("order_bigram_overlap", "2-gram"),
    ScoreColumn("order_trigram_overlap", "3-gram"),
)
"""The ranked table's columns; the CSV also has every other order metric."""


@dataclass(frozen=True)
class WordOptions:
    case_sensitive: bool = False
    ignore_punctuation: bool = True

    def describe(self) -> str:
        case = "case-sensitive" if self.case_sensitive else "case-insensitive"
        punctuation = "punctuation ignored" if self.ignore_punctuation else "punctuation kept"
        return f"words {case}, {punctuation}"


@dataclass(frozen=True)
class Document:
    """One ground truth and the outputs of the models, keyed by model name."""

    name: str
    ground_truth: str
    outputs: dict[str, str]


@dataclass
class ModelResult:
    """A model's scores per document and their means."""

    model: str
    per_document: dict[str, dict[str, float]] = field(default_factory=dict)

    def flagged(self, flag: str) -> list[str]:
        """The documents whose output has ``flag`` (:data:`EMPTY` or :data:`DEGENERATE`)."""
        return [name for name, scores in self.per_document.items() if scores[flag]]

    @property
    def mean(self) -> dict[str, float]:
        keys = next(iter(self.per_document.values()), {}).keys()
        return {
            key: math.fsum(scores[key] for scores in self.per_document.values())
            / len(self.per_document)
            for key in keys
        }


def model_key(name: str) -> str:
    """What two spellings of one model share: lowercase, punctuation runs as ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


def detect_layout(directory: str | Path) -> str:
    """Which layout ``directory`` is in: :data:`PER_DOCUMENT` (a gt.txt in it or in its
    subfolders) or :data:`FOLDER_PER_MODEL` (a ground-truth folder in it). Raises
    FileNotFoundError naming both layouts when it is in neither."""
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"DIR {root} is not a folder")
    if _gt_txt_folders(root):
        return PER_DOCUMENT
    if _ground_truth_folder(root) is not None:
        return FOLDER_PER_MODEL
    raise FileNotFoundError(
        f"no {GROUND_TRUTH} in {root} or its subfolders, and no ground-truth folder "
        f"({'/, '.join(GROUND_TRUTH_FOLDERS)}/); expected either {GROUND_TRUTH} and "
        f"<model>{OUTPUT_SUFFIX} files, or a ground-truth folder of <document>.txt files beside "
        "one folder per model with the same file names"
    )


def find_documents(directory: str | Path) -> list[Document]:
    """The documents of ``directory`` in its layout (:func:`detect_layout`): per document, the
    folder holding ``gt.txt`` (``directory`` itself or each subfolder having one); per model
    folder, each file stem of the ground-truth folder.

    Model names are unified by :func:`model_key` and shown in their most common spelling;
    each unification is reported with a warning, as is a document without outputs (skipped)
    and a model's file without a ground truth (ignored). Raises FileNotFoundError when no
    ground truth or no output is found.
    """
    root = Path(directory)
    per_document = detect_layout(root) == PER_DOCUMENT
    raw = _per_document(root) if per_document else _folder_per_model(root)
    display = _display_names([name for _, _, outputs in raw for name in outputs])
    documents = []
    for doc_name, ground_truth, outputs in raw:
        renamed = {}
        for name, text in outputs.items():
            shown = display[model_key(name)]
            if shown != name:
                warnings.warn(f"{doc_name}: {name}{OUTPUT_SUFFIX} counted as model {shown}",
                              stacklevel=2)
            if shown in renamed:
                raise ValueError(f"{doc_name}: two outputs of model {shown}")
            renamed[shown] = text
        documents.append(Document(doc_name, ground_truth, renamed))
    return documents


def _gt_txt_folders(root: Path) -> list[Path]:
    if (root / GROUND_TRUTH).is_file():
        return [root]
    return sorted(child for child in root.iterdir() if (child / GROUND_TRUTH).is_file())


def _ground_truth_folder(root: Path) -> Path | None:
    found = [
        child for child in sorted(root.iterdir())
        if child.is_dir() and model_key(child.name) in GROUND_TRUTH_FOLDERS
    ]
    if len(found) > 1:
        names = ", ".join(child.name for child in found)
        raise ValueError(f"{root} has several ground-truth folders ({names}); keep one")
    return found[0] if found else None


def _per_document(root: Path) -> list[tuple[str, str, dict[str, str]]]:
    raw = []
    for folder in _gt_txt_folders(root):
        outputs = {
            path.name[: -len(OUTPUT_SUFFIX)]: _read(path)
            for path in sorted(folder.glob(f"*{OUTPUT_SUFFIX}"))
        }
        if not outputs:
            warnings.warn(f"{folder}: no <model>{OUTPUT_SUFFIX} files, skipped", stacklevel=3)
            continue
        raw.append((folder.name, _read(folder / GROUND_TRUTH), outputs))
    if not raw:
        raise FileNotFoundError(f"no <model>{OUTPUT_SUFFIX} files next to any {GROUND_TRUTH}")
    return raw


def _folder_per_model(root: Path) -> list[tuple[str, str, dict[str, str]]]:
    gt_folder = _ground_truth_folder(root)
    assert gt_folder is not None  # detect_layout found it
    truths = _text_files(gt_folder)
    if not truths:
        raise FileNotFoundError(f"ground-truth folder {gt_folder} has no .txt or .md files")
    models = {
        child.name: _text_files(child)
        for child in sorted(root.iterdir())
        if child.is_dir() and child != gt_folder
    }
    raw = []
    for stem, truth_path in truths.items():
        outputs = {model: _read(files[stem]) for model, files in models.items() if stem in files}
        if not outputs:
            warnings.warn(f"{truth_path.name}: no model folder has {stem}.txt, skipped",
                          stacklevel=3)
            continue
        raw.append((stem, _read(truth_path), outputs))
    for model, files in models.items():
        for stem in sorted(set(files) - set(truths)):
            warnings.warn(f"{model}/{files[stem].name}: no ground truth {stem}.txt in "
                          f"{gt_folder.name}/, ignored", stacklevel=3)
    if not raw:
        raise FileNotFoundError(
            f"no model folder beside {gt_folder} holds a file named like a ground truth "
            f"({', '.join(sorted(truths)[:3])}, ...)"
        )
    return raw


def _text_files(folder: Path) -> dict[str, Path]:
    """``stem -> file`` of the folder's .txt and .md files; ValueError when a stem has both."""
    files: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if not (path.is_file() and path.suffix.lower() in TEXT_SUFFIXES):
            continue
        if path.stem in files:
            raise ValueError(f"{folder}: {files[path.stem].name} and {path.name} are one document")
        files[path.stem] = path
    return files


def score_output(prediction: str, ground_truth: str, options: WordOptions) -> dict[str, float]:
    """All scores of one output: word metrics, edit precision, ``order_``-prefixed order metrics,
    and the flags :data:`EMPTY` and :data:`DEGENERATE` as 0.0/1.0 (their mean is the share)."""
    words = word_metrics(prediction, ground_truth, case_sensitive=options.case_sensitive,
                         ignore_punctuation=options.ignore_punctuation)
    scores = {key: float(words[key]) for key in ("precision", "recall", "f1", "crr")}
    scores["edit_precision"] = float(edit_precision(prediction, ground_truth))
    order = order_metrics(prediction, ground_truth)
    scores.update({f"order_{key}": float(value) for key, value in order.items()})
    scores.update({flag: float(value) for flag, value in output_health(prediction).items()})
    return scores


def rank_models(documents: Sequence[Document], options: WordOptions) -> list[ModelResult]:
    """Every model's scores, best first (mean word F1, then mean CRR, then name)."""
    results: dict[str, ModelResult] = {}
    for document in documents:
        for model, text in document.outputs.items():
            result = results.setdefault(model, ModelResult(model))
            result.per_document[document.name] = score_output(text, document.ground_truth,
                                                              options)
    return sorted(results.values(), key=lambda r: (-r.mean["f1"], -r.mean["crr"], r.model))


def render_text(
    results: Sequence[ModelResult], documents: Sequence[Document], options: WordOptions
) -> str:
    """The ranked table as the terminal shows it, then the flagged outputs of each model."""
    headers = ["rank", "model", "docs", "flags", *(column.label for column in SCORE_COLUMNS)]
    means = [result.mean for result in results]
    rows = []
    for rank, (result, mean) in enumerate(zip(results, means, strict=True), start=1):
        rows.append([
            str(rank), result.model, f"{len(result.per_document)}/{len(documents)}",
            flag_summary(result) or "-", *(significant(mean[c.key]) for c in SCORE_COLUMNS),
        ])
    align = "rlrl" + "r" * len(SCORE_COLUMNS)
    lowers = ", ".join(c.label for c in SCORE_COLUMNS if c.direction == "lower")
    header = (
        f"{len(documents)} document(s), {len(results)} model(s); {options.describe()}; "
        f"ranked by mean word F1 (then CRR); higher is better except {lowers}"
    )
    flagged = [
        f"{result.model}: {label} output on {', '.join(result.flagged(flag))}"
        for result in results
        for flag, label in ((EMPTY, "empty"), (DEGENERATE, "degenerate"))
        if result.flagged(flag)
    ]
    footer = ["", f"flagged ({DEGENERATE_RULE}):", *flagged] if flagged else []
    return "\n".join([header, format_table(headers, rows, align=align), *footer])


def flag_summary(result: ModelResult) -> str:
    """``1 empty, 2 degenerate``: how many of the model's outputs are flagged ("" for none)."""
    counts = [(len(result.flagged(EMPTY)), "empty"), (len(result.flagged(DEGENERATE)),
                                                      "degenerate")]
    return ", ".join(f"{count} {label}" for count, label in counts if count)


def render_csv(results: Sequence[ModelResult], documents: Sequence[Document]) -> str:
    """The ranked table with every score (full precision), one row per model."""
    keys = list(results[0].mean) if results else []
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["rank", "model", "documents", *keys])
    for rank, result in enumerate(results, start=1):
        mean = result.mean
        writer.writerow([rank, result.model, len(result.per_document),
                         *(repr(mean[key]) for key in keys)])
    return buffer.getvalue()


def render_html(
    results: Sequence[ModelResult],
    documents: Sequence[Document],
    options: WordOptions,
    *,
    title: str = "",
) -> str:
    """A page in the dashboard's style: ranking, per-document scores, word drill-down."""
    columns = [
        Column("model", "model", numeric=False),
        Column("docs", "docs"),
        Column("flags", "flags", numeric=False, title=f"empty or {DEGENERATE_RULE}"),
        *(Column(c.key, c.label, title=f"{c.direction} is better") for c in SCORE_COLUMNS),
    ]
    ranking = [
        _row(result.model, result.mean, len(result.per_document), flag_summary(result))
        for result in results
    ]
    caption = f"mean over documents; {options.describe()}; ranked by word F1, then CRR"
    body = [
        '<section id="ranking"><h2>Ranking</h2>',
        ranked_table("compare-ranking", columns, ranking, caption),
        '</section><section id="documents"><h2>Documents</h2>',
    ]
    for document in documents:
        rows = [
            _row(result.model, scores, 1, _flags_of(scores))
            for result in results
            if (scores := result.per_document.get(document.name)) is not None
        ]
        rows.sort(key=lambda row: (-float(row["f1"].sort), row["model"].text))
        body += [f'<h3 class="name">{escape(document.name)}</h3>',
                 ranked_table(f"doc-{slug(document.name)}", [c for c in columns if c.key != "docs"],
                              rows, f"{len(document.ground_truth.split())} ground-truth words")]
    body += ['</section><section id="samples"><h2>Side by side</h2>',
             drilldown("compare-drill", _drill_items(results, documents, options)),
             "</section>"]
    subtitle = f"{len(documents)} document(s) · {len(results)} model(s) · {options.describe()}"
    nav = [("ranking", "ranking"), ("documents", "documents"), ("samples", "side by side")]
    return render_page(f"compare {title}".strip(), subtitle, nav, "".join(body))


def _flags_of(scores: dict[str, float]) -> str:
    """One output's flags: ``empty``, ``degenerate`` or ""."""
    return ", ".join(label for flag, label in ((EMPTY, "empty"), (DEGENERATE, "degenerate"))
                     if scores[flag])


def _row(model: str, scores: dict[str, float], documents: int, flags: str) -> dict[str, Cell]:
    row = {
        "model": Cell(model, model),
        "docs": Cell(str(documents), documents),
        "flags": Cell(flags or "-", flags, DEGENERATE_RULE if flags else ""),
    }
    row.update({c.key: Cell.number(scores[c.key]) for c in SCORE_COLUMNS})
    return row


def _drill_items(
    results: Sequence[ModelResult], documents: Sequence[Document], options: WordOptions
) -> list[DrillItem]:
    items = []
    for document in documents:
        for result in results:
            text = document.outputs.get(result.model)
            if text is None:
                continue
            pred, gt = align_words(text, document.ground_truth,
                                   case_sensitive=options.case_sensitive,
                                   ignore_punctuation=options.ignore_punctuation)
            scores = result.per_document[document.name]
            shown = {c.label: scores[c.key] for c in SCORE_COLUMNS}
            flags = _flags_of(scores)
            label = f"{result.model} — F1 {significant(scores['f1'])}" + (
                f" — {flags}" if flags else ""
            )
            items.append(DrillItem(label, document.name, gt, pred, shown))
    return items


def _display_names(names: Sequence[str]) -> dict[str, str]:
    """Model key -> its most common spelling (ties: the alphabetically first)."""
    counts = Counter(names)
    display: dict[str, str] = {}
    for name in sorted(counts, key=lambda n: (-counts[n], n)):
        display.setdefault(model_key(name), name)
    return display


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text ({error.reason})") from error
