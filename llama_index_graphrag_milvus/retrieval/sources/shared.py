"""What both graph sources answer the same way: Milvus's passage rankings (by meaning and by
words), the passages a filter keeps on Milvus Lite, the relation hits of relation records,
the order of a passage's own relations, and where bridges lead read from the entities."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index_graphrag_milvus.graph.tables import PassageScope
from llama_index_graphrag_milvus.records import CandidateRelation, PassageHit, RelationHit, Spread
from llama_index_graphrag_milvus.retrieval.drivers import DriverContext
from llama_index_graphrag_milvus.retrieval.requests import (
    BridgeSpreads,
    EntityPassages,
    LoadScope,
    MatchWords,
    Plan,
    RankPassages,
    RankWords,
    SearchPassages,
)
from llama_index_graphrag_milvus.retrieval.settings import GraphMode, SearchPlace


def milvus_ranking(r: RankPassages) -> Plan[list[list[PassageHit]]]:
    """``r`` as one Milvus search (the hits carry their nodes)."""
    lists = yield from SearchPassages(r.vectors, r.limit, r.ids, r.where)
    return [[PassageHit(node.node_id, score, node) for node, score in hits] for hits in lists]


def held_scope(context: DriverContext, where: str) -> Plan[PassageScope | None]:
    """The passages ``where`` keeps, over the in-memory passage table (one read of ids per
    filter, until the next write: :class:`~..requests.LoadScope`), on Milvus Lite with the
    graph and the passage searches in memory; else ``None``, and each query asks Milvus.

    Lite evaluates a filter in Python over every passage at each request (about 40 ms per
    request on 3,000 passages), and one process holds its file, whose writes all go through
    it; a server answers a filtered read by primary key cheaply and live, whoever wrote.
    """
    if not context.store.is_lite or context.graph != GraphMode.MEMORY or \
            context.searches.passage_search == SearchPlace.MILVUS:
        return None
    return (yield from LoadScope(where, context.searches.passage_budget()))


def milvus_words(context: DriverContext, r: RankWords) -> Plan[list[list[PassageHit]]]:
    """``r`` as one Milvus full-text search (the hits carry their nodes); no request on an
    index without full-text search."""
    if not r.texts or not context.store.full_text:
        return [[] for _ in r.texts]
    lists = yield from MatchWords(r.texts, r.limit, r.where)
    return [[PassageHit(node.node_id, score, node) for node, score in hits] for hits in lists]


def as_hits(relations: Sequence[CandidateRelation]) -> list[RelationHit]:
    """Relation records as relation-search hits (same order).

    >>> as_hits([CandidateRelation("r1", 0.5, 0, "a b c", ("p",), "a", "c")])[0].passage_ids
    ('p',)
    """
    return [RelationHit(c.id, c.text, c.score, c.subject_id, c.object_id, c.subject_kind,
                        c.object_kind, c.passage_ids, c.subject_passages, c.object_passages)
            for c in relations]


def relation_record(hit: RelationHit) -> CandidateRelation:
    """A relation-search hit as a relation record (hop 0; the inverse of :func:`as_hits`).

    >>> hit = as_hits([CandidateRelation("r1", 0.5, 0, "a b c", ("p",), "a", "c")])[0]
    >>> relation_record(hit) == CandidateRelation("r1", 0.5, 0, "a b c", ("p",), "a", "c")
    True
    """
    return CandidateRelation(hit.id, hit.score, 0, hit.text, hit.passage_ids, hit.subject_id,
                             hit.object_id, hit.subject_kind, hit.object_kind,
                             hit.subject_passages, hit.object_passages)


def rank_own(lists: Sequence[Sequence[CandidateRelation]], limit: int | None
             ) -> list[list[CandidateRelation]]:
    """Each passage's own relations, most similar first (ties by id), at most ``limit``.

    >>> r = [CandidateRelation("b", .5, 1), CandidateRelation("a", .5, 1),
    ...      CandidateRelation("c", .9, 1)]
    >>> [[c.id for c in own] for own in rank_own([r], 2)]
    [['c', 'a']]
    """
    return [sorted(own, key=lambda c: (-c.score, c.id))[:limit] for own in lists]


def read_spreads(context: DriverContext, r: BridgeSpreads) -> Plan[dict[str, Spread]]:
    """Where the bridges ``r`` asks about lead, from the passages of each entity
    (:class:`~..requests.EntityPassages`, one request for all)."""
    passages = yield from EntityPassages(tuple(dict.fromkeys(e for e, _ in r.reached)), r.cap)
    return {entity: Spread.of(passages.get(entity, []), hit) for entity, hit in r.reached}
