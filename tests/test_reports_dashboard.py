"""``evalsuite report``: the static dashboard's content, offline-ness and PNG plots."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from reports_builder import (
    FOX_ERROR,
    RENDER_CONFIGS,
    build_runs,
    expected_charts,
    write_reports,
)

from evalsuite.records.history import read_history
from evalsuite.reports import dashboard
from evalsuite.reports.geometry import nice_ticks, tick_label

FIXTURES = Path(__file__).parent / "fixtures" / "reports"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path]:
    folder = tmp_path_factory.mktemp("reports")
    runs = build_runs()
    return runs, write_reports(folder, runs)


def run_report(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    dashboard.add_arguments(parser)
    return dashboard.run(parser.parse_args(list(argv)))


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
    ranking = fox.split('id="rank-fox"')[1].split("</table>")[0]
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
    assert len(FOX_ERROR) == ranking.count("<tr>") - 1

    # The drop of tiny mode is flagged in the status and ringed on its chart; the golden
    # fixture's one entry (tesseract) is a dashed line.
    listed = re.findall(r"<li>([^<]*)</li>", fox.split('class="regressions"')[1].split("</ul>")[0])
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
    # An OCR record and a record per QA condition for each configuration.
    assert render.split('id="rank-render-configs"')[1].split("</table>")[0].count("<tr>") - 1 == (
        3 * len(RENDER_CONFIGS)
    )


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
