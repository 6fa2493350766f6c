"""FineWiki continuation: the first 500 words of an article as context, the next 50 as the
target; text context vs the rendered context page. Word overlap, first-word match, empty
outputs, tokens."""

from __future__ import annotations

import pytest

from evalsuite.datasets.finewiki import load_finewiki
from evalsuite.engines import InferenceRequest
from evalsuite.metrics.qa import first_word_match, word_overlap
from evalsuite.prompts import blank_image, text_condition_prompt, vision_condition_prompt
from evalsuite.render import PRESETS
from evalsuite.runner import MetricSpec, Sample
from evalsuite.scoring import valid_vision_tokens
from evalsuite.suite import BenchmarkSpec
from evalsuite.tokens import compression_ratio, text_token_count

BENCHMARK = BenchmarkSpec(
    "finewiki",
    "FineWiki continuation",
    needs_vlm=True,
    cpu_engines=("tiny-deepseek-ocr-2",),
    default_modes=("small",),
)
pytestmark = pytest.mark.finewiki

CONTEXT_WORDS = 500
TARGET_WORDS = 50
DEFAULT_ARTICLES = 6
INSTRUCTION = "Continue the text."
SPECS = (
    MetricSpec("word_overlap", tolerance=0.02),
    MetricSpec("first_word_match", kind="proportion"),
    MetricSpec("context_tokens", direction="lower", gate=False),
    MetricSpec("compression", gate=False),
)


@pytest.mark.parametrize("condition", ["text", "vision"])
def test_finewiki(bench, suite, mode, condition):
    source = suite.data_path("finewiki_like") or suite.fixture_path("finewiki")
    samples = []
    for article in load_finewiki(source, limit=DEFAULT_ARTICLES):
        words = article.text.split()
        if len(words) < CONTEXT_WORDS + TARGET_WORDS:
            continue  # too short for the protocol
        context = " ".join(words[:CONTEXT_WORDS])
        target = " ".join(words[CONTEXT_WORDS : CONTEXT_WORDS + TARGET_WORDS])
        if condition == "text":
            image = blank_image()
            prompt = text_condition_prompt(context, INSTRUCTION)
        else:
            image = (
                suite.render_text(context, PRESETS["size_small"], single_page=True).pages[0].image
            )
            prompt = vision_condition_prompt(INSTRUCTION)
        sample_id = f"{condition}/{article.article_id}"
        samples.append(
            Sample(
                sample_id,
                InferenceRequest(
                    image,
                    prompt,
                    mode,
                    sample_id,
                    {"benchmark": "finewiki", "condition": condition},
                ),
                reference=target,
                details={"context_tokens": int(text_token_count(context))},
            )
        )
    samples = bench.limit(samples)
    bench.require_recordings(samples)

    def score(sample, result):
        scores = {
            "word_overlap": word_overlap(result.text, sample.reference),
            "first_word_match": first_word_match(result.text, sample.reference),
        }
        vision = valid_vision_tokens(result.vision_tokens)
        if condition == "text":
            scores["context_tokens"] = sample.details["context_tokens"]
        elif vision:
            scores["context_tokens"] = vision
            scores["compression"] = compression_ratio(sample.details["context_tokens"], vision)
        return scores

    bench.evaluate(samples, score, SPECS, parameter=f"mode={mode},condition={condition}")
