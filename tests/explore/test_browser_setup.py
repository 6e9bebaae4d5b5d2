"""How the browser tests find Chromium, or say how to install it (no browser started)."""

from __future__ import annotations

import pytest

from tests.support import browser


def test_found_where_debian_puts_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser.shutil, "which", lambda name: f"/opt/bin/{name}")
    assert browser.find_or_install() == browser.Browser("/opt/bin/chromium",
                                                        "/opt/bin/chromedriver")


def test_missing_without_root_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "_found", lambda: None)
    monkeypatch.setattr(browser.os, "geteuid", lambda: 1000)
    with pytest.raises(browser.BrowserUnavailable,
                       match="apt-get install -y chromium chromium-driver"):
        browser.find_or_install()


def test_missing_as_root_installs_once_then_finds_them(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: object) -> None:
    from pathlib import Path

    installed: list[str] = []
    monkeypatch.setattr(browser, "LOCK", Path(str(tmp_path)) / "lock")
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/usr/bin/apt-get"
                        if name == "apt-get" else None)
    monkeypatch.setattr(browser, "_found", lambda: browser.Browser("/usr/bin/chromium",
                                                                   "/usr/bin/chromedriver")
                        if installed else None)

    class Done:
        returncode = 0
        stderr = ""

    def run(command: list[str], **kwargs: object) -> Done:
        installed.append(command[-1])
        return Done()

    monkeypatch.setattr(browser.subprocess, "run", run)
    assert browser.find_or_install().driver == "/usr/bin/chromedriver"
    assert installed == [browser.INSTALL_COMMAND]
