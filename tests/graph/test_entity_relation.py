"""k-hop expansion and pruning on hand-built graphs (no Milvus)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig


def rel(rid: str, subject: str, obj: str, vector: list[float],
        passages: tuple[str, ...] = ()) -> dict:
    return {"id": rid, "subject_id": subject, "object_id": obj,
            "passage_ids": list(passages) or [f"p_{rid}"], "embedding": vector}


# A chain a - b - c - d - e with relations r_ab, r_bc, r_cd, r_de, and a side branch b - x.
CHAIN = [
    rel("r_ab", "a", "b", [1.0, 0.0, 0.0]),
    rel("r_bc", "b", "c", [0.9, 0.1, 0.0]),
    rel("r_cd", "c", "d", [0.5, 0.5, 0.0]),
    rel("r_de", "d", "e", [0.0, 1.0, 0.0]),
    rel("r_bx", "b", "x", [0.0, 0.0, 1.0]),
]


def chain_graph() -> EntityRelationGraph:
    return EntityRelationGraph.from_rows([CHAIN[:2], CHAIN[2:]], dim=3)


def ids(candidates: list) -> set[str]:
    return {c.id for c in candidates}


def test_hop_zero_is_the_relations_touching_seed_entities_plus_seed_relations() -> None:
    graph = chain_graph()
    found = graph.expand([1, 0, 0], ["a"], ["r_de"], ExpansionConfig(hops=0))
    assert ids(found) == {"r_ab", "r_de"}
    assert all(c.hop == 0 for c in found)


def test_one_hop_adds_relations_sharing_an_entity() -> None:
    found = chain_graph().expand([1, 0, 0], ["a"], [], ExpansionConfig(hops=1))
    assert ids(found) == {"r_ab", "r_bc", "r_bx"}
    assert {c.id: c.hop for c in found} == {"r_ab": 0, "r_bc": 1, "r_bx": 1}


def test_two_hops_reach_two_steps_further() -> None:
    found = chain_graph().expand([1, 0, 0], ["a"], [], ExpansionConfig(hops=2))
    assert ids(found) == {"r_ab", "r_bc", "r_bx", "r_cd"}
    assert {c.id: c.hop for c in found}["r_cd"] == 2


def test_candidates_are_sorted_by_similarity_and_carry_passages() -> None:
    found = chain_graph().expand([1, 0, 0], ["a"], [], ExpansionConfig(hops=2))
    scores = [c.score for c in found]
    assert scores == sorted(scores, reverse=True)
    assert found[0].id == "r_ab" and found[0].score == pytest.approx(1.0)
    assert found[0].passage_ids == ("p_r_ab",)


def test_pool_is_pruned_to_max_candidates_by_similarity() -> None:
    found = chain_graph().expand([0.2, 0.3, 1.0], ["a"], [],
                                 ExpansionConfig(hops=2, max_candidate_relations=2))
    assert [c.id for c in found] == ["r_bx", "r_cd"]


def test_unknown_seeds_give_an_empty_pool() -> None:
    assert chain_graph().expand([1, 0, 0], ["nobody"], ["r_none"], ExpansionConfig()) == []


def hub_graph(spokes: int) -> EntityRelationGraph:
    """A hub entity with many relations; spoke i points a little more towards the query
    (axis 0) the larger i is; one far entity hangs off the best spoke's leaf."""
    rows = []
    for i in range(spokes):
        weight = i / spokes
        rows.append(rel(f"hub_{i}", "hub", f"leaf_{i}", [weight, 1.0 - weight, 0.0]))
    rows.append(rel("far", f"leaf_{spokes - 1}", "far_entity", [0.0, 0.0, 1.0]))
    rows.append(rel("seed", "seed_entity", "hub", [1.0, 0.0, 0.0]))
    return EntityRelationGraph.from_rows([rows], dim=3)


def test_hub_relations_are_capped_per_hop_by_similarity_before_the_next_hop() -> None:
    graph = hub_graph(5000)
    config = ExpansionConfig(hops=2, per_hop_max_relations=10, max_candidate_relations=100)
    found = graph.expand([1, 0, 0], ["seed_entity"], [], config)
    hop1 = [c for c in found if c.hop == 1]
    assert len(hop1) == 10
    # the ten spokes most similar to the query survive the cap
    assert {c.id for c in hop1} == {f"hub_{i}" for i in range(4990, 5000)}
    # the next hop starts only from the survivors: the best spoke's leaf reaches "far"
    assert [c.id for c in found if c.hop == 2] == ["far"]
    assert len(found) <= 1 + 10 + 10


def test_pruned_hub_spokes_do_not_seed_the_next_hop() -> None:
    graph = hub_graph(100)
    # 'far' hangs off leaf_99. With a cap of 2, a query towards axis 0 keeps 'seed' and
    # hub_99, so 'far' is reached; a query towards axis 1 keeps hub_0 and hub_1: hub_99 is
    # pruned before the next hop and 'far' is not reached.
    config = ExpansionConfig(hops=1, per_hop_max_relations=2)
    found = graph.expand([0.0, 1.0, 0.0], ["hub"], [], config)
    assert "far" not in ids(found)
    assert {c.id for c in found if c.hop == 0} == {"hub_0", "hub_1"}
    found = graph.expand([1.0, 0.0, 0.0], ["hub"], [], config)
    assert "far" in ids(found)


def test_expansion_never_builds_a_relation_by_relation_matrix(monkeypatch) -> None:
    """Only row slices of the incidence matrix are taken: no A^T A, no dense graph rows."""
    graph = hub_graph(2000)
    touched: list[int] = []
    original = graph.relations_of_entities

    def spy(rows: np.ndarray, query: np.ndarray, *args: Any) -> np.ndarray:
        result = original(rows, query, *args)
        touched.append(result.size)
        return result

    monkeypatch.setattr(graph, "relations_of_entities", spy)
    graph.expand([1, 0, 0], ["seed_entity"], [], ExpansionConfig(hops=1, per_hop_max_relations=5))
    # hop 0 touches the seed's single relation; hop 1 the hub's relations (the hub is expanded
    # once; the 5 kept leaves add nothing new but 'far')
    assert touched[0] == 1
    assert sum(touched) <= 1 + 2001 + 5 + 1


def test_self_loop_and_duplicate_passages() -> None:
    rows = [rel("loop", "a", "a", [1.0, 0.0], ("p1", "p2")), rel("ab", "a", "b", [0.0, 1.0])]
    graph = EntityRelationGraph.from_rows([rows], dim=2)
    assert graph.num_entities == 2
    found = graph.expand([1, 0], ["a"], [], ExpansionConfig(hops=1))
    assert ids(found) == {"loop", "ab"}
    assert found[0].passage_ids == ("p1", "p2")


def test_empty_graph() -> None:
    graph = EntityRelationGraph.from_rows([], dim=4)
    assert graph.num_relations == 0
    assert graph.expand([1, 0, 0, 0], ["a"], [], ExpansionConfig()) == []


@pytest.mark.parametrize("kwargs", [{"hops": -1}, {"per_hop_max_relations": 0},
                                    {"max_candidate_relations": 0}])
def test_bad_expansion_config(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="must be"):
        ExpansionConfig(**kwargs)


def random_hub(spokes: int, dim: int = 16, seed: int = 3, topics: int = 0
               ) -> tuple[list[dict], np.ndarray]:
    """A hub with ``spokes`` relations: random unit vectors, or (``topics`` > 0) vectors
    scattered around that many topic directions, as real embeddings are."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((spokes, dim)).astype(np.float32)
    if topics:
        centers = rng.standard_normal((topics, dim)).astype(np.float32) * 3
        vectors = vectors + centers[rng.integers(0, topics, spokes)]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [rel(f"s{i:05d}", "hub", f"leaf{i}", vectors[i].tolist()) for i in range(spokes)]
    return rows, vectors


@pytest.mark.parametrize("topics, min_recall", [(0, 0.4), (50, 0.9)])
def test_a_hub_costs_about_hub_degree_relations_and_keeps_the_most_similar(
        topics: int, min_recall: float) -> None:
    rows, vectors = random_hub(20000, topics=topics)
    graph = EntityRelationGraph.from_rows([rows], dim=16, hub_degree=400)
    assert graph.hubs.hub_rows.size == 1
    rng = np.random.default_rng(11)
    recalls = []
    for _ in range(20):
        query = vectors[rng.integers(0, len(vectors))] if topics else \
            rng.standard_normal(16).astype(np.float32)
        query /= np.linalg.norm(query)
        probed = graph.relations_of_entities(graph.entity_ids.lookup(["hub"]), query)
        assert 400 <= probed.size <= 1200
        found = graph.expand(query, ["hub"], [], ExpansionConfig(hops=0,
                                                                  max_candidate_relations=10))
        exact = {f"s{i:05d}" for i in np.argsort(-(vectors @ query))[:10]}
        recalls.append(len(ids(found) & exact) / 10)
    # The clusters closest to the query hold most of the truly closest relations. Random
    # vectors are the worst case (no cluster structure); probing 2% of the hub at random
    # would find 2% of them.
    assert np.mean(recalls) >= min_recall


def test_the_hubs_of_one_hop_share_a_relation_budget() -> None:
    rng = np.random.default_rng(5)
    rows = []
    for hub in range(10):
        vectors = rng.standard_normal((1000, 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows += [rel(f"h{hub}_{i:04d}", f"hub{hub}", f"leaf{hub}_{i}", vectors[i].tolist())
                 for i in range(1000)]
    graph = EntityRelationGraph.from_rows([rows], dim=16, hub_degree=200)
    assert graph.hubs.hub_rows.size == 10
    hubs = graph.entity_ids.lookup([f"hub{h}" for h in range(10)])
    query = np.asarray(rows[4321]["embedding"], np.float32)
    alone = graph.relations_of_entities(hubs, query)  # hub_degree each
    shared = graph.relations_of_entities(hubs, query, 600)  # 60 each: one or two clusters
    assert 10 * 200 <= alone.size <= 10 * 300
    assert 600 <= shared.size <= 600 + 10 * 64
    assert np.isin(shared, alone).all()
    # the relation closest to the query is in the closest cluster of its hub
    found = graph.expand(query, [f"hub{h}" for h in range(10)], [],
                         ExpansionConfig(hops=0, per_hop_max_hub_relations=600,
                                         max_candidate_relations=5))
    assert found[0].id == rows[4321]["id"]


def test_entities_below_the_hub_degree_are_walked_exactly() -> None:
    rows, vectors = random_hub(300)
    graph = EntityRelationGraph.from_rows([rows], dim=16, hub_degree=300)
    assert graph.hubs.hub_rows.size == 0
    query = vectors[7]
    found = graph.expand(query, ["hub"], [], ExpansionConfig(hops=0,
                                                              max_candidate_relations=5))
    assert [c.id for c in found] == [f"s{i:05d}" for i in np.argsort(-(vectors @ query))[:5]]


def test_entities_expanded_per_hop_are_capped_best_first(monkeypatch) -> None:
    # a star of 30 leaves around "center"; every leaf has one more relation further out
    rows = [rel(f"c{i}", "center", f"leaf{i}", [1.0, i / 30, 0.0]) for i in range(30)]
    rows += [rel(f"o{i}", f"leaf{i}", f"out{i}", [0.0, 0.0, 1.0]) for i in range(30)]
    graph = EntityRelationGraph.from_rows([rows], dim=3)
    expanded: list[np.ndarray] = []
    original = graph.relations_of_entities

    def spy(entity_rows: np.ndarray, query: np.ndarray, *args: Any) -> np.ndarray:
        expanded.append(entity_rows)
        return original(entity_rows, query, *args)

    monkeypatch.setattr(graph, "relations_of_entities", spy)
    found = graph.expand([0.0, 1.0, 0.0], ["center"], [],
                         ExpansionConfig(hops=1, per_hop_max_entities=4))
    assert expanded[1].size == 4
    # the four leaves reached by the relations most similar to the query (largest i)
    assert {c.id for c in found if c.hop == 1} == {"o29", "o28", "o27", "o26"}


def test_structure_memory_per_relation_on_a_power_law_graph() -> None:
    from benchmarks.synthetic import generate

    synthetic = generate(50_000, dim=8, seed=2)
    graph = EntityRelationGraph.from_rows(synthetic.relation_batches(), dim=8)
    memory = graph.memory()
    assert graph.num_relations == 50_000
    assert memory["structure"] / graph.num_relations <= 64
    assert memory["vectors"] >= 50_000 * 8 * 4


@pytest.mark.parametrize("size", [1, 7, 4095, 4096, 100_000, 100_003])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_largest_finds_the_k_largest_scores_on_short_and_long_rows(size: int, k: int) -> None:
    from llama_index_graphrag_milvus.graph.tables import largest

    rng = np.random.default_rng(size + k)
    scores = rng.standard_normal(size).astype(np.float32)
    if size > 1000:  # the best scores in one block and in the tail: the blocks still find them
        scores[size // 2: size // 2 + 5] = 10.0 + np.arange(5)
        scores[-2:] = 20.0
    k = min(k, size)
    found = largest(scores, k)
    assert found.size == k and len(set(found.tolist())) == k
    assert sorted(scores[found].tolist()) == sorted(np.sort(scores)[-k:].tolist())


def test_largest_with_ties_at_the_kth_place_returns_k_of_them() -> None:
    from llama_index_graphrag_milvus.graph.tables import largest

    scores = np.zeros(50_000, np.float32)  # a zero query vector: every score ties
    scores[123] = 1.0
    found = largest(scores, 3)
    assert found.size == 3 and 123 in found.tolist() and (scores[found] >= 0).all()
