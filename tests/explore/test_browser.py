"""The explorer and the explanation page in a real browser (headless Chromium, Selenium).

One explorer and one Chromium for the session (tests/explore/conftest.py), on the Bernoulli
family with hostile passages (:mod:`tests.support.explain_data`). Every wait is on a condition
of the page (WebDriverWait), never a sleep. Chromium and chromedriver are found or installed
by :mod:`tests.support.browser`; when they cannot be, these tests fail with the command that
installs them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.explain_data import DANIEL, HOSTILE, QUESTION, SCRIPT, build

pytestmark = [pytest.mark.milvus, pytest.mark.browser, pytest.mark.xdist_group("browser")]

WAIT = 60.0
"""Seconds a condition may take (a loaded machine runs the suite on two workers)."""
GRAPH = "document.querySelector('#explanation .gr-graph').graphragCy"
"""The Cytoscape core of the explanation's graph, in the explorer's page."""


def wait(driver: Any, condition: Callable[[Any], Any], what: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT).until(condition, message=f"waiting for {what}")


def js(driver: Any, script: str) -> Any:
    return driver.execute_script(script)


def open_explorer(driver: Any, url: str) -> None:
    driver.get(url)
    wait(driver, lambda d: js(d, "return document.body.dataset.ready === '1'"),
         "the summary")


def ask(driver: Any, question: str, method: str = "bridge", top_k: int = 5) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    box = driver.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    Select(driver.find_element(By.ID, "method")).select_by_value(method)
    top = driver.find_element(By.ID, "top-k")
    top.clear()
    top.send_keys(str(top_k))
    driver.find_element(By.ID, "ask-button").click()
    wait(driver, lambda d: js(d, f"var g = document.querySelector('#explanation .gr-graph');"
                                 f" return !!(g && g.graphragCy && document.querySelectorAll("
                                 f"'#explanation .gr-passage').length >= {top_k})"),
         "the explanation")


def click_node(driver: Any, container: str, name: str) -> None:
    """A real mouse click on the entity ``name`` drawn in the graph ``container``."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    element = driver.find_element(By.CSS_SELECTOR, container)
    x, y, width, height = driver.execute_script(
        "var name = arguments[1]; var node = arguments[0].graphragCy.nodes().toArray()"
        ".find(function (n) { return n.data('name') === name; });"
        " var p = node.renderedPosition();"
        " return [p.x, p.y, arguments[0].clientWidth, arguments[0].clientHeight];",
        element, name)
    ActionChains(driver).move_to_element_with_offset(
        element, int(x - width / 2), int(y - height / 2)).click().perform()


def drawn(driver: Any, graph: str) -> tuple[set[str], set[tuple[str, str, str]]]:
    names, edges = js(driver, f"var cy = {graph}; return [cy.nodes().map(function (n) {{"
                              " return n.data('name'); }), cy.edges().map(function (e) {"
                              " return [e.source().data('name'), e.data('label'),"
                              " e.target().data('name')]; })];")
    return set(names), {tuple(e) for e in edges}


def test_the_bernoulli_question_draws_its_path(driver: Any, explorer: str) -> None:
    from selenium.webdriver.common.by import By

    open_explorer(driver, explorer)
    ask(driver, QUESTION)
    names, edges = drawn(driver, GRAPH)
    assert {"Leonhard Euler", "Johann Bernoulli", "Daniel Bernoulli", "Basel"} <= names
    assert {("Leonhard Euler", "was a student of", "Johann Bernoulli"),
            ("Daniel Bernoulli", "was a child of", "Johann Bernoulli"),
            ("Leonhard Euler", "was born in", "Basel")} <= edges
    roles = js(driver, f"var cy = {GRAPH}; var r = {{}}; cy.nodes().forEach(function (n) {{"
                       " r[n.data('name')] = n.data('roles'); }); return r;")
    assert "bridge" in roles["Johann Bernoulli"] and "seed" in roles["Leonhard Euler"]
    assert "found" in roles["Daniel Bernoulli"]
    cards = driver.find_elements(By.CSS_SELECTOR, "[data-list=graph] .gr-passage")
    [daniel] = [c for c in cards if DANIEL in c.text]
    assert daniel.get_attribute("data-found-by") == "bridge"
    assert daniel.get_attribute("data-bridge") == "Johann Bernoulli"
    assert "bridge: Johann Bernoulli" in daniel.text
    naive = driver.find_elements(By.CSS_SELECTOR, "[data-list=naive] .gr-passage")
    assert len(naive) == 5 and DANIEL in naive[3].text  # naive RAG ranks it 4th


@pytest.mark.parametrize("graph", ["explorer", "served_explorer"])
def test_clicking_an_entity_expands_it(driver: Any, graph: str,
                                       request: pytest.FixtureRequest) -> None:
    """In memory, and on a served graph (whose Index tab says its degrees are sampled)."""
    from selenium.webdriver.common.by import By

    explorer = request.getfixturevalue(graph)
    open_explorer(driver, explorer)
    sampled = driver.find_element(By.ID, "degrees-sample")
    driver.find_element(By.CSS_SELECTOR, "[data-tab=index]").click()
    if graph == "served_explorer":
        assert sampled.is_displayed() and "sample of 12 entities (of 12)" in sampled.text
    else:
        assert not sampled.is_displayed()
    driver.find_element(By.CSS_SELECTOR, "[data-tab=entities]").click()
    driver.find_element(By.ID, "entity-query").send_keys("daniel")
    driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#entity-hits button"),
         "the search hits")
    driver.find_element(By.CSS_SELECTOR, "#entity-hits button").click()
    graph = "document.getElementById('neighbourhood').graphragCy"
    wait(driver, lambda d: js(d, f"return {graph}.nodes().length") == 3, "Daniel's neighbours")
    assert drawn(driver, graph)[0] == {"Daniel Bernoulli", "Johann Bernoulli", "fluid dynamics"}
    click_node(driver, "#neighbourhood", "fluid dynamics")
    wait(driver, lambda d: js(d, f"return {graph}.nodes().length") == 4, "the expansion")
    edges = drawn(driver, graph)[1]
    assert ("fluid dynamics", "explains", "the lift of aircraft wings") in edges
    click_node(driver, "#neighbourhood", "Johann Bernoulli")
    wait(driver, lambda d: js(d, f"return {graph}.nodes().length") == 5, "Johann's neighbours")
    assert "Leonhard Euler" in drawn(driver, graph)[0]
    # the explanation's graph expands on click too
    driver.find_element(By.CSS_SELECTOR, "[data-tab=ask]").click()
    ask(driver, QUESTION, top_k=1)
    before = js(driver, f"return {GRAPH}.nodes().length")
    click_node(driver, "#explanation .gr-graph", "Daniel Bernoulli")
    wait(driver, lambda d: js(d, f"return {GRAPH}.nodes().length") > before,
         "the explanation's expansion")
    assert "fluid dynamics" in drawn(driver, GRAPH)[0]


HOLD = """
var held = arguments[0], original = window.fetch;
window.__settled = false;
window.fetch = function (url, options) {
  var answer = original(url, options);
  if (String(url).indexOf(encodeURIComponent(held)) < 0) return answer;
  return new Promise(function (resolve) {
    window.__release = function () {
      answer.then(function (response) {
        var json = response.json.bind(response);
        response.json = function () {
          return json().then(function (body) {
            setTimeout(function () { window.__settled = true; }, 0);
            return body;
          });
        };
        resolve(response);
      });
    };
  });
};
"""
"""Hold the explorer's answers about the entity ``arguments[0]`` until ``__release()``;
``__settled`` says when the page has handled the held answer (its handlers run before the
timeout fires)."""


def test_the_last_entity_opened_wins_over_a_slower_answer(driver: Any, explorer: str) -> None:
    """An entity opened while the previous one's relations are on their way: the earlier
    answer, arriving last, draws nothing and says nothing."""
    from selenium.webdriver.common.by import By

    open_explorer(driver, explorer)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=entities]").click()
    driver.find_element(By.ID, "entity-query").send_keys("bernoulli")
    driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#entity-hits button")) >= 2,
         "the search hits")
    first, second = driver.find_elements(By.CSS_SELECTOR, "#entity-hits button")[:2]
    driver.execute_script(HOLD, first.get_attribute("data-entity-id"))
    first.click()
    second.click()
    graph = "document.getElementById('neighbourhood').graphragCy"
    name = second.text.rsplit(" (", 1)[0]
    wait(driver, lambda d: name in js(d, "return document.getElementById('entity-status')"
                                         ".textContent"), "the second entity")
    shown = drawn(driver, graph)
    js(driver, "window.__release();")
    wait(driver, lambda d: js(d, "return window.__settled"), "the held answer handled")
    assert drawn(driver, graph) == shown
    assert name in js(driver, "return document.getElementById('entity-status').textContent")


def assert_inert(driver: Any, container: str) -> str:
    """The hostile texts are shown as text, and nothing of them ran or became an element."""
    assert js(driver, "return typeof window.__graphragPwned") == "undefined"
    found = js(driver, f"var c = document.querySelector('{container}'); return ["
                       "c.querySelectorAll('script, img, a, iframe').length, c.textContent];")
    assert found[0] == 0
    return found[1]


def assert_wraps(driver: Any, selector: str) -> None:
    """A name of 700 letters without a space in the first ``selector`` element wraps: the
    page does not scroll sideways (it did in the explorer's lists)."""
    assert js(driver, f"var e = document.querySelector({json.dumps(selector)});"
                      " e.textContent = 'W'.repeat(700);"
                      " return document.documentElement.scrollWidth <= window.innerWidth"
                      " && e.getBoundingClientRect().right <= window.innerWidth;"), selector


def test_hostile_passages_render_as_text_and_run_nothing(driver: Any, explorer: str) -> None:
    from selenium.webdriver.common.by import By

    open_explorer(driver, explorer)
    ask(driver, QUESTION, top_k=6)
    text = assert_inert(driver, "#explanation")
    for hostile in HOSTILE:
        assert hostile in text
    names = drawn(driver, GRAPH)[0]
    assert SCRIPT in names  # an entity named with markup is a label, drawn on the canvas
    driver.find_element(By.CSS_SELECTOR, "[data-tab=passages]").click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#passages .gr-passage")) == 6,
         "the passages")
    text = assert_inert(driver, "#passages")
    assert all(hostile in text for hostile in HOSTILE)
    assert_wraps(driver, "#passages .ex-triplets li")
    driver.find_element(By.CSS_SELECTOR, "[data-tab=entities]").click()
    driver.find_element(By.ID, "entity-query").send_keys("graphragPwned")
    driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#entity-hits button")) == 3,
         "the hostile entities")
    assert_inert(driver, "#entity-hits")
    assert_wraps(driver, "#entity-hits button")
    assert js(driver, "return document.querySelectorAll('script').length") == 3  # the page's


def test_the_saved_explanation_page_works_offline(driver: Any, tmp_path: Path,
                                                  explorer: str) -> None:
    page = tmp_path / "why.html"
    build_and_save(tmp_path, page)
    driver.get(page.as_uri())
    wait(driver, lambda d: js(d, "var g = document.querySelector('.gr-graph');"
                                 " return !!(g && g.graphragCy)"), "the page's graph")
    edges = drawn(driver, "document.querySelector('.gr-graph').graphragCy")[1]
    assert ("Leonhard Euler", "was a student of", "Johann Bernoulli") in edges
    text = assert_inert(driver, "#explanation")
    assert all(hostile in text for hostile in HOSTILE[:2])
    assert re.search(r"\d+ ms · \d+ Milvus requests · ", text), text[:300]
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []  # no script refused by the policy, nothing fetched


def build_and_save(tmp_path: Path, page: Path) -> None:
    index = build(tmp_path / "saved.db")
    try:
        index.as_retriever(similarity_top_k=5).explain(QUESTION).save_html(page)
    finally:
        index.close()


@pytest.mark.parametrize("graph", ["memory", "milvus"])
def test_a_name_typed_without_its_accents_is_found(driver: Any, tmp_path: Path,
                                                   graph: str) -> None:
    """"zurich" finds "Zürich" and "komzak" "Karel Komzák", in memory and on a served
    graph, and the hit opens the entity."""
    from selenium.webdriver.common.by import By

    from llama_index_graphrag_milvus import GraphRAGIndex
    from llama_index_graphrag_milvus.explore import serve
    from tests.retrieval.test_name_keys import OPERETTA
    from tests.support.fakes import HashEmbedding

    index = GraphRAGIndex.from_triplets(OPERETTA, uri=str(tmp_path / "operetta.db"),
                                        embed_model=HashEmbedding(dim=64), graph=graph)
    try:
        with serve(index, port=0) as server:
            open_explorer(driver, server.url)
            driver.find_element(By.CSS_SELECTOR, "[data-tab=entities]").click()
            hits = "#entity-hits button"
            for typed, name in (("zurich", "Zürich"), ("KOMZAK", "Karel Komzák")):
                box = driver.find_element(By.ID, "entity-query")
                box.clear()
                box.send_keys(typed)
                driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
                wait(driver, lambda d, name=name: name in js(
                    d, f"var b = document.querySelector('{hits}'); "
                       "return b ? b.textContent : '';"), f"the hit {name}")
            driver.find_element(By.CSS_SELECTOR, hits).click()
            neighbourhood = "document.getElementById('neighbourhood').graphragCy"
            wait(driver, lambda d: js(d, f"var cy = {neighbourhood}; return !!cy && "
                                         "cy.nodes().length === 4"),
                 "Karel Komzák's three neighbours")
    finally:
        index.close()
