"""Text-rendering configuration study (font, size, color), after galah92/deepseek-ocr-eval.

OCR per mode and preset (edit precision of the rendered documents), and context QA per preset:
each question answered with the document's text as context ("text" condition, a blank image)
and with the rendered page ("vision" condition); accuracy as the study judged it, tokens and
compression. With ``--engine replay`` the recorded real DeepSeek-OCR answers reproduce the
study's accuracies.
"""

from __future__ import annotations

from PIL import Image

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.benchmarks.scoring import CONTEXT_METRICS, TEXT, context_scores, ocr_scores
from evalsuite.datasets.render_study import RENDER_STUDY_FETCH, RenderStudy, load_render_study
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.metrics.answers import expected_answer_found
from evalsuite.models import PLAIN_TEXT, QUESTION_ANSWERING
from evalsuite.prompts import (
    FREE_OCR,
    blank_image,
    qa_question,
    text_condition_prompt,
    vision_condition_prompt,
)
from evalsuite.render import PRESETS, page_image
from evalsuite.runner import UNIT, MetricSpec, Sample
from evalsuite.tokens import text_token_count

DEFAULT_CONFIG = "default"
"""The study's top-level rendering (recorded with render_config null): the color_default preset."""
QA_CONFIGS = (DEFAULT_CONFIG, *PRESETS)


OCR_METRICS = (
    MetricSpec("edit_precision", bounds=UNIT, tolerance=0.02),
    MetricSpec("word_f1", bounds=UNIT, tolerance=0.02),
    MetricSpec("gt_compression", direction=None, gate=False),
)
QA_METRICS = (MetricSpec("accuracy", kind="proportion"), *CONTEXT_METRICS)

BENCHMARK = register(
    Benchmark(
        name="render_configs",
        title="Render-configuration study",
        description="text-rendering configuration study (font, size, color)",
        sources=(
            DataSource(
                "fixtures",
                "two documents and their questions written for the project",
                load_render_study,
                fixtures=FIXTURES_DIR / "render_docs",
            ),
            DataSource(
                "render_docs",
                "the study's four documents and 30 questions (galah92/deepseek-ocr-eval)",
                load_render_study,
                folder="render_docs",
                requires=("questions.json",),
                fetch=RENDER_STUDY_FETCH,
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2", "replay"),
        default_modes=("small",),
        task=PLAIN_TEXT,
        order=20,
        metrics=(*OCR_METRICS, *QA_METRICS),
    )
)


def page_of(text: str, config_name: str) -> Image.Image:
    """The document rendered with the preset ``config_name`` (``default`` = color_default)."""
    name = "color_default" if config_name == DEFAULT_CONFIG else config_name
    return page_image(text, PRESETS[name])


def ocr_samples(study: RenderStudy, mode: str, config_name: str) -> list[Sample]:
    """Each document rendered with ``config_name``, read with Free OCR."""
    return [
        Sample(
            name,
            InferenceRequest(
                page_of(text, config_name),
                FREE_OCR,
                mode,
                name,
                {"experiment": "render_ocr", "document": name, "render_config": config_name},
            ),
            reference=text,
            details={"gt_tokens": int(text_token_count(text))},
        )
        for name, text in sorted(study.documents.items())
    ]


def score_ocr(sample: Sample, result: InferenceResult) -> dict[str, float | int | None]:
    return ocr_scores(
        result.text,
        sample.reference,
        valid_vision_tokens=result.valid_vision_tokens,
        ground_truth_tokens=sample.details["gt_tokens"],
    )


def qa_samples(study: RenderStudy, mode: str, config_name: str, condition: str) -> list[Sample]:
    """Every question of the study under ``condition``: the document's text in the prompt with
    a blank image, or the document rendered with ``config_name`` as the image."""
    samples = []
    for question in study.questions:
        context = study.documents[question.document]
        if condition == TEXT:
            image = blank_image()
            prompt = text_condition_prompt(context, qa_question(question.question))
        else:
            image = page_of(context, config_name)
            prompt = vision_condition_prompt(qa_question(question.question))
        sample_id = f"{question.document}/{question.question_id}"
        key = {
            "experiment": "context_qa",
            "document": question.document,
            "render_config": None if config_name == DEFAULT_CONFIG else config_name,
            "condition": condition,
            "question_id": question.question_id,
        }
        samples.append(
            Sample(
                sample_id,
                InferenceRequest(image, prompt, mode, sample_id, key, task=QUESTION_ANSWERING),
                reference=question.answer,
                details={
                    "question": question.question,
                    "context_tokens": int(text_token_count(context)),
                },
            )
        )
    return samples


def score_qa(sample: Sample, result: InferenceResult) -> dict[str, float | int | bool]:
    condition = sample.request.key["condition"]
    return {
        "accuracy": expected_answer_found(result.text.strip(), sample.reference),
        **context_scores(condition, sample.details["context_tokens"], result),
    }
