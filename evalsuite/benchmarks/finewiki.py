"""FineWiki continuation: the first 500 words of an article as context, the next 50 as the
target; text context vs the rendered context page. Word overlap, first-word match, empty
outputs, tokens."""

from __future__ import annotations

from collections.abc import Sequence

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.benchmarks.scoring import CONTEXT_METRICS, TEXT, context_scores
from evalsuite.datasets.fetch import HubRows
from evalsuite.datasets.finewiki import WikiArticle, load_finewiki
from evalsuite.engines.base import RECIPE_NGRAM, InferenceRequest, InferenceResult
from evalsuite.metrics.qa import first_word_match, word_overlap
from evalsuite.models import CONTINUATION
from evalsuite.prompts import blank_image, text_condition_prompt, vision_condition_prompt
from evalsuite.render import PRESETS, page_image
from evalsuite.runner import UNIT, MetricSpec, Sample
from evalsuite.tokens import text_token_count

CONTEXT_WORDS = 500
TARGET_WORDS = 50
DEFAULT_ARTICLES = 6
INSTRUCTION = "Continue the text."

METRICS = (
    MetricSpec("word_overlap", bounds=UNIT, tolerance=0.02),
    MetricSpec("first_word_match", kind="proportion"),
    *CONTEXT_METRICS,
)

BENCHMARK = register(
    Benchmark(
        name="finewiki",
        title="FineWiki continuation",
        description="FineWiki continuation, vision vs text context",
        sources=(
            DataSource(
                "fixtures",
                "articles written for the project in FineWiki's columns",
                load_finewiki,
                fixtures=FIXTURES_DIR / "finewiki",
            ),
            DataSource(
                "finewiki",
                "FineWiki articles (HuggingFaceFW/finewiki), the first rows of one language",
                load_finewiki,
                folder="finewiki",
                fetch=HubRows(
                    "HuggingFaceFW/finewiki",
                    "8bd13e72e6a002407649b3e898535f42ceb1aeb9",
                    config="en",
                    default_max_rows=300,
                ),
            ),
            DataSource(
                "finewiki_like",
                "Wikipedia articles (WikiText-2) in FineWiki's column layout",
                load_finewiki,
                folder="finewiki_like",
            ),
        ),
        cpu_engines=("tiny-deepseek-ocr-2",),
        default_modes=("small",),
        task=CONTINUATION,
        anti_repetition=RECIPE_NGRAM,
        needs_vlm=True,
        order=40,
        metrics=METRICS,
    )
)


def samples(articles: Sequence[WikiArticle], mode: str, condition: str) -> list[Sample]:
    """The first articles long enough for the protocol, each cut into context and target."""
    result = []
    for article in [a for a in articles if len(a.text.split()) >= CONTEXT_WORDS + TARGET_WORDS][
        :DEFAULT_ARTICLES
    ]:
        words = article.text.split()
        context = " ".join(words[:CONTEXT_WORDS])
        target = " ".join(words[CONTEXT_WORDS : CONTEXT_WORDS + TARGET_WORDS])
        if condition == TEXT:
            image, prompt = blank_image(), text_condition_prompt(context, INSTRUCTION)
        else:
            image = page_image(context, PRESETS["size_small"])
            prompt = vision_condition_prompt(INSTRUCTION)
        key = {"benchmark": "finewiki", "condition": condition, "document": article.article_id}
        result.append(
            Sample(
                article.article_id,
                InferenceRequest(image, prompt, mode, article.article_id, key),
                reference=target,
                details={"context_tokens": int(text_token_count(context))},
            )
        )
    return result


def score(sample: Sample, result: InferenceResult) -> dict[str, float | int | bool]:
    return {
        "word_overlap": word_overlap(result.text, sample.reference),
        "first_word_match": first_word_match(result.text, sample.reference),
        **context_scores(sample.request.key["condition"], sample.details["context_tokens"], result),
    }
