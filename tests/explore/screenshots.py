"""The docs' screenshots, taken with the browser tests' tooling (:mod:`tests.support.browser`).

The quick start's index (``examples/bernoulli.py``: the tutorial's four passages, offline
all-MiniLM-L6-v2), its explanation page, and the explorer on it::

    python -m tests.explore.screenshots docs/

writes ``explanation.png``, ``explorer.png`` and ``explorer-entities.png`` there.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from examples.bernoulli import DATASET, QUESTION, local_embedding
from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.explore import serve
from tests.support.browser import find_or_install, new_driver, quit_driver


def take(folder: Path) -> list[Path]:
    """Build the index, take the three screenshots into ``folder``, return their paths."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    work = Path(tempfile.mkdtemp(prefix="graphrag-shots-"))
    index = GraphRAGIndex.from_triplets(DATASET, uri=str(work / "bernoulli.db"),
                                        embed_model=local_embedding())
    page = index.as_retriever(similarity_top_k=4).explain(QUESTION).save_html(
        work / "explanation.html")
    driver = new_driver(find_or_install(), 1280, 1180)
    shots = [folder / "explanation.png", folder / "explorer.png",
             folder / "explorer-entities.png"]
    try:
        def ready(script: str) -> None:
            WebDriverWait(driver, 60).until(lambda d: d.execute_script(script))

        driver.get(page.as_uri())
        ready("var g = document.querySelector('.gr-graph'); return !!(g && g.graphragCy)")
        driver.save_screenshot(str(shots[0]))
        with serve(index, port=0) as server:
            driver.get(server.url)
            ready("return document.body.dataset.ready === '1'")
            driver.find_element(By.ID, "question").send_keys(QUESTION)
            top = driver.find_element(By.ID, "top-k")
            top.clear()
            top.send_keys("4")
            driver.find_element(By.ID, "ask-button").click()
            ready("return document.querySelectorAll('#explanation .gr-passage').length >= 4")
            driver.save_screenshot(str(shots[1]))
            driver.find_element(By.CSS_SELECTOR, "[data-tab=entities]").click()
            driver.find_element(By.ID, "entity-query").send_keys("johann")
            driver.find_element(By.CSS_SELECTOR, "#entity-form button").click()
            ready("return document.querySelectorAll('#entity-hits button').length > 0")
            driver.find_element(By.CSS_SELECTOR, "#entity-hits button").click()
            ready("var g = document.getElementById('neighbourhood').graphragCy;"
                  " return !!g && g.nodes().length > 3")
            driver.save_screenshot(str(shots[2]))
    finally:
        quit_driver(driver)
        index.close()
    return shots


if __name__ == "__main__":
    for shot in take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(f"wrote {shot}")
