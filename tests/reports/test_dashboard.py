"""``evalsuite report``: the static dashboard's content, offline-ness and PNG plots."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalsuite.benchmarks import fox
from evalsuite.commands import report as report_command
from evalsuite.records.history import read_history
from evalsuite.records.model import BenchmarkRecord, MetricSummary
from evalsuite.records.results import RunMetadata
from evalsuite.reports import charts, dashboard, dashboard_compute
from evalsuite.reports.charts import run_labels, trend_charts
from evalsuite.reports.geometry import nice_ticks, tick_label
from evalsuite.reports.series import Point, SeriesKey
from evalsuite.runner import EMPTY_OUTPUT
from tests.support.paths import TEST_FIXTURES
from tests.support.reports_builder import (
    FOX_ERROR,
    RENDER_CONFIGS,
    BuiltRun,
    build_runs,
    expected_charts,
    write_reports,
)

FIXTURES = TEST_FIXTURES / "reports"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path]:
    folder = tmp_path_factory.mktemp("reports")
    runs = build_runs()
    return runs, write_reports(folder, runs)


def run_report(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    report_command.add_arguments(parser)
    return report_command.run(parser.parse_args(list(argv)))


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_the_report_command_writes_html_and_one_png_per_chart(
    built: tuple[list, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, history = built
    out = tmp_path / "site" / "index.html"
    assert run_report("--history", str(history), "--out", str(out), "--golden-dir",
                      str(FIXTURES / "golden")) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"dashboard: {out}"
    pngs = [Path(line.removeprefix("plot: ")) for line in printed[1:]]
    assert len(pngs) == sum(expected_charts(runs).values())
    for png in pngs:
        assert png.parent == out.parent / "plots"
        assert png.read_bytes()[:8] == PNG_SIGNATURE

    html = out.read_text("utf-8")
    parser = _Tags()
    parser.feed(html)
    svgs = [attrs for tag, attrs in parser.tags if tag == "svg"]
    assert len(svgs) == sum(expected_charts(runs).values())
    for benchmark, count in expected_charts(runs).items():
        section = html.split(f'id="bench-{benchmark.replace("_", "-")}"')[1].split("<section")[0]
        assert section.count("<svg") == count, benchmark


def test_the_page_is_self_contained(built: tuple[list, Path], tmp_path: Path) -> None:
    _, history = built
    html_path, _ = dashboard.write_dashboard(history, tmp_path / "index.html", png=False)
    parser = _Tags()
    parser.feed(html_path.read_text("utf-8"))
    for tag, attrs in parser.tags:
        assert tag not in {"link", "img", "iframe"}
        assert not (tag == "script" and attrs.get("src")), attrs
        for name in ("href", "src"):
            value = attrs.get(name) or ""
            assert not re.match(r"[a-z]+:", value), (tag, attrs)  # only in-page anchors
    assert not (tmp_path / "plots").exists()


def test_rankings_medals_regressions_and_golden_lines(built: tuple[list, Path]) -> None:
    runs, history = built
    entries = read_history(history)
    golden = dashboard.load_golden_index(FIXTURES / "golden", ["fox"])
    page = dashboard.build_dashboard(entries, history_dir=history.parent, golden=golden).html

    fox = page.split('id="bench-fox"')[1].split("<section")[0]
    ranking = fox.split('id="rank-fox-fixtures"')[1].split("</table>")[0]
    engines = re.findall(
        r'<td class="text" data-sort="([^"]+)">[^<]*</td>'
        r'<td class="text" data-sort="(mode=\w+)"',
        ranking,
    )
    # edit_precision of the newest run, best first: small mode, tesseract, degraded tiny mode
    newest = {(r.engine, r.parameter): r.metrics["edit_precision"].value
              for r in runs[-1].records if r.benchmark == "fox"}
    assert engines == sorted(newest, key=newest.__getitem__, reverse=True)
    assert engines[-1] == ("tiny-deepseek-ocr-2", "mode=tiny")
    assert ranking.count('class="medal gold"') == 1 and ranking.count('class="medal bronze"') == 1
    assert len(FOX_ERROR) == ranking.count("<tr") - 1
    # the regressed row (the newest tiny-mode run) is marked, and only it
    (marked,) = re.findall(r'<tr class="regressed">.*?</tr>', ranking)
    assert "▼ regressed" in marked and 'data-sort="mode=tiny"' in marked

    # The drop of tiny mode is flagged in the status and ringed on its chart; the golden
    # fixture's one entry (tesseract) is a dashed line.
    listed = re.findall(r"<li>([^<]*)</li>",
                        fox.split('<ul class="regressions">')[1].split("</ul>")[0])
    assert listed and all(
        item.startswith("tiny-deepseek-ocr-2 data=fixtures mode=tiny · edit_precision")
        for item in listed
    )  # the metric and its per-bin aggregates
    assert f"newest run: {len(listed)} regression(s)" in fox
    assert fox.count('class="flag flag-regressed"') == 2  # with the failed sample of run 3
    assert fox.count('class="golden"') == 1
    plain = dashboard.build_dashboard(entries, history_dir=history.parent, golden={}).html
    assert 'class="golden"' not in plain
    render = plain.split('id="bench-render-configs"')[1].split("<section")[0]
    assert 'class="flag flag-improved"' in render
    # An OCR record and a record per QA condition for each configuration, ranked apart.
    for table in ("", "-condition-text", "-condition-vision"):
        rows = render.split(f'id="rank-render-configs-fixtures{table}"')[1].split("</table>")[0]
        assert rows.count("<tr") - 1 == len(RENDER_CONFIGS), table


def test_the_drill_down_holds_the_worst_samples_with_aligned_words(
    built: tuple[list, Path],
) -> None:
    runs, history = built
    entries = read_history(history)
    page = dashboard.build_dashboard(entries, history_dir=history.parent, golden={},
                                     max_samples=2).html
    data = json.loads(
        re.search(r'id="drill-fox-data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</")
    )
    assert len(data) == 2 * len(FOX_ERROR)
    newest = {(r.engine, r.parameter): r for r in runs[-1].records if r.benchmark == "fox"}
    tiny = [item for item in data
            if item["group"] == "tiny-deepseek-ocr-2 · fixtures · mode=tiny"]
    worst = sorted(newest[("tiny-deepseek-ocr-2", "mode=tiny")].samples,
                   key=lambda s: s.scores["edit_precision"])[:2]
    assert [item["label"].split(" ")[0] for item in tiny] == [s.sample_id for s in worst]
    assert "".join(text for text, _ in tiny[0]["gt"]) == worst[0].reference
    assert "".join(text for text, _ in tiny[0]["pred"]) == worst[0].prediction
    assert any(match == -1 for _, match in tiny[0]["pred"])  # the perturbed words


def test_history_without_results_files_still_renders(
    built: tuple[list, Path], tmp_path: Path
) -> None:
    _, history = built
    shutil.copy(history, tmp_path / "history.jsonl")
    html_path, _ = dashboard.write_dashboard(tmp_path / "history.jsonl", tmp_path / "i.html",
                                             png=False)
    html = html_path.read_text("utf-8")
    assert "No per-sample texts" in html
    assert "each point a record" in html  # the compression curve from the aggregates


def test_empty_and_missing_histories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "history.jsonl").write_text("")
    assert run_report("--history", str(tmp_path / "history.jsonl"), "--out",
                      str(tmp_path / "index.html")) == 0
    assert "No runs recorded yet" in (tmp_path / "index.html").read_text("utf-8")
    assert run_report("--history", str(tmp_path / "missing.jsonl")) == 2
    assert "missing.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("low", "high", "expected", "labels"),
    [
        (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], ["0.0", "0.2"]),
        (5.8, 19.2, [5.0, 10.0, 15.0, 20.0], ["5", "10"]),
        (6.0, 17.0, [5.0, 7.5, 10.0, 12.5, 15.0, 17.5], ["5.0", "7.5"]),
        (0.93, 0.93, [0.88, 0.9, 0.92, 0.94, 0.96, 0.98], ["0.88", "0.90"]),
    ],
)
def test_axis_ticks_are_round_and_cover_the_range(
    low: float, high: float, expected: list[float], labels: list[str]
) -> None:
    ticks = nice_ticks(low, high)
    assert ticks == pytest.approx(expected)
    assert [tick_label(t, ticks) for t in ticks[:2]] == labels


# --- the redesign: like-with-like rankings, small multiples, ranges, long histories --------


def _history(
    tmp_path: Path,
    runs: list[list[BenchmarkRecord]],
    *,
    hours: int = 24,
    details: dict[str, dict] | None = None,
) -> Path:
    """A history of runs ``hours`` apart holding ``runs``' records (with ``details`` as each
    run's engine details)."""
    built = []
    for index, records in enumerate(runs):
        created = datetime(2026, 1, 1, 6, tzinfo=UTC) + timedelta(hours=hours * index)
        metadata = RunMetadata(run_id=f"{created:%Y%m%dT%H%M%SZ}-{index:06x}",
                               created_utc=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               engine_details=details or {})
        built.append(BuiltRun(metadata, records))
    return write_reports(tmp_path, built)


def _record(
    engine: str, parameter: str, data: str = "fixtures", **values: float
) -> BenchmarkRecord:
    metrics = {name: MetricSummary(value, 10, value - 0.1, value + 0.1)
               for name, value in values.items()}
    return BenchmarkRecord("fox", engine, parameter, metrics, data=data)


def _page(history: Path) -> str:
    entries = read_history(history)
    return dashboard.build_dashboard(entries, history_dir=history.parent, golden={}).html


def _rank_cells(page: str, table_id: str) -> list[tuple[str, str, str]]:
    """(rank shown, medal class, engine) per row of the table."""
    table = page.split(f'id="{table_id}"')[1].split("</table>")[0]
    return re.findall(r'<span(?: class="medal (\w+)")?>([^<]*)</span>(?:.*?)</td>'
                      r'<td class="text" data-sort="([^"]+)"', table)


def test_rankings_compare_like_with_like_tie_equal_values_and_keep_medals_above_the_floor(
    tmp_path: Path,
) -> None:
    floor = dashboard_compute.MEDAL_FLOOR
    records = [
        _record("a", "mode=small", edit_precision=0.9),
        _record("b", "mode=small", edit_precision=0.9),  # a tie with a
        _record("c", "mode=small", edit_precision=floor + 0.01),
        _record("d", "mode=small", edit_precision=floor - 0.01),  # below the floor
        _record("a", "mode=small", data="study@1", edit_precision=0.2),
        _record("b", "mode=small", data="study@1", edit_precision=0.1),
    ]
    page = _page(_history(tmp_path, [records]))
    assert _rank_cells(page, "rank-fox-fixtures") == [
        ("gold", "1=", "a"), ("gold", "1=", "b"), ("bronze", "3", "c"), ("", "4", "d"),
    ]
    # the study's documents are ranked on their own, and 0.2 and 0.1 earn no medal
    assert _rank_cells(page, "rank-fox-study-1") == [("", "1", "a"), ("", "2", "b")]


def test_a_descriptive_headline_ranks_nothing_and_says_so(tmp_path: Path) -> None:
    records = [_record(e, "mode=small", data="study@1", valid_vision_tokens=v)
               for e, v in (("a", 64.0), ("b", 100.0))]
    page = _page(_history(tmp_path, [records]))
    assert "valid_vision_tokens has no better direction: not ranked" in page
    assert _rank_cells(page, "rank-fox-study-1") == [("", "—", "a"), ("", "—", "b")]
    assert "higher is better" not in page  # the spec says descriptive, whatever the record says


def test_trend_charts_are_small_multiples_with_stable_colors_and_clipped_whiskers() -> None:
    configs = [f"mode=small,config=c{i:02d}" for i in range(15)]
    series: dict[SeriesKey, list[Point]] = {}
    for run in range(3):
        for parameter in configs:
            for metric, (value, low, high) in {
                "edit_precision": (0.99, 0.9, 1.06),  # a t interval past 1
                "gt_compression": (3.0, -5.0, 11.0),  # ... and below 0
                "valid_vision_tokens": (100.0, 100.0, 100.0),
                "empty_output_rate": (0.0, 0.0, 0.49),
            }.items():
                key = SeriesKey("fox", "replay", "fixtures", parameter, metric)
                summary = MetricSummary(value, 8, low, high, "proportion" if "rate" in metric
                                        else "mean", "higher")  # as an old record said it
                series.setdefault(key, []).append(
                    Point(f"run{run}", f"2026-01-0{run + 1}T06:00:00Z", None, summary))
    specs = {spec.name: spec for spec in fox.METRICS} | {"empty_output_rate": EMPTY_OUTPUT}
    charts, flat = trend_charts("fox", series, {}, None, specs)

    assert [item.text for item in flat] == ["empty_output_rate: 0 in all 3 runs"]
    by_metric: dict[str, list] = {}
    for chart in charts:
        by_metric.setdefault(chart.y_label, []).append(chart)
    assert sorted(by_metric) == ["edit_precision", "gt_compression", "valid_vision_tokens"]
    colors = {}
    for group in by_metric.values():
        assert [len(c.series) for c in group] == [5, 5, 5]  # 15 split evenly, at most 6
        for chart in group:
            assert len({s.color for s in chart.series}) == len(chart.series)
            for line in chart.series:
                assert colors.setdefault((chart.title.split(" · ", 1)[1], line.label),
                                         line.color) == line.color  # same in every metric
    assert len(colors) == 15
    (precision,) = {p.high for c in by_metric["edit_precision"] for s in c.series for p in s.points}
    (compression,) = {p.low for c in by_metric["gt_compression"] for s in c.series
                      for p in s.points}
    assert (precision, compression) == (1.0, 0.0)
    assert all(c.note == "mean, descriptive" for c in by_metric["valid_vision_tokens"])
    assert all(c.note == "mean, higher is better" for c in by_metric["edit_precision"])


@pytest.mark.parametrize(
    ("runs", "labels"),
    [
        ([("2026-01-01T06:00:00Z", "r1", None), ("2026-01-02T06:00:00Z", "r2", None)],
         ["01-01", "01-02"]),
        ([("2026-01-01T06:00:00Z", "r1", None), ("2026-01-01T18:30:00Z", "r2", None)],
         ["01-01 06:00", "01-01 18:30"]),
        ([("2026-01-01T06:00:01Z", "r1", None), ("2026-01-01T06:00:02Z", "r2", None)],
         ["r1", "r2"]),
        ([("2026-01-01T06:00:00Z", "r1", "nightly"), ("2026-01-01T07:00:00Z", "r2", "ft")],
         ["nightly", "ft"]),
        # a name repeated or missing keeps the names and tells the runs apart by date
        ([("2026-01-01T06:00:00Z", "r1", "base"), ("2026-01-02T06:00:00Z", "r2", "base"),
          ("2026-01-03T06:00:00Z", "r3", None)],
         ["base 01-01", "base 01-02", "01-03"]),
        ([("2026-01-01T06:00:01Z", "r1", "base"), ("2026-01-01T06:00:02Z", "r2", "base")],
         ["base r1", "base r2"]),
    ],
)
def test_runs_on_the_x_axis_have_distinct_labels(runs: list, labels: list[str]) -> None:
    assert run_labels(runs) == labels


def test_a_long_history_draws_the_newest_runs_and_keeps_the_page_bounded(tmp_path: Path) -> None:
    many = charts.MAX_RUNS_DRAWN * 4

    def runs(count: int) -> list[list[BenchmarkRecord]]:  # the newest ones alike
        return [[_record(e, f"mode={m}", edit_precision=0.5 + (count - i) % 7 / 20)
                 for e in ("a", "b") for m in ("tiny", "small")] for i in range(count)]

    half = _page(_history(tmp_path / "half", runs(many // 2), hours=5))
    long = _page(_history(tmp_path / "long", runs(many), hours=5))
    hidden = many - charts.MAX_RUNS_DRAWN
    assert f"{hidden:,} older runs not drawn (2026-01-01 to " in long
    dots = re.findall(r'<circle class="dot"', long)
    assert len(dots) == 4 * charts.MAX_RUNS_DRAWN
    assert abs(len(long) - len(half)) < 0.002 * len(half)  # twice the runs, the same page
    assert len(long.encode()) < dashboard.PAGE_BYTES_BOUND


def test_page_metric_whiskers_stay_within_their_scales() -> None:
    """The pages benchmark declares its scales: a t interval past 100 (overall) or below 0 (an
    edit distance) is drawn clipped to the scale."""
    from evalsuite.benchmarks import pages

    series: dict[SeriesKey, list[Point]] = {}
    for run in range(2):
        for metric, (value, low, high) in {
            "overall": (97.0, 90.5, 103.5), "text_block_Edit_dist": (0.02, -0.038, 0.08),
        }.items():
            key = SeriesKey("pages", "tesseract", "pages@x", "mode=native", metric)
            summary = MetricSummary(value, 5, low, high, "mean",
                                    "lower" if "Edit" in metric else "higher")
            series.setdefault(key, []).append(
                Point(f"run{run}", f"2026-01-0{run + 1}T06:00:00Z", "base", summary))
    specs = {spec.name: spec for spec in pages.METRICS}
    charts, _ = trend_charts("pages", series, {}, None, specs)
    ends = {chart.y_label: {(p.low, p.high) for s in chart.series for p in s.points}
            for chart in charts}
    assert ends == {"overall": {(90.5, 100.0)}, "text_block_Edit_dist": {(0.0, 0.08)}}


# --- models and published figures in the rankings ----------------------------------------

DOTS_PROFILE = {"name": "dots.ocr", "version": 1, "prompt_sha256": "5e1f" * 16,
                "decoding": {"temperature": 0.1}, "image_preparation": "fit 11289600 pixels",
                "converter": "dots-layout"}


def _golden_entry(engine: str, data: str, value: float, **extra: object) -> dict:
    return {"engine": engine, "data": data, "parameter": "mode=native",
            "metric": "edit_precision", "value": value, "n": 0, "direction": "higher",
            "tolerance": 0.02, "kind": "mean", "set_at": "2025-07-30T00:00:00Z",
            "commit": "9c1e2d4", "source": "paper",
            "note": "dots.ocr technical report, Table 3", **extra}


def _rows(page: str, table_id: str) -> tuple[list[str], list[tuple[str, list[tuple[str, str]]]]]:
    """The table's column headings and, per row, its class and its cells' (text, hover)."""
    table = page.split(f'id="{table_id}"')[1].split("</table>")[0]
    head = [re.sub(r"<[^>]+>", "", th) for th in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    rows = [
        (row_class, [(re.sub(r"<[^>]+>", "", text), title) for title, text in
                     re.findall(r'<td[^>]*?(?: title="([^"]*)")?>(.*?)</td>', cells)])
        for row_class, cells in re.findall(r'<tr(?: class="([^"]*)")?>(.*?)</tr>',
                                           table.split("<tbody>")[1])
    ]
    return head, rows


def test_published_figures_rank_beside_the_runs_with_the_model_and_its_source(
    tmp_path: Path,
) -> None:
    """A measured dots.ocr run (its engine details name the profile, dots.ocr v1) and the
    golden's "dots.ocr (published)" figure on the same data rank in one table by value, with
    model and source cells; the published row takes its place but no medal (medals go by the
    place among the measured rows: the best measured row has gold), its n is not
    published, its date is the publication's and its source's hover cites it. Published
    figures on data no run used come after the rankings in a folded block of their own; a
    measured golden entry, a per-group published one, or one of a metric no run measured adds
    no row."""
    data = "fox@3f2a"
    records = [_record("dots.ocr", "mode=native", data=data, edit_precision=0.80),
               _record("tesseract", "mode=native", data=data, edit_precision=0.62)]
    details = {"dots.ocr": {"engine": "served", "model": "rednote-hilab/dots.ocr",
                            "model_profile": DOTS_PROFILE},
               "tesseract": {"engine": "tesseract", "version": "5.3.0"}}
    history = _history(tmp_path, [records], details=details)
    golden_dir = tmp_path / "golden"
    golden_dir.mkdir()
    entries = [
        _golden_entry("dots.ocr (published)", data, 0.85),
        _golden_entry("olmocr-2 (published)", data, 0.55, source="leaderboard"),
        _golden_entry("got-ocr2 (published)", data, 0.7, metric="reading_order"),
        _golden_entry("dots.ocr (published)", data, 0.9, metric="edit_precision[600-700]"),
        _golden_entry("dots.ocr (published)", "fox@older", 0.83, n=120),
        _golden_entry("tesseract", data, 0.62, n=10, source="measured", note=""),
    ]
    (golden_dir / "fox.json").write_text(
        json.dumps({"benchmark": "fox", "format": 2, "entries": entries}), "utf-8")
    golden = dashboard.load_golden_index(golden_dir, ["fox"])
    entries_read = read_history(history)
    page = dashboard.build_dashboard(entries_read, history_dir=history.parent,
                                     golden=golden).html

    table = "rank-fox-fox-3f2a"
    assert _rank_cells(page, table) == [
        ("", "1", "dots.ocr (published)"), ("gold", "2", "dots.ocr"),
        ("silver", "3", "tesseract"), ("", "4", "olmocr-2 (published)"),
    ]
    head, rows = _rows(page, table)
    assert head == ["#", "engine", "model", "source", "settings", "edit_precision", "n",
                    "run / published"]
    (published_class, published), (_, measured), (_, local), (_, unmeasured) = rows
    assert published_class == "published"
    assert [text for text, _ in published[1:]] == [
        "dots.ocr (published)", "dots.ocr", "published", "mode=native", "0.85", "—",
        "2025-07-30"]
    citation = published[3][1]
    assert "paper, 2025-07-30" in citation and "commit 9c1e2d4" in citation
    assert "dots.ocr technical report, Table 3" in citation
    assert published[6][1] == "no sample count published"
    assert [text for text, _ in measured[1:]] == [
        "dots.ocr", "dots.ocr v1", "measured", "mode=native", "0.8", "10", "2026-01-01 06:00"]
    assert "rednote-hilab/dots.ocr" in measured[2][1] and "prompt sha256 5e1f5e1f" in measured[2][1]
    assert [text for text, _ in local[1:4]] == ["tesseract", "tesseract", "measured"]
    # a model no run measured is named as the model registry spells it
    assert [text for text, _ in unmeasured[1:4]] == ["olmocr-2 (published)", "olmOCR-2",
                                                      "published"]
    assert unmeasured[3][1].startswith("leaderboard, 2025-07-30")
    assert "published figures rank without a medal" in page

    # data no run used: its published figure is not ranked among the runs but after them
    assert 'id="rank-fox-fox-older"' not in page
    folded = page.split('<details class="published">')[1].split("</details>")[0]
    assert "Published figures on data no run here used (1 row: fox@older)" in folded
    head, rows = _rows(folded, "published-fox-fox-older")
    assert head == ["#", "engine", "model", "source", "settings", "edit_precision", "n",
                    "published"]
    assert [[text for text, _ in cells[1:]] for _, cells in rows] == [
        ["dots.ocr (published)", "dots.ocr", "published", "mode=native", "0.83", "120",
         "2025-07-30"]]

    # without published figures: no source column; no model column where it repeats the engine
    plain = dashboard.build_dashboard(entries_read, history_dir=history.parent, golden={}).html
    assert _rows(plain, table)[0] == ["#", "engine", "model", "settings", "edit_precision", "n",
                                      "latest run"]
    assert "<details" not in plain
    local_only = _page(_history(tmp_path / "local", [records[1:]], details=details))
    assert _rows(local_only, table)[0] == ["#", "engine", "settings", "edit_precision", "n",
                                           "latest run"]
