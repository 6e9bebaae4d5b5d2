"""Hierarchical Leiden communities of the entity graph (Microsoft GraphRAG).

A pure module, no Milvus and no LlamaIndex: :func:`hierarchical_communities` takes the
relations' endpoints (entity rows, as in
:attr:`~llama_index_graphrag_milvus.graph.entity_relation.EntityRelationGraph.endpoints`) and
a weight per relation (:func:`relation_weights`: its number of passages), and runs
``graspologic_native.hierarchical_leiden`` (the Leiden implementation Microsoft GraphRAG uses,
with its defaults: ``max_cluster_size=10``, seed ``0xDEADBEEF``, modularity).

How the entity graph is handed to Leiden:

- edges are undirected: a relation ``a -> b`` and a relation ``b -> a`` are the same edge;
- parallel relations between the same two entities become one edge whose weight is the sum
  of theirs (graspologic-native itself keeps only the first of repeated pairs and silently
  drops the others, so they are summed here before the call);
- self-loops (a relation whose subject is its object) are not passed to Leiden: they say
  nothing about which entities belong together. They still count in the ``relations`` of the
  clusters that hold their entity;
- entities without any other edge (isolated, or with self-loops only) are not in Leiden's
  graph; each becomes its own singleton cluster at level 0, so that every entity is in a
  community.

The hierarchy: level 0 holds the most general clusters (graspologic's level 0). A cluster
with more than ``max_cluster_size`` entities is split by Leiden on its own subgraph into
children at the next level; a cluster that Leiden cannot split further stays a leaf, however
large (``max_cluster_size`` is a target, not a bound). Clusters that are small enough stay
leaves too, so the complete partition at level ``L`` (:meth:`CommunityHierarchy.at_level`)
is the clusters of level ``L`` plus the leaves of the levels above.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from llama_index_graphrag_milvus.errors import (
    GraphRAGError,
    InvalidInputError,
    MissingDependencyError,
)
from llama_index_graphrag_milvus.validation import check_int, check_number

INSTALL_COMMUNITIES = 'pip install "llama-index-graphrag-milvus[communities]"'
"""The command that installs graspologic-native, the Leiden implementation used here."""

_MAX_ENTITIES = 3_000_000_000
"""Edge keys are ``low * num_entities + high`` in int64: this many entities at most."""

_SEED_LIMIT = 2**64


@dataclass(frozen=True)
class LeidenConfig:
    """How hierarchical Leiden runs (Microsoft GraphRAG's defaults).

    Args:
        max_cluster_size: a cluster with more entities than this is split again, on its own
            subgraph, into clusters of the next level. A cluster that Leiden cannot split
            (one dense clique, for instance) stays as it is.
        seed: seed of Leiden's random number generator (an integer in ``[0, 2**64)``): the
            same graph, configuration and seed give the same hierarchy.
        resolution: modularity resolution; higher values give more, smaller clusters.

    >>> LeidenConfig(max_cluster_size=0)
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: leiden max_cluster_size must be an integer >= 1, got 0
    """  # noqa: E501

    max_cluster_size: int = 10
    seed: int = 0xDEADBEEF
    resolution: float = 1.0

    def __post_init__(self) -> None:
        check_int("leiden max_cluster_size", self.max_cluster_size)
        check_int("leiden seed", self.seed, minimum=0, maximum=_SEED_LIMIT - 1,
                  hint="below 2**64")
        check_number("leiden resolution", self.resolution, low=0, low_open=True)


@dataclass(frozen=True)
class Cluster:
    """One cluster (community) of the hierarchy.

    Attributes:
        level: its level, 0 for the most general clusters.
        parent: index of the cluster it splits in :attr:`CommunityHierarchy.clusters`,
            ``-1`` at level 0.
        entities: all its entity rows, sorted (int64, read-only). A child's entities are a
            subset of its parent's.
        relations: the relation rows with both endpoints among ``entities``, sorted (int64,
            read-only); a self-loop relation is in it when its entity is.
    """

    level: int
    parent: int
    entities: np.ndarray
    relations: np.ndarray

    @property
    def size(self) -> int:
        """Number of entities."""
        return int(self.entities.size)


@dataclass(frozen=True)
class CommunityHierarchy:
    """The clusters of every level, how they nest, and the quality of each level.

    Attributes:
        clusters: ordered by level, then by smallest entity row (so the order does not
            depend on the cluster numbers Leiden picked).
        children: per cluster, the indices of the clusters that split it at the next level
            (ascending; empty for a leaf).
        modularity: per level, the modularity of the complete partition at that level
            (:meth:`at_level`) on the graph Leiden saw (parallel relations summed, no
            self-loops).
        seconds: wall time of :func:`hierarchical_communities`.
    """

    clusters: tuple[Cluster, ...]
    children: tuple[tuple[int, ...], ...]
    modularity: tuple[float, ...]
    seconds: float

    @property
    def num_levels(self) -> int:
        return int(self._levels.max()) + 1 if self.clusters else 0

    @cached_property
    def _levels(self) -> np.ndarray:
        return np.fromiter((c.level for c in self.clusters), dtype=np.int64,
                           count=len(self.clusters))

    @cached_property
    def _leaves(self) -> np.ndarray:
        return np.fromiter((not c for c in self.children), dtype=bool,
                           count=len(self.children))

    def at_level(self, level: int) -> list[int]:
        """Indices of the clusters of the complete partition at ``level``: the clusters of
        that level and the leaves of the levels above it (a leaf stays a leaf). Every entity
        that is in a cluster is in exactly one of them.

        Raises :class:`InvalidInputError` for a level the hierarchy does not have.
        """
        if (not isinstance(level, (int, np.integer)) or isinstance(level, bool)
                or not 0 <= level < self.num_levels):
            raise InvalidInputError(
                f"level must be one of the hierarchy's levels 0..{self.num_levels - 1}, "
                f"got {level!r}")
        levels = self._levels
        keep = (levels == level) | ((levels < level) & self._leaves)
        return [int(i) for i in np.flatnonzero(keep)]

    def leaf_of(self, num_entities: int | None = None) -> np.ndarray:
        """Per entity row, the index of its deepest cluster (its leaf); ``-1`` for an entity
        in no cluster. The array has ``num_entities`` values (default: one past the largest
        entity row of the clusters)."""
        leaves = np.flatnonzero(self._leaves)
        members = [self.clusters[i].entities for i in leaves]
        if num_entities is None:
            num_entities = max((int(m[-1]) + 1 for m in members if m.size), default=0)
        out = np.full(num_entities, -1, dtype=np.int64)
        if members:
            sizes = np.fromiter((m.size for m in members), dtype=np.int64, count=len(members))
            out[np.concatenate(members)] = np.repeat(leaves, sizes)
        return out


def relation_weights(relation_passages: sp.spmatrix | sp.sparray) -> np.ndarray:
    """Per relation (row of ``relation_passages``, relations x passages), the number of
    passages that support it, at least 1 (float64): the edge weights Leiden gets.

    >>> links = sp.csr_matrix(np.array([[1, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=bool))
    >>> relation_weights(links).tolist()
    [2.0, 1.0, 1.0]
    """
    if not sp.issparse(relation_passages) or relation_passages.ndim != 2:
        raise InvalidInputError("relation_weights needs a sparse relations x passages matrix, "
                                f"got {type(relation_passages).__name__}")
    links = sp.csr_matrix(relation_passages)
    if not links.has_canonical_format or (links.data == 0).any():
        links = links.copy()
        links.sum_duplicates()
        links.eliminate_zeros()
    return np.maximum(np.diff(links.indptr), 1).astype(np.float64)


def _check_edges(endpoints: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    """``endpoints`` as an int64 ``(relations, 2)`` array and ``weights`` as float64."""
    ends = np.asarray(endpoints)
    if ends.size and (ends.ndim != 2 or ends.shape[1] != 2 or ends.dtype.kind not in "iu"):
        raise InvalidInputError("endpoints must be an integer array of shape (relations, 2) "
                                f"(subject row, object row), got shape {ends.shape} of "
                                f"{ends.dtype}")
    ends = ends.reshape(-1, 2).astype(np.int64, copy=False)
    values = np.asarray(weights)
    if values.shape != (ends.shape[0],) or (values.size and values.dtype.kind not in "iuf"):
        raise InvalidInputError(f"weights must be one number per relation, shape "
                                f"({ends.shape[0]},), got shape {values.shape} of "
                                f"{values.dtype}")
    values = values.astype(np.float64, copy=False)
    if values.size and not (np.isfinite(values).all() and values.min() > 0):
        raise InvalidInputError("weights must be finite and positive (relation_weights gives "
                                "1 or more per relation)")
    return ends, values


def _aggregate(ends: np.ndarray, weights: np.ndarray, num_entities: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected edges without self-loops, parallel ones summed: ``(low, high, weight)``
    with ``low < high``, sorted by ``(low, high)``."""
    low = np.minimum(ends[:, 0], ends[:, 1])
    high = np.maximum(ends[:, 0], ends[:, 1])
    proper = low != high
    key = low[proper] * num_entities + high[proper]
    order = np.argsort(key, kind="stable")
    key = key[order]
    if key.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float64)
    start = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    summed = np.add.reduceat(weights[proper][order], start)
    distinct = key[start]
    return distinct // num_entities, distinct % num_entities, summed


def _modularity(low: np.ndarray, high: np.ndarray, weights: np.ndarray, labels: np.ndarray,
                num_labels: int) -> float:
    """Newman's weighted modularity, ``labels`` in ``[0, num_labels)`` per node."""
    total = float(weights.sum())
    if total <= 0:
        return 0.0
    label_low, label_high = labels[low], labels[high]
    inside = float(weights[label_low == label_high].sum())
    degree = (np.bincount(label_low, weights=weights, minlength=num_labels)
              + np.bincount(label_high, weights=weights, minlength=num_labels))
    return inside / total - float(np.square(degree / (2.0 * total)).sum())


def modularity(endpoints: np.ndarray, weights: np.ndarray, membership: np.ndarray) -> float:
    """Newman's weighted modularity of an undirected graph partitioned by ``membership``.

    ``Q = sum_c [ w_c / m - (d_c / 2m) ** 2 ]``, with ``m`` the total edge weight, ``w_c``
    the weight of the edges inside community ``c`` and ``d_c`` the weighted degree of its
    entities. Parallel edges add up; a self-loop counts once in ``m`` and ``w_c`` and twice
    in its entity's degree (as in igraph and networkx). ``membership`` gives a community
    label (any integers) per entity row. A graph with no edge weight has modularity 0.

    >>> two_triangles = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 3]])
    >>> round(modularity(two_triangles, np.ones(7), np.array([0, 0, 0, 1, 1, 1])), 4)  # 5/14
    0.3571
    """
    ends, values = _check_edges(endpoints, weights)
    labels = np.asarray(membership)
    if labels.ndim != 1 or (labels.size and labels.dtype.kind not in "iu"):
        raise InvalidInputError("membership must be a 1-D integer array (a community label "
                                f"per entity row), got shape {labels.shape} of {labels.dtype}")
    if ends.size and (ends.min() < 0 or ends.max() >= labels.size):
        raise InvalidInputError(f"endpoints must be entity rows in [0, {labels.size}) (one "
                                f"membership label per entity), got rows {ends.min()}.."
                                f"{ends.max()}")
    distinct, compact = np.unique(labels, return_inverse=True)
    return _modularity(ends[:, 0], ends[:, 1], values, compact.ravel().astype(np.int64),
                       int(distinct.size))


def _import_graspologic() -> Any:
    try:
        import graspologic_native
    except ImportError as exc:
        raise MissingDependencyError(
            "hierarchical_communities needs graspologic-native (the Leiden implementation "
            f"Microsoft GraphRAG uses), which is not installed ({exc}). Install the "
            f"communities extra: {INSTALL_COMMUNITIES}") from exc
    return graspologic_native


@dataclass(frozen=True)
class _Entries:
    """Leiden's answer, one entry per entity and level: the entity row, the level, the
    cluster (graspologic's number) and that cluster's parent (``-1`` at level 0)."""

    node: np.ndarray
    level: np.ndarray
    cluster: np.ndarray
    parent: np.ndarray

    @classmethod
    def none(cls) -> _Entries:
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, empty, empty, empty)

    def take(self, order: np.ndarray) -> _Entries:
        return _Entries(self.node[order], self.level[order], self.cluster[order],
                        self.parent[order])


@dataclass(frozen=True)
class _Groups:
    """The entries grouped by cluster (sorted by level, graspologic cluster, then entity
    row), and per group: where its entries start, how many there are, and the group's level,
    cluster and parent cluster (graspologic's numbers). ``group`` is each entry's group."""

    entries: _Entries
    start: np.ndarray
    sizes: np.ndarray
    group: np.ndarray
    level: np.ndarray
    cluster: np.ndarray
    parent: np.ndarray

    @property
    def num_levels(self) -> int:
        return int(self.level.max()) + 1


def _leiden(graspologic: Any, low: np.ndarray, high: np.ndarray, weights: np.ndarray,
            num_entities: int, config: LeidenConfig) -> _Entries:
    """graspologic's hierarchical Leiden on the aggregated edges, nodes as entity rows."""
    labels = np.array([str(row) for row in range(num_entities)], dtype=object)
    edges = list(zip(labels[low].tolist(), labels[high].tolist(), weights.tolist(),
                     strict=True))
    del labels
    result = graspologic.hierarchical_leiden(
        edges, max_cluster_size=config.max_cluster_size, seed=config.seed,
        resolution=float(config.resolution), use_modularity=True)
    del edges
    count = len(result)
    node = np.fromiter((int(item.node) for item in result), dtype=np.int64, count=count)
    level = np.fromiter((item.level for item in result), dtype=np.int64, count=count)
    cluster = np.fromiter((item.cluster for item in result), dtype=np.int64, count=count)
    parent = np.fromiter(
        (-1 if item.parent_cluster is None else item.parent_cluster for item in result),
        dtype=np.int64, count=count)
    return _Entries(node, level, cluster, parent)


def _unexpected(what: str) -> GraphRAGError:
    return GraphRAGError(f"graspologic-native returned an inconsistent hierarchy ({what}); "
                         "please report it with the graph that produced it")


def _check_graph(endpoints: Any, weights: Any, num_entities: Any, config: Any
                 ) -> tuple[int, np.ndarray, np.ndarray]:
    """``num_entities`` as an int, the endpoints and the weights checked (see
    :func:`hierarchical_communities`)."""
    if not isinstance(config, LeidenConfig):
        raise InvalidInputError(f"config must be a LeidenConfig, got {type(config).__name__}")
    if (not isinstance(num_entities, (int, np.integer)) or isinstance(num_entities, bool)
            or num_entities < 0):
        raise InvalidInputError(
            f"num_entities must be an integer, 0 or more, got {num_entities!r}")
    num_entities = int(num_entities)
    if num_entities > _MAX_ENTITIES:
        raise InvalidInputError(f"at most {_MAX_ENTITIES} entities are supported, got "
                                f"{num_entities}")
    ends, values = _check_edges(endpoints, weights)
    if ends.shape[0] == 0 or num_entities == 0:
        raise InvalidInputError(
            "the graph has no relations: ingest triplets before building communities (got "
            f"{ends.shape[0]} relations over {num_entities} entities)")
    if ends.min() < 0 or ends.max() >= num_entities:
        raise InvalidInputError(
            f"endpoints must be entity rows in [0, {num_entities}) (num_entities="
            f"{num_entities}), got rows {ends.min()}..{ends.max()}")
    return num_entities, ends, values


def _with_singletons(entries: _Entries, low: np.ndarray, high: np.ndarray,
                     num_entities: int) -> _Entries:
    """The entries, plus one singleton cluster at level 0 for each entity Leiden never saw
    (isolated, or with self-loops only)."""
    seen = np.zeros(num_entities, dtype=bool)
    seen[entries.node[entries.level == 0]] = True
    if int(np.count_nonzero(seen)) != int(np.count_nonzero(entries.level == 0)):
        raise _unexpected("an entity is in two clusters of level 0")
    connected = np.zeros(num_entities, dtype=bool)
    connected[low] = True
    connected[high] = True
    if not np.array_equal(seen, connected):
        raise _unexpected("the entities of level 0 are not the entities of the edges")
    alone = np.flatnonzero(~seen)
    next_cluster = int(entries.cluster.max()) + 1 if entries.cluster.size else 0
    return _Entries(
        np.concatenate([entries.node, alone]),
        np.concatenate([entries.level, np.zeros(alone.size, np.int64)]),
        np.concatenate([entries.cluster, next_cluster + np.arange(alone.size, dtype=np.int64)]),
        np.concatenate([entries.parent, np.full(alone.size, -1, np.int64)]))


def _group(entries: _Entries) -> _Groups:
    """The entries grouped by cluster, (level, graspologic cluster), members sorted."""
    entries = entries.take(np.lexsort((entries.node, entries.cluster, entries.level)))
    level, cluster = entries.level, entries.cluster
    boundary = np.concatenate(([True], (level[1:] != level[:-1])
                               | (cluster[1:] != cluster[:-1])))
    start = np.flatnonzero(boundary)
    group = np.cumsum(boundary) - 1
    groups = _Groups(entries, start, np.diff(np.append(start, entries.node.size)), group,
                     level[start], cluster[start], entries.parent[start])
    if not np.array_equal(entries.parent, groups.parent[group]):
        raise _unexpected("the members of a cluster name different parents")
    return groups


def _final_order(groups: _Groups) -> tuple[np.ndarray, np.ndarray]:
    """The clusters' final order, by level, then smallest entity row (the first of the
    sorted members): the group of each final index, and the final index of each group."""
    final_order = np.lexsort((groups.entries.node[groups.start], groups.level))
    final_of = np.empty(final_order.size, dtype=np.int64)
    final_of[final_order] = np.arange(final_order.size)
    return final_order, final_of


def _parents(groups: _Groups, final_of: np.ndarray) -> np.ndarray:
    """Per cluster (final index), its parent's final index, ``-1`` at level 0: the cluster
    (level - 1, parent cluster) found in the groups' sorted keys."""
    num_clusters = int(groups.start.size)
    width = int(max(groups.cluster.max(), groups.parent.max())) + 1
    keys = groups.level * width + groups.cluster  # ascending: groups sort by (level, cluster)
    parent = np.full(num_clusters, -1, dtype=np.int64)
    deeper = groups.level > 0
    if deeper.any():
        wanted = (groups.level[deeper] - 1) * width + groups.parent[deeper]
        at = np.minimum(np.searchsorted(keys, wanted), num_clusters - 1)
        if (groups.parent[deeper] < 0).any() or not np.array_equal(keys[at], wanted):
            raise _unexpected("a cluster's parent is not a cluster of the level above")
        parent[deeper] = final_of[at]
    if (groups.parent[~deeper] >= 0).any():
        raise _unexpected("a cluster of level 0 has a parent")
    parent_final = np.empty(num_clusters, dtype=np.int64)
    parent_final[final_of] = parent
    return parent_final


def _membership(groups: _Groups, final_of: np.ndarray, parent: np.ndarray,
                num_entities: int) -> np.ndarray:
    """Per level and entity row, the cluster (final index) of the entity there, ``-1``
    where the entity has no entry."""
    entries = groups.entries
    member = np.full((groups.num_levels, num_entities), -1, dtype=np.int64)
    cluster_of_entry = final_of[groups.group]
    member[entries.level, entries.node] = cluster_of_entry
    if int(np.count_nonzero(member >= 0)) != entries.node.size:
        raise _unexpected("an entity is in two clusters of one level")
    below = entries.level > 0
    if not np.array_equal(member[entries.level[below] - 1, entries.node[below]],
                          parent[cluster_of_entry[below]]):
        raise _unexpected("an entity of a cluster is not in that cluster's parent")
    return member


def _inside_relations(member: np.ndarray, ends: np.ndarray, num_clusters: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The relations with both endpoints in one cluster, level by level, grouped by cluster
    (rows ascending): the rows, and where each cluster's rows start (``num_clusters + 1``
    bounds)."""
    chunks_cluster: list[np.ndarray] = []
    chunks_relation: list[np.ndarray] = []
    for depth in range(member.shape[0]):
        subject_cluster = member[depth][ends[:, 0]]
        inside = (subject_cluster == member[depth][ends[:, 1]]) & (subject_cluster >= 0)
        chunks_cluster.append(subject_cluster[inside])
        chunks_relation.append(np.flatnonzero(inside).astype(np.int64))
    relation_cluster = np.concatenate(chunks_cluster)
    by_cluster = np.argsort(relation_cluster, kind="stable")  # rows stay ascending
    rows = np.concatenate(chunks_relation)[by_cluster]
    bounds = np.concatenate(
        ([0], np.cumsum(np.bincount(relation_cluster, minlength=num_clusters))))
    return rows, bounds


def _level_modularity(member: np.ndarray, low: np.ndarray, high: np.ndarray,
                      summed: np.ndarray, num_clusters: int) -> tuple[float, ...]:
    """The modularity of the complete partition of each level, on the graph Leiden saw."""
    partition = member[0].copy()
    scores: list[float] = []
    for depth in range(member.shape[0]):
        there = member[depth] >= 0
        partition[there] = member[depth][there]
        scores.append(_modularity(low, high, summed, partition, num_clusters))
    return tuple(scores)


def _clusters(groups: _Groups, final_order: np.ndarray, parent: np.ndarray,
              relation_rows: np.ndarray, relation_bounds: np.ndarray) -> tuple[Cluster, ...]:
    """The clusters in their final order, members and relations as read-only slices."""
    node = groups.entries.node
    node.flags.writeable = False
    relation_rows.flags.writeable = False
    starts, ends_at = groups.start.tolist(), (groups.start + groups.sizes).tolist()
    bounds = relation_bounds.tolist()
    levels, parents = groups.level[final_order].tolist(), parent.tolist()
    return tuple(
        Cluster(levels[i], parents[i], node[starts[g]:ends_at[g]],
                relation_rows[bounds[i]:bounds[i + 1]])
        for i, g in enumerate(final_order.tolist()))


def _children(parent: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Per cluster, the clusters whose parent it is, ascending."""
    num_clusters = int(parent.size)
    child_order = np.argsort(parent, kind="stable")  # children ascending per parent
    child_order = child_order[parent[child_order] >= 0]
    child_bounds = np.concatenate(
        ([0], np.cumsum(np.bincount(parent[child_order], minlength=num_clusters))))
    child_list, bounds = child_order.tolist(), child_bounds.tolist()
    return tuple(tuple(child_list[bounds[i]:bounds[i + 1]]) for i in range(num_clusters))


def hierarchical_communities(endpoints: np.ndarray, weights: np.ndarray, num_entities: int,
                             config: LeidenConfig = LeidenConfig()) -> CommunityHierarchy:
    """Hierarchical Leiden communities of the entity graph.

    Args:
        endpoints: ``(relations, 2)`` integer array of (subject row, object row), entity
            rows in ``[0, num_entities)``.
        weights: one positive weight per relation (:func:`relation_weights`).
        num_entities: number of entity rows; entities without relations become singleton
            clusters.
        config: Leiden's parameters.

    Raises :class:`InvalidInputError` for a graph without relations or mismatched inputs,
    :class:`MissingDependencyError` when graspologic-native is not installed.

    Two triangles joined by one relation, plus an entity (6) with only a self-loop:

    >>> ends = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 3], [6, 6]])
    >>> hierarchy = hierarchical_communities(ends, np.ones(8), num_entities=7)
    >>> [c.entities.tolist() for c in hierarchy.clusters]
    [[0, 1, 2], [3, 4, 5], [6]]
    >>> [c.relations.tolist() for c in hierarchy.clusters]
    [[0, 1, 2], [4, 5, 6], [7]]
    >>> hierarchy.num_levels, round(hierarchy.modularity[0], 4)  # 5/14
    (1, 0.3571)
    """
    started = time.perf_counter()
    graspologic = _import_graspologic()
    num_entities, ends, values = _check_graph(endpoints, weights, num_entities, config)
    low, high, summed = _aggregate(ends, values, num_entities)
    entries = (_leiden(graspologic, low, high, summed, num_entities, config) if low.size
               else _Entries.none())  # only self-loops: nothing for Leiden to cluster
    groups = _group(_with_singletons(entries, low, high, num_entities))
    del entries
    final_order, final_of = _final_order(groups)
    parent = _parents(groups, final_of)
    member = _membership(groups, final_of, parent, num_entities)
    relation_rows, relation_bounds = _inside_relations(member, ends, parent.size)
    scores = _level_modularity(member, low, high, summed, parent.size)
    del member
    clusters = _clusters(groups, final_order, parent, relation_rows, relation_bounds)
    return CommunityHierarchy(clusters, _children(parent), scores,
                              time.perf_counter() - started)
