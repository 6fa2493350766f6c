"""API models (GPT-4o, GPT-5, Gemini 2.5 Flash): their requests and answer reading against
olmOCR-bench's runners (tests/fixtures/models/api_models/, made by gen_api_models_requests.py
beside them), and the provider side of a run against a fake provider that checks the key,
refuses unknown fields and enforces a rate limit: 429 with Retry-After, the client's own
limits, token usage and cost in results.json and the summary."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.engines.rate_limit import RateLimiter, retry_after_s
from evalsuite.engines.served import billed_tokens
from evalsuite.models import RateLimits, model_profile
from evalsuite.models.api_models import GEMINI_2_5_FLASH, GPT_4O, GPT_5
from evalsuite.models.convert import ConversionError
from evalsuite.models.convert.olmocr import json_natural_text, json_page_response
from evalsuite.records.metadata import merge_engine_details
from tests.support.fake_servers import chat_app, serving
from tests.support.faults import bench_env
from tests.support.paths import TEST_FIXTURES
from tests.support.subprocess_runs import run_pytest

FIXTURES = TEST_FIXTURES / "models" / "api_models"
KEY = "sk-test-not-a-real-key"


def load_cases(name: str) -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / name, "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


ANSWERS = [c for c in load_cases("api_models_answers.json.gz")
           if c["input"]["variant"] != "raw_answer"]
REQUESTS = load_cases("api_models_requests.json.gz")
REQUESTS_MAIN = load_cases("api_models_requests_main-f7cfe4c.json.gz")


def official_request(cases: list[dict[str, Any]], runner: str, page: str) -> dict[str, Any]:
    (case,) = [c for c in cases if c["input"]["runner"] == runner and c["input"]["page"] == page
               and c["input"]["kwargs"] == {"prompt_template": "full_no_document_anchoring",
                                            "response_template": "json"}]
    (request,) = case["output"]["requests"]
    return request["body"]


@pytest.mark.parametrize(
    ("runner", "read"),
    [("run_chatgpt", lambda t: json_page_response(t).natural_text),
     ("run_server", lambda t: json_page_response(t).natural_text),
     ("run_gemini", json_natural_text)],
)
def test_json_answers_read_as_olmocr_bench_runners_read_them(runner: str, read: Any) -> None:
    cases = [c for c in ANSWERS if c["input"]["runner"] == runner]
    assert len(cases) == 15
    for case in cases:
        content, output = case["input"]["answer_content"], case["output"]
        if "return" in output:
            assert read(content) == output["return"], case["input"]["variant"]
        else:
            with pytest.raises(ConversionError) as failed:
                read(content)
            assert str(failed.value).startswith(output["error"][0]), case["input"]["variant"]


@dataclass
class Provider:
    """An OpenAI-compatible provider: it wants ``Authorization: Bearer KEY`` (401), refuses a
    body with a field outside ``model``, ``messages`` and ``fields`` (400), serves at most
    ``limit`` requests per ``window_s`` (429 with ``Retry-After: retry_s``, as OpenAI does) and
    answers every page with ``answer`` in olmOCR-bench's JSON schema and a ``usage``."""

    fields: frozenset[str]
    served: tuple[str, ...]
    answer: str
    limit: int = 1_000_000
    window_s: float = 1.0
    retry_s: float = 0.2
    finish_reason: str = "stop"
    bodies: list[dict[str, Any]] = field(default_factory=list)
    served_at: list[float] = field(default_factory=list)
    refused_at: list[float] = field(default_factory=list)
    api_base: str = ""

    def authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {KEY}"

    async def models(self, request: web.Request) -> web.Response:
        if not self.authorized(request):
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        return web.json_response({"object": "list", "data": [{"id": m} for m in self.served]})

    async def completions(self, request: web.Request) -> web.Response:
        if not self.authorized(request):
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        body = await request.json()
        unknown = set(body) - {"model", "messages"} - self.fields
        if unknown or body["model"] not in self.served:
            return web.json_response({"error": {"message": f"Unrecognized: {sorted(unknown)}"}},
                                     status=400)
        now = time.monotonic()
        recent = [t for t in self.served_at if t > now - self.window_s]
        if len(recent) >= self.limit:
            self.refused_at.append(now)
            return web.json_response(
                {"error": {"message": "Rate limit reached for requests", "type": "requests"}},
                status=429, headers={"Retry-After": f"{self.retry_s:g}"})
        self.served_at.append(now)
        self.bodies.append(body)
        return web.json_response({
            "choices": [{"message": {"content": self.answer, "refusal": None},
                         "finish_reason": self.finish_reason}],
            "usage": {"prompt_tokens": 700 + len(self.bodies) % 7,
                      "completion_tokens": len(self.answer), "total_tokens": 0},
        })


@contextlib.contextmanager
def running(provider: Provider) -> Iterator[Provider]:
    with serving(chat_app(provider.models, provider.completions)) as api_base:
        provider.api_base = api_base
        yield provider


def page_answer(text: str | None, rotation: Any = 0) -> str:
    return json.dumps({"primary_language": "en", "is_rotation_valid": True,
                       "rotation_correction": rotation, "is_table": False, "is_diagram": False,
                       "natural_text": text})


ANSWER = page_answer("# Results\n\nThe table shows the results.\n\n\\[E = mc^2\\]")


def provider_of(name: str, **kwargs: Any) -> Provider:
    profile = model_profile(name)
    return Provider(frozenset(profile.decoding), profile.hf_ids[:1], ANSWER, **kwargs)


def decoded(data_url: str) -> Image.Image:
    header, _, data = data_url.partition(",")
    assert header == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


def page_request(width: int = 612, height: int = 792, sample: str = "p") -> InferenceRequest:
    return InferenceRequest(Image.new("RGB", (width, height), "white"), "unused", "native",
                            sample, task="page_markdown")


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


def rendered_size(runner: str, page: str) -> tuple[int, int]:
    """The size of the page the runner sent, by its default-kwargs case of ``page``."""
    (case,) = [c for c in REQUESTS if c["input"]["runner"] == runner
               and c["input"]["page"] == page and c["input"]["kwargs"] == {}]
    (request,) = case["output"]["requests"]
    summary = request["body"]["messages"][0]["content"][1]["image_url"]["image_summary"]
    return summary["width"], summary["height"]


@pytest.mark.parametrize("profile", [GPT_4O, GPT_5], ids=["GPT-4o", "GPT-5"])
@pytest.mark.parametrize(("page", "upright"), [("letter_text", (612, 792)),
                                               ("tall_rotated", (900, 300))])
def test_openai_request_equals_run_chatgpt(
    profile: Any, page: str, upright: tuple[int, int], api_key: None
) -> None:
    """run_chatgpt with the No Anchor prompt and JSON answers: the same body but for the page
    itself (GPT-5 without temperature), the page at the size poppler rendered it (a page given
    upright at its size in points), the answer's natural_text as the page."""
    official = official_request(REQUESTS, "run_chatgpt", "letter_text")
    provider = provider_of(profile.name)
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base, model_profile=profile.name)
        result = engine.infer(page_request(*upright))
    assert result.error is None, result.error
    assert result.text == json.loads(ANSWER)["natural_text"]
    (body,) = provider.bodies
    expected = {k: v for k, v in official.items() if k != "messages"}
    expected["model"] = profile.hf_ids[0]
    if profile is GPT_5:
        del expected["temperature"]
    assert {k: v for k, v in body.items() if k != "messages"} == expected
    (message,) = body["messages"]
    (official_message,) = official["messages"]
    text, image = message["content"]
    assert message["role"] == official_message["role"] == "user"
    assert text == official_message["content"][0]
    assert decoded(image["image_url"]["url"]).size == rendered_size("run_chatgpt", page)


def test_gemini_request_is_run_gemini_through_the_openai_compatible_api(api_key: None) -> None:
    """run_gemini's prompt, order (page first), sampling and response schema, in the OpenAI
    protocol's words; 10,000 output tokens as allenai/olmocr main sends."""
    official = official_request(REQUESTS, "run_gemini", "letter_text")
    config = official["generationConfig"]
    main = official_request(REQUESTS_MAIN, "run_gemini", "letter_text")["generationConfig"]
    provider = provider_of(GEMINI_2_5_FLASH.name)
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base,
                               model_profile="gemini-2.5-flash")
        result = engine.infer(page_request())
    assert result.error is None and result.text == json.loads(ANSWER)["natural_text"]
    (body,) = provider.bodies
    (official_parts,) = [content["parts"] for content in official["contents"]]
    image, text = body["messages"][0]["content"]
    assert image["type"] == "image_url" and "inlineData" in official_parts[0]
    assert text == {"type": "text", "text": official_parts[1]["text"]}
    summary = official_parts[0]["inlineData"]["image_summary"]
    assert decoded(image["image_url"]["url"]).size == (summary["width"], summary["height"])
    assert (body["temperature"], body["top_p"]) == (config["temperature"], config["topP"])
    assert body["max_tokens"] == main["maxOutputTokens"] == 10000
    schema = body["response_format"]["json_schema"]["schema"]
    official_schema = config["responseSchema"]
    assert schema["required"] == official_schema["required"]
    assert {name: {k: (v.lower() if k == "type" else v) for k, v in prop.items()}
            for name, prop in official_schema["properties"].items()} == schema["properties"]


def test_an_answer_cut_off_or_unreadable_fails_the_sample(api_key: None) -> None:
    for finish, answer, why in (("length", ANSWER, "finished with 'length'"),
                                ("stop", page_answer("x", rotation=45), "rotation_correction"),
                                ("stop", "```json\n{}\n```", "JSONDecodeError")):
        provider = Provider(frozenset(GPT_4O.decoding), GPT_4O.hf_ids, answer,
                            finish_reason=finish)
        with running(provider):
            engine = create_engine("openai", api_base=provider.api_base, model_profile="GPT-4o")
            result = engine.infer(page_request())
        assert result.failed and why in str(result.error), result.error
        assert result.settings["model_profile"]["name"] == "GPT-4o"


def test_a_page_with_no_text_is_an_empty_page(api_key: None) -> None:
    provider = Provider(frozenset(GPT_4O.decoding), GPT_4O.hf_ids, page_answer(None))
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base, model_profile="GPT-4o")
        result = engine.infer(page_request())
    assert result.error is None and result.text == ""


def test_the_key_comes_from_the_providers_variable_and_is_never_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gemini's key from GEMINI_API_KEY; an OpenAI key in the environment is never sent to
    another provider; at the provider's own endpoint a missing key is refused before any
    request; no record holds the key."""
    from evalsuite.errors import EngineUnavailableError
    from evalsuite.models.api_models import GEMINI_API

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(EngineUnavailableError, match="set GEMINI_API_KEY"):
        create_engine("openai", api_base=GEMINI_API, model_profile="Gemini-2.5-Flash")
    provider = provider_of(GEMINI_2_5_FLASH.name)
    with running(provider):
        with pytest.raises(EngineUnavailableError, match="HTTP 401"):  # not the OpenAI key
            create_engine("openai", api_base=provider.api_base, model_profile="Gemini-2.5-Flash")
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.delenv("OPENAI_API_KEY")
        engine = create_engine("openai", api_base=provider.api_base,
                               model_profile="Gemini-2.5-Flash")
        result = engine.infer(page_request())
    assert result.error is None
    assert KEY not in json.dumps([engine.server_info(), result.settings], default=str)


def test_rate_limited_requests_wait_for_retry_after_and_are_counted(api_key: None) -> None:
    """A provider that serves 2 requests a second answers the rest 429 with Retry-After 0.2 s:
    every page is answered in the end, each refused request is sent again no sooner than the
    server asked, and the refusals are counted."""
    provider = provider_of("GPT-4o", limit=2, window_s=1.0, retry_s=0.2)
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base, model_profile="GPT-4o",
                               max_retries=30, concurrency=4)
        engine.limiter = None  # the provider's limit is what is tested here
        results = engine.infer_batch([page_request(sample=f"p{i}") for i in range(5)])
    assert [r.error for r in results] == [None] * 5
    assert len(provider.bodies) == 5 and len(provider.refused_at) >= 3
    (counts,) = engine.endpoint_counts().values()
    assert counts["rate_limited"] == len(provider.refused_at)
    assert counts["completed"] == 5
    for served in provider.served_at[2:]:  # each came after a refusal's Retry-After
        assert any(served - refused >= 0.2 - 0.02 for refused in provider.refused_at)


def test_the_clients_limit_keeps_it_under_the_providers(api_key: None) -> None:
    provider = provider_of("GPT-4o", limit=2, window_s=0.4)  # a margin for the latencies
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base, model_profile="GPT-4o",
                               concurrency=4)
        engine.limiter = RateLimiter(RateLimits(requests_per_minute=2), window_s=0.5)
        started = time.monotonic()
        results = engine.infer_batch([page_request(sample=f"p{i}") for i in range(5)])
        took = time.monotonic() - started
    assert [r.error for r in results] == [None] * 5
    assert provider.refused_at == [] and took >= 2 * 0.5  # pages 3-4 and 5 waited a window each


def test_tokens_and_cost_reach_the_run_details(api_key: None) -> None:
    provider = provider_of("GPT-4o")
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base, model_profile="GPT-4o")
        results = engine.infer_batch([page_request(sample=f"p{i}") for i in range(4)])
        details = {"gpt-4o": {**engine.server_info(), "endpoint_counts": engine.endpoint_counts()}}
    prompt = sum(700 + n % 7 for n in range(1, 5))
    completion = 4 * len(ANSWER)
    assert sum(r.settings["usage"]["prompt_tokens"] for r in results) == prompt
    assert sum(r.settings["usage"]["completion_tokens"] for r in results) == completion
    usage = merge_engine_details(details, details)["gpt-4o"]["token_usage"]  # two processes
    assert usage == {"prompt_tokens": 2 * prompt, "completion_tokens": 2 * completion,
                     "rate_limited": 0,
                     "cost_usd": pytest.approx((2 * prompt * 2.5 + 2 * completion * 10) / 1e6)}


def test_a_wait_longer_than_the_timeout_fails_at_once(api_key: None) -> None:
    provider = provider_of("GPT-4o", limit=0, retry_s=30)
    with running(provider):
        engine = create_engine("openai", api_base=provider.api_base, model_profile="GPT-4o",
                               timeout_s=5, max_retries=5)
        started = time.monotonic()
        result = engine.infer(page_request())
    assert time.monotonic() - started < 5 and len(provider.refused_at) == 1
    assert "asks to wait 30 s (Retry-After), longer than timeout_s=5 s" in str(result.error)


def test_until_a_first_answer_one_request_is_in_flight_and_a_hold_stops_all() -> None:
    import asyncio

    async def run() -> None:
        limiter = RateLimiter(RateLimits(tokens_per_minute=10_000))
        first = await limiter.acquire()
        second = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.1)
        assert not second.done()  # what a request costs is not known yet
        limiter.settle(first, 100)
        await asyncio.wait_for(second, 1.0)  # at once, not when the window ends
        limiter.hold(0.3)
        started = time.monotonic()
        await limiter.acquire()
        assert time.monotonic() - started >= 0.3 - 0.01

    asyncio.run(run())


@pytest.mark.parametrize(
    ("usage", "billed"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, (10, 5)),
        ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 40}, (10, 30)),
        ({"prompt_tokens": 10, "completion_tokens": 5}, (10, 5)),
        ({"prompt_tokens": "10", "completion_tokens": True, "total_tokens": None}, (0, 0)),
        ({}, (0, 0)),
    ],
)
def test_thinking_reported_only_in_the_total_is_billed_as_completion(
    usage: dict[str, Any], billed: tuple[int, int]
) -> None:
    assert billed_tokens(usage) == billed


def test_a_run_refused_for_its_rate_limit_reports_the_refusals() -> None:
    counts = {"http://a/v1": {"requests": 3, "completed": 0, "failed": 3, "rate_limited": 3,
                              "prompt_tokens": 0, "completion_tokens": 0}}
    details = merge_engine_details({"gpt-4o": {"endpoint_counts": counts}})["gpt-4o"]
    assert details["token_usage"] == {"prompt_tokens": 0, "completion_tokens": 0,
                                      "rate_limited": 3}


def test_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    now = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
    in_90_s = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert retry_after_s({"Retry-After": "7"}, now) == 7.0
    assert retry_after_s({"retry-after": "0.25"}, now) == 0.25
    assert retry_after_s({"retry-after-ms": "1500", "Retry-After": "9"}, now) == 1.5
    assert retry_after_s({"Retry-After": in_90_s}, now) == 90.0
    assert retry_after_s({"Retry-After": "-3"}, now) == 0.0
    assert retry_after_s({"Retry-After": "soon"}, now) is None
    assert retry_after_s({"Retry-After": "nan"}, now) is None
    assert retry_after_s({"retry-after-ms": "inf", "Retry-After": "2"}, now) == 2.0
    assert retry_after_s({}, now) is None


class FakeTime:
    """A clock that only moves when something sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@settings(max_examples=200, deadline=None)
@given(
    rpm=st.one_of(st.none(), st.integers(1, 6)),
    tpm=st.one_of(st.none(), st.integers(1, 400)),
    arrivals=st.lists(st.tuples(st.floats(0, 40), st.integers(0, 150)), min_size=1, max_size=25),
)
def test_the_limiter_never_exceeds_either_limit_and_waits_no_longer_than_needed(
    rpm: int | None, tpm: int | None, arrivals: list[tuple[float, int]]
) -> None:
    """Requests one after another (each answered before the next): within any 60 s, at most
    ``rpm`` start; a request starts beside others only if their tokens plus the mean so far fit
    ``tpm``; one that waited starts the moment the oldest start leaves the window."""
    import asyncio

    time_ = FakeTime()
    limiter = RateLimiter(RateLimits(rpm, tpm), clock=time_.clock, sleep=time_.sleep)
    starts: list[tuple[float, int]] = []

    async def run() -> None:
        for gap, tokens in arrivals:
            time_.now += gap
            arrived = time_.now
            start = await limiter.acquire()
            at = time_.now
            window = [(t, n) for t, n in starts if t + 60 > at]
            if rpm is not None:
                assert len(window) < rpm
            if tpm is not None and window:
                mean = sum(n for _, n in starts) / len(starts)
                assert sum(n for _, n in window) + mean <= tpm + 1e-9
            if at > arrived:
                assert any(abs(t + 60 - at) < 1e-9 for t, _ in starts)
            starts.append((at, tokens))
            limiter.settle(start, tokens)

    asyncio.run(run())


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", ["GPT-4o", "GPT-5", "Gemini-2.5-Flash"])
def test_benches_run_and_gate_an_api_model_and_report_its_cost(name: str, tmp_path: Path) -> None:
    """``pytest benches -m "omnidocbench or olmocr_bench" --model NAME --api-base URL`` with
    the key in the provider's variable: goldens set, then gated; results.json has the run's
    tokens and their cost at the given prices, and the summary says them.
    Slow (~25 s per model here): two child pytest runs of both benches against a fake provider
    (goldens set, then gated and costed); the gate needs the first run's goldens, and each model
    has its own profile (key variable, decoding, version) to label and cost the run."""
    from evalsuite.records.results import read_results

    reports, golden = tmp_path / "reports", tmp_path / "golden"
    provider = provider_of(name)
    env = {**bench_env(), model_profile(name).api_key_env or "": KEY}
    version = model_profile(name).version
    label = name.lower() + (f"-v{version}" if version != 1 else "")
    with running(provider):
        args = ("benches", "-m", "omnidocbench or olmocr_bench", "--model", name,
                "--api-base", provider.api_base, "--golden-dir", golden, "--report-dir", reports,
                "--omnidocbench-version", "1.0", "--token-prices", "2,8")
        first = run_pytest(*args, "--update-golden", env=env)
        assert first.returncode == 0, first.stdout[-3000:]
        again = run_pytest(*args, env=env)
        assert again.returncode == 0, again.stdout[-3000:]
    run = read_results(sorted(reports.glob("*/results.json"))[-1])
    records = {r.benchmark: r for r in run.records}
    assert set(records) == {"omnidocbench", "olmocr_bench"}
    assert all(s.error is None for r in records.values() for s in r.samples)
    assert {r.engine for r in records.values()} == {label}
    usage = run.metadata.engine_details[label]["token_usage"]
    sent = len(provider.bodies) // 2  # the second run's requests
    assert usage["completion_tokens"] == sent * len(ANSWER)
    assert usage["cost_usd"] == pytest.approx(
        (usage["prompt_tokens"] * 2 + usage["completion_tokens"] * 8) / 1e6)
    said = " ".join(again.stdout.split())  # the summary wraps to the terminal's width
    assert f"{label} tokens: {usage['prompt_tokens']:,} prompt" in said
    assert "(USD per million tokens: 2 in, 8 out)" in said, again.stdout[-3000:]
