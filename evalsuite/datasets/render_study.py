"""The render-configuration study's documents and questions (galah92/deepseek-ocr-eval layout):
``<name>.txt`` plain-text documents and ``questions.json`` = {name: {"questions": [{"q", "a"}]}}.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsuite.datasets import Schema, read_json, require_path
from evalsuite.datasets.fetch import GitHubFiles
from evalsuite.errors import DatasetFormatError

RENDER_STUDY_FETCH = GitHubFiles(
    "galah92/deepseek-ocr-eval",
    "a014a91e12c281c1bc788b074d84748996bfb998",
    paths=(
        *(f"experiment/data/{name}.txt" for name in
          ("employee_record", "invoice", "meeting_minutes", "product_spec")),
        "experiment/questions.json",
    ),
)
"""The study's documents and questions at the last commit that has them (they were deleted
later), written flat as this loader reads them."""

DOCUMENT_SCHEMA = Schema("render study questions.json (galah92/deepseek-ocr-eval)", ("questions",))
QUESTION_SCHEMA = Schema("render study question (galah92/deepseek-ocr-eval)", ("q", "a"))


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
        raw = read_json(questions_path, dict, "an object keyed by document")
        for document, entry in raw.items():
            where = f"{questions_path} document {document!r}"
            for index, qa in enumerate(DOCUMENT_SCHEMA.check_record(entry, where)["questions"]):
                QUESTION_SCHEMA.check_record(qa, f"{where} question {index}")
                questions.append(StudyQuestion(document, index, qa["q"], qa["a"]))
    unknown = {q.document for q in questions} - documents.keys()
    if unknown:
        missing = sorted(unknown)
        raise DatasetFormatError(f"{questions_path} asks about missing documents: {missing}")
    return RenderStudy(documents, questions)
