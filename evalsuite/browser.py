"""Debian's headless Chromium driven through its chromedriver (Selenium Manager downloads
nothing): olmOCR-bench's math rendering uses it, and so do the dashboard's browser tests.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (``make setup`` installs them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Selenium is imported when a browser starts: the CLIs start without it
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--force-device-scale-factor=1",
)
INSTALL_HINT = "apt-get install -y chromium chromium-driver (make setup does it where it can)"


def missing_browser() -> list[str]:
    """The Debian packages' files that are missing (chromium, chromium-driver)."""
    return [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]


def start_chromium(
    viewport: tuple[int, int],
    *,
    profile: Path | None = None,
    downloads: Path | None = None,
    console_log: bool = False,
) -> WebDriver:
    """Headless Chromium, offline (:func:`take_offline`), with a page viewport of exactly
    ``viewport`` CSS px; ``profile``: its user-data folder; ``downloads``: where downloads land,
    without asking; ``console_log``: keep the page's console messages for
    ``driver.get_log("browser")``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    if profile is not None:
        options.add_argument(f"--user-data-dir={profile}")
    if downloads is not None:
        options.add_experimental_option("prefs", {
            "download.default_directory": str(downloads), "download.prompt_for_download": False,
        })
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    set_viewport(driver, *viewport)
    take_offline(driver)
    return driver


def take_offline(driver: WebDriver) -> None:
    """Refuse every network request of the page (DevTools network emulation): what it shows may
    hold a model's answer, and nothing it holds may reach the network. ``file:`` pages still
    load; a page can read no other file (Chromium's default for ``file:`` origins)."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1,
    })


def set_viewport(driver: WebDriver, width: int, height: int) -> None:
    """Make the page's viewport (``innerWidth`` x ``innerHeight``) exactly this size."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False,
    })
