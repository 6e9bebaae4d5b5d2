"""The explanation records, their JSON and their HTML page, without Milvus."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import numpy as np
import pytest

from llama_index_graphrag_milvus.explain import (
    BridgeStep,
    Explanation,
    GraphEdge,
    GraphNode,
    GraphView,
    PassageStep,
    RelationRef,
    Trace,
)
from llama_index_graphrag_milvus.explain.assemble import reason
from llama_index_graphrag_milvus.explain.html import asset, render_frame, render_page
from llama_index_graphrag_milvus.explain.view import predicate
from tests.support.explain_data import HOSTILE, IMAGE, QUESTION, SCRIPT

RELATION = RelationRef("r1", "Leonhard Euler was a student of Johann Bernoulli", 0.41, 0)


def explanation(text: str = "Daniel Bernoulli, a child of Johann Bernoulli.") -> Explanation:
    return Explanation(
        question=QUESTION, method="bridge", settings={"similarity_top_k": 3},
        passages=(PassageStep(1, "p1", text, 1.0, "bridge", "second query", "Johann Bernoulli",
                              0, 0.43, (RELATION,), ("e1", "e2")),),
        bridges=(BridgeStep("e2", "Johann Bernoulli", "named", RELATION,
                            "What contribution did the son of 's teacher make? Johann Bernoulli",
                            "Leonhard Euler"),),
        graph=GraphView((GraphNode("e1", "Leonhard Euler", ("seed",)),
                         GraphNode("e2", "Johann Bernoulli", ("bridge",))),
                        (GraphEdge("r1", "e1", "e2", "was a student of", RELATION.text, 0.41,
                                   ("bridge", "seed")),)),
        timings={"retrieval": 0.01})


def test_the_record_is_json_and_timings_do_not_count_in_equality() -> None:
    record = explanation()
    data = json.loads(record.to_json())
    assert data == record.to_dict()
    assert data["bridges"][0]["relation"]["text"] == RELATION.text
    assert data["graph"]["edges"][0]["roles"] == ["bridge", "seed"]
    assert data["passages"][0]["entity_ids"] == ["e1", "e2"]
    from dataclasses import replace
    assert replace(record, timings={"retrieval": 9.0}) == record
    assert replace(record, question="another") != record


def test_the_page_is_self_contained_and_its_scripts_are_the_only_ones_allowed() -> None:
    page = render_page(explanation())
    assert "<script src" not in page and "<link" not in page  # nothing fetched
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in policy and "connect-src" not in policy
    inline = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    assert len(inline) == 3 and inline[0] == asset("cytoscape.min.js")
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    assert '"3.34.4"' in asset("cytoscape.min.js")  # the vendored version (assets/VENDORED.md)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_texts_cannot_leave_the_json_block(hostile: str) -> None:
    page = render_page(explanation(f"{hostile} Euler's teacher"))
    block = re.search(r'<script type="application/json" id="explanation-data">(.*?)</script>',
                      page, re.DOTALL).group(1)
    assert "<" not in block and ">" not in block
    assert json.loads(block)["passages"][0]["text"] == f"{hostile} Euler's teacher"
    assert hostile not in page


def test_jupyter_shows_the_page_in_a_sandboxed_frame() -> None:
    frame = explanation(SCRIPT)._repr_html_()
    assert frame.startswith('<iframe sandbox="allow-scripts"')
    assert "allow-same-origin" not in frame
    assert SCRIPT not in frame and IMAGE not in render_frame(explanation(IMAGE))


def test_save_html_writes_the_page(tmp_path: object) -> None:
    from pathlib import Path

    path = explanation().save_html(Path(str(tmp_path)) / "why.html")
    assert path.read_text(encoding="utf-8") == explanation().to_html()


def test_reasons_say_how_each_passage_was_found() -> None:
    assert reason("bridge", {"bridge": "Johann Bernoulli", "round": 0, "similarity": 0.43},
                  [RELATION]).startswith("second query for the bridge 'Johann Bernoulli' "
                                         "(round 1, similarity 0.430)")
    assert reason("question", {"round": 1, "similarity": 0.3}, []) == (
        "the question's own passage list (round 2, similarity 0.300)")
    assert "PageRank mass 0.1500" in reason("ppr", {"mass": 0.15, "similarity": 0.2}, [])
    assert "pool relation" in reason("pool", {}, [RELATION])
    assert reason("similarity", {"query": "question (the seeds reach nothing)",
                                 "similarity": 0.5}, []) == (
        "ranked by its own similarity to the question (similarity 0.500): the seeds reach "
        "nothing")


def test_predicates_come_from_the_relation_text() -> None:
    assert predicate("Leonhard Euler was a student of Johann Bernoulli", "leonhard euler",
                     "Johann  Bernoulli") == "was a student of"
    assert predicate("Euler Euler", "Euler", "Euler") == "Euler Euler"
    # case folding changes lengths ("ß" folds to "ss"): cut where the folded names end
    assert predicate("GROSSE STRASSE is in Berlin", "Große Straße", "Berlin") == "is in"
    assert predicate("Große Straße liegt in BERLIN", "GROSSE STRASSE", "berlin") == "liegt in"


def test_settings_a_custom_method_describes_with_numpy_or_sets_are_json() -> None:
    """``to_json``, ``to_html`` and the notebook frame raised TypeError on them."""
    from dataclasses import replace

    record = replace(explanation(), settings={"alpha": np.float32(0.5), "kinds": {"b", "a"},
                                              "weights": np.arange(2), "model": object()})
    settings = json.loads(record.to_json())["settings"]
    assert settings["alpha"] == 0.5 and settings["kinds"] == ["a", "b"]
    assert settings["weights"] == [0, 1] and settings["model"].startswith("<object")
    assert "0.5" in record.to_html() and record._repr_html_()


def test_a_long_question_s_second_query_is_read_in_one_walk() -> None:
    """SequenceMatcher's time grows with the cube of the length (14,400 characters took
    minutes): past MAX_DIFFED words, the query's words are matched in order."""
    from llama_index_graphrag_milvus.explain.assemble import MAX_DIFFED, read_second_query

    words = [f"w{i}" for i in range(10 * MAX_DIFFED)]
    question = " ".join([*words[:500], "Euler", *words[500:]]) + "?"
    second = " ".join(words) + "? Johann Bernoulli"
    assert read_second_query(question, second, "Johann Bernoulli").startswith(
        "the question with 'Euler' replaced by the bridge: w0 w1")
    assert "w499 Johann Bernoulli w500" in read_second_query(question, second,
                                                             "Johann Bernoulli")


def test_the_trace_keeps_the_heaviest_pagerank_entities() -> None:
    trace = Trace()
    masses = np.array([0.1, 0.0, 0.5] + [0.01] * 30)
    trace.on_pagerank([f"e{i}" for i in range(masses.size)], masses)
    assert trace.pagerank[:2] == [("e2", 0.5), ("e0", 0.1)]
    assert len(trace.pagerank) == 15 and all(mass > 0 for _, mass in trace.pagerank)
