"""FineWiki (HuggingFaceFW/finewiki, one subset per Wikipedia language): Parquet files or a saved
Hugging Face dataset in its published columns, of which ``id``, ``title`` and ``text`` (the
article as Markdown) are read, through the ``datasets`` library."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsuite.datasets import Schema, load_table

FINEWIKI_SCHEMA = Schema("FineWiki (HuggingFaceFW/finewiki)", ("id", "title", "text"))


@dataclass(frozen=True)
class WikiArticle:
    article_id: str
    title: str
    text: str


def load_finewiki(path: Path, limit: int | None = None) -> list[WikiArticle]:
    """Articles from a Parquet file, a folder of Parquet files, or a ``save_to_disk`` folder."""
    table = load_table(path, "finewiki", FINEWIKI_SCHEMA)
    rows = table if limit is None else table.select(range(min(limit, len(table))))
    articles = []
    for index, row in enumerate(rows):
        article_id = str(row["id"] or index)
        articles.append(WikiArticle(article_id, str(row["title"] or article_id), row["text"]))
    return articles
