"""The dashboard and the compare page in headless Chromium, used as a person would, and the
dashboard's layout checked by script in the browser at 1,280 px.

Needs the Debian packages chromium and chromium-driver (``make setup`` installs them); the
driver comes from the system so that Selenium Manager downloads nothing. Screenshots are
saved next to the pages in the test's temporary folder (the README's, under ``docs/``, come
from ``python tests/support/reports_builder.py docs``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalsuite.browser import INSTALL_HINT, missing_browser
from evalsuite.reports import compare, dashboard
from evalsuite.reports.charts import MAX_SERIES
from tests.support.paths import TEST_FIXTURES
from tests.support.reports_builder import (
    FOX_ERROR,
    RENDER_CONFIGS,
    VIEWPORT,
    build_runs,
    expected_charts,
    start_chromium,
    write_reports,
)

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = pytest.mark.browser

FIXTURES = TEST_FIXTURES / "reports"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    missing = missing_browser()
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: {INSTALL_HINT}")
    downloads = tmp_path_factory.mktemp("downloads")
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), downloads)
    driver.downloads = downloads  # type: ignore[attr-defined]
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, path: Path) -> None:
    driver.get(path.resolve().as_uri())
    driver.get_log("browser")  # start each page with an empty console


def console_errors(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def column_values(driver, table_id: str, column: int) -> list[str]:
    script = (
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr'))"
        ".map(r => r.cells[arguments[1]].getAttribute('data-sort'));"
    )
    return driver.execute_script(script, f"#{table_id}", column)


def centre(driver: WebDriver, element: WebElement) -> None:
    """Scroll ``element`` to the middle of the window at once (the page scrolls smoothly)."""
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element
    )


def sort_by(driver, table_id: str, label: str) -> int:
    from selenium.webdriver.common.by import By

    headers = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} thead th")
    [index] = [i for i, th in enumerate(headers) if th.text.strip() == label]
    # Centre it: at the top of the window the sticky page header would take the click.
    centre(driver, headers[index])
    headers[index].click()
    return index


def wait_for_file(path: Path, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return True
        time.sleep(0.1)
    return False


def test_dashboard_in_a_browser(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    runs = build_runs()
    history = write_reports(tmp_path, runs)
    page, _ = dashboard.write_dashboard(history, tmp_path / "index.html",
                                        golden_dir=FIXTURES / "golden", png=False)
    open_page(browser, page)

    # Offline: nothing was fetched, nothing failed.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == sum(expected_charts(runs).values())
    assert all(chart.size["width"] > 300 and chart.size["height"] > 150 for chart in charts)
    fox = "rank-fox-fixtures"
    assert len(browser.find_elements(By.CSS_SELECTOR, f"#{fox} tbody tr")) == len(FOX_ERROR)
    for table in ("", "-condition-text", "-condition-vision"):  # OCR, text QA, vision QA
        rows = browser.find_elements(By.CSS_SELECTOR,
                                     f"#rank-render-configs-fixtures{table} tbody tr")
        assert len(rows) == len(RENDER_CONFIGS), table
    browser.save_screenshot(str(tmp_path / "dashboard.png"))  # the top of the page, as opened

    # Sorting: ascending, then descending on the second click; text columns too.
    column = sort_by(browser, fox, "edit_precision")
    values = [float(v) for v in column_values(browser, fox, column)]
    assert values == sorted(values)
    sort_by(browser, fox, "edit_precision")
    values = [float(v) for v in column_values(browser, fox, column)]
    assert values == sorted(values, reverse=True)
    column = sort_by(browser, "rank-render-configs-fixtures", "settings")
    parameters = column_values(browser, "rank-render-configs-fixtures", column)
    assert parameters == sorted(parameters) and len(set(parameters)) == len(RENDER_CONFIGS)

    # CSV export downloads the table as shown.
    button = browser.find_element(By.CSS_SELECTOR, f'button.csv[data-table="{fox}"]')
    centre(browser, button)
    button.click()
    csv_file = browser.downloads / f"{fox}.csv"
    assert wait_for_file(csv_file)
    lines = csv_file.read_text("utf-8").splitlines()
    assert lines[0].startswith("#,engine,settings,edit_precision")
    assert len(lines) == 1 + len(FOX_ERROR)

    # Drill-down: unmatched words in red; hovering a word lights up its partner.
    drill = browser.find_element(By.CSS_SELECTOR, "#bench-fox .drill")
    centre(browser, drill)
    missing = drill.find_elements(By.CSS_SELECTOR, ".text .w.miss")
    assert missing and missing[0].value_of_css_property("color") == "rgba(198, 40, 40, 1)"
    word = drill.find_element(By.CSS_SELECTOR, ".text.pred .w[data-m]")
    ActionChains(browser).move_to_element(word).perform()
    match_id = word.get_attribute("data-m")
    partner = drill.find_element(By.CSS_SELECTOR, f'.text.gt .w[data-m="{match_id}"]')
    assert "hl" in word.get_attribute("class").split()
    assert "partner" in partner.get_attribute("class").split()
    assert partner.text == word.text or partner.text.lower() == word.text.lower()
    picker = Select(drill.find_element(By.CSS_SELECTOR, "select"))
    before = drill.find_element(By.CSS_SELECTOR, ".text.pred").text
    picker.select_by_index(len(picker.options) - 1)
    assert drill.find_element(By.CSS_SELECTOR, ".text.pred").text != before

    assert console_errors(browser) == []


def test_compare_page_in_a_browser(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    with pytest.warns(UserWarning, match="counted as model"):
        documents = compare.find_documents(FIXTURES / "compare")
    options = compare.WordOptions()
    results = compare.rank_models(documents, options)
    page = tmp_path / "compare.html"
    page.write_text(compare.render_html(results, documents, options, title="fixture"), "utf-8")
    open_page(browser, page)

    rows = browser.find_elements(By.CSS_SELECTOR, "#compare-ranking tbody tr")
    assert [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows] == ["alpha", "beta.1"]
    browser.save_screenshot(str(tmp_path / "compare.png"))
    column = sort_by(browser, "compare-ranking", "F1")
    assert column_values(browser, "compare-ranking", column) == sorted(
        column_values(browser, "compare-ranking", column), key=float
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#compare-ranking tbody tr td")[1].text == (
        "beta.1"
    )
    assert browser.find_elements(By.CSS_SELECTOR, ".drill .text.gt .w")
    assert console_errors(browser) == []


LAYOUT_FACTS = """
const width = window.innerWidth;
const facts = {width: width, pageWidth: document.documentElement.scrollWidth, wide: [],
               scrolling: [], cut: [], outside: [], crowded: [], charts: 0, texts: 0,
               sameTicks: [], overlapping: []};
const name = e => (e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + e.className.baseVal
                   + (e.className.baseVal === undefined ? e.className : '')).slice(0, 80);
for (const e of document.body.querySelectorAll('*')) {
  const box = e.getBoundingClientRect();
  if (box.width === 0 && box.height === 0) continue;
  if (box.left < -0.5 || box.right > width + 0.5) facts.wide.push(name(e));
  if (e instanceof HTMLElement && !['SELECT', 'OPTION'].includes(e.tagName)) {
    const style = getComputedStyle(e);
    if (e.scrollWidth > e.clientWidth + 1 && style.overflowX !== 'visible')
      facts.scrolling.push(name(e));
    if (style.textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth)
      facts.cut.push(name(e));
  }
}
for (const svg of document.querySelectorAll('svg.chart')) {
  facts.charts += 1;
  const frame = svg.getBoundingClientRect();
  const series = svg.querySelectorAll('g.series').length;
  if (series > Number(arguments[0]) || series !== Number(svg.dataset.seriesCount))
    facts.crowded.push(svg.id + ': ' + series);
  for (const text of svg.querySelectorAll('text')) {
    facts.texts += 1;
    const box = text.getBoundingClientRect();
    if (box.left < frame.left - 1 || box.right > frame.right + 1 || box.top < frame.top - 1
        || box.bottom > frame.bottom + 1) facts.outside.push(svg.id + ': ' + text.textContent);
    if (text.textContent.includes('\u2026')) facts.cut.push(svg.id + ': ' + text.textContent);
  }
  if (svg.classList.contains('chart-line')) {
    const ticks = Array.from(svg.querySelectorAll('g.axes text.tick, g.axes text.tick.tight'))
      .map(t => t.textContent);
    if (new Set(ticks).size !== ticks.length) facts.sameTicks.push(svg.id + ': ' + ticks);
  }
  const boxes = Array.from(svg.querySelectorAll('g.axes text.tick'))
    .map(t => t.getBoundingClientRect());
  for (let i = 1; i < boxes.length; i++) {
    const a = boxes[i - 1], b = boxes[i];
    if (a.right > b.left + 0.5 && a.left < b.right - 0.5 && a.bottom > b.top + 0.5
        && a.top < b.bottom - 0.5) facts.overlapping.push(svg.id);
  }
}
for (const card of document.querySelectorAll('figure.chart-card')) {
  if (card.querySelectorAll('.legend .key i:not(.dash):not(.ring)').length > Number(arguments[0]))
    facts.crowded.push('legend of ' + card.querySelector('svg').id);
}
return facts;
"""
"""Layout facts of the open page, measured by the browser: elements reaching past the viewport,
boxes that scroll sideways, text cut with an ellipsis (CSS or a "…" in a chart), chart text
outside its chart, charts or legends with more than the allowed series, repeated x labels."""


@pytest.mark.parametrize(("runs", "bench_like"), [(20, False), (6, True)],
                         ids=["20-run-history", "bench-run"])
def test_the_dashboard_layout_fits_1280_px(
    browser, tmp_path: Path, runs: int, bench_like: bool
) -> None:
    history = write_reports(tmp_path, build_runs(runs, bench_like=bench_like))
    page, _ = dashboard.write_dashboard(history, tmp_path / "index.html",
                                        golden_dir=FIXTURES / "golden", png=False)
    assert_layout_fits(browser, page)


@pytest.mark.e2e
def test_the_dashboard_of_real_bench_runs_fits_1280_px(browser, tmp_path: Path) -> None:
    """Two real runs of the benches (as `make bench` makes them, on fewer samples), then the
    dashboard `evalsuite report` would write for them.
    Slow (~92 s here): two child pytest runs of the Fox, render-configuration, Surya recognition
    and pages benches on tesseract (2 samples each, goldens set), then Chromium measuring the
    page; a single run would give the trend charts no line between runs to lay out."""
    from tests.support.subprocess_runs import REPO, needs_tesseract, run_pytest

    if needs_tesseract.args[0]:
        pytest.skip(needs_tesseract.kwargs["reason"])
    reports = tmp_path / "reports"
    for run in ("first", "second"):
        done = run_pytest(
            "benches", "-m", "fox or render_configs or surya_recognition or pages",
            "--pages-dir", str(REPO / "tests" / "fixtures" / "pages"), "--engine", "tesseract",
            "--max-samples", "2", "--golden-dir", str(tmp_path / "golden"),
            "--report-dir", str(reports), "--run-name", run, "--update-golden",
        )
        assert done.returncode == 0, done.stdout[-3000:]
    page, _ = dashboard.write_dashboard(reports / "history.jsonl", tmp_path / "index.html",
                                        golden_dir=tmp_path / "golden", png=False)
    assert_layout_fits(browser, page, min_charts=4, min_texts=50)


def assert_layout_fits(browser, page: Path, min_charts: int = 10, min_texts: int = 100) -> None:
    open_page(browser, page)
    facts = browser.execute_script(LAYOUT_FACTS, MAX_SERIES)

    assert facts["width"] == VIEWPORT[0]
    assert facts["charts"] > min_charts and facts["texts"] > min_texts  # it measured the page
    assert facts["pageWidth"] <= facts["width"]
    assert facts["wide"] == []
    assert facts["scrolling"] == []
    assert facts["cut"] == []
    assert facts["outside"] == []
    assert facts["crowded"] == []
    assert facts["sameTicks"] == []
    assert facts["overlapping"] == []
    assert console_errors(browser) == []


def test_the_layout_check_sees_a_page_that_does_not_fit(browser, tmp_path: Path) -> None:
    """The facts script against a page with each fault it looks for."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><body style="margin:0">'
        '<div style="width:1500px">wide</div>'
        '<div style="width:100px;overflow-x:auto"><div style="width:300px">x</div></div>'
        '<p style="width:40px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis">'
        'a long label</p>'
        '<figure class="chart-card"><svg class="chart chart-line" id="c" data-series-count="7" '
        'viewBox="0 0 100 50" width="100" height="50">'
        '<g class="axes"><text class="tick" x="10" y="45">11-01</text>'
        '<text class="tick" x="40" y="45">11-01</text><text class="tick" x="43" y="45">11-02'
        '</text><text x="90" y="20">outside</text>'
        '<text x="5" y="20">color\u2026</text></g>'
        + '<g class="series"></g>' * 7 + "</svg></figure></body></html>", "utf-8")
    open_page(browser, page)
    facts = browser.execute_script(LAYOUT_FACTS, MAX_SERIES)
    assert facts["pageWidth"] > facts["width"] and facts["wide"]
    assert facts["scrolling"] and len(facts["cut"]) == 2
    assert facts["outside"] == ["c: outside"]
    assert facts["crowded"] == ["c: 7"] and facts["sameTicks"] and facts["overlapping"]
