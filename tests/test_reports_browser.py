"""The dashboard and the compare page in headless Chromium, used as a person would.

Needs the Debian packages chromium and chromium-driver (``make setup`` installs them); the
driver comes from the system so that Selenium Manager downloads nothing. Screenshots are
written to ``reports/dashboard.png`` and ``reports/compare.png`` for people to look at.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from reports_builder import (
    FOX_ERROR,
    RENDER_CONFIGS,
    build_runs,
    expected_charts,
    write_reports,
)

from evalsuite.reports import compare, dashboard

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REPORTS = Path(__file__).resolve().parents[1] / "reports"
FIXTURES = Path(__file__).parent / "fixtures" / "reports"
BROWSER_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,1000", "--hide-scrollbars",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: apt-get install -y chromium chromium-driver "
                    "(make setup does it where it can)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in BROWSER_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_experimental_option("prefs", {
        "download.default_directory": str(downloads), "download.prompt_for_download": False,
    })
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
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
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rank-fox tbody tr")) == len(FOX_ERROR)
    rows = browser.find_elements(By.CSS_SELECTOR, "#rank-render-configs tbody tr")
    assert len(rows) == 3 * len(RENDER_CONFIGS)  # OCR, text QA, vision QA
    browser.save_screenshot(str(REPORTS / "dashboard.png"))  # the top of the page, as opened

    # Sorting: ascending, then descending on the second click; text columns too.
    column = sort_by(browser, "rank-fox", "edit_precision")
    values = [float(v) for v in column_values(browser, "rank-fox", column)]
    assert values == sorted(values)
    sort_by(browser, "rank-fox", "edit_precision")
    values = [float(v) for v in column_values(browser, "rank-fox", column)]
    assert values == sorted(values, reverse=True)
    column = sort_by(browser, "rank-render-configs", "parameter")
    parameters = column_values(browser, "rank-render-configs", column)
    assert parameters == sorted(parameters) and len(set(parameters)) == 3 * len(RENDER_CONFIGS)

    # CSV export downloads the table as shown.
    button = browser.find_element(By.CSS_SELECTOR, 'button.csv[data-table="rank-fox"]')
    centre(browser, button)
    button.click()
    csv_file = browser.downloads / "rank-fox.csv"
    assert wait_for_file(csv_file)
    lines = csv_file.read_text("utf-8").splitlines()
    assert lines[0].startswith("#,engine,parameter,edit_precision")
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
    browser.save_screenshot(str(REPORTS / "compare.png"))
    column = sort_by(browser, "compare-ranking", "F1")
    assert column_values(browser, "compare-ranking", column) == sorted(
        column_values(browser, "compare-ranking", column), key=float
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#compare-ranking tbody tr td")[1].text == (
        "beta.1"
    )
    assert browser.find_elements(By.CSS_SELECTOR, ".drill .text.gt .w")
    assert console_errors(browser) == []
