"""QuALITY long-document multiple-choice QA: the article as one rendered image ("vision") vs the
article as text truncated to the engine's context ("text"), per mode; accuracy and compression.
"""

from __future__ import annotations

import string
from functools import partial

import pytest

from evalsuite.datasets.quality import load_quality, quality_files
from evalsuite.engines import InferenceRequest
from evalsuite.metrics.qa import parse_choice
from evalsuite.prompts import blank_image, text_condition_prompt, vision_condition_prompt
from evalsuite.render import PRESETS
from evalsuite.runner import MetricSpec, Sample
from evalsuite.scoring import valid_vision_tokens
from evalsuite.suite import BenchmarkSpec
from evalsuite.tokens import compression_ratio, text_token_count

BENCHMARK = BenchmarkSpec(
    "quality",
    "QuALITY",
    needs_vlm=True,
    cpu_engines=("tiny-deepseek-ocr-2",),
    default_modes=("small",),
)
pytestmark = pytest.mark.quality

DEFAULT_ARTICLES = 2
DEFAULT_QUESTIONS = 5
TEXT_CONTEXT_TOKENS = 8192  # DeepSeek-OCR's decoder context; engines may declare their own
ANSWER_RESERVE_TOKENS = 256
SPECS = (
    MetricSpec("accuracy", kind="proportion"),
    MetricSpec("context_tokens", direction="lower", gate=False),
    MetricSpec("compression", gate=False),
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
    options = "\n".join(
        f"{letter}. {option}"
        for letter, option in zip(string.ascii_uppercase, question.options, strict=False)
    )
    return (
        f"Question: {question.question}\n{options}\n"
        "Answer with the letter of the correct option.\nAnswer:"
    )


def articles(suite):
    directory = suite.data_path("quality") or suite.fixture_path("quality")
    loaded = [a for path in quality_files(directory) for a in load_quality(path)]
    return loaded[: suite.options.num_articles or DEFAULT_ARTICLES]


@pytest.mark.parametrize("condition", ["text", "vision"])
def test_quality(bench, suite, mode, condition):
    context_budget = getattr(bench.engine, "context_tokens", TEXT_CONTEXT_TOKENS)
    per_article = suite.options.questions_per_article or DEFAULT_QUESTIONS
    samples = []
    for article in articles(suite):
        if condition == "text":
            context = truncate_to_tokens(article.text, context_budget - ANSWER_RESERVE_TOKENS)
            image, build_prompt = blank_image(), partial(text_condition_prompt, context)
        else:
            page = suite.render_text(article.text, PRESETS["size_small"], single_page=True).pages[0]
            image, build_prompt = page.image, vision_condition_prompt
        for question in article.questions[:per_article]:
            sample_id = f"{condition}/{article.article_id}/{question.question_id}"
            prompt = build_prompt(question_block(question))
            key = {"benchmark": "quality", "condition": condition, "question_id": sample_id}
            samples.append(
                Sample(
                    sample_id,
                    InferenceRequest(image, prompt, mode, sample_id, key),
                    reference=question.options[question.gold_index],
                    details={
                        "gold_index": question.gold_index,
                        "n_options": len(question.options),
                        "article_tokens": int(text_token_count(article.text)),
                    },
                )
            )
    samples = bench.limit(samples)
    bench.require_recordings(samples)

    def score(sample, result):
        chosen = parse_choice(result.text, sample.details["n_options"])
        scores = {"accuracy": chosen == sample.details["gold_index"]}
        vision = valid_vision_tokens(result.vision_tokens)
        if condition == "text":
            scores["context_tokens"] = min(sample.details["article_tokens"], context_budget)
        elif vision:
            scores["context_tokens"] = vision
            scores["compression"] = compression_ratio(sample.details["article_tokens"], vision)
        return scores

    bench.evaluate(samples, score, SPECS, parameter=f"mode={mode},condition={condition}")
