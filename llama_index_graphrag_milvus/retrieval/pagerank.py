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
from llama_index_graphrag_milvus.graph.pagerank import record_graph
from llama_index_graphrag_milvus.records import (
    FOUND_BY_KEY,
    TIMINGS_KEY,
    CandidateRelation,
)
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.neighbourhood import expand_pool
from llama_index_graphrag_milvus.retrieval.passages import (
    OWN_RELATIONS_PER_PASSAGE,
    Result,
    rank_in_memory,
    read_relation_texts,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.requests import (
    GetPassages,
    GetRelations,
    LoadGraph,
    Plan,
    SearchPassages,
    first,
)
from llama_index_graphrag_milvus.retrieval.seeds import find_seeds
from llama_index_graphrag_milvus.retrieval.steps import (
    Seeds,
    attached_relations,
    own_triplets,
    select_passages,
)
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


def seed_weights(seeds: Seeds) -> dict[str, float]:
    """Restart weight of each seed entity (by id): its best similarity among the entity hits
    and the relation hits it is an end of (negative similarities count 0)."""
    weights: dict[str, float] = {}
    ends = [(hit.id, hit.score) for hit in seeds.entities] + [
        (entity, hit.score) for hit in seeds.relations
        for entity in (hit.subject_id, hit.object_id) if entity]
    for entity, score in ends:
        weights[entity] = max(weights.get(entity, 0.0), max(score, 0.0))
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
    weights = seed_weights(seeds)
    entity_rows = graph.entity_ids.lookup(weights)
    found, entity_nodes = local.entity_nodes(entity_rows)
    entity_mass = [weights[e] for e, hit in zip(graph.entity_ids.ids(entity_rows), found,
                                                strict=True) if hit]
    similarity = dict(similar)
    known_ids = graph.passage_ids.ids(known)
    found, passage_nodes = local.passage_nodes(known)
    passage_mass = [max(similarity[pid], 0.0) for pid, hit in zip(known_ids, found, strict=True)
                    if hit]
    return _masses(local.adjacency, local.size, entity_nodes, entity_mass, passage_nodes,
                   passage_mass, [max(similarity[pid], 0.0) for pid in outside],
                   graph.passage_ids.ids(local.passage_rows) + outside,
                   graph.entity_ids.ids(local.entity_rows), config, passage_weight, trace)


def rank_record_passages(relations: Sequence[CandidateRelation], seeds: Seeds,
                         similar: Sequence[tuple[str, float]], config: PageRankConfig,
                         passage_weight: float = DEFAULT_PASSAGE_WEIGHT,
                         trace: Trace | None = None) -> list[PassageMass]:
    """:func:`rank_passages` on the neighbourhood the served graph fetched: ``relations``
    (the pool, the seed relations and the relations of the ``similar`` passages, with their
    ends and passages)."""
    local = record_graph(relations, [pid for pid, _ in similar], config.passage_edge_weight)
    weights = seed_weights(seeds)
    entity_node = {e: i for i, e in enumerate(local.entities)}
    passage_node = {p: len(local.entities) + j for j, p in enumerate(local.passages)}
    entities = [e for e in weights if e in entity_node]
    size = len(local.entities) + len(local.passages)
    return _masses(local.adjacency, size, np.array([entity_node[e] for e in entities], np.int64),
                   [weights[e] for e in entities],
                   np.array([passage_node[p] for p, _ in similar], np.int64),
                   [max(score, 0.0) for _, score in similar], [], local.passages,
                   local.entities, config, passage_weight, trace)


def _masses(adjacency: sp.csr_matrix, size: int, entity_nodes: np.ndarray,
            entity_mass: Sequence[float], passage_nodes: np.ndarray,
            passage_mass: Sequence[float], outside_mass: Sequence[float],
            passage_ids: Sequence[str], entity_ids: Sequence[str], config: PageRankConfig,
            passage_weight: float, trace: Trace | None) -> list[PassageMass]:
    """PageRank from the seeds' and the similar passages' restart mass; the passages (nodes
    after the ``entity_ids``' nodes, then the ``outside_mass`` ones, unknown to the graph) by mass,
    best first (ties: node order)."""
    total = size + len(outside_mass)
    entity_reset = np.zeros(total)
    entity_reset[entity_nodes] = entity_mass
    passage_reset = np.zeros(total)
    passage_reset[passage_nodes] = passage_mass
    passage_reset[size:] = outside_mass
    reset = _mix(entity_reset, passage_reset, passage_weight)
    full = sp.block_diag((adjacency, sp.csr_matrix((len(outside_mass),) * 2)), format="csr")
    scores = personalized_pagerank(full, reset, config).scores
    if trace:
        trace.on_pagerank(entity_ids, scores[:len(entity_ids)])
    masses = scores[len(entity_ids):]
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
        candidates = yield from expand_pool(query, seeds, self.expansion, required=False)
        if query.trace:
            query.trace.on_seeds(seeds, candidates)
        started = time.perf_counter()
        if query.graph_served:
            relations = yield from self._neighbourhood(query, seeds, candidates, nodes)
            started = time.perf_counter()
            ranking = rank_record_passages(relations, seeds, similar, self.config,
                                           self.passage_weight, query.trace)
        else:
            graph = yield from LoadGraph()
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
        texts = yield from read_relation_texts(query, attached_relations(hits, pool), seeds)
        own_similarity = dict(similar)
        return (yield from with_own_relations(query, [Result(
            node, score,
            [replace(c, text=texts.get(c.id, c.text))
             for c in pool.get(node.node_id, [])[:OWN_RELATIONS_PER_PASSAGE]],
            metadata={FOUND_BY_KEY: {"query": "ppr", "mass": score,
                                     "similarity": own_similarity.get(node.node_id)},
                      TIMINGS_KEY: dict(timings)})
            for node, score in hits]))

    @staticmethod
    def _neighbourhood(query: QueryContext, seeds: Seeds,
                       candidates: Sequence[CandidateRelation], similar: dict[str, BaseNode]
                       ) -> Plan[list[CandidateRelation]]:
        """The served graph's neighbourhood: the pool, and the seed relations and the
        relations of the similar passages (their stored triplets) read by id."""
        known = {c.id for c in candidates}
        wanted = tuple(dict.fromkeys(rid for rid in (
            *(h.id for h in seeds.relations),
            *(t.id for node in similar.values() for t in own_triplets(node)))
            if rid not in known))
        read = (yield from GetRelations(wanted, tuple(query.vector))) if wanted else []
        return [*candidates, *read]

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": "ppr", "ppr_damping": self.config.damping,
                "ppr_passage_weight": self.passage_weight,
                "ppr_max_iterations": self.config.max_iterations,
                "ppr_tolerance": self.config.tolerance}
