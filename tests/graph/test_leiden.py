"""Hierarchical Leiden communities (graph.leiden) on hand-built graphs (no Milvus)."""

from __future__ import annotations

import itertools
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_milvus import InvalidInputError, MissingDependencyError
from llama_index_graphrag_milvus.graph import (
    CommunityHierarchy,
    LeidenConfig,
    hierarchical_communities,
    modularity,
    relation_weights,
)


def clique(nodes: range) -> list[tuple[int, int]]:
    return list(itertools.combinations(nodes, 2))


DEFAULT = LeidenConfig()


def run(edges: list[tuple[int, int]], num_entities: int, config: LeidenConfig = DEFAULT,
        weights: np.ndarray | None = None) -> tuple[np.ndarray, CommunityHierarchy]:
    ends = np.array(edges, dtype=np.int64).reshape(-1, 2)
    values = np.ones(len(ends)) if weights is None else weights
    return ends, hierarchical_communities(ends, values, num_entities, config)


# two 5-cliques (0-4, 5-9) joined by the relation 4 - 5
TWO_CLIQUES = [*clique(range(5)), *clique(range(5, 10)), (4, 5)]

# four 6-cliques: A (0-5) and B (6-11) joined by 3 relations, C (12-17) and D (18-23) too,
# and the two groups joined by one relation (5 - 17)
FOUR_CLIQUES = [*clique(range(0, 6)), *clique(range(6, 12)), *clique(range(12, 18)),
                *clique(range(18, 24)), (0, 6), (1, 7), (2, 8), (12, 18), (13, 19), (14, 20),
                (5, 17)]
# at resolution 0.3, level 0 pairs the cliques up; 12 > max_cluster_size splits each pair
SPLIT = LeidenConfig(max_cluster_size=8, resolution=0.3)


def members(hierarchy: CommunityHierarchy, indices: list[int] | None = None
            ) -> list[list[int]]:
    chosen = range(len(hierarchy.clusters)) if indices is None else indices
    return [hierarchy.clusters[i].entities.tolist() for i in chosen]


def check_structure(ends: np.ndarray, hierarchy: CommunityHierarchy, num_entities: int
                    ) -> None:
    """Invariants every hierarchy keeps, checked by brute force."""
    clusters = hierarchy.clusters
    assert len(hierarchy.children) == len(clusters)
    keys = [(c.level, int(c.entities[0])) for c in clusters]
    assert keys == sorted(keys)
    for index, cluster in enumerate(clusters):
        entities = cluster.entities
        assert entities.dtype == np.int64 and cluster.relations.dtype == np.int64
        assert np.all(np.diff(entities) > 0)
        inside = set(entities.tolist())
        expected = [r for r, (a, b) in enumerate(ends.tolist()) if a in inside and b in inside]
        assert cluster.relations.tolist() == expected
        if cluster.level == 0:
            assert cluster.parent == -1
        else:
            parent = clusters[cluster.parent]
            assert parent.level == cluster.level - 1
            assert index in hierarchy.children[cluster.parent]
            assert inside <= set(parent.entities.tolist())
        kids = hierarchy.children[index]
        assert list(kids) == sorted(kids)
        if kids:  # a split cluster is split completely
            assert all(clusters[k].parent == index for k in kids)
            union = np.sort(np.concatenate([clusters[k].entities for k in kids]))
            assert union.tolist() == entities.tolist()
    assert len(hierarchy.modularity) == hierarchy.num_levels
    for level in range(hierarchy.num_levels):
        covered = np.sort(np.concatenate(members_arrays(hierarchy, hierarchy.at_level(level))))
        assert covered.tolist() == list(range(num_entities))
    leaf = hierarchy.leaf_of(num_entities)
    for entity in range(num_entities):
        assert not hierarchy.children[leaf[entity]]
        assert entity in clusters[leaf[entity]].entities


def members_arrays(hierarchy: CommunityHierarchy, indices: list[int]) -> list[np.ndarray]:
    return [hierarchy.clusters[i].entities for i in indices]


def test_two_cliques_are_two_communities() -> None:
    ends, hierarchy = run(TWO_CLIQUES, 10)
    assert hierarchy.num_levels == 1
    assert members(hierarchy) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert [c.parent for c in hierarchy.clusters] == [-1, -1]
    assert hierarchy.children == ((), ())
    assert hierarchy.at_level(0) == [0, 1]
    assert hierarchy.clusters[0].relations.tolist() == list(range(10))
    assert hierarchy.clusters[1].relations.tolist() == list(range(10, 20))  # not 4 - 5
    assert hierarchy.leaf_of().tolist() == [0] * 5 + [1] * 5
    assert hierarchy.seconds > 0
    # m = 21; each clique: 10 inside, degree 21: 2 (10/21 - (21/42)^2) = 19/42
    assert hierarchy.modularity[0] == pytest.approx(19 / 42)
    check_structure(ends, hierarchy, 10)


def test_large_clusters_are_split_into_a_second_level() -> None:
    ends, hierarchy = run(FOUR_CLIQUES, 24, SPLIT)
    assert hierarchy.num_levels == 2
    assert members(hierarchy, hierarchy.at_level(0)) == [list(range(12)),
                                                         list(range(12, 24))]
    assert members(hierarchy, hierarchy.at_level(1)) == [list(range(6 * g, 6 * g + 6))
                                                         for g in range(4)]
    assert hierarchy.children == ((2, 3), (4, 5), (), (), (), ())
    assert [c.parent for c in hierarchy.clusters] == [-1, -1, 0, 0, 1, 1]
    assert hierarchy.leaf_of().tolist() == [2] * 6 + [3] * 6 + [4] * 6 + [5] * 6
    # level 0: m = 67, each group 33 inside with degree 67: 66/67 - 1/2
    # level 1: each clique 15 inside, degrees 34, 33, 34, 33
    assert hierarchy.modularity[0] == pytest.approx(66 / 67 - 0.5)
    assert hierarchy.modularity[1] == pytest.approx(
        60 / 67 - (2 * 34**2 + 2 * 33**2) / 134**2)
    check_structure(ends, hierarchy, 24)


def test_a_leaf_above_stays_in_the_deeper_partition() -> None:
    # the four cliques as before, plus a separate 4-clique (24-27) that is never split
    edges = [*FOUR_CLIQUES, *clique(range(24, 28))]
    ends, hierarchy = run(edges, 28, SPLIT)
    assert hierarchy.num_levels == 2
    small = [i for i, c in enumerate(hierarchy.clusters) if c.entities.tolist() == [24, 25,
                                                                                    26, 27]]
    assert len(small) == 1 and hierarchy.clusters[small[0]].level == 0
    assert small[0] in hierarchy.at_level(0) and small[0] in hierarchy.at_level(1)
    check_structure(ends, hierarchy, 28)


def test_isolated_and_self_loop_entities_are_singletons() -> None:
    # entity 10: no relation; 11: only self-loops; 3 has a self-loop too
    edges = [*TWO_CLIQUES, (11, 11), (3, 3), (11, 11)]
    ends, hierarchy = run(edges, 12)
    assert members(hierarchy) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10], [11]]
    assert hierarchy.clusters[0].relations.tolist() == [*range(10), 22]  # 3's self-loop
    assert hierarchy.clusters[2].relations.tolist() == []
    assert hierarchy.clusters[3].relations.tolist() == [21, 23]
    # self-loops are not in Leiden's graph nor in the modularity
    assert hierarchy.modularity[0] == pytest.approx(19 / 42)
    check_structure(ends, hierarchy, 12)


def test_only_self_loops() -> None:
    ends, hierarchy = run([(0, 0), (2, 2)], 3)
    assert members(hierarchy) == [[0], [1], [2]]
    assert [c.relations.tolist() for c in hierarchy.clusters] == [[0], [], [1]]
    assert hierarchy.modularity == (0.0,)
    check_structure(ends, hierarchy, 3)


def test_parallel_relations_are_summed_into_one_undirected_edge(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import graspologic_native

    calls: list[list[tuple[str, str, float]]] = []

    def spy(edges: list[tuple[str, str, float]], **kwargs: Any) -> Any:
        calls.append(list(edges))
        return graspologic_native.hierarchical_leiden(edges, **kwargs)

    monkeypatch.setitem(sys.modules, "graspologic_native",
                        SimpleNamespace(hierarchical_leiden=spy))
    # 0 - 1 three times (once reversed), 1 - 2 once with weight 2, a self-loop on 2
    ends = np.array([[0, 1], [1, 0], [1, 2], [0, 1], [2, 2]])
    hierarchy = hierarchical_communities(ends, np.array([1.0, 1.0, 2.0, 0.5, 1.0]), 3)
    assert calls == [[("0", "1", 2.5), ("1", "2", 2.0)]]
    assert sum(c.size for c in hierarchy.clusters if c.level == 0) == 3


def test_parallel_relations_weigh_like_one_heavier_edge() -> None:
    # entity 10: two relations to the first clique (0, 1), three parallel ones to 9
    edges = [*TWO_CLIQUES, (0, 10), (1, 10), (9, 10), (9, 10), (10, 9)]
    ends, repeated = run(edges, 11)
    weights = np.ones(len(TWO_CLIQUES) + 3)
    weights[-1] = 3.0
    _, summed = run([*TWO_CLIQUES, (0, 10), (1, 10), (9, 10)], 11, weights=weights)
    _, once = run([*TWO_CLIQUES, (0, 10), (1, 10), (9, 10)], 11)
    assert members(repeated) == members(summed) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9, 10]]
    assert members(once) == [[0, 1, 2, 3, 4, 10], [5, 6, 7, 8, 9]]
    assert repeated.modularity == pytest.approx(summed.modularity)
    assert repeated.clusters[1].relations.tolist() == [*range(10, 20), 23, 24, 25]
    check_structure(ends, repeated, 11)


def test_same_seed_same_hierarchy() -> None:
    rng = np.random.default_rng(7)
    ends = rng.integers(0, 300, size=(900, 2))
    weights = rng.integers(1, 4, size=900).astype(float)
    config = LeidenConfig(max_cluster_size=12, seed=42)
    first = hierarchical_communities(ends, weights, 300, config)
    second = hierarchical_communities(ends, weights, 300, config)
    assert first.num_levels >= 2
    assert len(first.clusters) == len(second.clusters)
    for a, b in zip(first.clusters, second.clusters, strict=True):
        assert (a.level, a.parent) == (b.level, b.parent)
        assert np.array_equal(a.entities, b.entities)
        assert np.array_equal(a.relations, b.relations)
    assert first.children == second.children
    assert first.modularity == second.modularity
    check_structure(ends, first, 300)


def test_hierarchy_modularity_is_that_of_each_level_partition() -> None:
    rng = np.random.default_rng(3)
    ends = rng.integers(0, 200, size=(700, 2))
    weights = rng.integers(1, 3, size=700).astype(float)
    hierarchy = hierarchical_communities(ends, weights, 200, LeidenConfig(max_cluster_size=8))
    assert hierarchy.num_levels >= 2
    proper = ends[:, 0] != ends[:, 1]
    for level in range(hierarchy.num_levels):
        membership = np.full(200, -1)
        for index in hierarchy.at_level(level):
            membership[hierarchy.clusters[index].entities] = index
        assert hierarchy.modularity[level] == pytest.approx(
            modularity(ends[proper], weights[proper], membership))
    assert list(hierarchy.modularity) == sorted(hierarchy.modularity, reverse=True)


def test_modularity_by_hand() -> None:
    two_triangles = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 3]])
    # m = 7, each triangle 3 inside, degree 7: 2 (3/7 - 1/4) = 5/14
    assert modularity(two_triangles, np.ones(7), np.array([0, 0, 0, 1, 1, 1])) == (
        pytest.approx(5 / 14))
    # labels are any integers
    assert modularity(two_triangles, np.ones(7), np.array([9, 9, 9, -4, -4, -4])) == (
        pytest.approx(5 / 14))
    # one community: 1 - 1 = 0; a self-loop of weight 1 on 0: m = 8, inside 4, degree 9
    assert modularity(two_triangles, np.ones(7), np.zeros(6, np.int64)) == pytest.approx(0)
    looped = np.vstack([two_triangles, [[0, 0]]])
    assert modularity(looped, np.ones(8), np.array([0, 0, 0, 1, 1, 1])) == pytest.approx(
        4 / 8 - (9 / 16) ** 2 + 3 / 8 - (7 / 16) ** 2)
    assert modularity(np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(3, np.int64)) == 0.0


def test_modularity_matches_graspologic_and_igraph() -> None:
    import graspologic_native

    rng = np.random.default_rng(11)
    low = rng.integers(0, 60, 400)
    high = rng.integers(0, 60, 400)
    ends = np.stack([np.minimum(low, high), np.maximum(low, high)], axis=1)
    ends = np.unique(ends[ends[:, 0] != ends[:, 1]], axis=0)  # graspologic: simple graph
    weights = rng.uniform(0.5, 3.0, len(ends))
    membership = rng.integers(0, 5, 60)
    ours = modularity(ends, weights, membership)
    edges = [(str(a), str(b), float(w)) for (a, b), w in zip(ends.tolist(), weights,
                                                               strict=True)]
    nodes = np.unique(ends)
    theirs = graspologic_native.modularity(edges, {str(n): int(membership[n]) for n in nodes})
    assert ours == pytest.approx(theirs)

    # igraph on a multigraph with self-loops and parallel edges
    multi = np.vstack([ends, [[3, 3], [7, 7]], ends[:20]])
    multi_weights = np.concatenate([weights, [2.0, 1.0], weights[:20]])
    ours = modularity(multi, multi_weights, membership)
    import igraph  # in the test extra, for this cross-check only

    graph = igraph.Graph(n=60, edges=multi.tolist())
    assert ours == pytest.approx(graph.modularity(membership.tolist(),
                                                  weights=multi_weights.tolist()))


def test_relation_weights() -> None:
    links = sp.csr_matrix(np.array([[1, 1, 0], [0, 0, 1], [0, 0, 0], [1, 1, 1]], dtype=bool))
    weights = relation_weights(links)
    assert weights.dtype == np.float64
    assert weights.tolist() == [2.0, 1.0, 1.0, 3.0]
    # duplicate and explicit zero entries do not count
    messy = sp.csr_matrix((np.array([1.0, 1.0, 0.0]), np.array([0, 0, 1]),
                           np.array([0, 3, 3])), shape=(2, 2))
    assert relation_weights(messy).tolist() == [1.0, 1.0]
    assert relation_weights(sp.coo_matrix(links)).tolist() == [2.0, 1.0, 1.0, 3.0]
    with pytest.raises(InvalidInputError, match="sparse relations x passages matrix"):
        relation_weights(np.ones((2, 2)))


def test_at_level_and_leaf_of_bounds() -> None:
    _, hierarchy = run(TWO_CLIQUES, 10)
    with pytest.raises(InvalidInputError, match=r"levels 0\.\.0, got 1"):
        hierarchy.at_level(1)
    with pytest.raises(InvalidInputError, match=r"levels 0\.\.0, got -1"):
        hierarchy.at_level(-1)
    assert hierarchy.leaf_of(12).tolist() == [0] * 5 + [1] * 5 + [-1, -1]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("max_cluster_size", 0, "max_cluster_size must be an integer >= 1, got 0"),
    ("max_cluster_size", -3, "max_cluster_size must be an integer >= 1, got -3"),
    ("max_cluster_size", True, "max_cluster_size must be an integer >= 1, got True"),
    ("max_cluster_size", 2.5, "max_cluster_size must be an integer >= 1, got 2.5"),
    ("seed", -1, r"seed must be an integer from 0 to 18446744073709551615, got -1"),
    ("seed", 2**64, r"seed must be an integer from 0 to \d+, got 18446744073709551616"),
    ("seed", False, r"seed must be an integer from 0 to 18446744073709551615, got False"),
    ("seed", "7", r"seed must be an integer from 0 to 18446744073709551615, got '7'"),
    ("resolution", 0.0, "resolution must be a finite number > 0, got 0.0"),
    ("resolution", -1.0, "resolution must be a finite number > 0, got -1.0"),
    ("resolution", float("nan"), "resolution must be a finite number > 0, got nan"),
    ("resolution", float("inf"), "resolution must be a finite number > 0, got inf"),
    ("resolution", True, "resolution must be a finite number > 0, got True"),
    ("resolution", "1", "resolution must be a finite number > 0, got '1'"),
])
def test_bad_config(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        LeidenConfig(**{field: value})  # type: ignore[arg-type]


def test_config_accepts_the_edges_of_its_ranges() -> None:
    assert LeidenConfig(max_cluster_size=1, seed=0, resolution=2).seed == 0
    assert LeidenConfig(seed=2**64 - 1).seed == 2**64 - 1
    assert LeidenConfig() == LeidenConfig(10, 0xDEADBEEF, 1.0)


def test_no_relations() -> None:
    message = "the graph has no relations: ingest triplets before building communities"
    with pytest.raises(InvalidInputError, match=message):
        hierarchical_communities(np.zeros((0, 2), np.int64), np.zeros(0), 5)
    with pytest.raises(InvalidInputError, match=message):
        hierarchical_communities(np.array([[0, 1]]), np.ones(1), 0)


@pytest.mark.parametrize(("ends", "weights", "num_entities", "message"), [
    (np.array([[0, 1, 2]]), np.ones(1), 3, r"shape \(relations, 2\).*got shape \(1, 3\)"),
    (np.array([0, 1]), np.ones(1), 3, r"shape \(relations, 2\).*got shape \(2,\)"),
    (np.array([[0.0, 1.0]]), np.ones(1), 3, r"integer array of shape \(relations, 2\)"),
    (np.array([[0, 1]]), np.ones(2), 3, r"one number per relation, shape \(1,\), got "
                                        r"shape \(2,\)"),
    (np.array([[0, 1]]), np.ones((1, 1)), 3, r"shape \(1,\), got shape \(1, 1\)"),
    (np.array([[0, 1]]), np.array([0.0]), 3, "weights must be finite and positive"),
    (np.array([[0, 1]]), np.array([np.nan]), 3, "weights must be finite and positive"),
    (np.array([[0, 3]]), np.ones(1), 3, r"entity rows in \[0, 3\).*got rows 0\.\.3"),
    (np.array([[-1, 2]]), np.ones(1), 3, r"entity rows in \[0, 3\).*got rows -1\.\.2"),
    (np.array([[0, 1]]), np.ones(1), -1, "num_entities must be an integer, 0 or more"),
    (np.array([[0, 1]]), np.ones(1), 2.0, "num_entities must be an integer, 0 or more"),
])
def test_bad_inputs(ends: np.ndarray, weights: np.ndarray, num_entities: int,
                    message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        hierarchical_communities(ends, weights, num_entities)


def test_bad_modularity_inputs() -> None:
    ends = np.array([[0, 1], [1, 2]])
    with pytest.raises(InvalidInputError, match=r"entity rows in \[0, 2\)"):
        modularity(ends, np.ones(2), np.array([0, 1]))
    with pytest.raises(InvalidInputError, match="membership must be a 1-D integer array"):
        modularity(ends, np.ones(2), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(InvalidInputError, match="one number per relation"):
        modularity(ends, np.ones(3), np.array([0, 1, 1]))


def test_config_must_be_a_leiden_config() -> None:
    with pytest.raises(InvalidInputError, match="config must be a LeidenConfig, got dict"):
        hierarchical_communities(np.array([[0, 1]]), np.ones(1), 2,
                                 {"max_cluster_size": 3})  # type: ignore[arg-type]


def test_missing_graspologic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graspologic_native", None)
    with pytest.raises(MissingDependencyError,
                       match=r'pip install "llama-index-graphrag-milvus\[communities\]"'
                       ) as caught:
        hierarchical_communities(np.array([[0, 1]]), np.ones(1), 2)
    assert isinstance(caught.value.__cause__, ImportError)
    assert isinstance(caught.value, ImportError)
