"""The graph held in memory: the graph requests answered from the index's in-memory copies.

The process holds the entity-relation graph (built from the relation collection on first
use, :class:`~llama_index_graphrag_milvus.graph.EntityRelationGraph`), and, where the
retriever's :class:`~..settings.SearchSettings` allow, the entity and passage tables: the
seed searches and passage rankings run in memory (exact, no Milvus call), or in Milvus above
the budget. Every answer is built from the graph's rows by
:meth:`~llama_index_graphrag_milvus.graph.EntityRelationGraph.relation_records`, so it holds
the same records the served graph gives. Where the passage table is held, so are the
passages' words: BM25 runs in memory too (Milvus Lite's own runs in Python, at about the cost
of a whole query).
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np

from llama_index_graphrag_milvus.communities.around import (
    CommunityInfo,
    LocalCommunities,
    descriptions_of,
)
from llama_index_graphrag_milvus.communities.descriptions import DescriptionTable
from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.records import (
    CandidateRelation,
    EntityHit,
    PassageHit,
    RelationHit,
)
from llama_index_graphrag_milvus.retrieval.drivers import DriverContext, Handlers, steps
from llama_index_graphrag_milvus.retrieval.requests import (
    BridgeSpreads,
    CommunitiesBuilt,
    CommunitiesOf,
    DescriptionsOf,
    EntityDegrees,
    EntityNames,
    EntityPassages,
    EntitySeeds,
    ExpandPool,
    GetEntityNames,
    GetRelations,
    GetRelationTexts,
    LoadCommunities,
    LoadEntities,
    LoadGraph,
    LoadPassages,
    LoadWords,
    OwnRelations,
    Plan,
    RankPassages,
    RankWords,
    RelationsAround,
    RelationSeeds,
    RelationTexts,
    SearchEntities,
    SearchRelations,
)
from llama_index_graphrag_milvus.retrieval.settings import SearchPlace
from llama_index_graphrag_milvus.retrieval.sources.shared import (
    as_hits,
    held_scope,
    milvus_ranking,
    milvus_words,
    rank_own,
    read_spreads,
)

logger = logging.getLogger(__name__)


def _texts_filled(graph: EntityRelationGraph, relations: list[CandidateRelation]
                  ) -> Plan[list[CandidateRelation]]:
    """``relations`` with their texts: the graph's, or one Milvus read when it holds none
    (a graph built from rows without texts); relations deleted since are left out."""
    if graph.texts is not None or not relations:
        return relations
    texts = yield from GetRelationTexts(tuple(dict.fromkeys(c.id for c in relations)))
    return [replace(c, text=texts[c.id]) for c in relations if c.id in texts]


def _relation_seeds(context: DriverContext, r: RelationSeeds) -> Plan[list[RelationHit]]:
    """In memory when the settings allow (with ``"auto"``: up to the budget, and always on
    Milvus Lite, whose search scans the same vectors more slowly), else a Milvus search."""
    place = context.searches.relation_search
    if place == SearchPlace.MILVUS:
        return (yield from SearchRelations(r.vector, r.top_k, r.threshold))
    graph = yield from LoadGraph()
    # the graph holds the relation vectors anyway: the budget only bounds the scan's time,
    # and a Milvus Lite search scans them too, slower than numpy (2.3 s against about 25 ms
    # for a million relations of 64 dimensions)
    if not (context.searches.in_memory(place, graph.num_relations, graph.vectors.shape[1])
            or (place == SearchPlace.AUTO and context.store.is_lite)):
        return (yield from SearchRelations(r.vector, r.top_k, r.threshold))
    rows, scores = graph.nearest_relations(r.vector, r.top_k, r.threshold)
    records = yield from _texts_filled(graph, graph.relation_records(rows, scores.tolist()))
    return as_hits(records)


def _entity_seeds(context: DriverContext, r: EntitySeeds) -> Plan[list[list[EntityHit]]]:
    """The entity table when the settings allow, else a Milvus search."""
    place = context.searches.entity_search
    if place != SearchPlace.MILVUS:
        graph = yield from LoadGraph()
        if context.searches.in_memory(place, graph.num_entities, graph.vectors.shape[1]):
            table = yield from LoadEntities()
            keys = r.keys if context.store.records_name_keys else None  # as Milvus matches
            return table.search(r.vectors, r.names, r.top_k, r.threshold, r.among, keys)
    return (yield from SearchEntities(r.vectors, r.names, r.top_k, r.threshold, among=r.among,
                                      keys=r.keys))


def _rank_passages(context: DriverContext, r: RankPassages) -> Plan[list[list[PassageHit]]]:
    """The passage table (ids only: the passages chosen are read by primary key, cheaper
    than a search) when the settings allow, among the passages the query's filter keeps
    (:func:`~.shared.held_scope`, Milvus Lite) when one applies, else one Milvus search."""
    if context.searches.passage_search != SearchPlace.MILVUS:
        # the limit a Milvus search accepts, so that both paths return the same passages
        limit = min(r.limit, MILVUS_MAX_TOP_K)
        ranked: list[list[tuple[str, float]]] | None = None
        if not r.where:
            table = yield from LoadPassages(context.searches.passage_budget())
            if table is not None:
                ranked = table.search(r.vectors, limit, r.ids)
        elif r.ids is None and context.scope is not None and r.where == context.scope.where:
            held = yield from held_scope(context, r.where)
            if held is not None:
                ranked = held.table.search(r.vectors, limit, mask=held.mask)
        if ranked is not None:
            return [[PassageHit(pid, score) for pid, score in hits] for hits in ranked]
    return (yield from milvus_ranking(r))


def _rank_words(context: DriverContext, r: RankWords) -> Plan[list[list[PassageHit]]]:
    """BM25 in memory (:class:`~llama_index_graphrag_milvus.graph.word_table.WordTable`,
    ids only) where the passage table would be held and no filter applies, else Milvus's
    full-text search."""
    if r.texts and not r.where and context.searches.passage_search != SearchPlace.MILVUS:
        table = yield from LoadWords(context.searches.passage_budget())
        if table is not None:
            ranked = table.search(r.texts, min(r.limit, MILVUS_MAX_TOP_K))
            return [[PassageHit(pid, score) for pid, score in hits] for hits in ranked]
    return (yield from milvus_words(context, r))


def _expand_pool(context: DriverContext, r: ExpandPool) -> Plan[list[CandidateRelation]]:
    graph = yield from LoadGraph()
    if graph.num_relations == 0:
        logger.warning("the index holds no relations: the graph methods find nothing, the "
                       "passages are ranked by their own similarity (ingest triplets, or "
                       "extract them)")
        return []
    return (yield from _texts_filled(graph, graph.expand(
        r.vector, r.entity_ids, r.relation_ids, r.config)))


def _relations_around(context: DriverContext, r: RelationsAround
                      ) -> Plan[list[CandidateRelation]]:
    graph = yield from LoadGraph()
    if not r.entity_ids or r.limit < 1:
        return []
    around = graph.expand(r.vector, r.entity_ids, [], ExpansionConfig(
        hops=0, per_hop_max_relations=r.limit, max_candidate_relations=r.limit))
    return (yield from _texts_filled(graph, around))


def _get_relations(context: DriverContext, r: GetRelations) -> Plan[list[CandidateRelation]]:
    graph = yield from LoadGraph()
    rows = graph.relation_rows(r.ids)
    scores = graph.relation_scores_of(rows, r.vector)
    return (yield from _texts_filled(graph, graph.relation_records(rows, scores.tolist())))


def _own_relations(context: DriverContext, r: OwnRelations
                   ) -> Plan[list[list[CandidateRelation]]]:
    """The graph's links of each passage (one matrix product for all of them)."""
    graph = yield from LoadGraph()
    ids = [p if isinstance(p, str) else p.node_id for p in r.passages]
    ranked = graph.own_relations(ids, r.vector, MILVUS_MAX_TOP_K if r.limit is None
                                 else r.limit)
    flat = np.concatenate([rows for rows, _ in ranked] or [np.zeros(0, np.int64)])
    records = graph.relation_records(flat, np.concatenate(
        [scores for _, scores in ranked] or [np.zeros(0)]).tolist(), 1)
    records = yield from _texts_filled(graph, records)
    known = {c.id: c for c in records}
    return rank_own([[known[rid] for rid in graph.relation_ids.ids(rows) if rid in known]
                     for rows, _ in ranked], r.limit)


def _entity_passages(context: DriverContext, r: EntityPassages) -> Plan[dict[str, list[str]]]:
    graph = yield from LoadGraph()
    return {entity: graph.entity_passages(entity, r.cap) for entity in r.entity_ids}


def _entity_degrees(context: DriverContext, r: EntityDegrees) -> Plan[dict[str, int]]:
    graph = yield from LoadGraph()
    rows = graph.entity_ids.rows_of(list(r.entity_ids))
    degrees = graph.entity_degrees
    return {entity: int(degrees[row]) if row >= 0 else 0
            for entity, row in zip(r.entity_ids, rows.tolist(), strict=True)}


def _relation_texts(context: DriverContext, r: RelationTexts) -> Plan[dict[str, str]]:
    """The graph's texts, then one Milvus read for the rest (none when it holds them all)."""
    graph = yield from LoadGraph()
    texts = graph.relation_texts(r.ids)
    missing = tuple(rid for rid in dict.fromkeys(r.ids) if rid not in texts)
    if missing:
        texts.update((yield from GetRelationTexts(missing)))
    return texts


def _entity_names(context: DriverContext, r: EntityNames) -> Plan[dict[str, str]]:
    """The entity table's names, then one Milvus read for the rest."""
    table = yield from LoadEntities()
    wanted = list(dict.fromkeys(r.ids))
    rows = table.ids.rows_of(wanted).tolist()
    names = {entity: table.names[int(row)]
             for entity, row in zip(wanted, rows, strict=True) if row >= 0}
    missing = tuple(entity for entity in wanted if entity not in names)
    if missing:
        names.update((yield from GetEntityNames(missing)))
    return names


def _communities_built(context: DriverContext, r: CommunitiesBuilt) -> Plan[CommunityInfo]:
    return (yield from LoadCommunities()).info_record()


def _communities_of(context: DriverContext, r: CommunitiesOf) -> Plan[LocalCommunities]:
    return (yield from LoadCommunities()).around(r.entity_ids, r.depth)


def _descriptions_of(context: DriverContext, r: DescriptionsOf) -> Plan[DescriptionTable]:
    return descriptions_of((yield from LoadCommunities()).descriptions, r.ids)


MEMORY_SOURCE: Handlers = dict([
    steps(RelationSeeds, _relation_seeds),
    steps(EntitySeeds, _entity_seeds),
    steps(RankPassages, _rank_passages),
    steps(RankWords, _rank_words),
    steps(ExpandPool, _expand_pool),
    steps(RelationsAround, _relations_around),
    steps(GetRelations, _get_relations),
    steps(OwnRelations, _own_relations),
    steps(EntityPassages, _entity_passages),
    steps(BridgeSpreads, read_spreads),
    steps(EntityDegrees, _entity_degrees),
    steps(RelationTexts, _relation_texts),
    steps(EntityNames, _entity_names),
    steps(CommunitiesBuilt, _communities_built),
    steps(CommunitiesOf, _communities_of),
    steps(DescriptionsOf, _descriptions_of),
])
"""The graph requests, answered by the graph held in memory (local search's community
requests by the communities loaded whole)."""
