"""The explorer served with a tenant filter, in a real browser (headless Chromium): what the
page shows, the text and what Cytoscape draws on its canvases, holds nothing of the other
tenant's passages, in every tab.

The tenants' data is :mod:`tests.retrieval.test_tenant_isolation`'s; Chromium comes from
tests/explore/conftest.py (one for the session's browser tests); every wait is on a condition of the
page, never a sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.explore import serve
from tests.explore.test_browser import GRAPH, ask, js, open_explorer, wait
from tests.retrieval.test_tenant_isolation import ACME, GLOBEX, ONLY_ACME, QUESTIONS, leaks
from tests.support.fakes import HashEmbedding

pytestmark = [pytest.mark.milvus, pytest.mark.browser, pytest.mark.xdist_group("browser")]

DRAWN = "var cy = {}; return cy ? cy.nodes().map(function (n) {{ return n.data('name'); }})" \
        ".concat(cy.edges().map(function (e) {{ return e.data('label'); }})) : [];"
"""Every entity name and relation label a Cytoscape core draws (on a canvas, not in the
page's text)."""


@pytest.fixture(scope="module")
def acme_explorer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Both tenants in one index, the explorer filtered to acme."""
    index = GraphRAGIndex.from_triplets(
        [*ACME, *GLOBEX], uri=str(tmp_path_factory.mktemp("tenants") / "tenants.db"),
        embed_model=HashEmbedding(dim=64))
    with serve(index, port=0, filters=ONLY_ACME) as server:
        yield server.url
    index.close()


def page_text(driver: Any) -> str:
    return str(js(driver, "return document.body.innerText"))


def drawn(driver: Any, core: str) -> str:
    return " ".join(str(x) for x in js(driver, DRAWN.format(core)))


def answer(driver: Any, question: str) -> None:
    """Ask ``question`` and wait for its own explanation (not the previous question's)."""
    ask(driver, question, top_k=3)
    wait(driver, lambda d: d.execute_script(
        "var s = document.getElementById('ask-status').textContent;"
        " var e = document.getElementById('explanation').innerText;"
        " return s.indexOf('Running') < 0 && e.indexOf(arguments[0]) >= 0;", question),
         f"the explanation of {question!r}")


def open_tab(driver: Any, tab: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, f"[data-tab={tab}]").click()


def test_every_tab_shows_only_the_tenant(driver: Any, acme_explorer: str) -> None:
    from selenium.webdriver.common.by import By

    open_explorer(driver, acme_explorer)
    assert leaks(page_text(driver)) == []  # the summary: counts, hubs
    for question in QUESTIONS:
        answer(driver, question)
        assert leaks(page_text(driver)) == [], question
        assert leaks(drawn(driver, GRAPH)) == [], question
    # the question about Alice Moreau found acme's passage about her (not "nothing")
    answer(driver, QUESTIONS[0])
    assert "chief executive of Acme" in page_text(driver)

    open_tab(driver, "entities")
    box = driver.find_element(By.ID, "entity-query")
    box.clear()
    box.send_keys("moreau")
    driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#entity-hits button"),
         "the search hits")
    hits = [b.text for b in driver.find_elements(By.CSS_SELECTOR, "#entity-hits button")]
    assert hits and all("Alice Moreau" in hit for hit in hits)  # not Moreau Holdings
    driver.find_element(By.CSS_SELECTOR, "#entity-hits button").click()
    neighbourhood = "document.getElementById('neighbourhood').graphragCy"
    wait(driver, lambda d: js(d, f"var cy = {neighbourhood}; return !!cy && cy.nodes()"
                                 ".length === 3"), "Alice Moreau's two acme neighbours")
    assert leaks(drawn(driver, neighbourhood)) == []
    assert leaks(page_text(driver)) == []

    open_tab(driver, "passages")
    wait(driver, lambda d: "Alice Moreau is the chief executive" in page_text(d),
         "acme's passages")
    assert leaks(page_text(driver)) == []

    open_tab(driver, "communities")
    wait(driver, lambda d: js(d, "return document.getElementById('communities-status')"
                                 ".textContent.length > 0"), "the communities' status")
    assert leaks(page_text(driver)) == []
