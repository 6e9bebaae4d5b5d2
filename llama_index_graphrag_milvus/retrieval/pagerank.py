"""Personalized PageRank passage scoring (HippoRAG 2), ``passage_scoring="ppr"``.

The neighbourhood of one query (the k-hop candidate pool, the seed relations and the
relations of the passages most similar to the query) becomes a graph of entity and passage
nodes (:func:`~llama_index_graphrag_milvus.graph.pagerank.local_graph`). PageRank restarts
at the query:

- entity nodes: the entity-search hits (NER names with an LLM, else the query vector) and the
  subjects and objects of the relation-search hits (query-to-triplet linking, as HippoRAG 2),
  each weighted by its similarity to the query;
- passage nodes: the passages most similar to the query, by their similarity, with a small
  total weight (``passage_weight``, 0.05 as in HippoRAG 2).

Passages are ranked by their PageRank mass. Passages the graph does not know (no triplets)
are isolated nodes that keep their restart mass, so they are still ranked.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp
from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.graph import (
    EntityRelationGraph,
    ExpansionConfig,
    PageRankConfig,
    local_graph,
    personalized_pagerank,
)
from llama_index_graphrag_milvus.records import (
    FOUND_BY_KEY,
    TIMINGS_KEY,
    CandidateRelation,
)
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.passages import (
    OWN_RELATIONS_PER_PASSAGE,
    Result,
    rank_in_memory,
    read_relation_texts,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.requests import (
    GetPassages,
    LoadGraph,
    Plan,
    SearchPassages,
    first,
)
from llama_index_graphrag_milvus.retrieval.seeds import find_seeds
from llama_index_graphrag_milvus.retrieval.steps import Seeds, attached_relations, select_passages
from llama_index_graphrag_milvus.validation import check_number

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.explain.trace import Trace

DEFAULT_PASSAGE_WEIGHT = 0.05
"""Share of the restart mass on the passages most similar to the query (HippoRAG 2)."""


@dataclass(frozen=True)
class PassageMass:
    """A passage's PageRank mass."""

    id: str
    mass: float


def restart_weights(graph: EntityRelationGraph, seeds: Seeds) -> dict[int, float]:
    """Restart weight of each seed entity (by global row): its best similarity among the
    entity hits and the relation hits it is an endpoint of (negative similarities count 0)."""
    weights: dict[int, float] = {}

    def add(rows: np.ndarray, score: float) -> None:
        for row in rows.tolist():
            weights[row] = max(weights.get(row, 0.0), max(score, 0.0))

    for hit in seeds.entities:
        add(graph.entity_ids.lookup([hit.id]), hit.score)
    for relation in seeds.relations:
        add(graph.endpoints[graph.relation_rows([relation.id])].ravel().astype(np.int64),
            relation.score)
    return weights


def rank_passages(graph: EntityRelationGraph, seeds: Seeds,
                  candidates: Sequence[CandidateRelation],
                  similar: Sequence[tuple[str, float]], config: PageRankConfig,
                  passage_weight: float = DEFAULT_PASSAGE_WEIGHT, trace: Trace | None = None
                  ) -> list[PassageMass]:
    """Passages by PageRank mass, best first (pure: the in-memory graph only).

    ``similar`` are the passages most similar to the query, ``(id, similarity)``; a
    ``trace`` (under ``explain``) gets the entities' masses too.
    """
    relation_rows = graph.relation_rows([c.id for c in candidates]
                                        + [h.id for h in seeds.relations])
    known = graph.passage_ids.lookup([pid for pid, _ in similar])
    local = local_graph(graph, relation_rows, known, config.passage_edge_weight)
    outside = [pid for pid, _ in similar if not graph.passage_ids.lookup([pid]).size]
    size = local.size + len(outside)
    entity_reset = np.zeros(size)
    seeds_by_row = restart_weights(graph, seeds)
    rows = np.fromiter(seeds_by_row, dtype=np.int64, count=len(seeds_by_row))
    found, nodes = local.entity_nodes(rows)
    entity_reset[nodes] = np.fromiter(seeds_by_row.values(), dtype=np.float64,
                                      count=len(seeds_by_row))[found]
    passage_reset = np.zeros(size)
    similarity = dict(similar)
    known_ids = graph.passage_ids.ids(known)
    found, nodes = local.passage_nodes(known)
    passage_reset[nodes] = [max(similarity[pid], 0.0) for pid, hit in
                            zip(known_ids, found, strict=True) if hit]
    passage_reset[local.size:] = [max(similarity[pid], 0.0) for pid in outside]
    reset = _mix(entity_reset, passage_reset, passage_weight)
    adjacency = sp.block_diag((local.adjacency, sp.csr_matrix((len(outside),) * 2)),
                              format="csr")
    scores = personalized_pagerank(adjacency, reset, config).scores
    if trace:
        trace.on_pagerank(graph.entity_ids.ids(local.entity_rows), scores[:local.entity_rows.size])
    passage_ids = graph.passage_ids.ids(local.passage_rows) + outside
    masses = scores[local.entity_rows.size:]
    order = np.lexsort((np.arange(masses.size), -masses))
    return [PassageMass(passage_ids[i], float(masses[i])) for i in order.tolist()
            if masses[i] > 0]


def _mix(entity_reset: np.ndarray, passage_reset: np.ndarray, passage_weight: float
         ) -> np.ndarray:
    """``(1 - w) * entities + w * passages``, each part normalized; a part with no mass
    gives its share to the other."""
    parts = [(entity_reset, 1.0 - passage_weight), (passage_reset, passage_weight)]
    live = [(part / part.sum(), weight) for part, weight in parts if part.sum() > 0]
    total = sum(weight for _, weight in live)
    if not live or total == 0:
        return sum((part for part, _ in live), np.zeros_like(entity_reset))
    return sum((part * (weight / total) for part, weight in live),
               np.zeros_like(entity_reset))


class PageRankRetrieval(RetrievalMethod):
    """Passages ranked by personalized PageRank over the query's neighbourhood."""

    name: ClassVar[str] = "ppr"

    def __init__(self, expansion: ExpansionConfig, config: PageRankConfig,
                 passage_weight: float = DEFAULT_PASSAGE_WEIGHT) -> None:
        check_number("ppr_passage_weight", passage_weight, low=0, high=1)
        self.expansion = expansion
        self.config = config
        self.passage_weight = passage_weight

    def plan(self, query: QueryContext, seeds_config: SeedConfig) -> Plan[list[NodeWithScore]]:
        # the passages most similar to the query: ranked in memory (read later, with the
        # others), or searched in Milvus beside the seed searches
        ranked = yield from rank_in_memory(query, (query.vector,), query.similarity_top_k)
        nodes: dict[str, BaseNode] = {}
        if ranked is None:
            seeds, (lists,) = yield from find_seeds(
                query, seeds_config,
                SearchPassages((query.vector,), query.similarity_top_k, None, query.where))
            nodes = {node.node_id: node for node, _ in first(lists)}
            similar = [(node.node_id, score) for node, score in first(lists)]
        else:
            seeds, _ = yield from find_seeds(query, seeds_config)
            similar = first(ranked)
        graph = yield from LoadGraph()
        candidates = (graph.expand(query.vector, [h.id for h in seeds.entities],
                                   [h.id for h in seeds.relations], self.expansion)
                      if graph.num_relations else [])
        if query.trace:
            query.trace.on_seeds(seeds, candidates)
        started = time.perf_counter()
        ranking = rank_passages(graph, seeds, candidates, similar, self.config,
                                self.passage_weight, query.trace)
        timings = {"ppr": time.perf_counter() - started}
        # filters may drop some: then fetch twice what is needed
        wanted = [p.id for p in ranking[:(2 if query.where else 1) * query.similarity_top_k]]
        missing = tuple(pid for pid in wanted if pid not in nodes)
        if missing:
            nodes.update((n.node_id, n) for n in (yield from GetPassages(missing, query.where)))
        mass = {p.id: p.mass for p in ranking}
        hits = [(nodes[pid], mass[pid]) for pid in wanted if pid in nodes]
        hits = hits[:query.similarity_top_k]
        pool = select_passages(candidates, len(candidates) * len(wanted) + 1)
        texts = yield from read_relation_texts(attached_relations(hits, pool), seeds)
        own_similarity = dict(similar)
        return with_own_relations(graph, query, [Result(
            node, score,
            [replace(c, text=texts.get(c.id, c.text))
             for c in pool.get(node.node_id, [])[:OWN_RELATIONS_PER_PASSAGE]],
            metadata={FOUND_BY_KEY: {"query": "ppr", "mass": score,
                                     "similarity": own_similarity.get(node.node_id)},
                      TIMINGS_KEY: dict(timings)})
            for node, score in hits])

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": "ppr", "ppr_damping": self.config.damping,
                "ppr_passage_weight": self.passage_weight,
                "ppr_max_iterations": self.config.max_iterations,
                "ppr_tolerance": self.config.tolerance}
