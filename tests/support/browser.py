"""Headless Chromium for the browser tests and the docs' screenshots.

Debian's ``chromium`` and ``chromium-driver`` (``/usr/bin/chromium``,
``/usr/bin/chromedriver``) driven by Selenium. :func:`find_or_install` finds them; when they
are missing and ``apt-get`` can run (root), it installs them, once per machine at a time
(a file lock keeps two pytest workers from running apt-get together); otherwise it fails
with the command that installs them. Chromium starts with the flags this machine's closed
network needs (no background networking, no component updates, no QUIC) and a fresh
profile.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_COMMAND = "apt-get update && apt-get install -y chromium chromium-driver"
"""What installs Debian's Chromium and its driver (as root)."""
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage")
LOCK = Path(tempfile.gettempdir()) / "graphrag-chromium-install.lock"


class BrowserUnavailable(RuntimeError):
    """Chromium or chromedriver is missing and could not be installed."""


@dataclass(frozen=True)
class Browser:
    """Where Chromium and its driver are."""

    chromium: str
    driver: str


def _which(names: tuple[str, ...]) -> str | None:
    for name in names:
        found = shutil.which(name) or (f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}",
                                                                        os.X_OK) else None)
        if found:
            return found
    return None


def _found() -> Browser | None:
    chromium, driver = _which(CHROMIUM_NAMES), _which(DRIVER_NAMES)
    return Browser(chromium, driver) if chromium and driver else None


def find_or_install() -> Browser:
    """Chromium and chromedriver: found, or installed with apt-get (see the module
    docstring); :class:`BrowserUnavailable` says how to install them otherwise."""
    found = _found()
    if found is not None:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise BrowserUnavailable(
            "the browser tests need Chromium and chromedriver, and they cannot be installed "
            f"here (not root, or no apt-get). Install them: sudo sh -c '{INSTALL_COMMAND}' "
            "(Debian/Ubuntu), or put chromium and a matching chromedriver on the PATH.")
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits, then finds them
        found = _found()
        if found is None:
            result = subprocess.run(["sh", "-c", INSTALL_COMMAND], capture_output=True,
                                    text=True, check=False,
                                    env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            found = _found()
            if found is None:
                raise BrowserUnavailable(
                    f"{INSTALL_COMMAND!r} failed (exit {result.returncode}): "
                    f"{result.stderr.strip()[-600:]}")
    return found


def new_driver(browser: Browser, width: int = 1280, height: int = 1000) -> Any:
    """A Selenium driver on a headless Chromium with a fresh profile (quit it after use;
    the profile folder goes with :func:`shutil.rmtree` of ``driver.profile_dir``)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise BrowserUnavailable(f"selenium is missing ({exc}): pip install -e '.[test]'"
                                 ) from exc
    profile = tempfile.mkdtemp(prefix="graphrag-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser.chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(browser.driver))
    driver.profile_dir = profile
    return driver


def quit_driver(driver: Any) -> None:
    """Quit the browser and delete its profile."""
    try:
        driver.quit()
    finally:
        shutil.rmtree(getattr(driver, "profile_dir", ""), ignore_errors=True)
