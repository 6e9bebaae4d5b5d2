"""``retriever.explain`` on Milvus Lite: every method, sync and async, against ``retrieve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus import EmptyIndexError, GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.explain import Explanation, Trace
from llama_index_graphrag_milvus.explain.assemble import is_passage
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod
from tests.support.explain_data import DANIEL, EULER, QUESTION, build
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus

METHODS = ["bridge", "ppr", "pcst", "passage", "relation"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> GraphRAGIndex:
    built = build(tmp_path_factory.mktemp("explain") / "family.db")
    built.build_communities()
    yield built
    built.close()


def check_graph(explanation: Explanation) -> None:
    nodes = {n.id for n in explanation.graph.nodes}
    assert explanation.graph.edges
    for edge in explanation.graph.edges:
        assert edge.source in nodes and edge.target in nodes and edge.roles


@pytest.mark.parametrize("method", METHODS)
async def test_explain_returns_what_retrieve_returns_sync_and_async(index: GraphRAGIndex,
                                                                    method: str) -> None:
    retriever = index.as_retriever(passage_scoring=method, similarity_top_k=3)
    explanation = retriever.explain(QUESTION)
    retrieved = [n.node.node_id for n in retriever.retrieve(QUESTION) if is_passage(n.node)]
    assert [p.id for p in explanation.passages] == retrieved
    assert await retriever.aexplain(QUESTION) == explanation
    assert explanation.method == retriever.method.name
    assert [p.rank for p in explanation.naive] == [1, 2, 3]
    assert json.loads(explanation.to_json())["question"] == QUESTION
    check_graph(explanation)


def test_the_second_hop_says_which_bridge_found_daniel(index: GraphRAGIndex) -> None:
    explanation = index.as_retriever(similarity_top_k=3).explain(QUESTION)
    assert explanation.relation_seeds[0].text == (
        "Leonhard Euler was a student of Johann Bernoulli")
    johann = explanation.bridges[0]
    assert (johann.name, johann.named) == ("Johann Bernoulli", "Leonhard Euler")
    assert johann.second_query == ("What contribution did the son of 's teacher make? "
                                   "Johann Bernoulli")
    assert johann.reading == ("the question with 'Euler' replaced by the bridge: What "
                              "contribution did the son of Johann Bernoulli's teacher make?")
    assert len(explanation.candidate_lists) == 1 + len(explanation.bridges)
    assert explanation.candidate_lists[1].query == johann.second_query
    [daniel] = [p for p in explanation.passages if p.text == DANIEL]
    assert (daniel.found_by, daniel.bridge, daniel.round) == ("bridge", "Johann Bernoulli", 0)
    assert daniel.naive_rank is None  # naive RAG's top 3 misses it
    assert explanation.candidate_lists[1].passages[0].id == daniel.id
    assert "bridge 'Johann Bernoulli'" in daniel.reason
    [euler] = [p for p in explanation.naive if p.text == EULER]
    assert euler.graph_rank == 1
    names = {n.name: n.roles for n in explanation.graph.nodes}
    assert "bridge" in names["Johann Bernoulli"] and "found" in names["Daniel Bernoulli"]
    edges = {(e.label, tuple(e.roles)) for e in explanation.graph.edges}
    assert ("was a student of", ("bridge", "seed", "passage")) in edges


def test_each_method_shows_its_own_step(index: GraphRAGIndex) -> None:
    ppr = index.as_retriever(passage_scoring="ppr").explain(QUESTION)
    assert ppr.pagerank and ppr.pagerank[0].mass >= ppr.pagerank[-1].mass
    assert {m.name for m in ppr.pagerank} & {"Leonhard Euler", "Johann Bernoulli"}
    khop = index.as_retriever(passage_scoring="passage").explain(QUESTION)
    assert khop.pool and khop.entity_seeds and not khop.bridges
    assert all(p.found_by == "pool" for p in khop.passages)
    pcst = index.as_retriever(passage_scoring="pcst").explain(QUESTION)
    assert pcst.subgraph and any("subgraph" in e.roles for e in pcst.graph.edges)
    local = index.as_local_retriever(similarity_top_k=3)
    explanation = local.explain(QUESTION)
    assert explanation.reports and any(r.used for r in explanation.reports)
    assert explanation.context_entities
    assert [p.id for p in explanation.passages] == [
        n.node.node_id for n in local.retrieve(QUESTION) if is_passage(n.node)]


@pytest.mark.parametrize("method", METHODS)
async def test_retrieve_builds_no_trace(index: GraphRAGIndex, method: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The normal path collects nothing: no Trace is made and every method is handed a
    query whose trace is None."""
    def refuse(self: Trace) -> None:
        raise AssertionError("retrieve built a Trace")

    monkeypatch.setattr(Trace, "__init__", refuse)
    retriever = index.as_retriever(passage_scoring=method)
    seen: list[QueryContext] = []
    plan = type(retriever.method).plan

    def spy(self: RetrievalMethod, query: QueryContext, seeds: object) -> object:
        seen.append(query)
        return plan(self, query, seeds)

    monkeypatch.setattr(type(retriever.method), "plan", spy)
    assert retriever.retrieve(QUESTION) and await retriever.aretrieve(QUESTION)
    assert len(seen) == 2 and all(query.trace is None for query in seen)


def test_explain_checks_the_question_like_retrieve(index: GraphRAGIndex,
                                                   tmp_path: Path) -> None:
    retriever = index.as_retriever()
    with pytest.raises(InvalidInputError, match="empty or whitespace"):
        retriever.explain("   ")
    with pytest.raises(InvalidInputError, match="must be a string or a QueryBundle"):
        retriever.explain(b"bytes")  # type: ignore[arg-type]
    empty = GraphRAGIndex(uri=str(tmp_path / "empty.db"), embed_model=HashEmbedding(dim=64))
    with pytest.raises(EmptyIndexError, match="ingest passages first"):
        empty.as_retriever().explain(QUESTION)
    empty.close()


class Twice(RetrievalMethod):
    """A custom method that lists each passage twice, with no score a number can hold."""

    name = "twice"

    def plan(self, query: QueryContext, seeds_config: Any) -> Any:
        from llama_index_graphrag_milvus.retrieval import Result, first, search_passages

        hits = first((yield from search_passages(query, (query.vector,), 2)))
        return [NodeWithScore(node=r.node, score=float("nan"))
                for r in [Result(node, score) for node, score in hits] * 2]

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": self.name}


def test_a_custom_method_s_repeats_and_nan_scores_are_explained_as_retrieved(
        index: GraphRAGIndex, tmp_path: Path) -> None:
    """LlamaIndex keeps a node id's first node: so does the explanation; a NaN score is no
    number in its JSON (a browser's JSON.parse refuses a bare NaN, and the page is blank)."""
    retriever = index.as_retriever(method=Twice(), similarity_top_k=2)
    retrieved = [n.node.node_id for n in retriever.retrieve(QUESTION)]
    explanation = retriever.explain(QUESTION)
    assert [p.id for p in explanation.passages] == retrieved and len(retrieved) == 2
    assert [p.rank for p in explanation.passages] == [1, 2]

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(explanation.to_json(), parse_constant=refuse)
    assert [p["score"] for p in data["passages"]] == [None, None]
    page = explanation.save_html(tmp_path / "nan.html").read_text(encoding="utf-8")
    assert ": NaN" not in page and "\"score\": null" in page  # its data block


def test_the_page_of_an_explanation_is_written(index: GraphRAGIndex, tmp_path: Path) -> None:
    explanation = index.as_retriever().explain(QUESTION)
    page = explanation.save_html(tmp_path / "why.html").read_text(encoding="utf-8")
    assert "window.__graphragPwned" in page  # the hostile texts are in it, as JSON text
    assert "<script>window.__graphragPwned" not in page


@pytest.mark.parametrize("method", ["bridge", "ppr", "pcst"])
async def test_explain_with_the_graph_served_reads_nothing_whole(index: GraphRAGIndex,
                                                                 method: str) -> None:
    """With ``graph="milvus"`` the drawing's ends and names are read by id: the same
    passages, bridges and drawn names as with the graph in memory, no whole table read."""
    from llama_index_graphrag_milvus.index_cache import COPIES, GRAPH_MODE

    memory = index.as_retriever(passage_scoring=method, similarity_top_k=3).explain(QUESTION)
    served = GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model,
                           collection_prefix=index.store.prefix, graph="milvus")
    try:
        retriever = served.as_retriever(passage_scoring=method, similarity_top_k=3)
        explanation = retriever.explain(QUESTION)
        assert await retriever.aexplain(QUESTION) == explanation
        assert [p.id for p in explanation.passages] == [p.id for p in memory.passages]
        def bridges(e: Explanation) -> list[tuple[str, str, str]]:
            return [(b.name, b.relation.id, b.second_query) for b in e.bridges]

        assert bridges(explanation) == bridges(memory)
        names = {n.id: n.name for n in memory.graph.nodes}
        drawn = {n.id: n.name for n in explanation.graph.nodes}
        assert drawn and all(drawn[e] == names[e] for e in drawn if e in names)
        assert all(name != eid for eid, name in drawn.items())  # every name was read
        check_graph(explanation)
        assert all(served.cache.peek(name) is None for name in COPIES if name != GRAPH_MODE)
    finally:
        served.close()
