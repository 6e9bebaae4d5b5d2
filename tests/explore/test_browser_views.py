"""What the explanation page and the explorer show, in a real browser (headless Chromium):
the legend of each method, labels that do not overlap and stay legible, the canvas used,
clicks that expand or say why they do not, scores and second queries in words.

The explorer and Chromium come from tests/explore/conftest.py (one each for the session's
browser tests); every wait is on a condition of the page, never a sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.bernoulli import DATASET
from llama_index_graphrag_milvus import GraphRAGIndex
from tests.explore.test_browser import (
    GRAPH,
    ask,
    click_node,
    js,
    open_explorer,
    wait,
)
from tests.support.explain_data import QUESTION
from tests.support.fakes import HashEmbedding

pytestmark = [pytest.mark.milvus, pytest.mark.browser, pytest.mark.xdist_group("browser")]

COLORS = {"seed": "rgb(47,111,214)", "bridge": "rgb(232,135,30)", "found": "rgb(46,155,72)",
          "pagerank": "rgb(194,24,91)", "subgraph": "rgb(123,67,201)"}
"""The node colours of explain.js, as Cytoscape reports them."""
OWN_ROLE = {"bridge": "bridge", "ppr": "pagerank", "pcst": "subgraph"}
OTHER_METHODS_ROLES = {"bridge", "pagerank", "subgraph", "context"}
PAGE_GRAPH = "document.querySelector('.gr-graph').graphragCy"

LABEL_BOXES = """
var cy = arguments[0] ? document.querySelector(arguments[0]).graphragCy : null;
return cy.nodes().map(function (n) {
  var b = n.boundingBox({ includeNodes: false, includeEdges: false, includeLabels: true });
  return [n.data('name'), b.x1, b.y1, b.x2, b.y2];
});
"""


BASEL = ("Leonhard Euler was born in Basel, a city on the Rhine in Switzerland.",
         [("Basel", "is a city on", "the Rhine"), ("the Rhine", "flows through", "Switzerland"),
          ("Basel", "is a city in", "Switzerland")])
"""A fifth passage, so that PageRank's drawing holds more than 25 entities."""


@pytest.fixture(scope="module")
def quick_start_pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The quick start's four passages and one more, explained by the second hop (top 4,
    22 entities drawn) and by PageRank (top 10, 26), as saved pages."""
    folder = tmp_path_factory.mktemp("quick")
    index = GraphRAGIndex.from_triplets([*DATASET, BASEL], uri=str(folder / "bernoulli.db"),
                                        embed_model=HashEmbedding(dim=64))
    try:
        yield {method: index.as_retriever(passage_scoring=method, similarity_top_k=top_k)
               .explain(QUESTION).save_html(folder / f"{method}.html")
               for method, top_k in (("bridge", 4), ("ppr", 10))}
    finally:
        index.close()


def overlapping(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    """The pairs of entity names whose label boxes intersect."""
    found = []
    for i, (a, ax1, ay1, ax2, ay2) in enumerate(boxes):
        for b, bx1, by1, bx2, by2 in boxes[i + 1:]:
            if ax1 < bx2 and bx1 < ax2 and ay1 < by2 and by1 < ay2:
                found.append((a, b))
    return found


@pytest.mark.parametrize("method", ["bridge", "ppr"])
def test_labels_do_not_overlap_and_stay_legible(driver: Any, quick_start_pages: dict[str, Path],
                                                method: str) -> None:
    driver.get(quick_start_pages[method].as_uri())
    wait(driver, lambda d: js(d, f"return !!{PAGE_GRAPH}"), "the page's graph")
    boxes = driver.execute_script(LABEL_BOXES, ".gr-graph")
    assert len(boxes) >= {"bridge": 18, "ppr": 25}[method]  # a busy graph: about 20 labels
    assert overlapping(boxes) == []
    zoom, width, height, drawn_width, drawn_height = js(
        driver, f"var cy = {PAGE_GRAPH}; var b = cy.elements().renderedBoundingBox();"
                " return [cy.zoom(), cy.width(), cy.height(), b.w, b.h];")
    assert zoom * 13 >= 9  # node labels (13 px) drawn at 9 px or more
    assert drawn_width >= 0.6 * width or drawn_height >= 0.8 * height  # the canvas is used
    in_view = js(driver, f"var cy = {PAGE_GRAPH}; var e = cy.extent(); return cy.nodes()"
                         ".every(function (n) { var b = n.boundingBox({ includeLabels: true });"
                         " return b.x1 >= e.x1 && b.x2 <= e.x2 && b.y1 >= e.y1 &&"
                         " b.y2 <= e.y2; });")
    assert in_view  # no label clipped by the canvas' edge


def node_roles(driver: Any) -> dict[str, tuple[str, set[str], str]]:
    """Each drawn entity: its colour role, all its roles, its colour."""
    found = js(driver, f"return {GRAPH}.nodes().map(function (n) {{ return [n.data('name'),"
                       " n.data('role'), n.data('roles'), n.style('background-color')]; });")
    return {name: (role, set(roles.split()), color.replace(" ", ""))
            for name, role, roles, color in found}


@pytest.mark.parametrize("method", ["bridge", "ppr", "pcst", "passage"])
def test_the_legend_shows_the_methods_own_roles_only(driver: Any, explorer: str,
                                                     method: str) -> None:
    open_explorer(driver, explorer)
    ask(driver, QUESTION, method=method)
    roles = node_roles(driver)
    legend = set(js(driver, "return Array.prototype.map.call(document.querySelectorAll("
                            "'#explanation .gr-legend [data-role]'), function (s) {"
                            " return s.dataset.role; });"))
    drawn = {role for role, _, _ in roles.values()}
    assert legend - {"seed-ring"} == drawn  # what is drawn, nothing else
    own = OWN_ROLE.get(method)
    assert legend & OTHER_METHODS_ROLES == ({own} if own else set())
    if own is not None:  # the method's own role is drawn in its colour
        carrying = [(role, color) for role, all_roles, color in roles.values()
                    if own in all_roles]
        assert carrying and all(role == own and color == COLORS[own]
                                for role, color in carrying)
    edges = set(js(driver, "return Array.prototype.map.call(document.querySelectorAll("
                           "'#explanation .gr-legend [data-edge-role]'), function (s) {"
                           " return s.dataset.edgeRole; });"))
    assert edges == set(js(driver, f"return {GRAPH}.edges().map(function (e) {{"
                                   " return e.data('role'); });"))


def status_text(driver: Any) -> str:
    return js(driver, "return document.getElementById('ask-status').textContent")


def test_clicking_an_expanded_entity_again_adds_or_says_there_is_nothing_more(
        driver: Any, explorer: str) -> None:
    open_explorer(driver, explorer)
    ask(driver, QUESTION, top_k=1)
    edges = js(driver, f"return {GRAPH}.edges().length")
    click_node(driver, "#explanation .gr-graph", "Daniel Bernoulli")
    wait(driver, lambda d: "Daniel Bernoulli: 1 relation added (all 2 drawn)"
         in status_text(d), "the first expansion's status")
    assert js(driver, f"return {GRAPH}.edges().length") == edges + 1
    click_node(driver, "#explanation .gr-graph", "Daniel Bernoulli")
    wait(driver, lambda d: "Daniel Bernoulli: all 2 relations are drawn already"
         in status_text(d), "the second click's status")
    assert js(driver, f"return {GRAPH}.edges().length") == edges + 1
    assert "click again" not in status_text(driver)


def test_scores_and_second_queries_read_as_what_they_are(driver: Any, explorer: str) -> None:
    from selenium.webdriver.common.by import By

    open_explorer(driver, explorer)
    ask(driver, QUESTION)
    heads = [c.text for c in driver.find_elements(
        By.CSS_SELECTOR, "[data-list=graph] .gr-passage .gr-head")]
    assert heads[0].startswith("#1") and "similarity" in heads[0]
    assert not any("score 1.000" in h for h in heads)  # the rank is the order, not a score
    assert any("to its second query" in h and "bridge: Johann Bernoulli" in h for h in heads)
    bridges = driver.find_element(By.CSS_SELECTOR, "[data-step=Bridges]").text
    assert ("the question with 'Euler' replaced by the bridge: What contribution did the son "
            "of Johann Bernoulli's teacher make?") in bridges
    assert "embedded text: What contribution did the son of 's teacher make? Johann " \
           "Bernoulli" in bridges
    lines = js(driver, "return Array.prototype.map.call(document.querySelectorAll("
                       "'[data-step^=Candidate] tbody th'), function (th) {"
                       " var range = document.createRange(); range.selectNodeContents(th);"
                       " return [th.textContent, range.getClientRects().length]; });")
    assert lines[:2] == [["round 1", 1], ["round 2", 1]]  # one line each, not "rou/nd/1"


def test_the_entity_view_uses_the_canvas_and_counts_passages_right(driver: Any,
                                                                   explorer: str) -> None:
    from selenium.webdriver.common.by import By

    open_explorer(driver, explorer)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=entities]").click()
    driver.find_element(By.ID, "entity-query").send_keys("johann")
    driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#entity-hits button"),
         "the search hits")
    driver.find_element(By.CSS_SELECTOR, "#entity-hits button").click()
    graph = "document.getElementById('neighbourhood').graphragCy"
    wait(driver, lambda d: js(d, f"return {graph}.nodes().length") == 3, "Johann's neighbours")
    used, width = js(driver, f"var cy = {graph}; return [cy.elements().renderedBoundingBox().w,"
                             " cy.width()];")
    assert used >= 0.5 * width
    relations = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#relations-list li")]
    assert relations and all(r.endswith("[1 passage]") for r in relations)


ARABIC = [("ليونهارد أويلر درس عند يوهان برنولي.", [("ليونهارد أويلر", "درس عند", "يوهان برنولي")]),
          ("Daniel Bernoulli worked on fluid dynamics.",
           [("Daniel Bernoulli", "worked on", "fluid dynamics")])]

TEXT_SIDES = """
return Array.from(document.querySelectorAll(arguments[0])).map(function (el) {
  var range = document.createRange(); range.selectNodeContents(el);
  var text = range.getBoundingClientRect(), box = el.getBoundingClientRect();
  return [el.textContent, text.left - box.left, box.right - text.right];
});
"""


def test_right_to_left_text_reads_right_to_left_beside_english(
        driver: Any, tmp_path: Path) -> None:
    """An Arabic question and passage start at the right edge of their box, an English
    passage beside them at the left: each paragraph takes its own direction."""
    index = GraphRAGIndex.from_triplets(ARABIC, uri=str(tmp_path / "ar.db"),
                                        embed_model=HashEmbedding(dim=64))
    try:
        page = index.as_retriever(similarity_top_k=2).explain(
            "ماذا درس ليونهارد أويلر؟").save_html(tmp_path / "ar.html")
    finally:
        index.close()
    driver.get(page.as_uri())
    wait(driver, lambda d: js(d, "return document.querySelectorAll('.gr-text').length >= 2"),
         "the passages")
    sides = driver.execute_script(TEXT_SIDES, ".gr-text, .gr-question")
    arabic = [(left, right) for text, left, right in sides if "أويلر" in text]
    english = [(left, right) for text, left, right in sides if "Daniel" in text]
    assert len(arabic) >= 2 and english  # the question and its passage, and the other one
    assert all(right < 12 < left for left, right in arabic)  # flush right
    assert all(left < 12 < right for left, right in english)  # flush left
