"""``python -m evalsuite.perf --serving``: throughput through ``evalsuite serve`` and the
``openai`` engine's own cost per page.

1. Batching. ``evalsuite serve`` runs :func:`fixed_latency_engine`, whose ``infer_batch`` of any
   size takes :data:`ENGINE_LATENCY_S`: a GPU batch of DeepSeek-OCR pages takes seconds, and
   200 ms keeps the run short while the serving cost per request (about 1 ms of CPU, here
   shared by client and server) stays a small part of it, as on a GPU host. Pages/s through the
   ``openai`` engine are measured serially (concurrency 1, server ``--max-batch 1``) and at
   concurrency 8, 16 and 32 (server ``--max-batch`` = concurrency); ``ratio`` = concurrent
   pages/s / serial pages/s must reach :data:`REQUIRED_EFFICIENCY` x concurrency. Pages are
   small PNG files, so the numbers measure serving, not image coding. Median of :data:`RUNS`
   runs.
2. Client overhead. Encoding a 1024 x 1024 page, building the request body (JSON included) and
   parsing a response, without the network, must take under :data:`CLIENT_BUDGET_S` (median),
   for a rendered page given as a PIL image and as a PNG file. The page's SHA-256 is computed
   beforehand, as the runner does for its result cache. A color page (which cannot use the grey
   palette encoding) is shown for information.

Exit status 1 when a requirement is not met.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from PIL import Image

from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult
from evalsuite.engines.served import OpenAIChatEngine
from evalsuite.perf import format_seconds, machine_description
from evalsuite.textformat import format_table

ENGINE_LATENCY_S = 0.2
CONCURRENCIES = (8, 16, 32)
REQUIRED_EFFICIENCY = 0.8
ROUNDS = 8  # pages per run = concurrency x ROUNDS (serial: ROUNDS x 2)
RUNS = 5
CLIENT_BUDGET_S = 0.005
CLIENT_RUNS = 25
PAGE_TEXT = "Invoice 2024-0892   Date: 15 November 2024   Total due: $1,229.20\n" * 40
FIXED_LATENCY_ENGINE = "evalsuite.perf.serving:fixed_latency_engine"


class FixedLatencyEngine(EngineBase):
    """A stand-in for a GPU engine: each ``infer_batch`` call sleeps ``latency_s`` seconds,
    whatever its size, and answers ``"page <sample_id>"`` with the batch size in settings."""

    name = "fixed-latency"
    kind = "vlm"

    def __init__(self, *, latency_s: float = ENGINE_LATENCY_S) -> None:
        if not latency_s >= 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s!r}")
        self.latency_s = float(latency_s)

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        time.sleep(self.latency_s)
        settings = {"latency_s": self.latency_s, "batch_size": len(requests)}
        return [
            InferenceResult(
                text=f"page {request.sample_id}",
                output_tokens=2,
                latency_s=self.latency_s,
                settings=dict(settings),
            )
            for request in requests
        ]

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        return self.infer_batch([request])[0]


def fixed_latency_engine(**options: Any) -> FixedLatencyEngine:
    """Factory for ``--engine evalsuite.perf.serving:fixed_latency_engine``; option
    ``latency_s`` (default :data:`ENGINE_LATENCY_S`)."""
    return FixedLatencyEngine(**options)


@dataclass(frozen=True)
class ThroughputRow:
    """Median pages/s at one concurrency, and the ratio to serial pages/s."""

    concurrency: int
    max_batch: int
    pages_per_s: float
    serial_pages_per_s: float

    @property
    def ratio(self) -> float:
        return self.pages_per_s / self.serial_pages_per_s

    @property
    def required(self) -> float:
        return REQUIRED_EFFICIENCY * self.concurrency if self.concurrency > 1 else 0.0

    @property
    def passed(self) -> bool:
        return self.ratio >= self.required


@dataclass(frozen=True)
class OverheadRow:
    """Median client seconds per page for one kind of page; ``budget_s`` None: not required."""

    page: str
    seconds: float
    budget_s: float | None

    @property
    def passed(self) -> bool:
        return self.budget_s is None or self.seconds < self.budget_s


def measure_pages_per_s(api_base: str, image: Path, *, concurrency: int, pages: int) -> float:
    """Median pages/s of :data:`RUNS` ``infer_batch`` calls of ``pages`` requests."""
    from evalsuite.engines import create_engine

    engine = create_engine(
        "openai", api_base=api_base, model_family="none", concurrency=concurrency, max_retries=0
    )
    requests = [
        InferenceRequest(image=image, prompt="Free OCR.", mode="gundam", sample_id=f"p{i}")
        for i in range(pages)
    ]
    rates = []
    for _ in range(RUNS):
        started = time.perf_counter()
        results = engine.infer_batch(requests)
        elapsed = time.perf_counter() - started
        failed = [result.error for result in results if result.error]
        if failed:
            raise RuntimeError(f"{len(failed)} of {pages} pages failed; first: {failed[0]}")
        rates.append(pages / elapsed)
    return statistics.median(rates)


def measure_throughput(image: Path, out: TextIO) -> list[ThroughputRow]:
    """Serial, then each of :data:`CONCURRENCIES`, each against its own server."""
    from evalsuite.serving.process import serve_subprocess

    options = {"latency_s": ENGINE_LATENCY_S}
    rows: list[ThroughputRow] = []
    serial = 0.0
    for concurrency in (1, *CONCURRENCIES):
        pages = concurrency * ROUNDS if concurrency > 1 else ROUNDS * 2
        with serve_subprocess(
            FIXED_LATENCY_ENGINE, engine_options=options, max_batch=concurrency
        ) as server:
            rate = measure_pages_per_s(server.api_base, image, concurrency=concurrency, pages=pages)
        serial = serial or rate
        rows.append(ThroughputRow(concurrency, concurrency, rate, serial))
        print(f"  measured concurrency {concurrency}", file=out, flush=True)
    return rows


def measure_client_overhead(engine: OpenAIChatEngine, image: Image.Image | Path) -> float:
    """Median seconds to build one request's body (as JSON bytes) and parse an answer."""
    answer = json.dumps(
        {
            "choices": [{"message": {"content": PAGE_TEXT}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 600},
        }
    ).encode()
    durations = []
    for index in range(CLIENT_RUNS):
        request = InferenceRequest(
            image=image, prompt="<image>\nFree OCR.", mode="gundam", sample_id=f"p{index}"
        )
        _ = request.image_sha256  # the runner hashes every page for its cache key first
        started = time.perf_counter()
        body, page = engine.build_body(request)
        json.dumps(body).encode()
        engine.parse_completion(request, page, json.loads(answer))
        durations.append(time.perf_counter() - started)
    return statistics.median(durations)


def overhead_rows(engine: OpenAIChatEngine, folder: Path) -> list[OverheadRow]:
    """The client overhead of a rendered 1024 x 1024 page as a PIL image and as a PNG file
    (required), and of a color page (information only)."""
    from evalsuite.render import RenderConfig, render_text

    grey = render_text(PAGE_TEXT, RenderConfig()).pages[0].image
    color = render_text(PAGE_TEXT, RenderConfig(colors="sepia")).pages[0].image
    path = folder / "page.png"
    grey.save(path)
    cases: list[tuple[str, Image.Image | Path, float | None]] = [
        (f"{grey.width}x{grey.height} PIL image, black on white", grey, CLIENT_BUDGET_S),
        (f"{grey.width}x{grey.height} PNG file", path, CLIENT_BUDGET_S),
        (f"{color.width}x{color.height} PIL image, color (info)", color, None),
    ]
    return [
        OverheadRow(label, measure_client_overhead(engine, image), budget)
        for label, image, budget in cases
    ]


def run_serving(out: TextIO) -> int:
    """Print both tables; 0 when every requirement is met, else 1."""
    from evalsuite.engines import create_engine
    from evalsuite.serving.process import serve_subprocess

    print(f"evalsuite perf --serving on {machine_description()}", file=out)
    print(
        f"served engine: {FIXED_LATENCY_ENGINE} ({ENGINE_LATENCY_S * 1e3:g} ms per batch); "
        f"median of {RUNS} runs; ratio = pages/s / serial pages/s",
        file=out,
    )
    with tempfile.TemporaryDirectory(prefix="evalsuite-perf-") as name:
        folder = Path(name)
        small_page = folder / "small.png"
        Image.new("RGB", (64, 64), "white").save(small_page)
        throughput = measure_throughput(small_page, out)
        with serve_subprocess(FIXED_LATENCY_ENGINE, max_batch=1) as server:
            engine = create_engine("openai", api_base=server.api_base, model_family="deepseek-ocr")
            overhead = overhead_rows(engine, folder)
    header = ("concurrency", "max batch", "pages/s", "ratio", "required", "result")
    print(format_table(header, [_throughput_cells(r) for r in throughput], align="rrrrrl"),
          file=out)
    print(f"\nclient overhead per page (median of {CLIENT_RUNS} runs):", file=out)
    rows = [_overhead_cells(row) for row in overhead]
    print(format_table(("page", "median", "budget", "result"), rows, align="lrll", indent="  "),
          file=out)
    failed = [row for row in (*throughput, *overhead) if not row.passed]
    checked = sum(row.concurrency > 1 for row in throughput) + sum(
        row.budget_s is not None for row in overhead
    )
    verdict = f"{len(failed)} of {checked} requirements not met" if failed else "all met"
    print(f"{'FAIL' if failed else 'ok'}: {verdict}", file=out)
    return 1 if failed else 0


def _throughput_cells(row: ThroughputRow) -> tuple[str, ...]:
    if row.concurrency == 1:
        required, verdict = "(serial)", "ok"
    else:
        required, verdict = f">={row.required:.1f}", "ok" if row.passed else "FAIL (too slow)"
    rate, ratio = f"{row.pages_per_s:.1f}", f"{row.ratio:.1f}x"
    return str(row.concurrency), str(row.max_batch), rate, ratio, required, verdict


def _overhead_cells(row: OverheadRow) -> tuple[str, ...]:
    if row.budget_s is None:
        limit, verdict = "(no requirement)", "info"
    else:
        limit = f"< {format_seconds(row.budget_s)}"
        verdict = "ok" if row.passed else "FAIL (too slow)"
    return row.page, format_seconds(row.seconds), limit, verdict
