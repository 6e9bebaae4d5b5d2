"""Prize-collecting Steiner tree subgraphs (G-Retriever): the solver wrapper on hand-built
graphs (pure), and the ``passage_scoring="pcst"`` retrieval on Milvus Lite (subgraph, metadata,
filters, fallbacks, sync == async, rerank on top)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import (
    GraphRAGIndex,
    GraphRelationRerank,
    InvalidInputError,
    MissingDependencyError,
)
from llama_index_graphrag_milvus.graph import steiner_tree as pcst_module
from llama_index_graphrag_milvus.graph.steiner_tree import (
    PCSTConfig,
    rank_prizes,
    solve,
    textualize,
)
from llama_index_graphrag_milvus.metadata import (
    FOUND_BY_KEY,
    RELATIONS_KEY,
    SUBGRAPH_KEY,
    TIMINGS_KEY,
)
from llama_index_graphrag_milvus.retrieval.pcst import SUBGRAPH_NODE_PREFIX
from tests.conftest import FAMILY
from tests.support.fakes import ScriptedLLM
from tests.support.markers import LITE_ONLY

QUESTION = "What did the son of Euler's teacher contribute?"
EULER, DANIEL, JAKOB, FLUID = (p for p, _ in FAMILY)


"""For tests of the method's own logic: the server adds nothing but time there."""


def texts(hits: list) -> list[str]:
    return [h.node.get_content() for h in hits]


# ---------------------------------------------------------------------- the solver (pure)


def star_with_chain() -> np.ndarray:
    """0 - 1 - 2 (a chain) and a hub 1 with ten leaves 3..12."""
    return np.array([[0, 1], [1, 2], *[[1, leaf] for leaf in range(3, 13)]])


def test_prizes_go_by_rank_and_ties_keep_the_first() -> None:
    assert rank_prizes([0.2, 0.9, 0.9, 0.1], 3).tolist() == [1.0, 3.0, 2.0, 0.0]
    assert rank_prizes([0.5], 3).tolist() == [3.0]
    assert rank_prizes([], 3).tolist() == []
    assert rank_prizes([0.5, 0.4], 0).tolist() == [0.0, 0.0]


def test_the_chain_between_prized_entities_is_chosen_without_the_hub_leaves() -> None:
    edges = star_with_chain()
    prizes = np.zeros(13)
    prizes[[0, 2]] = [3.0, 2.0]
    sub = solve(edges, prizes, np.zeros(len(edges)), 0.5)
    assert sub.nodes.tolist() == [0, 1, 2]
    assert sub.edges.tolist() == [0, 1]
    assert sub.trees == 1


def test_a_relation_prize_above_its_cost_becomes_a_virtual_node() -> None:
    edges = star_with_chain()
    edge_prizes = np.zeros(len(edges))
    edge_prizes[5] = 3.0  # the edge 1 - 6, far from any prized entity
    sub = solve(edges, np.zeros(13), edge_prizes, 0.5)
    assert sub.edges.tolist() == [5]
    assert sub.nodes.tolist() == [1, 6]  # the edge brings its endpoints


def test_a_higher_cost_gives_a_smaller_subgraph() -> None:
    edges = star_with_chain()
    prizes = np.zeros(13)
    prizes[[0, 2]] = [3.0, 2.0]
    assert len(solve(edges, prizes, np.zeros(len(edges)), 0.5).edges) == 2
    assert len(solve(edges, prizes, np.zeros(len(edges)), 2.5).edges) == 0


def test_seeds_in_different_components_give_a_forest() -> None:
    edges = np.array([[0, 1], [1, 2], [3, 4]])
    prizes = np.array([3.0, 0.0, 2.0, 2.0, 1.0])
    sub = solve(edges, prizes, np.zeros(3), 0.5)
    assert sub.trees == 2
    assert sub.edges.tolist() == [0, 1, 2]


def test_no_prize_gives_an_empty_subgraph_and_a_single_seed_stays_alone() -> None:
    edges = star_with_chain()
    empty = solve(edges, np.zeros(13), np.zeros(len(edges)), 0.5)
    assert empty.nodes.size == 0 and empty.edges.size == 0
    single = np.zeros(13)
    single[0] = 3.0
    alone = solve(edges, single, np.zeros(len(edges)), 0.5)
    assert alone.nodes.tolist() == [0] and alone.edges.size == 0


def test_bad_problems_and_settings_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="one prize per edge"):
        solve(np.array([[0, 1]]), np.ones(2), np.ones(2), 0.5)
    with pytest.raises(InvalidInputError, match="one prize per edge"):
        solve(np.array([[0, 5]]), np.ones(2), np.ones(1), 0.5)
    with pytest.raises(InvalidInputError, match="pcst_edge_cost"):
        PCSTConfig(edge_cost=-1.0)
    with pytest.raises(InvalidInputError, match="pcst_relation_prizes"):
        PCSTConfig(relation_prizes=True)


def test_the_text_is_csv_with_quoted_cells() -> None:
    text = textualize(["Ada, Countess", 'the "engine"'], [(0, "wrote\nabout", 1)])
    assert text.splitlines()[:3] == ["node_id,node_attr", '0,"Ada, Countess"',
                                     '1,"the ""engine"""']
    assert text.endswith('src,edge_attr,dst\n0,"wrote\nabout",1')


def test_a_missing_solver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pcst_fast", None)
    with pytest.raises(MissingDependencyError, match=r"llama-index-graphrag-milvus\[pcst\]"):
        pcst_module.load_solver()


# ---------------------------------------------------------------------- retrieval on Milvus


def test_pcst_returns_the_chain_passages_and_the_subgraph(family_index: GraphRAGIndex) -> None:
    retriever = family_index.as_retriever(passage_scoring="pcst", hops=1)
    hits = retriever.retrieve(QUESTION)
    assert EULER in texts(hits) and DANIEL in texts(hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    subgraph = hits[0].node.metadata[SUBGRAPH_KEY]
    assert {"Leonhard Euler", "Johann Bernoulli", "Daniel Bernoulli"} <= set(
        subgraph["entities"])
    assert any("son of" in r for r in subgraph["relations"])
    assert subgraph["text"].startswith("node_id,node_attr\n")
    assert "\nsrc,edge_attr,dst\n" in subgraph["text"]
    assert subgraph["trees"] >= 1
    chosen = set(subgraph["relations"])
    for h in hits:  # each passage carries the chosen relations that reached it
        assert h.node.metadata[RELATIONS_KEY]
        assert {r["text"] for r in h.node.metadata[RELATIONS_KEY]} <= chosen
        assert h.node.metadata[FOUND_BY_KEY]["query"] == "pcst"
        assert h.node.metadata[TIMINGS_KEY]["pcst"] >= 0
    llm_text = hits[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert SUBGRAPH_KEY not in llm_text and "node_id,node_attr" not in llm_text
    described = retriever.describe()
    assert described["passage_scoring"] == "pcst"
    assert described["pcst_edge_cost"] == 0.5


def test_the_subgraph_is_smaller_than_the_khop_pool(shared_family_index: GraphRAGIndex) -> None:
    khop = shared_family_index.as_retriever(passage_scoring="passage", hops=2)
    tree = shared_family_index.as_retriever(passage_scoring="pcst", hops=2, pcst_relation_prizes=2)
    pool = {r["id"] for h in khop.retrieve(QUESTION) for r in h.node.metadata[RELATIONS_KEY]}
    subgraph = tree.retrieve(QUESTION)[0].node.metadata[SUBGRAPH_KEY]
    assert 1 <= len(subgraph["relations"]) < len(pool)


def test_the_subgraph_node_comes_first_for_the_llm(shared_family_index: GraphRAGIndex) -> None:
    hits = shared_family_index.as_retriever(passage_scoring="pcst",
                                            pcst_subgraph_node=True).retrieve(QUESTION)
    first = hits[0].node
    assert first.node_id.startswith(SUBGRAPH_NODE_PREFIX)
    assert "node_id,node_attr" in first.get_content(metadata_mode=MetadataMode.LLM)
    assert first.get_content() == "Knowledge graph (nodes, then edges):\n" + \
        first.metadata[SUBGRAPH_KEY]["text"]
    assert hits[0].score == hits[1].score
    again = shared_family_index.as_retriever(passage_scoring="pcst",
                                             pcst_subgraph_node=True).retrieve(QUESTION)
    assert again[0].node.node_id == first.node_id  # stable id: same subgraph, same node


def test_rerank_works_on_pcst_output(family_index: GraphRAGIndex) -> None:
    hits = family_index.as_retriever(passage_scoring="pcst",
                                     pcst_subgraph_node=True).retrieve(QUESTION)

    def answer(prompt: str) -> str:
        calls.append(prompt)
        if len(calls) == 1:
            return "no JSON here"  # malformed first: the reranker keeps the order
        numbered = [line for line in prompt.splitlines() if line.startswith("[")]
        son = next(line for line in numbered if "son of" in line)
        return json.dumps({"thought": "the son", "useful_relationships": [son]})

    calls: list[str] = []
    kept = GraphRelationRerank(llm=ScriptedLLM(answer), top_n=2).postprocess_nodes(
        hits, query_str=QUESTION)
    assert [h.node.node_id for h in kept] == [h.node.node_id for h in hits[:2]]
    reranked = GraphRelationRerank(llm=ScriptedLLM(answer), top_n=1).postprocess_nodes(
        hits, query_str=QUESTION)
    assert texts(reranked) == [DANIEL]


def test_sync_and_async_give_the_same_subgraph(family_index: GraphRAGIndex) -> None:
    retriever = family_index.as_retriever(passage_scoring="pcst", hops=2)
    sync = retriever.retrieve(QUESTION)
    async_ = asyncio.run(retriever.aretrieve(QUESTION))
    assert texts(sync) == texts(async_)
    assert [h.node.metadata[SUBGRAPH_KEY] for h in sync] == [
        h.node.metadata[SUBGRAPH_KEY] for h in async_]


def test_filters_hide_other_tenants_relations_from_the_subgraph(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    data = [(TextNode(text=text, metadata={"tenant_id": tenant}), triplets)
            for tenant, rows in (("acme", FAMILY[:1]), ("globex", FAMILY[1:]))
            for text, triplets in rows]
    index = make_index(data)
    only = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="acme")])
    hits = index.as_retriever(passage_scoring="pcst", filters=only).retrieve(QUESTION)
    assert hits and {h.node.metadata["tenant_id"] for h in hits} == {"acme"}
    subgraph = hits[0].node.metadata.get(SUBGRAPH_KEY)
    if subgraph is not None:  # the subgraph text must not leak globex's relations
        assert "son of" not in subgraph["text"] and "Daniel" not in subgraph["text"]


class RaisingSolver:
    def __call__(self, *args: Any) -> Any:
        raise RuntimeError("solver exploded")


def test_a_failing_solver_gives_the_khop_result_and_a_warning(
        shared_family_index: GraphRAGIndex, caplog: pytest.LogCaptureFixture) -> None:
    retriever = shared_family_index.as_retriever(passage_scoring="pcst", hops=1)
    retriever.method.solver = RaisingSolver()  # type: ignore[attr-defined]
    khop = shared_family_index.as_retriever(passage_scoring="passage", hops=1)
    with caplog.at_level(logging.WARNING):
        hits = retriever.retrieve(QUESTION)
    assert "PCST solver failed" in caplog.text and "solver exploded" in caplog.text
    assert texts(hits) == texts(khop.retrieve(QUESTION))


def test_no_prize_gives_the_khop_result_and_a_warning(
        shared_family_index: GraphRAGIndex, caplog: pytest.LogCaptureFixture) -> None:
    retriever = shared_family_index.as_retriever(passage_scoring="pcst", pcst_entity_prizes=0,
                                                 pcst_relation_prizes=0)
    with caplog.at_level(logging.WARNING):
        hits = retriever.retrieve(QUESTION)
    assert "holds no relation" in caplog.text
    assert hits and SUBGRAPH_KEY not in hits[0].node.metadata


@LITE_ONLY
def test_a_graph_without_relations_answers_by_similarity(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index([(text, []) for text, _ in FAMILY])
    hits = index.as_retriever(passage_scoring="pcst", similarity_top_k=2).retrieve(
        "fluid dynamics wings")
    assert texts(hits)[0] == FLUID


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"pcst_edge_cost": -0.1}, "pcst_edge_cost must be a finite number >= 0"),
    ({"pcst_edge_cost": "0.5"}, "pcst_edge_cost must be a finite number >= 0"),
    ({"pcst_entity_prizes": -1}, "pcst_entity_prizes must be an integer >= 0"),
    ({"pcst_relation_prizes": 1.5}, "pcst_relation_prizes must be an integer >= 0"),
])
def test_bad_pcst_arguments_are_refused(shared_family_index: GraphRAGIndex,
                                        kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        shared_family_index.as_retriever(passage_scoring="pcst", **kwargs)


def test_a_hub_with_100k_relations_is_solved_on_the_capped_neighbourhood() -> None:
    from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
    from llama_index_graphrag_milvus.records import EntityHit
    from llama_index_graphrag_milvus.retrieval.pcst import choose_subgraph
    from llama_index_graphrag_milvus.retrieval.seeds import Seeds

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(100_000, 8))
    rows = [{"id": f"r{i}", "subject_id": "hub", "object_id": f"e{i}",
             "passage_ids": [f"p{i % 5000}"], "embedding": vectors[i].tolist()}
            for i in range(100_000)]
    graph = EntityRelationGraph.from_rows([rows], dim=8)
    config = ExpansionConfig(hops=1, max_candidate_relations=100)
    candidates = graph.expand(vectors[7], ["hub"], [], config)
    assert len(candidates) <= 100
    seeds = Seeds((EntityHit("hub", "Hub", 0.9, "query"),), ())
    chosen = choose_subgraph(seeds, candidates, PCSTConfig())
    assert 1 <= len(chosen.relations) <= len(candidates)
    assert "r7" in {c.id for c in chosen.relations}  # the most similar relation is prized
    assert "hub" in chosen.entities


def test_without_the_solver_the_pcst_retriever_is_refused_at_construction(
        shared_family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pcst_fast", None)
    with pytest.raises(MissingDependencyError, match=r"\[pcst\]"):
        shared_family_index.as_retriever(passage_scoring="pcst")
    assert shared_family_index.as_retriever().retrieve(QUESTION)  # the other methods still work
