"""Personalized PageRank passage scoring (HippoRAG 2), ``passage_scoring="ppr"``.

The neighbourhood of one query (the k-hop candidate pool, the seed relations and the
relations of the passages most similar to the query, as relation records whichever graph
source read them) becomes a graph of entity and passage nodes (:func:`~llama_index_graphrag_
milvus.graph.personalized_pagerank.neighbourhood_graph`). PageRank restarts at the query:

- entity nodes: the entity-search hits (NER names with an LLM, else the query vector) and the
  subjects and objects of the relation-search hits (query-to-triplet linking, as HippoRAG 2),
  each weighted by its similarity to the query;
- passage nodes: the passages most similar to the query, by their similarity, with a small
  total weight (``passage_weight``, 0.05 as in HippoRAG 2).

Passages are ranked by their PageRank mass. Passages the graph does not know (no triplets)
are isolated nodes that keep their restart mass, so they are still ranked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus.graph import (
    ExpansionConfig,
    Neighbourhood,
    PageRankConfig,
    neighbourhood_graph,
    personalized_pagerank,
)
from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY, TIMINGS_KEY
from llama_index_graphrag_milvus.records import CandidateRelation
from llama_index_graphrag_milvus.retrieval.method import (
    OWN_RELATIONS_PER_PASSAGE,
    QueryContext,
    RetrievalMethod,
    SeedConfig,
)
from llama_index_graphrag_milvus.retrieval.neighbourhood import (
    expand_pool,
    expansion_of,
    expansion_settings,
)
from llama_index_graphrag_milvus.retrieval.passages import (
    Result,
    fetch_passages,
    rank_passages,
    read_relation_texts,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.requests import (
    OwnRelations,
    PassageRef,
    Plan,
    RankWords,
    first,
    side_by_side,
)
from llama_index_graphrag_milvus.retrieval.seeds import Seeds, find_seeds
from llama_index_graphrag_milvus.retrieval.sources.shared import relation_record
from llama_index_graphrag_milvus.retrieval.steps import (
    attached_relations,
    select_passages,
)
from llama_index_graphrag_milvus.validation import check_bool, check_number

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.explain.trace import Trace

logger = logging.getLogger(__name__)

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


def rank_by_mass(relations: Sequence[CandidateRelation], seeds: Seeds,
                 similar: Sequence[tuple[str, float]], config: PageRankConfig,
                 passage_weight: float = DEFAULT_PASSAGE_WEIGHT, trace: Trace | None = None
                 ) -> list[PassageMass]:
    """Passages by PageRank mass, best first (pure). ``relations`` are the neighbourhood's
    (the pool, the seed relations and the relations of the ``similar`` passages, with their
    ends and passages), ``similar`` the passages most similar to the query, ``(id,
    similarity)``; a passage without relations is an isolated node that keeps its restart
    mass. A ``trace`` (under ``explain``) gets the entities' masses and how the iteration
    ended."""
    local = neighbourhood_graph(relations, [pid for pid, _ in similar],
                                config.passage_edge_weight)
    weights = seed_weights(seeds)
    entity_node = {e: i for i, e in enumerate(local.entities)}
    passage_node = {p: len(local.entities) + j for j, p in enumerate(local.passages)}
    entities = [e for e in weights if e in entity_node]
    return _masses(local, np.array([entity_node[e] for e in entities], np.int64),
                   [weights[e] for e in entities],
                   np.array([passage_node[p] for p, _ in similar], np.int64),
                   [max(score, 0.0) for _, score in similar], config, passage_weight, trace)


def _masses(local: Neighbourhood, entity_nodes: np.ndarray, entity_mass: Sequence[float],
            passage_nodes: np.ndarray, passage_mass: Sequence[float], config: PageRankConfig,
            passage_weight: float, trace: Trace | None) -> list[PassageMass]:
    """PageRank from the seeds' and the similar passages' restart mass; the passages by mass,
    best first (ties: node order, that is by id)."""
    size = len(local.entities) + len(local.passages)
    entity_reset = np.zeros(size)
    entity_reset[entity_nodes] = entity_mass
    passage_reset = np.zeros(size)
    passage_reset[passage_nodes] = passage_mass
    result = personalized_pagerank(local.adjacency, _mix(entity_reset, passage_reset,
                                                         passage_weight), config)
    if not result.converged:
        logger.warning("personalized PageRank stopped at ppr_max_iterations=%s before "
                       "converging to ppr_tolerance=%s: the ranking is approximate (raise "
                       "max_iterations)", config.max_iterations, config.tolerance)
    scores = result.scores
    if trace:
        trace.on_pagerank(local.entities, scores[:len(local.entities)], result.iterations,
                          result.converged)
    masses = scores[len(local.entities):]
    order = np.lexsort((np.arange(masses.size), -masses))
    return [PassageMass(local.passages[i], float(masses[i])) for i in order.tolist()
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
    """Passages ranked by personalized PageRank over the query's neighbourhood (HippoRAG 2;
    see the module docstring).

    Args:
        hops: expansion steps of the pool around the seeds. Default 1.
        expansion: the other bounds of the pool (:class:`~llama_index_graphrag_milvus.
            graph.ExpansionConfig`).
        damping: probability of following an edge. Default 0.5 (HippoRAG).
        passage_weight: share of the restart mass on the passages most similar to the
            query. Default 0.05 (HippoRAG 2).
        max_iterations: iteration cap. Default 50.
        tolerance: convergence tolerance (L1). Default 1e-6.
        match_words: on an index with full-text search, the passages the question's words
            match best (BM25) join the most similar ones (see :func:`with_words`): seeded by
            hybrid hits, as HippoRAG 2 and SPRIG. Nothing changes without it or under
            ``filters``. Default ``False``: measured, it did not help (MuSiQue R@5 61.6
            against 62.8, HotpotQA 74.5 against 77.0).

    Example::

        retriever = index.as_retriever(method=PageRankRetrieval(hops=2, damping=0.6))
    """

    name: ClassVar[str] = "ppr"

    def __init__(self, hops: int | None = None, expansion: ExpansionConfig | None = None,
                 damping: float = 0.5, passage_weight: float = DEFAULT_PASSAGE_WEIGHT,
                 max_iterations: int = 50, tolerance: float = 1e-6,
                 match_words: bool = False) -> None:
        check_number("ppr_passage_weight", passage_weight, low=0, high=1)
        self.match_words = check_bool("match_words", match_words)
        self.expansion = expansion_of(hops, expansion)
        self.config = PageRankConfig(damping, tolerance, max_iterations)
        self.passage_weight = passage_weight

    def plan(self, query: QueryContext, seeds_config: SeedConfig) -> Plan[list[NodeWithScore]]:
        # the passages most similar to the query (and those its words match best, on a
        # full-text index), ranked beside the seed searches
        seeds, (ranked, worded) = yield from find_seeds(
            query, seeds_config, rank_passages(query, (query.vector,), query.similarity_top_k),
            RankWords((query.text,) if self.match_words else (), query.similarity_top_k,
                      query.where))
        similar_hits = first(ranked)
        nodes = {h.id: h.node for h in (*similar_hits, *first(worded)) if h.node is not None}
        similar = with_words([(h.id, h.score) for h in similar_hits],
                             [h.id for h in first(worded)])
        # the similar passages' own relations join the graph: read beside the pool
        candidates, owns = yield from side_by_side(
            expand_pool(query, seeds, self.expansion),
            own_relations_of(query, [nodes.get(pid, pid) for pid, _ in similar]))
        if query.trace:
            query.trace.on_seeds(seeds, candidates)
        started = time.perf_counter()
        ranking = rank_by_mass(
            [*candidates, *(relation_record(h) for h in seeds.relations),
             *(c for own in owns for c in own)],
            seeds, similar, self.config, self.passage_weight, query.trace)
        timings = {"ppr": time.perf_counter() - started}
        # filters may drop some: then fetch twice what is needed
        wanted = [p.id for p in ranking[:(2 if query.where else 1) * query.similarity_top_k]]
        if len(wanted) < query.similarity_top_k:  # the mass reached fewer: by similarity
            wanted += [pid for pid, _ in similar if pid not in wanted]
        nodes.update((yield from fetch_passages([pid for pid in wanted if pid not in nodes],
                                                query.where)))
        mass = {p.id: p.mass for p in ranking}
        hits = [(nodes[pid], mass.get(pid, 0.0)) for pid in wanted if pid in nodes]
        hits = hits[:query.similarity_top_k]
        pool = select_passages(candidates, len(candidates) * len(wanted) + 1)
        texts = yield from read_relation_texts(attached_relations(hits, pool), seeds, candidates)
        own_similarity = dict(similar)
        known = {pid: own for (pid, _), own in zip(similar, owns, strict=True)}
        return (yield from with_own_relations(query, [Result(
            node, score,
            [replace(c, text=texts.get(c.id, c.text))
             for c in pool.get(node.node_id, [])[:OWN_RELATIONS_PER_PASSAGE]],
            metadata={FOUND_BY_KEY: {"query": "ppr", "mass": score,
                                     "similarity": own_similarity.get(node.node_id)},
                      TIMINGS_KEY: dict(timings)})
            for node, score in hits], known))

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": "ppr", "ppr_damping": self.config.damping,
                "ppr_passage_weight": self.passage_weight,
                "ppr_max_iterations": self.config.max_iterations,
                "ppr_tolerance": self.config.tolerance, "ppr_match_words": self.match_words,
                **expansion_settings(self.expansion)}


def own_relations_of(query: QueryContext, passages: Sequence[PassageRef]
                     ) -> Plan[list[list[CandidateRelation]]]:
    """Every relation of each passage's own triplets, most similar to the query first (none
    read for no passage)."""
    if not passages:
        return []
    return (yield from OwnRelations(tuple(passages), query.vector))


def with_words(similar: list[tuple[str, float]], words: Sequence[str]
               ) -> list[tuple[str, float]]:
    """The passages most similar to the query, then those its words match (BM25) that are
    not among them, each with the lowest similarity of the first: they restart PageRank with
    the weight of the least similar passage and bring their own relations into the graph
    (HippoRAG 2 and SPRIG seed PageRank with hybrid hits).

    >>> with_words([("a", .9), ("b", .5)], ["c", "a"])
    [('a', 0.9), ('b', 0.5), ('c', 0.5)]
    """
    taken = dict(similar)
    floor = min(taken.values(), default=0.0)
    return [*similar, *((pid, floor) for pid in dict.fromkeys(words) if pid not in taken)]
