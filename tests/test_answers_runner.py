"""Answer matching, degenerate-output detection and the runner's failure accounting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.engines import EngineBase, InferenceRequest, InferenceResult
from evalsuite.metrics.answers import expected_answer_found
from evalsuite.metrics.repetition import is_degenerate, max_ngram_repeats
from evalsuite.records import BenchmarkRecord
from evalsuite.runner import MetricSpec, ResultCache, Sample, run_benchmark
from tests.support.shared_data import DATA, needs_data


@pytest.mark.parametrize(
    ("predicted", "expected", "study", "strict"),
    [
        ("EMP-2847", "EMP-2847", True, True),
        ("Engineering\nPosition: Senior Developer", "Engineering", True, True),
        ("Dec 15, 2024", "December 15, 2024", False, False),
        ("12", "EMP-2847", False, False),
        ("28", "EMP-2847", True, False),  # the study's rule accepts a 2+ character fragment
        ("", "anything", False, False),
        ("$95,000", "$95,000", True, True),
        ("95000", "$95,000", True, True),
    ],
)
def test_answer_rules(predicted, expected, study, strict):
    assert expected_answer_found(predicted, expected) is study
    assert expected_answer_found(predicted, expected, rule="strict") is strict


# ASCII: Unicode case mapping is not an involution ('µ'.upper().lower() == 'μ').
@given(st.text(st.characters(max_codepoint=127), min_size=1).filter(lambda t: t.strip()))
@settings(max_examples=100, deadline=None)
def test_an_answer_matches_itself_and_case_does_not_matter(answer):
    assert expected_answer_found(answer, answer)
    assert expected_answer_found(answer.upper(), answer) == expected_answer_found(
        answer.lower(), answer
    )


def test_answer_bad_input():
    with pytest.raises(TypeError, match="predicted"):
        expected_answer_found(None, "x")
    with pytest.raises(ValueError, match="rule"):
        expected_answer_found("x", "x", rule="fuzzy")


@needs_data("render_docs", "questions.json")
def test_replay_reproduces_a_study_accuracy():
    """context_experiment_small_color_low_contrast.json reports text 93.3% and vision 70.0%."""
    import json

    questions = json.loads((DATA / "render_docs" / "questions.json").read_text())
    correct = {"text": 0, "vision": 0}
    for line in (DATA / "deepseek_ocr_recordings" / "recordings.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["render_config"] == "color_low_contrast":
            expected = questions[record["document"]]["questions"][record["question_id"]]["a"]
            correct[record["condition"]] += expected_answer_found(record["output"], expected)
    assert correct == {"text": 28, "vision": 21}


def test_degenerate_outputs():
    loop = "the same words " * 31
    assert max_ngram_repeats(loop) == 31 and is_degenerate(loop)
    assert not is_degenerate("the same words " * 30)
    assert max_ngram_repeats("too short") == 0


class FlakyEngine(EngineBase):
    name = "flaky"

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        if request.sample_id == "bad":
            raise RuntimeError("CUDA out of memory")
        return InferenceResult(text=request.prompt)


def test_failed_samples_are_recorded_and_count_against_the_score():
    samples = [
        Sample(sid, InferenceRequest(None, text, "small", sid), reference="hello")
        for sid, text in (("good", "hello"), ("bad", "hello, world"), ("empty", " "))
    ]
    record = run_benchmark(
        FlakyEngine(),
        samples,
        lambda sample, result: {"exact": result.text == sample.reference},
        [MetricSpec("exact", kind="proportion")],
        benchmark="toy",
        engine_label="flaky",
        data="toy-data",
        parameter="mode=small",
        cache=ResultCache(),
    )
    by_id = {s.sample_id: s for s in record.samples}
    assert by_id["bad"].error == "RuntimeError: CUDA out of memory"
    assert by_id["bad"].scores["exact"] is False
    assert record.metrics["exact"].value == pytest.approx(1 / 3)
    # the failed sample also counts as the worst output (empty) in the output-health shares
    assert record.metrics["empty_output_rate"].value == pytest.approx(2 / 3)
    assert record.metrics["empty_output_rate"].n == 3
    assert record.key == ("toy", "flaky", "toy-data", "mode=small")
    assert record.params["model_calls"] == 3


class CountingEngine(EngineBase):
    name = "counting"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        self.seen.append(request.sample_id)
        return InferenceResult(text=request.prompt.upper())


def test_identical_requests_reach_the_engine_once_and_the_cache_serves_reruns():
    samples = [
        Sample(sid, InferenceRequest(None, text, "small", sid), reference=text.upper())
        for sid, text in (("a", "same"), ("b", "same"), ("c", "other"))
    ]
    engine, cache = CountingEngine(), ResultCache()

    def run() -> BenchmarkRecord:
        return run_benchmark(
            engine,
            samples,
            lambda sample, result: {"exact": result.text == sample.reference},
            [MetricSpec("exact", kind="proportion")],
            benchmark="toy",
            engine_label="counting",
            data="toy-data",
            parameter="mode=small",
            cache=cache,
        )

    first = run()
    assert engine.seen == ["a", "c"] and first.params["model_calls"] == 2
    assert [s.prediction for s in first.samples] == ["SAME", "SAME", "OTHER"]
    second = run()
    assert engine.seen == ["a", "c"] and second.params["model_calls"] == 0
    assert second.metrics["exact"].value == 1.0


def test_quality_text_condition_leaves_room_for_its_blank_image():
    """The article is cut so that blank image + prompt + article + answer reserve fit the
    decoder's context; the image's positions differ per mode."""
    from evalsuite.benchmarks import quality
    from evalsuite.datasets.quality import QualityArticle, QualityQuestion
    from evalsuite.prompts import text_condition_prompt
    from evalsuite.tokens import text_token_count

    question = QualityQuestion("q0", "What is it?", ("a", "b", "c", "d"), 0)
    article = QualityArticle("a0", "Title", " ".join(f"word{i}" for i in range(3000)), (question,))
    sent = {}
    for mode in ("tiny", "gundam", "default"):
        (sample,) = quality.samples([article], mode, "text", context_tokens=2000)
        prompt_tokens = int(text_token_count(sample.request.prompt))
        image = quality.blank_image_tokens(mode)
        assert image > 0
        assert prompt_tokens + image + quality.ANSWER_RESERVE_TOKENS <= 2000
        empty = int(text_token_count(text_condition_prompt("", quality.question_block(question))))
        sent[mode] = sample.details["context_tokens"]
        # cut at most a few tokens short of the budget (word boundaries)
        assert 2000 - image - quality.ANSWER_RESERVE_TOKENS - empty - sent[mode] < 8
    assert sent["tiny"] > sent["default"] > sent["gundam"]  # 73 < 257 < 273 image tokens
