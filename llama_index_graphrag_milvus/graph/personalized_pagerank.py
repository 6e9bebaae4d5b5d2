"""Personalized PageRank on a local entity-passage neighbourhood (HippoRAG, HippoRAG 2).

Two pure pieces, no Milvus and no LlamaIndex:

- :func:`neighbourhood_graph` builds the neighbourhood of one query from a bounded set of
  relation records (the expansion's candidate pool, the seed relations and the relations of
  the passages most similar to the query), whichever source read them (the graph held in
  memory, or served by Milvus). Its cost does not grow with the graph.
- :func:`personalized_pagerank` runs a sparse power iteration on that neighbourhood.

Node weights (the edges of the local graph, symmetric):

- entity -- entity: one edge per relation between its subject and object (two relations
  between the same pair give weight 2);
- passage -- entity: weight ``passage_edge_weight`` (default 1) between a passage and every
  entity of its triplets, once per pair however many triplets name the entity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.records import CandidateRelation
from llama_index_graphrag_milvus.validation import check_int, check_number


@dataclass(frozen=True)
class PageRankConfig:
    """How PageRank runs.

    Args:
        damping: probability of following an edge at each step (``1 - damping`` is the
            probability of jumping back to the reset distribution). HippoRAG uses 0.5: mass
            stays close to the query's seeds, two or three hops away at most.
        tolerance: stop when the L1 change of the scores falls below this.
        max_iterations: stop after this many iterations in any case.
        passage_edge_weight: weight of a passage -- entity edge relative to a relation edge.
    """

    damping: float = 0.5
    tolerance: float = 1e-6
    max_iterations: int = 50
    passage_edge_weight: float = 1.0

    def __post_init__(self) -> None:
        check_number("ppr damping", self.damping, low=0, high=1, high_open=True)
        check_number("ppr tolerance", self.tolerance, low=0, low_open=True)
        check_int("ppr max_iterations", self.max_iterations)
        check_number("ppr passage_edge_weight", self.passage_edge_weight, low=0)


@dataclass(frozen=True)
class PageRankResult:
    """Scores (summing to 1, or all 0 for an empty reset) and how the iteration ended."""

    scores: np.ndarray
    iterations: int
    converged: bool


@dataclass(frozen=True)
class Neighbourhood:
    """One query's neighbourhood as a graph of entity and passage nodes: node ``i <
    len(entities)`` is entity ``entities[i]``, node ``len(entities) + j`` passage
    ``passages[j]`` (both sorted by id, as the in-memory graph's rows are)."""

    entities: list[str]
    passages: list[str]
    adjacency: sp.csr_matrix


def neighbourhood_graph(relations: Sequence[CandidateRelation], passages: Sequence[str] = (),
                        passage_edge_weight: float = 1.0) -> Neighbourhood:
    """The neighbourhood of relation records that carry their ends and passages
    (``relations`` must hold the relations of ``passages`` already): entities are the ends,
    passages ``passages`` and those of the relations; an edge per relation between its ends
    (two relations between the same pair give weight 2), and ``passage_edge_weight`` between
    a passage and each entity of its relations (once per pair). Relations without ends are
    left out; a relation given twice counts once.

    >>> r = [CandidateRelation("r1", 1.0, 0, passage_ids=("p1",), subject_id="a",
    ...                        object_id="b")]
    >>> local = neighbourhood_graph(r, ["p2"])
    >>> local.entities, local.passages, local.adjacency.toarray().tolist()[0]
    (['a', 'b'], ['p1', 'p2'], [0.0, 1.0, 1.0, 0.0])
    """
    relations = list({c.id: c for c in relations if c.subject_id and c.object_id}.values())
    entities = sorted({e for c in relations for e in (c.subject_id, c.object_id)})
    linked = sorted({*passages, *(p for c in relations for p in c.passage_ids)})
    entity_node = {e: i for i, e in enumerate(entities)}
    passage_node = {p: len(entities) + j for j, p in enumerate(linked)}
    size = len(entities) + len(linked)
    ends = np.array([(entity_node[c.subject_id], entity_node[c.object_id]) for c in relations],
                    np.int64).reshape(-1, 2)
    mentions = np.array(sorted({(passage_node[p], entity_node[e]) for c in relations
                                for p in c.passage_ids for e in (c.subject_id, c.object_id)}),
                        np.int64).reshape(-1, 2)
    rows, cols = mentions[:, 0], mentions[:, 1]
    mention = sp.coo_matrix((np.full(rows.size, passage_edge_weight), (rows, cols)),
                            shape=(size, size)).tocsr()
    relation_edges = sp.coo_matrix((np.ones(len(ends)), (ends[:, 0], ends[:, 1])),
                                   shape=(size, size)).tocsr()
    adjacency = relation_edges + mention
    adjacency = (adjacency + adjacency.T).tocsr()
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    return Neighbourhood(entities, linked, adjacency)


def personalized_pagerank(adjacency: sp.csr_matrix, reset: np.ndarray,
                          config: PageRankConfig = PageRankConfig()
                          ) -> PageRankResult:
    """Personalized PageRank by sparse power iteration.

    ``p <- (1 - d) r + d (W p + s r)``, with ``W`` the column-normalized ``adjacency``,
    ``r`` the reset distribution (``reset`` normalized), and ``s`` the mass of nodes without
    edges, sent back to ``r``. Stops at ``config.tolerance`` (L1) or
    ``config.max_iterations``.

    >>> ring = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    >>> result = personalized_pagerank(ring, np.array([1.0, 0.0, 0.0]))
    >>> [round(float(x), 4) for x in result.scores], result.converged  # 7/12, 1/3, 1/12
    ([0.5833, 0.3333, 0.0833], True)
    """
    reset = np.asarray(reset, dtype=np.float64)
    size = adjacency.shape[0]
    if adjacency.shape != (size, size) or reset.shape != (size,):
        raise InvalidInputError(f"personalized_pagerank needs a square adjacency and one reset "
                                f"value per node, got {adjacency.shape} and {reset.shape}")
    if reset.size and (not np.all(np.isfinite(reset)) or reset.min() < 0):
        raise InvalidInputError("reset values must be finite and non-negative")
    total = float(reset.sum())
    if total == 0.0:
        return PageRankResult(np.zeros(size), 0, True)
    r = reset / total
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    dangling = degree == 0
    inverse = np.divide(1.0, degree, out=np.zeros(size), where=~dangling)
    walk = (adjacency @ sp.diags(inverse)).tocsr()  # column j spreads node j's mass
    d = config.damping
    scores = r
    for iteration in range(1, config.max_iterations + 1):
        following = walk @ scores + float(scores[dangling].sum()) * r
        updated = (1.0 - d) * r + d * following
        change = float(np.abs(updated - scores).sum())
        scores = updated
        if change < config.tolerance:
            return PageRankResult(scores, iteration, True)
    return PageRankResult(scores, config.max_iterations, False)
