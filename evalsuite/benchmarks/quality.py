"""QuALITY long-document multiple-choice QA: the article as one rendered image ("vision") vs the
article as text truncated to the decoder's context ("text"), per mode; accuracy and compression.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.benchmarks.scoring import CONTEXT_METRICS, TEXT, context_scores
from evalsuite.datasets.fetch import GitHubFiles
from evalsuite.datasets.quality import QualityArticle, load_quality, quality_files
from evalsuite.engines.base import RECIPE_NGRAM, InferenceRequest, InferenceResult
from evalsuite.engines.deepseek_ocr2 import OCR2_MODES, ocr2_image_tokens
from evalsuite.metrics.qa import parse_choice
from evalsuite.models import QUESTION_ANSWERING
from evalsuite.prompts import (
    BLANK_IMAGE_SIZE,
    blank_image,
    text_condition_prompt,
    vision_condition_prompt,
)
from evalsuite.render import PRESETS, page_image
from evalsuite.runner import MetricSpec, Sample, Scored
from evalsuite.tokens import MODES, text_token_count, vision_tokens

DEFAULT_ARTICLES = 2
DEFAULT_QUESTIONS = 5
DECODER_CONTEXT_TOKENS = 8192
"""DeepSeek-OCR's decoder context in positions; an engine may declare its own (context_tokens)."""
ANSWER_RESERVE_TOKENS = 256
"""Positions kept free for the answer when the text condition's context is truncated."""


def load_articles(location: Path) -> list[QualityArticle]:
    """Every article of a folder of QuALITY files (htmlstripped ones when present)."""
    return [article for path in quality_files(location) for article in load_quality(path)]


METRICS = (MetricSpec("accuracy", kind="proportion"), *CONTEXT_METRICS)

BENCHMARK = register(
    Benchmark(
        name="quality",
        title="QuALITY",
        description="QuALITY long-document QA, vision vs text context",
        sources=(
            DataSource(
                "fixtures",
                "one article with five questions written for the project",
                load_articles,
                fixtures=FIXTURES_DIR / "quality",
            ),
            DataSource(
                "quality",
                "QuALITY v1.0.1 question sets (nyu-mll/quality), the dev split (the test split "
                "has no gold labels)",
                load_articles,
                folder="quality",
                fetch=GitHubFiles(
                    "nyu-mll/quality",
                    "f84977c40dbfef70c9cab48037b7becfc8e45f73",
                    paths=("data/v1.0.1/QuALITY.v1.0.1.htmlstripped.dev",),
                ),
            ),
        ),
        cpu_engines=("tiny-deepseek-ocr-2",),
        default_modes=("small",),
        task=QUESTION_ANSWERING,
        anti_repetition=RECIPE_NGRAM,
        needs_vlm=True,
        order=30,
        metrics=METRICS,
    )
)


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of whole words whose token count fits ``budget``."""
    words = text.split()
    low, high = 0, len(words)
    while low < high:
        middle = (low + high + 1) // 2
        if text_token_count(" ".join(words[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low])


def question_block(question) -> str:
    """The question and its lettered options, then the answer instruction."""
    options = "\n".join(
        f"{letter}. {option}"
        for letter, option in zip(string.ascii_uppercase, question.options, strict=False)
    )
    return (
        f"Question: {question.question}\n{options}\n"
        "Answer with the letter of the correct option.\nAnswer:"
    )


def blank_image_tokens(mode: str) -> int:
    """Decoder positions the text condition's blank image takes in ``mode``: the image tokens
    the model's processor inserts for it (DeepSeek-OCR: ``raw`` of
    :func:`~evalsuite.tokens.vision_tokens`; DeepSeek-OCR-2: :func:`ocr2_image_tokens`), 0 for
    an OCR engine's mode."""
    if mode in MODES:
        return vision_tokens(BLANK_IMAGE_SIZE, BLANK_IMAGE_SIZE, mode).raw
    if mode in OCR2_MODES:
        return ocr2_image_tokens(BLANK_IMAGE_SIZE, BLANK_IMAGE_SIZE, mode)
    return 0


def samples(
    articles: Sequence[QualityArticle],
    mode: str,
    condition: str,
    *,
    num_articles: int | None = None,
    questions_per_article: int | None = None,
    context_tokens: int = DECODER_CONTEXT_TOKENS,
) -> list[Sample]:
    """The first questions of the first articles under ``condition``. The text condition's
    article is cut so that the whole prompt fits ``context_tokens`` less the blank image's
    positions (:func:`blank_image_tokens`) and the answer reserve."""
    chosen = list(articles)[: num_articles or DEFAULT_ARTICLES]
    per_article = questions_per_article or DEFAULT_QUESTIONS
    result = []
    for article in chosen:
        article_tokens = int(text_token_count(article.text))
        page = None if condition == TEXT else page_image(article.text, PRESETS["size_small"])
        for question in article.questions[:per_article]:
            block = question_block(question)
            if condition == TEXT:
                limit = context_tokens - blank_image_tokens(mode) - ANSWER_RESERVE_TOKENS
                budget = limit - int(text_token_count(text_condition_prompt("", block)))
                context = truncate_to_tokens(article.text, budget)
                # the whole prompt may count a token or two more than its parts (merges across
                # the joins): cut further until it fits
                while int(text_token_count(text_condition_prompt(context, block))) > limit:
                    budget -= 1
                    context = truncate_to_tokens(article.text, budget)
                image, prompt = blank_image(), text_condition_prompt(context, block)
                sent_tokens = int(text_token_count(context))
            else:
                image, prompt, sent_tokens = page, vision_condition_prompt(block), article_tokens
            sample_id = f"{article.article_id}/{question.question_id}"
            key = {"benchmark": "quality", "condition": condition, "question_id": sample_id}
            result.append(
                Sample(
                    sample_id,
                    InferenceRequest(image, prompt, mode, sample_id, key),
                    reference=question.options[question.gold_index],
                    details={
                        "gold_index": question.gold_index,
                        "n_options": len(question.options),
                        "context_tokens": sent_tokens,
                    },
                )
            )
    return result


def score(sample: Sample, result: InferenceResult) -> Scored:
    chosen = parse_choice(result.text, sample.details["n_options"])
    gold = sample.details["gold_index"]
    condition = sample.request.key["condition"]
    return Scored(
        {
            "accuracy": chosen == gold,
            **context_scores(condition, sample.details["context_tokens"], result),
        },
        explain={
            "gold": string.ascii_uppercase[gold],
            "parsed": None if chosen is None else string.ascii_uppercase[chosen],
        },
    )
