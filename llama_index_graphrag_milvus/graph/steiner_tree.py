"""Prize-collecting Steiner tree subgraph selection (G-Retriever, He et al., 2024).

Given a local neighbourhood (entities as nodes, relations as edges), the relevant entities and
relations get *prizes* and every edge a constant *cost*; the prize-collecting Steiner tree is
the connected subgraph that maximizes the prizes it collects minus the costs it pays. The
result is small and connected: the chain Euler -> teacher Johann Bernoulli -> son Daniel
Bernoulli, without the dozens of relations around each of them.

The rules, as G-Retriever:

- prizes by rank: the ``k`` most relevant entities get ``k, k - 1, ..., 1``, the same for
  the ``k`` most relevant relations (:func:`rank_prizes`), everything else 0;
- a relation whose prize is at most the edge cost is an edge of cost ``cost - prize``; a
  relation whose prize exceeds the cost becomes a *virtual node* of prize ``prize - cost``,
  joined to its two endpoints by edges of cost 0, so that the solver can collect it;
- solved with the Goemans-Williamson scheme of ``pcst_fast`` (PyPI ``pcst-fast2``, the
  numpy-2 build), unrooted, with strong ("gw") pruning; one tree per connected component
  that holds a prize, so seeds in different components give a forest, not an error.

Pure numpy/scipy plus the solver: no Milvus, no LlamaIndex.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from llama_index_graphrag_milvus.errors import (
    InvalidInputError,
    MissingDependencyError,
    SolverError,
)
from llama_index_graphrag_milvus.validation import check_int, check_number

PCST_EXTRA = 'pip install "llama-index-graphrag-milvus[pcst]"'
"""How to install the solver."""

DEFAULT_RELATION_PRIZES = 20
"""Relations that get a prize by default. G-Retriever gives 3; on MuSiQue (validation half)
3 prized relations give a 4-relation subgraph whose passages hold 49.5% of the gold ones,
below naive RAG's top 5 (61.2%); 20 is the smallest of 3, 10, 20, 40 whose top 5 is at least
naive RAG's (64.8%). See the README's PCST table."""

Solver = Callable[..., tuple[np.ndarray, np.ndarray]]
"""``pcst_fast.pcst_fast``'s signature: (edges, prizes, costs, root, num_clusters, pruning,
verbosity) -> (vertices, edges)."""


def load_solver() -> Solver:
    """``pcst_fast.pcst_fast``, or :class:`MissingDependencyError` naming the extra."""
    try:
        from pcst_fast import pcst_fast
    except ImportError as exc:
        raise MissingDependencyError(
            "the PCST subgraph needs the pcst_fast solver (PyPI package pcst-fast2); "
            f"install it with: {PCST_EXTRA}") from exc
    solver: Solver = pcst_fast
    return solver


@dataclass(frozen=True)
class PCSTConfig:
    """Prizes and cost of the subgraph selection.

    Args:
        entity_prizes: entities that get a prize (``k .. 1`` by rank). Default 3.
        relation_prizes: relations that get a prize (``k .. 1`` by rank). Default 20
            (:data:`DEFAULT_RELATION_PRIZES`); G-Retriever used 3 on its small graphs.
        edge_cost: the cost of every relation edge (G-Retriever: 0.5). A higher cost gives
            a smaller subgraph.
    """

    entity_prizes: int = 3
    relation_prizes: int = DEFAULT_RELATION_PRIZES
    edge_cost: float = 0.5

    def __post_init__(self) -> None:
        check_int("pcst_entity_prizes", self.entity_prizes, minimum=0)
        check_int("pcst_relation_prizes", self.relation_prizes, minimum=0)
        check_number("pcst_edge_cost", self.edge_cost, low=0)


@dataclass(frozen=True)
class Subgraph:
    """The chosen subgraph, in the positions of the problem's nodes and edges."""

    nodes: np.ndarray
    """Positions of the chosen entities (sorted)."""
    edges: np.ndarray
    """Positions of the chosen relations (sorted)."""
    trees: int
    """Connected components the solver was asked for (one tree each)."""


def rank_prizes(scores: Sequence[float] | np.ndarray, k: int) -> np.ndarray:
    """Prizes ``k, k - 1, ..., 1`` for the ``k`` best ``scores`` (ties: the first position
    wins), 0 elsewhere.

    >>> rank_prizes([0.1, 0.9, 0.5, 0.7], 2).tolist()
    [0.0, 2.0, 0.0, 1.0]
    """
    scores = np.asarray(scores, dtype=np.float64)
    prizes = np.zeros(scores.size)
    best = np.lexsort((np.arange(scores.size), -scores))[:k]
    prizes[best] = np.arange(k, k - best.size, -1, dtype=np.float64)
    return prizes


def solve(endpoints: np.ndarray, node_prizes: np.ndarray, edge_prizes: np.ndarray,
          edge_cost: float, solver: Solver | None = None) -> Subgraph:
    """The prize-collecting Steiner forest of a small graph.

    Args:
        endpoints: ``(m, 2)`` node positions of each edge (parallel edges allowed).
        node_prizes: ``(n,)`` prize of each node.
        edge_prizes: ``(m,)`` prize of each edge.
        edge_cost: cost of every edge.
        solver: ``pcst_fast.pcst_fast`` (default) or a stand-in with its signature.

    Returns:
        the chosen nodes (with the endpoints of every chosen edge) and edges. No prize
        anywhere gives an empty subgraph.

    Raises:
        SolverError: the solver failed (its error chained).

    >>> edges = np.array([[0, 1], [1, 2], [1, 3], [3, 4]])
    >>> sub = solve(edges, np.array([3.0, 0, 2, 0, 0]), np.array([0, 0, 0, 2.0]), 0.5)
    >>> sub.nodes.tolist(), sub.edges.tolist()
    ([0, 1, 2, 3, 4], [0, 1, 2, 3])
    >>> solve(edges, np.array([3.0, 0, 2, 0, 0]), np.zeros(4), 0.5).edges.tolist()
    [0, 1]
    """
    endpoints = np.asarray(endpoints, dtype=np.int64).reshape(-1, 2)
    node_prizes = np.asarray(node_prizes, dtype=np.float64)
    edge_prizes = np.asarray(edge_prizes, dtype=np.float64)
    n, m = node_prizes.size, endpoints.shape[0]
    if edge_prizes.size != m or (m and (endpoints.min() < 0 or endpoints.max() >= n)):
        raise InvalidInputError(
            f"a PCST problem needs one prize per edge and edges between its {n} nodes; got "
            f"{edge_prizes.size} prizes for {m} edges")
    empty = np.zeros(0, dtype=np.int64)
    if not (node_prizes > 0).any() and not (edge_prizes > 0).any():
        return Subgraph(empty, empty, 0)
    virtual = edge_prizes > edge_cost
    real = np.flatnonzero(~virtual)
    lifted = np.flatnonzero(virtual)
    virtual_nodes = n + np.arange(lifted.size)
    edges = np.concatenate([
        endpoints[real],
        np.stack([endpoints[lifted, 0], virtual_nodes], axis=1),
        np.stack([virtual_nodes, endpoints[lifted, 1]], axis=1),
    ]).astype(np.int64)
    costs = np.concatenate([edge_cost - edge_prizes[real], np.zeros(2 * lifted.size)])
    prizes = np.concatenate([node_prizes, edge_prizes[lifted] - edge_cost])
    trees = _components_with_prizes(edges, prizes)
    try:
        vertices, chosen = (solver or load_solver())(edges, prizes, costs, -1, trees, "gw", 0)
    except (ValueError, RuntimeError, MemoryError) as exc:  # what pcst_fast raises
        raise SolverError(f"the PCST solver failed on {edges.shape[0]} edges and "
                          f"{prizes.size} nodes: {exc!r}") from exc
    vertices = np.asarray(vertices, dtype=np.int64)
    chosen = np.asarray(chosen, dtype=np.int64)
    picked = np.union1d(real[chosen[chosen < real.size]],
                        lifted[vertices[vertices >= n] - n]).astype(np.int64)
    nodes = np.union1d(vertices[vertices < n], endpoints[picked].ravel()).astype(np.int64)
    return Subgraph(nodes, picked, trees)


def _components_with_prizes(edges: np.ndarray, prizes: np.ndarray) -> int:
    """Connected components that hold a positive prize (at least 1)."""
    size = prizes.size
    adjacency = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])),
                              shape=(size, size))
    _, labels = connected_components(adjacency, directed=False)
    return max(int(np.unique(labels[prizes > 0]).size), 1)


def textualize(entities: Sequence[str], relations: Sequence[tuple[int, str, int]]) -> str:
    """The subgraph as G-Retriever gives it to the LLM: a CSV of nodes, then of edges.

    Args:
        entities: entity names, by node position.
        relations: ``(source position, predicate, target position)`` per edge.

    >>> print(textualize(["Euler", "Johann Bernoulli"], [(0, "was a student of", 1)]))
    node_id,node_attr
    0,Euler
    1,Johann Bernoulli
    <BLANKLINE>
    src,edge_attr,dst
    0,was a student of,1
    """
    lines = ["node_id,node_attr", *(f"{i},{_cell(name)}" for i, name in enumerate(entities)),
             "", "src,edge_attr,dst",
             *(f"{src},{_cell(predicate)},{dst}" for src, predicate, dst in relations)]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    """A CSV cell: quoted when it holds a comma, a quote or a line break."""
    text = str(value)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text
