"""The browser tests' explorer and Chromium, one each for the session: the three browser
modules (test_browser, test_browser_views, test_browser_tenants) share the ``browser`` xdist
group, so one worker starts Chromium and serves the family explorer once for all of them.
Both are only read: every test loads its page again (the explorer's API is GET only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from llama_index_graphrag_milvus.explore import serve
from tests.support.browser import BrowserUnavailable, find_or_install, new_driver, quit_driver
from tests.support.explain_data import build


@pytest.fixture(scope="session")
def explorer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The explorer on the family with hostile passages (Milvus Lite), its URL."""
    index = build(tmp_path_factory.mktemp("browser") / "family.db")
    with serve(index, port=0) as server:
        yield server.url
    index.close()


@pytest.fixture(scope="session")
def served_explorer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The explorer on the same family, its graph served by Milvus (``graph="milvus"``),
    its URL."""
    index = build(tmp_path_factory.mktemp("browser-served") / "family.db", graph="milvus")
    with serve(index, port=0) as server:
        yield server.url
    index.close()


@pytest.fixture(scope="session")
def driver() -> Iterator[Any]:
    """Headless Chromium (1280x1100, a fresh profile); the test fails, with the command that
    installs it, when it cannot be found or installed."""
    try:
        browser = new_driver(find_or_install(), 1280, 1100)
    except BrowserUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    yield browser
    quit_driver(browser)
