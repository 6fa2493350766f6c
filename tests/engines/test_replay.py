"""The replay engine and recording: key lookup, the real DeepSeek-OCR recordings, round trips."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from pathlib import Path

import pytest

from evalsuite.engines import create_engine, supported_modes
from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult
from evalsuite.engines.recording import RecordingEngine
from evalsuite.engines.replay import ReplayEngine, recordings_paths
from evalsuite.errors import DatasetFormatError, EngineUnavailableError, MissingRecordingError
from evalsuite.prompts import FREE_OCR, TEXT_CONDITION_MODE
from evalsuite.tokens import VisionTokens
from tests.support.paths import TEST_FIXTURES
from tests.support.shared_data import shared_data

FIXTURES = TEST_FIXTURES / "engines"
STUDY_SAMPLE = FIXTURES / "study_sample.jsonl"
STUDY_FIELDS = [
    "experiment", "document", "mode", "render_config", "condition", "question_id", "prompt",
    "output", "vision_tokens", "output_tokens", "ground_truth_tokens", "latency_s",
]  # fmt: skip


def request(mode="small", prompt="<image>\nFree OCR.", image=None, sample_id="s", **key):
    return InferenceRequest(image=image, prompt=prompt, mode=mode, sample_id=sample_id, key=key)


def qa_prompt(question):
    """A prompt template around the question, as a benchmark would build it."""
    return f"<image>\nAnswer the question about the document.\nQuestion: {question}\nAnswer:"


def missing(engine, req):
    """The message of the MissingRecordingError that ``req`` fails with, as ``find`` raises it
    and as ``infer`` records it in a failed result (a failed sample, not a failed run)."""
    with pytest.raises(MissingRecordingError) as caught:
        engine.find(req)
    message = str(caught.value)
    result = engine.infer(req)
    assert result.failed and result.text == ""
    assert result.error == f"MissingRecordingError: {message}"
    return message


def write_lines(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def study_sample():
    return ReplayEngine(recordings=STUDY_SAMPLE)


# --- lookup rules, on a fixture in the study's format ---------------------------------------------


def test_compression_lines_match_any_prompt(study_sample):
    result = study_sample.infer(request("tiny", experiment="compression", document="memo"))
    assert result == InferenceResult(
        text="MEMO\nTo: All staff", vision_tokens=64, output_tokens=7, latency_s=1.25
    )
    small = study_sample.infer(
        request("small", "Convert.", experiment="compression", document="memo")
    )
    assert small.text == "MEMO\nTo: All staff\nFrom: HR" and small.vision_tokens == 100


def test_context_qa_found_by_question_inside_the_prompt(study_sample):
    key = {"experiment": "context_qa", "document": "memo", "question_id": 0}
    prompt = qa_prompt("Who wrote the memo?")
    vision = study_sample.infer(
        request(prompt=prompt, render_config="font_serif", condition="vision", **key)
    )
    # the study recorded its text condition under the experiment's mode (small), but sent the
    # blank image in tiny mode: that is the mode it is replayed for
    text = study_sample.infer(
        request("tiny", prompt, render_config="font_serif", condition="text", **key)
    )
    default = study_sample.infer(
        request(prompt=prompt, render_config=None, condition="vision", **key)
    )
    assert (vision.text, text.text, default.text) == ("HR", "The HR team", "Human Resources")
    assert text.vision_tokens is None and vision.vision_tokens == 100
    small = request("small", prompt, render_config="font_serif", condition="text", **key)
    assert "mode='small'" in missing(study_sample, small)


def test_missing_key_names_key_and_file(study_sample):
    message = missing(study_sample, request("large", experiment="compression", document="memo"))
    assert message.startswith("no recording for key {")
    assert "mode='large'" in message and "document='memo'" in message
    assert str(STUDY_SAMPLE) in message


def test_a_missing_sample_fails_alone_in_a_batch(study_sample):
    results = study_sample.infer_batch(
        [
            request("tiny", experiment="compression", document="memo"),
            request("large", experiment="compression", document="memo"),
        ]
    )
    assert results[0].text == "MEMO\nTo: All staff" and not results[0].failed
    assert results[1].failed and results[1].error.startswith("MissingRecordingError: no recording")


def test_other_question_is_missing_and_lists_recorded_prompts(study_sample):
    message = missing(
        study_sample,
        request(
            prompt=qa_prompt("When was it sent?"),
            experiment="context_qa",
            document="memo",
            render_config="font_serif",
            condition="vision",
            question_id=0,
        ),
    )
    assert "the study recorded this key with other prompts ('Who wrote the memo?')" in message
    assert "question_id=0" in message and str(STUDY_SAMPLE) in message


def test_study_lines_serve_only_requests_with_an_experiment(study_sample, tmp_path):
    other = missing(study_sample, request("tiny", experiment="render_ocr", document="memo"))
    assert "experiment='render_ocr'" in other
    # A line without sample_id is served by the study rule alone, which needs an experiment in
    # the request: the same document and mode without one is missing.
    line = {"document": "d", "mode": "small", "prompt": None, "output": "x"}
    engine = ReplayEngine(recordings=write_lines(tmp_path / "r.jsonl", [line]))
    message = missing(engine, request(document="d"))
    assert "document='d'" in message and "experiment=" not in message
    assert missing(engine, request(experiment="e", document="d")).startswith("no recording")


def test_extra_key_field_does_not_match(tmp_path):
    path = tmp_path / "run.jsonl"
    RecordingEngine(FakeEngine(), path).infer(request("small", "p", document="a"))
    engine = ReplayEngine(recordings=path)
    assert engine.infer(request("small", "p", document="a")).text.startswith("a «p»")
    message = missing(engine, request("small", "p", document="a", page=2))
    assert "page=2" in message and "document='a'" in message
    missing(engine, request("small", "p"))  # a field fewer does not match either


def test_recorded_line_needs_the_same_sample_mode_image_and_prompt(tmp_path):
    from evalsuite.render import PRESETS, render_text

    page = render_text("Invoice 42", PRESETS["font_mono"]).pages[0].save(tmp_path / "a.png")
    other = render_text("Invoice 43", PRESETS["font_mono"]).pages[0].save(tmp_path / "b.png")
    path = tmp_path / "run.jsonl"
    RecordingEngine(FakeEngine(), path).infer(request("small", "p", image=page, document="a"))
    engine = ReplayEngine(recordings=path)
    assert not engine.infer(request("small", "p", image=page, document="a")).failed
    image = missing(engine, request("small", "p", image=other, document="a"))
    assert "was made from another image" in image and f"{path}:1" in image
    prompt = missing(engine, request("small", "q", image=page, document="a"))
    assert "was made with another prompt ('p', this one 'q')" in prompt
    for req in (
        request("small", "p", image=page, sample_id="t", document="a"),
        request("base", "p", image=page, document="a"),
    ):
        assert missing(engine, req).startswith("no recording for key")


def test_exact_prompt_beats_contained_and_unrecorded(tmp_path):
    study = {"experiment": "context_qa", "document": "d", "mode": "small"}
    path = write_lines(
        tmp_path / "r.jsonl",
        [
            {**study, "prompt": None, "output": "any"},
            {**study, "prompt": "Q", "output": "short"},
            {**study, "prompt": "long Q", "output": "long"},
            {**study, "prompt": "exact prompt", "output": "exact"},
        ],
    )
    engine = ReplayEngine(recordings=path)

    def text(prompt):
        return engine.infer(request(prompt=prompt, experiment="context_qa", document="d")).text

    assert text("exact prompt") == "exact"
    assert text("a long Q here") == "long"
    assert text("Q?") == "short"
    assert text("nothing") == "any"


def test_later_lines_and_files_win(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    old = {"experiment": "e", "document": "d", "mode": "tiny", "prompt": "p", "output": "old"}
    write_lines(first, [old, {**old, "output": "new"}])
    req = request("tiny", "p", experiment="e", document="d")
    assert ReplayEngine(recordings=first).infer(req).text == "new"
    write_lines(second, [{**old, "output": "newest"}])
    both = ReplayEngine(recordings=[first, second])
    assert both.infer(req).text == "newest"
    assert len(both) == 1


def test_later_recorded_lines_win(tmp_path):
    path = tmp_path / "run.jsonl"
    RecordingEngine(FakeEngine(), path).infer(request("small", "p", document="a"))
    lines = path.read_text(encoding="utf-8").splitlines()
    newer = json.loads(lines[0]) | {"output": "rerun"}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(newer) + "\n")
    engine = ReplayEngine(recordings=path)
    assert engine.infer(request("small", "p", document="a")).text == "rerun"
    assert len(engine) == 1


# --- where the recordings come from ---------------------------------------------------------------


def test_recordings_path_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv(
        "EVALSUITE_RECORDINGS", f"{tmp_path / 'x.jsonl'}{os.pathsep}{tmp_path / 'y.jsonl'}"
    )
    monkeypatch.setenv("EVALSUITE_DATA", str(tmp_path / "data"))
    assert recordings_paths("given.jsonl") == [Path("given.jsonl")]
    assert recordings_paths(["a", "b"]) == [Path("a"), Path("b")]
    assert recordings_paths() == [tmp_path / "x.jsonl", tmp_path / "y.jsonl"]
    monkeypatch.delenv("EVALSUITE_RECORDINGS")
    assert recordings_paths() == [
        tmp_path / "data" / "deepseek_ocr_recordings" / "recordings.jsonl"
    ]
    monkeypatch.delenv("EVALSUITE_DATA")
    with pytest.raises(EngineUnavailableError, match="EVALSUITE_RECORDINGS"):
        recordings_paths()


def test_absent_file_is_unavailable(tmp_path):
    with pytest.raises(EngineUnavailableError, match=r"nope\.jsonl"):
        ReplayEngine(recordings=tmp_path / "nope.jsonl")


def test_registered_as_replay():
    engine = create_engine("replay", recordings=str(STUDY_SAMPLE))
    assert isinstance(engine, ReplayEngine) and engine.name == "replay" and len(engine) == 5


# --- damaged files --------------------------------------------------------------------------------


def test_truncated_last_line_warns_and_keeps_the_rest(tmp_path):
    path = tmp_path / "cut.jsonl"
    text = STUDY_SAMPLE.read_text(encoding="utf-8")
    path.write_text(text + text.splitlines()[0][:60], encoding="utf-8")  # no final newline
    with pytest.warns(RuntimeWarning, match=r"cut\.jsonl:6: incomplete last line"):
        engine = ReplayEngine(recordings=path)
    assert len(engine) == 5


def test_broken_middle_line_is_an_error_with_its_number(tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = STUDY_SAMPLE.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:40]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"bad\.jsonl:3"):
        ReplayEngine(recordings=path)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"mode": "small"}, "output"),
        ({"mode": "small", "output": 5}, "output"),
        ({"output": "x"}, "mode"),
        ({"mode": "small", "output": "x", "output_tokens": "7"}, "output_tokens"),
        ({"mode": "small", "output": "x", "prompt": 3}, "prompt"),
        ({"mode": "small", "output": "x", "document": ["a"]}, "document"),
    ],
)
def test_malformed_records_name_the_field(tmp_path, line, field):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=field):
        ReplayEngine(recordings=path)


# --- the real recordings of DeepSeek-OCR ----------------------------------------------------------


@pytest.fixture(scope="module")
def real_recordings():
    return shared_data("deepseek_ocr_recordings", "recordings.jsonl")


def test_real_recordings_every_line_is_served(real_recordings):
    engine = ReplayEngine(recordings=real_recordings)
    lines = [json.loads(line) for line in real_recordings.read_text(encoding="utf-8").splitlines()]
    assert len(engine) == len(lines) == 732
    for line in lines:
        assert list(line) == STUDY_FIELDS
        key = {
            name: line[name]
            for name in ("experiment", "document", "render_config", "condition", "question_id")
        }
        prompt = "<image>\nFree OCR." if line["prompt"] is None else qa_prompt(line["prompt"])
        mode = TEXT_CONDITION_MODE if line["condition"] == "text" else line["mode"]
        result = engine.infer(request(mode, prompt, **key))
        assert result.text == line["output"]
        assert result.vision_tokens == line["vision_tokens"]
        assert result.output_tokens == line["output_tokens"]
        assert result.latency_s == (line["latency_s"] or 0.0)


def test_real_recordings_known_values(real_recordings):
    engine = ReplayEngine(recordings=real_recordings)
    invoice = engine.infer(request("tiny", experiment="compression", document="invoice"))
    assert invoice.text.startswith("INVOICE #INV-2024-0892")
    assert (invoice.vision_tokens, invoice.output_tokens, invoice.latency_s) == (64, 192, 7.885)
    answer = engine.infer(
        request(
            TEXT_CONDITION_MODE,
            prompt=qa_prompt("What is John's employee ID?"),
            experiment="context_qa",
            document="employee_record",
            render_config=None,
            condition="text",
            question_id=0,
        )
    )
    assert answer.text == "EMP-2847" and answer.vision_tokens is None


# --- recording and round trips --------------------------------------------------------------------


class FakeEngine(EngineBase):
    """Deterministic stand-in for a live engine: every field of a result is exercised."""

    name = "fake"
    kind = "vlm"

    def _infer(self, request):
        if request.key.get("document") == "broken":
            raise RuntimeError("decoder ran out of memory")
        vision = (
            VisionTokens(nominal=356, valid=318, raw=543, tiles=2)
            if request.mode == "gundam"
            else 100
        )
        return InferenceResult(
            text=f"{request.key.get('document')} «{request.prompt}» \u00e9\n\ttab",
            vision_tokens=vision,
            output_tokens=len(request.prompt),
            latency_s=0.125 + len(request.prompt) / 3,
            settings={"temperature": 0.0, "max_new_tokens": 8192, "no_repeat_ngram_size": 35},
            boxes=[(1.5, 2.0, 30.25, 40.0)],
        )


def fake_requests():
    return [
        request("gundam", "Free OCR.", experiment="compression", document="a"),
        request("small", "Question: x?", experiment="context_qa", document="a", question_id=3),
        request("tiny", "Free OCR.", experiment="compression", document="broken"),
    ]


def test_record_then_replay_is_identical(tmp_path):
    path = tmp_path / "rec" / "run.jsonl"
    recorder = RecordingEngine(FakeEngine(), path)
    live = [recorder.infer(req) for req in fake_requests()[:1]] + recorder.infer_batch(
        fake_requests()[1:]
    )
    assert live[2].failed and "out of memory" in live[2].error
    replayed = ReplayEngine(recordings=path).infer_batch(fake_requests())
    assert replayed == live
    assert isinstance(replayed[0].vision_tokens, VisionTokens)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [list(line)[:12] for line in lines] == [STUDY_FIELDS] * 3
    assert lines[1]["question_id"] == 3 and lines[1]["sample_id"] == "s"


def test_recording_appends_to_an_existing_recording(tmp_path):
    path = tmp_path / "run.jsonl"
    shutil.copy(STUDY_SAMPLE, path)
    RecordingEngine(FakeEngine(), path).infer_batch(fake_requests())
    engine = ReplayEngine(recordings=path)
    assert len(engine) == 8
    assert (
        engine.infer(request("tiny", experiment="compression", document="memo")).text
        == "MEMO\nTo: All staff"
    )


def test_recording_refuses_a_file_with_an_incomplete_last_line(tmp_path):
    path = tmp_path / "cut.jsonl"
    path.write_text('{"mode": "tiny", "outp', encoding="utf-8")
    with pytest.raises(ValueError, match="incomplete line"):
        RecordingEngine(FakeEngine(), path)
    assert path.read_text(encoding="utf-8") == '{"mode": "tiny", "outp'


@pytest.mark.parametrize(
    ("key", "error", "match"),
    [
        ({"document": "a", "output": "x"}, ValueError, "'output' is reserved"),
        ({"document": "a", "image_sha256": "0" * 64}, ValueError, "'image_sha256' is reserved"),
        ({"sample_id": "t"}, ValueError, "'sample_id' is reserved"),
        ({"mode": "tiny"}, ValueError, "'mode' is reserved"),
        ({"prompt": "p"}, ValueError, "'prompt' is reserved"),
        ({"document": ["a"]}, TypeError, "document"),
    ],
)
def test_recording_rejects_keys_that_cannot_be_replayed(tmp_path, key, error, match):
    path = tmp_path / "run.jsonl"
    with pytest.raises(error, match=match):
        RecordingEngine(FakeEngine(), path).infer(
            InferenceRequest(image=None, prompt="p", mode="small", sample_id="s", key=key)
        )
    assert not path.exists() or path.read_text() == ""


@pytest.mark.parametrize("key", [{}, {"document": None}])
def test_an_empty_key_is_recorded_and_replayed_by_sample_image_and_prompt(tmp_path, key):
    from evalsuite.render import PRESETS, render_text

    page = render_text("Invoice 42", PRESETS["font_mono"]).pages[0].save(tmp_path / "a.png")
    path = tmp_path / "run.jsonl"

    def req(**changes):
        fields = {"image": page, "prompt": "p", "mode": "small", "sample_id": "s", "key": key}
        return InferenceRequest(**(fields | changes))

    live = RecordingEngine(FakeEngine(), path).infer(req())
    assert not live.failed
    line = json.loads(path.read_text(encoding="utf-8"))
    assert line["sample_id"] == "s" and line["image_sha256"] == req().image_sha256
    replayed = ReplayEngine(recordings=path)
    assert replayed.infer(req()) == live
    assert "another prompt" in missing(replayed, req(prompt="q"))
    assert missing(replayed, req(sample_id="t")).startswith("no recording for key")


def _record_many(path, worker):
    recorder = RecordingEngine(FakeEngine(), path)
    for index in range(20):
        recorder.infer(request(prompt="p" * 500, experiment="x", document=f"{worker}-{index}"))


def test_concurrent_recorders_never_interleave(tmp_path):
    path = tmp_path / "shared.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_record_many, args=(path, worker)) for worker in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    engine = ReplayEngine(recordings=path)
    assert len(engine) == 60
    assert engine.infer(request(prompt="p" * 500, experiment="x", document="2-19")).text.startswith(
        "2-19"
    )


def test_tiny_model_recorded_then_replayed_is_identical(tmp_path):
    from evalsuite.render import PRESETS, render_text

    page = render_text("Invoice 42\nTotal: 17.50 EUR", PRESETS["font_mono"]).pages[0]
    image = page.save(tmp_path / "page.png")
    path = tmp_path / "tiny.jsonl"
    assert supported_modes("tiny-deepseek-ocr-2") == ("default", "global")
    requests = [
        request(mode, FREE_OCR, image=image, experiment="compression", document="p")
        for mode in supported_modes("tiny-deepseek-ocr-2")
    ]
    live = RecordingEngine(create_engine("tiny-deepseek-ocr-2"), path).infer_batch(requests)
    assert all(result.error is None and result.text for result in live)
    assert all(isinstance(result.vision_tokens, int) for result in live)
    # 1024 x 1024 > 768 px: default adds 2 x 2 tiles of 144 tokens to global's 256 + 1.
    assert [result.vision_tokens for result in live] == [256 + 144 * 4 + 1, 257]
    assert ReplayEngine(recordings=path).infer_batch(requests) == live
