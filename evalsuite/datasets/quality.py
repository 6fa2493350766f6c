"""QuALITY (nyu-mll/quality) official JSON-lines files, e.g. ``QuALITY.v1.0.1.htmlstripped.dev``.

Each line is a question set: ``article_id``, ``title``, ``article`` and ``questions`` (each with
``question``, ``question_unique_id``, four ``options`` and a 1-based ``gold_label``). An article
appears on several lines; they are merged here, questions de-duplicated by their unique id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalsuite.datasets import Schema, json_line, require_path
from evalsuite.errors import DatasetFormatError

QUALITY_SCHEMA = Schema(
    "QuALITY v1.0.1 (nyu-mll/quality)", ("article_id", "title", "article", "questions")
)
QUESTION_SCHEMA = Schema(
    "QuALITY v1.0.1 question (nyu-mll/quality)",
    ("question", "question_unique_id", "options", "gold_label"),
)


@dataclass(frozen=True)
class QualityQuestion:
    question_id: str
    question: str
    options: tuple[str, ...]
    gold_index: int  # 0-based


@dataclass
class QualityArticle:
    article_id: str
    title: str
    text: str
    questions: list[QualityQuestion] = field(default_factory=list)


def quality_files(directory: Path) -> list[Path]:
    """The QuALITY files of a directory: htmlstripped ones when present (plain-text articles)."""
    require_path(directory, "quality")
    files = sorted(p for p in directory.iterdir() if p.name.startswith("QuALITY") and p.is_file())
    stripped = [p for p in files if "htmlstripped" in p.name]
    return stripped or files


def load_quality(path: Path) -> list[QualityArticle]:
    """Articles of one QuALITY file, in order of first appearance."""
    articles: dict[str, QualityArticle] = {}
    seen: set[str] = set()
    with require_path(path, "quality").open(encoding="utf-8") as stream:
        for line_number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_number}"
            record = json_line(line, where)
            QUALITY_SCHEMA.check_record(record, where)
            article_id = str(record["article_id"])
            article = articles.setdefault(
                article_id, QualityArticle(article_id, record["title"], record["article"])
            )
            for number, question in enumerate(record["questions"]):
                QUESTION_SCHEMA.check_record(question, f"{where} question {number}")
                unique_id = str(question["question_unique_id"])
                if unique_id in seen:
                    continue
                seen.add(unique_id)
                options = tuple(question["options"])
                try:
                    gold = int(question["gold_label"]) - 1
                except (TypeError, ValueError) as exc:
                    raise DatasetFormatError(f"{where} question {number}: {exc}") from exc
                if not 0 <= gold < len(options):
                    raise DatasetFormatError(
                        f"{where} question {number}: gold_label {gold + 1} outside "
                        f"1..{len(options)}"
                    )
                article.questions.append(
                    QualityQuestion(unique_id, question["question"], options, gold)
                )
    return list(articles.values())
