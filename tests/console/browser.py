"""A real headless Chromium (Debian's `chromium` and `chromium-driver`, `.ci/run` installs
them) driven by selenium, and where its screenshots go: `test-output/console/` at the
repository root (gitignored), next to the test output."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "test-output" / "console"
WAIT = 30.0
T = TypeVar("T")

# Chromium as root in a container: no sandbox, no GPU, nothing fetched from the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return found
    raise AssertionError(f"none of {names} is installed (.ci/run installs them with apt-get)")


@contextmanager
def chromium() -> Iterator[WebDriver]:
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = _binary("chromium", "chromium-browser")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(executable_path=_binary("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_page_load_timeout(WAIT)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def until(check: Callable[[], T | None], what: str, timeout: float = WAIT) -> T:
    """Poll `check` until it returns something truthy (the page updates by itself)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"still not {what}"
        time.sleep(0.2)


_TEXT = "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText).join(' ')"


def text(driver: WebDriver, css: str = "body") -> str:
    """The visible text of what `css` selects, read in one step in the page (the live parts
    of a page are replaced while a test reads them)."""
    found = driver.execute_script(_TEXT, css)
    return str(found or "")


def screenshot(driver: WebDriver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def sign_in(driver: WebDriver, url: str, token: str) -> None:
    driver.get(f"{url}/console")
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form button").click()
    until(lambda: driver.find_elements(By.ID, "contexts"), "signed in")
