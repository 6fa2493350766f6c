"""Text-rendering configuration study (font, size, colour), after galah92/deepseek-ocr-eval.

``test_render_ocr``: the OCR compression study per mode and preset (edit precision of the rendered
documents). ``test_render_context_qa``: per preset, each question answered with the document's
text as context ("text" condition, a blank image) and with the rendered page ("vision"
condition); accuracy as the study judged it, tokens and compression. With ``--engine replay``
the recorded real DeepSeek-OCR answers reproduce the study's accuracies.
"""

from __future__ import annotations

import pytest
from PIL import Image

from evalsuite.datasets.render_study import RenderStudy, load_render_study
from evalsuite.engines import InferenceRequest
from evalsuite.metrics.answers import expected_answer_found
from evalsuite.prompts import (
    FREE_OCR,
    blank_image,
    qa_question,
    text_condition_prompt,
    vision_condition_prompt,
)
from evalsuite.render import PRESETS
from evalsuite.runner import MetricSpec, Sample
from evalsuite.scoring import ocr_scores, valid_vision_tokens
from evalsuite.suite import BenchmarkSpec
from evalsuite.tokens import compression_ratio, text_token_count

BENCHMARK = BenchmarkSpec(
    "render_configs",
    "the render-configuration study",
    cpu_engines=("tesseract", "tiny-deepseek-ocr-2", "replay"),
    default_modes=("small",),
)
pytestmark = pytest.mark.render_configs

OCR_SPECS = (
    MetricSpec("edit_precision", tolerance=0.02),
    MetricSpec("word_f1", tolerance=0.02),
    MetricSpec("gt_compression", gate=False),
)
QA_SPECS = (
    MetricSpec("accuracy", kind="proportion"),
    MetricSpec("context_tokens", direction="lower", gate=False),
    MetricSpec("compression", gate=False),
)
# "default" is the study's top-level rendering (recorded with render_config null).
QA_CONFIGS = ("default", *PRESETS)


def study(suite) -> RenderStudy:
    directory = suite.data_path("render_docs") or suite.fixture_path("render_docs")
    return load_render_study(directory)


def page_image(suite, text: str, config_name: str) -> Image.Image:
    config = PRESETS["color_default" if config_name == "default" else config_name]
    return suite.render_text(text, config, single_page=True).pages[0].image


@pytest.mark.parametrize("config_name", list(PRESETS))
def test_render_ocr(bench, suite, mode, config_name):
    documents = study(suite).documents
    samples = [
        Sample(
            f"{config_name}/{name}",
            InferenceRequest(
                page_image(suite, text, config_name),
                FREE_OCR,
                mode,
                f"{config_name}/{name}",
                {"experiment": "render_ocr", "document": name, "render_config": config_name},
            ),
            reference=text,
            details={"gt_tokens": int(text_token_count(text))},
        )
        for name, text in bench.limit(sorted(documents.items()))
    ]
    bench.require_recordings(samples)

    def score(sample, result):
        return ocr_scores(
            result.text,
            sample.reference,
            vision_tokens=result.vision_tokens,
            ground_truth_tokens=sample.details["gt_tokens"],
        )

    bench.evaluate(samples, score, OCR_SPECS, parameter=f"mode={mode},config={config_name}")


@pytest.mark.parametrize("condition", ["text", "vision"])
@pytest.mark.parametrize("config_name", QA_CONFIGS)
def test_render_context_qa(bench, suite, mode, config_name, condition):
    bench.require_vlm()
    current = study(suite)
    if not current.questions:
        pytest.skip("the study data has no questions.json")
    samples = []
    for question in bench.limit(current.questions):
        context = current.documents[question.document]
        if condition == "text":
            image = blank_image()
            prompt = text_condition_prompt(context, qa_question(question.question))
        else:
            image = page_image(suite, context, config_name)
            prompt = vision_condition_prompt(qa_question(question.question))
        sample_id = f"{config_name}/{condition}/{question.document}/{question.question_id}"
        key = {
            "experiment": "context_qa",
            "document": question.document,
            "render_config": None if config_name == "default" else config_name,
            "condition": condition,
            "question_id": question.question_id,
        }
        samples.append(
            Sample(
                sample_id,
                InferenceRequest(image, prompt, mode, sample_id, key),
                reference=question.answer,
                details={
                    "question": question.question,
                    "context_tokens": int(text_token_count(context)),
                },
            )
        )
    bench.require_recordings(samples)

    def score(sample, result):
        scores = {"accuracy": expected_answer_found(result.text.strip(), sample.reference)}
        context_tokens = sample.details["context_tokens"]
        vision = valid_vision_tokens(result.vision_tokens)
        if condition == "text":
            scores["context_tokens"] = context_tokens
        elif vision:
            scores["context_tokens"] = vision
            scores["compression"] = compression_ratio(context_tokens, vision)
        return scores

    bench.evaluate(
        samples,
        score,
        QA_SPECS,
        parameter=f"mode={mode},config={config_name},condition={condition}",
    )
