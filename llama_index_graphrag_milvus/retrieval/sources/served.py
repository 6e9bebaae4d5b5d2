"""The graph served by Milvus: the graph requests answered by a bounded number of Milvus
requests each, whatever the size of the graph (``GraphRAGIndex(graph="milvus")``).

The worker holds nothing that grows with the corpus: the seeds and passage rankings are
Milvus searches, and the graph steps are the filtered queries and searches of
:class:`~llama_index_graphrag_milvus.milvus.served.ServedGraph`.

The k-hop pool follows the in-memory expansion hop by hop: hop 0 is the relations of the
seed entities (the ``per_hop_max_relations`` most similar to the query) and the seed
relations; each further hop searches the relations of the best unexpanded ends of the
previous hop. The in-memory graph probes a hub's closest relation clusters; Milvus returns
the hub's relations most similar to the query.
"""

from __future__ import annotations

from dataclasses import replace

from llama_index_graphrag_milvus.communities.around import (
    CommunityInfo,
    LocalCommunities,
    ServedCommunities,
)
from llama_index_graphrag_milvus.communities.descriptions import DescriptionTable
from llama_index_graphrag_milvus.milvus.schema import SPREAD_CAP
from llama_index_graphrag_milvus.milvus.served import ServedGraph
from llama_index_graphrag_milvus.milvus.tenants import tenants_filter
from llama_index_graphrag_milvus.records import (
    CandidateRelation,
    EntityHit,
    PassageHit,
    RelationHit,
    Spread,
    best_relations,
)
from llama_index_graphrag_milvus.retrieval.drivers import DriverContext, Handlers, handler, steps
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
    GetPassages,
    GetRelations,
    GetRelationTexts,
    OwnRelations,
    Plan,
    RankPassages,
    RankWords,
    RelationsAround,
    RelationSeeds,
    RelationTexts,
    SearchEntities,
    SearchRelations,
    Together,
)
from llama_index_graphrag_milvus.retrieval.sources.shared import (
    milvus_ranking,
    milvus_words,
    rank_own,
    read_spreads,
    relation_record,
)
from llama_index_graphrag_milvus.retrieval.steps import own_triplets


def tenants_where(context: DriverContext) -> str:
    """A scoped query's filter on relation and entity rows: the tenants its filter pins
    (``""`` when it pins none, or has no scope)."""
    return tenants_filter(context.scope.tenants) if context.scope is not None else ""


def served(context: DriverContext) -> ServedGraph:
    """The served graph's queries, within a scoped query's tenants, each Milvus call counted
    in the query's requests (``RelationsAround`` makes two)."""
    return ServedGraph(context.store, where=tenants_where(context),
                       on_call=context.requests.add)


def _relation_seeds(context: DriverContext, r: RelationSeeds) -> Plan[list[RelationHit]]:
    return (yield from SearchRelations(r.vector, r.top_k, r.threshold,
                                       tenants_where(context)))


def _entity_seeds(context: DriverContext, r: EntitySeeds) -> Plan[list[list[EntityHit]]]:
    return (yield from SearchEntities(r.vectors, r.names, r.top_k, r.threshold,
                                      tenants_where(context), r.among, r.keys))


def _rank_passages(context: DriverContext, r: RankPassages) -> Plan[list[list[PassageHit]]]:
    return (yield from milvus_ranking(r))


def _rank_words(context: DriverContext, r: RankWords) -> Plan[list[list[PassageHit]]]:
    return (yield from milvus_words(context, r))


def next_entities(relations: list[CandidateRelation], expanded: set[str], limit: int
                  ) -> list[str]:
    """The ends of ``relations`` (best first) not expanded yet, at most ``limit``, in the
    order of the best relation that reaches them.

    >>> r = [CandidateRelation("r1", .9, 0, subject_id="a", object_id="b"),
    ...      CandidateRelation("r2", .8, 0, subject_id="b", object_id="c")]
    >>> next_entities(r, {"a"}, 5)
    ['b', 'c']
    """
    found = dict.fromkeys(e for c in relations for e in (c.subject_id, c.object_id)
                          if e and e not in expanded)
    return list(found)[:limit]


def cap_per_passage(relations: list[CandidateRelation], cap: int, limit: int
                    ) -> list[CandidateRelation]:
    """The first ``limit`` relations (best first) that bring a passage still under ``cap``
    relations in the pool (the in-memory graph's ``max_relations_per_passage``)."""
    used: dict[str, int] = {}
    kept: list[CandidateRelation] = []
    for relation in relations:
        if any(used.get(p, 0) < cap for p in relation.passage_ids):
            kept.append(relation)
            for p in relation.passage_ids:
                used[p] = used.get(p, 0) + 1
            if len(kept) == limit:
                break
    return kept


def expand_hop_by_hop(context: DriverContext, r: ExpandPool) -> Plan[list[CandidateRelation]]:
    """The k-hop pool as the in-memory expansion builds it, one
    :class:`~..requests.RelationsAround` per hop (and the seed relations by id): what the
    served graph answers, and what a scoped query walks (see :mod:`.scoped`)."""
    config = r.config
    entities = list(dict.fromkeys(r.entity_ids))
    # the seed relations the relation search returned are not read again
    wanted = tuple(dict.fromkeys(r.relation_ids))
    given = {h.id: relation_record(h) for h in r.relations if h.id in wanted}
    around, read = yield from Together((
        RelationsAround(r.vector, tuple(entities), config.per_hop_max_relations),
        GetRelations(tuple(i for i in wanted if i not in given), r.vector)))
    seed_relations = [*given.values(), *read]
    frontier = best_relations(list({c.id: c for c in (*around, *seed_relations)}.values()),
                              config.per_hop_max_relations)
    kept = list(frontier)
    seen = {c.id for c in frontier}
    expanded = set(entities)
    for hop in range(1, config.hops + 1):
        following = next_entities(frontier, expanded, config.per_hop_max_entities)
        if not following:
            break
        expanded.update(following)
        found = yield from RelationsAround(r.vector, tuple(following),
                                           config.per_hop_max_relations + len(seen))
        frontier = [replace(c, hop=hop) for c in found if c.id not in seen]
        frontier = frontier[:config.per_hop_max_relations]
        seen.update(c.id for c in frontier)
        kept += frontier
    ranked = best_relations(kept, len(kept))
    if config.max_relations_per_passage is not None:
        return cap_per_passage(ranked, config.max_relations_per_passage,
                               config.max_candidate_relations)
    return ranked[:config.max_candidate_relations]


def _around(context: DriverContext, r: RelationsAround) -> list[CandidateRelation]:
    return served(context).relations_around(r.vector, r.entity_ids, r.limit, r.read_first)


async def _aaround(context: DriverContext, r: RelationsAround) -> list[CandidateRelation]:
    return await served(context).arelations_around(r.vector, r.entity_ids, r.limit,
                                                   r.read_first)


def _relations(context: DriverContext, r: GetRelations) -> list[CandidateRelation]:
    return served(context).relations(r.ids, r.vector, r.ends)


async def _arelations(context: DriverContext, r: GetRelations) -> list[CandidateRelation]:
    return await served(context).arelations(r.ids, r.vector, r.ends)


def _own_relations(context: DriverContext, r: OwnRelations
                   ) -> Plan[list[list[CandidateRelation]]]:
    """The relation rows of each passage's stored triplets, read by primary key (a passage
    named by its id is read first)."""
    named = tuple(p for p in r.passages if isinstance(p, str))
    read = {n.node_id: n for n in ((yield from GetPassages(named)) if named else [])}
    nodes = [read.get(p) if isinstance(p, str) else p for p in r.passages]
    triplets = [[t.id for t in own_triplets(node)] if node is not None else []
                for node in nodes]
    wanted = tuple(dict.fromkeys(rid for ids in triplets for rid in ids))
    found = {c.id: replace(c, hop=1)
             for c in ((yield from GetRelations(wanted, r.vector, r.ends)) if wanted else [])}
    return rank_own([[found[rid] for rid in dict.fromkeys(ids) if rid in found]
                     for ids in triplets], r.limit)


def _entity_passages(context: DriverContext, r: EntityPassages) -> dict[str, list[str]]:
    return served(context).entity_passages(r.entity_ids, r.cap)


async def _aentity_passages(context: DriverContext, r: EntityPassages
                            ) -> dict[str, list[str]]:
    return await served(context).aentity_passages(r.entity_ids, r.cap)


def _bridge_spreads(context: DriverContext, r: BridgeSpreads) -> Plan[dict[str, Spread]]:
    """Where the bridges lead as their relation rows record it (no request), the entity
    rows read for the rest: a relation row written before rows recorded it, or a ``cap``
    beyond what a row tells (:data:`~...milvus.schema.SPREAD_CAP`)."""
    recorded = {entity: Spread.recorded(entity, hit, r.cap) if r.cap <= SPREAD_CAP else None
                for entity, hit in r.reached}
    known = {entity: spread for entity, spread in recorded.items() if spread is not None}
    unknown = tuple((entity, hit) for entity, hit in r.reached if entity not in known)
    if not unknown:
        return known
    return {**known, **(yield from read_spreads(context, replace(r, reached=unknown)))}


def _entity_degrees(context: DriverContext, r: EntityDegrees) -> dict[str, int]:
    return served(context).entity_degrees(r.entity_ids)


async def _aentity_degrees(context: DriverContext, r: EntityDegrees) -> dict[str, int]:
    return await served(context).aentity_degrees(r.entity_ids)


def _relation_texts(context: DriverContext, r: RelationTexts) -> Plan[dict[str, str]]:
    return (yield from GetRelationTexts(r.ids))


def _entity_names(context: DriverContext, r: EntityNames) -> Plan[dict[str, str]]:
    return (yield from GetEntityNames(r.ids))


def _communities_built(context: DriverContext, r: CommunitiesBuilt) -> CommunityInfo:
    return context.cache.community_info()


async def _acommunities_built(context: DriverContext, r: CommunitiesBuilt) -> CommunityInfo:
    return await context.cache.aget_community_info()


def _counted(context: DriverContext, found: LocalCommunities) -> LocalCommunities:
    """``found``, its reports' read counted (the memberships' is the handler's)."""
    if found.reports:
        context.requests.add()
    return found


def _communities_of(context: DriverContext, r: CommunitiesOf) -> LocalCommunities:
    return _counted(context, ServedCommunities(context.store).around(r.entity_ids, r.depth))


async def _acommunities_of(context: DriverContext, r: CommunitiesOf) -> LocalCommunities:
    return _counted(context, await ServedCommunities(context.store).aaround(r.entity_ids,
                                                                            r.depth))


def _descriptions_of(context: DriverContext, r: DescriptionsOf) -> DescriptionTable:
    return ServedCommunities(context.store).descriptions(r.ids)


async def _adescriptions_of(context: DriverContext, r: DescriptionsOf) -> DescriptionTable:
    return await ServedCommunities(context.store).adescriptions(r.ids)


SERVED_SOURCE: Handlers = dict([
    steps(RelationSeeds, _relation_seeds),
    steps(EntitySeeds, _entity_seeds),
    steps(RankPassages, _rank_passages),
    steps(RankWords, _rank_words),
    steps(ExpandPool, expand_hop_by_hop),
    handler(RelationsAround, _around, _aaround),
    handler(GetRelations, _relations, _arelations),
    steps(OwnRelations, _own_relations),
    handler(EntityPassages, _entity_passages, _aentity_passages),
    steps(BridgeSpreads, _bridge_spreads),
    handler(EntityDegrees, _entity_degrees, _aentity_degrees),
    steps(RelationTexts, _relation_texts),
    steps(EntityNames, _entity_names),
    handler(CommunitiesBuilt, _communities_built, _acommunities_built),
    handler(CommunitiesOf, _communities_of, _acommunities_of, milvus=True),
    handler(DescriptionsOf, _descriptions_of, _adescriptions_of, milvus=True),
])
"""The graph requests, answered by Milvus (no copy of a whole collection; local search's
community requests by bounded reads of the communities, see
:mod:`~llama_index_graphrag_milvus.communities.around`)."""
