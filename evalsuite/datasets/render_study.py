"""The render-configuration study's documents and questions (galah92/deepseek-ocr-eval layout):
``<name>.txt`` plain-text documents and ``questions.json`` = {name: {"questions": [{"q", "a"}]}}.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalsuite.datasets import require_path
from evalsuite.errors import DatasetFormatError


@dataclass(frozen=True)
class StudyQuestion:
    document: str
    question_id: int
    question: str
    answer: str


@dataclass(frozen=True)
class RenderStudy:
    documents: dict[str, str]
    questions: list[StudyQuestion]


def load_render_study(directory: Path) -> RenderStudy:
    """Documents (by file stem) and their questions, in the order of ``questions.json``."""
    require_path(directory, "render_configs")
    documents = {
        path.stem: path.read_text(encoding="utf-8") for path in sorted(directory.glob("*.txt"))
    }
    if not documents:
        raise DatasetFormatError(f"{directory} holds no .txt documents")
    questions: list[StudyQuestion] = []
    questions_path = directory / "questions.json"
    if questions_path.exists():
        try:
            raw = json.loads(questions_path.read_text(encoding="utf-8"))
            for document, entry in raw.items():
                for index, qa in enumerate(entry["questions"]):
                    questions.append(StudyQuestion(document, index, qa["q"], qa["a"]))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetFormatError(f"{questions_path} is malformed: {exc!r}") from exc
    unknown = {q.document for q in questions} - documents.keys()
    if unknown:
        missing = sorted(unknown)
        raise DatasetFormatError(f"{questions_path} asks about missing documents: {missing}")
    return RenderStudy(documents, questions)
