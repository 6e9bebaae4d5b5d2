"""Personalized PageRank and one query's entity-passage neighbourhood, on hand-built graphs
(no Milvus)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_milvus import InvalidInputError
from llama_index_graphrag_milvus.graph import (
    EntityRelationGraph,
    ExpansionConfig,
    PageRankConfig,
    neighbourhood_graph,
    personalized_pagerank,
)
from llama_index_graphrag_milvus.records import CandidateRelation, EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.pagerank import (
    rank_by_mass,
    relation_record,
    seed_weights,
)
from llama_index_graphrag_milvus.retrieval.seeds import Seeds


def relation(rid: str, subject: str, obj: str, passages: list[str], vector: list[float]
             ) -> dict[str, object]:
    return {"id": rid, "subject_id": subject, "object_id": obj, "passage_ids": passages,
            "embedding": vector}


# euler -(r1, p_euler)- johann -(r2, p_daniel)- daniel -(r3, p_daniel)- fluid
#                       johann -(r4, p_jakob)- jakob
CHAIN = [
    relation("r1", "euler", "johann", ["p_euler"], [1.0, 0.0, 0.0]),
    relation("r2", "daniel", "johann", ["p_daniel"], [0.6, 0.8, 0.0]),
    relation("r3", "daniel", "fluid", ["p_daniel"], [0.0, 1.0, 0.0]),
    relation("r4", "jakob", "johann", ["p_jakob"], [0.0, 0.0, 1.0]),
]


@pytest.fixture
def chain() -> EntityRelationGraph:
    return EntityRelationGraph.from_rows([CHAIN], dim=3)


def test_pagerank_matches_the_closed_form_and_sums_to_one() -> None:
    # a path a - b - c, restart at a, damping 0.5: 7/12, 1/3, 1/12 by hand
    path = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    result = personalized_pagerank(path, np.array([2.0, 0.0, 0.0]), PageRankConfig(0.5))
    assert result.converged and 1 < result.iterations < 50
    assert result.scores == pytest.approx([7 / 12, 1 / 3, 1 / 12], abs=1e-5)
    assert result.scores.sum() == pytest.approx(1.0)


def test_damping_zero_returns_the_reset_and_the_cap_stops_the_iteration() -> None:
    path = sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    assert personalized_pagerank(path, np.array([1.0, 3.0]),
                                 PageRankConfig(0.0)).scores == pytest.approx([0.25, 0.75])
    capped = personalized_pagerank(path, np.array([1.0, 0.0]),
                                   PageRankConfig(0.9, tolerance=1e-12, max_iterations=3))
    assert capped.iterations == 3 and not capped.converged


def test_dangling_nodes_send_their_mass_back_to_the_reset() -> None:
    # b has no edge: its mass restarts, nothing leaks, the total stays 1
    lonely = sp.csr_matrix((3, 3))
    result = personalized_pagerank(lonely, np.array([0.0, 1.0, 1.0]))
    assert result.scores == pytest.approx([0.0, 0.5, 0.5])


def test_an_empty_reset_gives_zeros() -> None:
    result = personalized_pagerank(sp.csr_matrix((2, 2)), np.zeros(2))
    assert result.scores.tolist() == [0.0, 0.0] and result.iterations == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"damping": 1.0}, r"damping must be a finite number in \[0, 1\)"),
    ({"damping": -0.1}, r"damping must be a finite number in \[0, 1\)"),
    ({"tolerance": 0.0}, "tolerance must be a finite number > 0"),
    ({"max_iterations": 0}, "max_iterations must be an integer >= 1"),
    ({"passage_edge_weight": -1.0}, "passage_edge_weight must be"),
])
def test_bad_pagerank_settings_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        PageRankConfig(**kwargs)  # type: ignore[arg-type]


def test_bad_reset_or_shape_is_refused() -> None:
    square = sp.csr_matrix((2, 2))
    with pytest.raises(InvalidInputError, match="one reset value per node"):
        personalized_pagerank(square, np.ones(3))
    with pytest.raises(InvalidInputError, match="non-negative"):
        personalized_pagerank(square, np.array([1.0, -1.0]))
    with pytest.raises(InvalidInputError, match="finite"):
        personalized_pagerank(square, np.array([1.0, np.nan]))


def records(graph: EntityRelationGraph, ids: list[str]) -> list[CandidateRelation]:
    rows = graph.relation_rows(ids)
    return graph.relation_records(rows, [1.0] * rows.size)


def test_the_neighbourhood_holds_only_its_relations_with_documented_weights(
        chain: EntityRelationGraph) -> None:
    local = neighbourhood_graph(records(chain, ["r1"]), passage_edge_weight=0.5)
    assert local.entities == ["euler", "johann"] and local.passages == ["p_euler"]
    dense = local.adjacency.toarray()
    # nodes: euler, johann, p_euler; one relation edge, two mention edges of weight 0.5
    assert dense.tolist() == [[0.0, 1.0, 0.5], [1.0, 0.0, 0.5], [0.5, 0.5, 0.0]]
    # the relations of a passage (its own relations, read by the plan) and their entities;
    # a relation given twice counts once, a passage without relations is an isolated node
    wider = neighbourhood_graph(records(chain, ["r1", "r2", "r3", "r2"]), ["p_lonely"])
    assert wider.entities == ["daniel", "euler", "fluid", "johann"]
    assert wider.passages == ["p_daniel", "p_euler", "p_lonely"]
    assert (wider.adjacency != wider.adjacency.T).nnz == 0
    assert wider.adjacency[0, 3] == 1.0  # daniel - johann: r2 once
    assert wider.adjacency[6].nnz == 0  # p_lonely


def test_passage_relations_is_the_transpose_and_counts_in_memory(
        chain: EntityRelationGraph) -> None:
    before = chain.memory()["structure"]
    links = chain.passage_relations
    assert chain.relation_ids.ids(links[chain.passage_ids.lookup(["p_daniel"])].indices) == [
        "r2", "r3"]
    assert chain.memory()["structure"] > before


def test_pagerank_reaches_the_second_hop_passage(chain: EntityRelationGraph) -> None:
    """Seed: Euler. The passage about Johann's son is two entities away; the Jakob passage
    hangs off Johann too, but Daniel's passage names two entities of the chain."""
    seeds = Seeds((EntityHit("euler", "Euler", 0.9, "q"),), ())
    candidates = chain.expand([1.0, 0.0, 0.0], ["euler"], [], ExpansionConfig(hops=2))
    ranking = rank_by_mass(candidates, seeds, [], PageRankConfig(damping=0.8))
    assert [p.id for p in ranking][:2] == ["p_euler", "p_daniel"]
    assert {p.id for p in ranking} == {"p_euler", "p_daniel", "p_jakob"}
    assert sum(p.mass for p in ranking) < 1.0  # the rest sits on entity nodes


def test_isolated_passages_are_still_ranked(chain: EntityRelationGraph) -> None:
    """A passage without triplets (unknown to the graph) keeps its restart mass."""
    seeds = Seeds((), (RelationHit("r4", "Jakob brother of Johann", 0.7, "jakob", "johann",
                                   passage_ids=("p_jakob",)),))
    ranking = rank_by_mass([relation_record(h) for h in seeds.relations], seeds,
                           [("p_no_triplets", 0.9), ("p_jakob", 0.1)], PageRankConfig(),
                           passage_weight=0.5)
    ids = [p.id for p in ranking]
    assert "p_no_triplets" in ids and "p_jakob" in ids
    # only passages, no seeds reaching the graph: the dense order is kept
    only_dense = rank_by_mass([], Seeds((), ()), [("p_x", 0.9), ("p_y", 0.3)],
                              PageRankConfig())
    assert [p.id for p in only_dense] == ["p_x", "p_y"]


def test_restart_weights_take_the_best_similarity_per_entity() -> None:
    seeds = Seeds((EntityHit("johann", "Johann", 0.4, "q"),
                   EntityHit("nobody", "Nobody", 0.9, "q")),
                  (RelationHit("r1", "Euler student of Johann", 0.8, "euler", "johann"),
                   RelationHit("r3", "Daniel fluid", -0.2, "daniel", "fluid")))
    assert seed_weights(seeds) == {"johann": pytest.approx(0.8), "nobody": 0.9,
                                   "euler": pytest.approx(0.8), "daniel": 0.0, "fluid": 0.0}
