"""A filtered retrieval: the graph requests answered only from what the filter's passages
support, whichever source holds the graph.

Relations and entities are shared by the tenants of an index (the same fact from two tenants
is one relation linked to both tenants' passages). A retrieval filtered to some passages
(``filters``, a tenant's) must neither show nor use what only other passages support, or one
tenant's data would steer, and show through, another's answers. Every graph request of a
scoped query is answered by the wrapped source (in memory or served), then narrowed:

- a relation stays only when one of its passages matches the filter, and keeps only those
  passages (a relation of two tenants shows each tenant its own passages);
- an entity stays only when one of its relations does (its passages are read and checked);
- the k-hop pool walks only such relations, hop by hop (:func:`~.served.expand_hop_by_hop`
  over the scoped :class:`~..requests.RelationsAround`): another tenant's relation is never
  a step towards one of this tenant's;
- lists are read a few times past their size first, and again once when the filter left too
  few, so that another tenant's hits do not crowd this tenant's out.

A passage ranking among given ids (PageRank's, PCST's and the k-hop pool's passages) is asked
among the matching ones without the filter, so that the source may rank them in memory; a
ranking over every passage (the question's and the bridges' lists) keeps the filter. A
scoped query gets no BM25 lists (:class:`~..requests.RankWords`, :class:`~..requests.MatchWords`):
BM25 weighs words by the term statistics of the whole collection, other tenants' passages
included.

Which passages match is one read of ids per step (:class:`~..requests.MatchPassages`),
remembered for the rest of the query (:class:`~..drivers.Scope`); on Milvus Lite, where the
graph and the passage table are in memory, the filter's passages are read once instead
(:func:`~.shared.held_scope`, until the next write), and the question's and the bridges'
rankings run in memory among them. The texts and names a method
asks for by id (:class:`~..requests.RelationTexts`, :class:`~..requests.EntityNames`) come from
these narrowed answers, and the passage rankings carry the filter themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from llama_index_graphrag_milvus.records import (
    CandidateRelation,
    EntityHit,
    PassageHit,
    RelationHit,
)
from llama_index_graphrag_milvus.retrieval.drivers import (
    Delegate,
    DriverContext,
    Entry,
    Handlers,
    Steps,
)
from llama_index_graphrag_milvus.retrieval.requests import (
    GRAPH_REQUESTS,
    BridgeSpreads,
    EntityDegrees,
    EntityPassages,
    EntitySeeds,
    ExpandPool,
    GetRelations,
    MatchPassages,
    MatchWords,
    OwnRelations,
    Plan,
    RankPassages,
    RankWords,
    RelationsAround,
    RelationSeeds,
    Request,
    Together,
)
from llama_index_graphrag_milvus.retrieval.sources.served import expand_hop_by_hop
from llama_index_graphrag_milvus.retrieval.sources.shared import held_scope, read_spreads

R = TypeVar("R", CandidateRelation, RelationHit)

OVERFETCH = 4
"""A scoped list reads this many times its size first, and this many times more again once
when the filter left too few."""
ENTITY_PROBE = 64
"""The relations of an entity whose passages say whether the filter's passages name it."""


def matching(context: DriverContext, ids: Sequence[str]) -> Plan[set[str]]:
    """Those of ``ids`` whose passage matches the query's filter (one read for the ids this
    query has not checked yet)."""
    scope = context.scope
    if scope is None:
        return set(ids)
    unknown = scope.unknown(ids)
    if unknown:
        held = yield from held_scope(context, scope.where)
        if held is not None:  # the passages the table does not hold are asked to Milvus
            kept, elsewhere = held.split(unknown)
            scope.learn(set(unknown) - set(elsewhere), kept)
            unknown = tuple(elsewhere)
    if unknown:
        scope.learn(unknown, (yield from MatchPassages(unknown, scope.where)))
    return set(scope.visible(ids))


def narrowed(relations: Sequence[R], visible: set[str]) -> list[R]:
    """The relations with a passage in ``visible``, each with only those passages.

    >>> r = [CandidateRelation("r1", .9, 0, passage_ids=("a", "b")),
    ...      CandidateRelation("r2", .8, 0, passage_ids=("b",))]
    >>> [(c.id, c.passage_ids) for c in narrowed(r, {"a"})]
    [('r1', ('a',))]
    """
    kept = []
    for relation in relations:
        passages = tuple(p for p in relation.passage_ids if p in visible)
        if passages:
            kept.append(replace(relation, passage_ids=passages))
    return kept


def visible_relations(context: DriverContext, relations: Sequence[R]) -> Plan[list[R]]:
    """``relations`` narrowed to the query's filter."""
    seen = yield from matching(context, [p for c in relations for p in c.passage_ids])
    return narrowed(relations, seen)


def _overfetched(inner: Entry, request: Any, size: int, resize: Callable[[int], Any],
                 keep: Callable[[Any], Plan[list[Any]]]) -> Plan[list[Any]]:
    """The first ``size`` answers that ``keep`` keeps: the inner answer of ``resize(size *
    OVERFETCH)``, and of ``resize(size * OVERFETCH ** 2)`` once when too few were kept of a
    full answer."""
    if size < 1:
        return (yield from keep((yield from Delegate(inner, request))))
    asked = size * OVERFETCH
    kept: list[Any] = []
    for _ in range(2):
        answer = yield from Delegate(inner, resize(asked))
        kept = yield from keep(answer)
        if len(kept) >= size or len(answer) < asked:
            break
        asked *= OVERFETCH
    return kept[:size]


def _relation_seeds(inner: Entry) -> Steps[list[RelationHit]]:
    def plan(context: DriverContext, r: RelationSeeds) -> Plan[list[RelationHit]]:
        return (yield from _overfetched(
            inner, r, r.top_k, lambda k: replace(r, top_k=k),
            lambda hits: visible_relations(context, hits)))
    return Steps(plan)


def _relations_around(inner: Entry) -> Steps[list[CandidateRelation]]:
    def plan(context: DriverContext, r: RelationsAround) -> Plan[list[CandidateRelation]]:
        return (yield from _overfetched(
            inner, r, r.limit, lambda k: replace(r, limit=k),
            lambda found: visible_relations(context, found)))
    return Steps(plan)


def _rank_passages(inner: Entry) -> Steps[list[list[PassageHit]]]:
    """A ranking among given passages is asked among those the filter keeps (known from this
    query's reads, or read once) without the filter expression, so that the source may rank
    them in memory (a filtered Milvus search among ids costs a Lite file hundreds of
    milliseconds); a ranking over every passage keeps its filter (one Milvus search)."""
    def plan(context: DriverContext, r: RankPassages) -> Plan[list[list[PassageHit]]]:
        if r.ids is None or not r.where:
            return (yield from Delegate(inner, r))
        seen = yield from matching(context, r.ids)
        ids = tuple(i for i in r.ids if i in seen)
        if not ids:  # never an empty selection: it could read as "every passage"
            return [[] for _ in r.vectors]
        return (yield from Delegate(inner, replace(r, ids=ids, where="")))
    return Steps(plan)


def _get_relations(inner: Entry) -> Steps[list[CandidateRelation]]:
    def plan(context: DriverContext, r: GetRelations) -> Plan[list[CandidateRelation]]:
        return (yield from visible_relations(  # by their passages: always read them
            context, (yield from Delegate(inner, replace(r, ends=True)))))
    return Steps(plan)


def _own_relations(inner: Entry) -> Steps[list[list[CandidateRelation]]]:
    def plan(context: DriverContext, r: OwnRelations) -> Plan[list[list[CandidateRelation]]]:
        # the passages of each relation decide what a tenant sees: always read them
        lists = yield from Delegate(inner, replace(r, ends=True))
        seen = yield from matching(context, [p for own in lists for c in own
                                             for p in c.passage_ids])
        return [narrowed(own, seen) for own in lists]
    return Steps(plan)


def _entity_passages(inner: Entry) -> Steps[dict[str, list[str]]]:
    def plan(context: DriverContext, r: EntityPassages) -> Plan[dict[str, list[str]]]:
        found = yield from Delegate(inner, r)
        seen = yield from matching(context, [p for ps in found.values() for p in ps])
        return {entity: [p for p in ps if p in seen] for entity, ps in found.items()}
    return Steps(plan)


def _named(inner_passages: Entry, context: DriverContext, entity_ids: Sequence[str]
           ) -> Plan[set[str]]:
    """Those of ``entity_ids`` that a passage of the filter names: one of the passages of at
    most :data:`ENTITY_PROBE` of their relations matches."""
    if not entity_ids:
        return set()
    found = yield from Delegate(inner_passages, EntityPassages(tuple(entity_ids),
                                                               ENTITY_PROBE))
    seen = yield from matching(context, [p for ps in found.values() for p in ps])
    return {entity for entity, ps in found.items() if seen.intersection(ps)}


def _entity_seeds(inner: Entry, inner_passages: Entry) -> Steps[list[list[EntityHit]]]:
    def plan(context: DriverContext, r: EntitySeeds) -> Plan[list[list[EntityHit]]]:
        def keep(lists: list[list[EntityHit]]) -> Plan[list[list[EntityHit]]]:
            named = yield from _named(inner_passages, context,
                                      list(dict.fromkeys(h.id for hits in lists for h in hits)))
            return [[h for h in hits if h.id in named] for hits in lists]

        asked = r.top_k * OVERFETCH
        kept: list[list[EntityHit]] = []
        for _ in range(2):
            lists = yield from Delegate(inner, replace(r, top_k=asked))
            kept = yield from keep(lists)
            if all(len(k) >= r.top_k or len(found) < asked
                   for k, found in zip(kept, lists, strict=True)):
                break
            asked *= OVERFETCH
        return [hits[:r.top_k] for hits in kept]
    return Steps(plan)


def _expand_pool(context: DriverContext, r: ExpandPool) -> Plan[list[CandidateRelation]]:
    """Hop by hop over the scoped relations (never a step through another tenant's)."""
    return (yield from expand_hop_by_hop(context, r))


def _entity_degrees(context: DriverContext, r: EntityDegrees) -> Plan[dict[str, int]]:
    """Each entity's relations that the filter's passages support, at most
    :data:`ENTITY_PROBE` counted."""
    axis = (1.0, *([0.0] * ((context.store.dim or 1) - 1)))  # any direction: only counted
    answers = yield from Together(tuple(
        RelationsAround(axis, (entity,), ENTITY_PROBE) for entity in r.entity_ids))
    return {entity: len(found) for entity, found in zip(r.entity_ids, answers, strict=True)}


def _passed(inner: Entry) -> Steps[Any]:
    """The inner answer as it is (a request whose answer the scope does not narrow)."""
    def plan(context: DriverContext, r: Request[Any]) -> Plan[Any]:
        return (yield from Delegate(inner, r))
    return Steps(plan)


def _no_words(context: DriverContext, r: RankWords | MatchWords) -> Plan[list[list[Any]]]:
    """No BM25 lists: BM25 scores words by term statistics of the whole collection, every
    tenant's passages included, so a scoped query ranks by meaning alone."""
    return [[] for _ in r.texts]
    yield  # a plan that asks nothing


def scoped(inner: Handlers) -> Handlers:
    """The graph requests of ``inner`` (a source's table) answered within the query's scope
    (see the module docstring)."""
    table: dict[type[Request[Any]], Entry] = {kind: _passed(inner[kind])
                                              for kind in GRAPH_REQUESTS}
    table.update({
        RelationSeeds: _relation_seeds(inner[RelationSeeds]),
        EntitySeeds: _entity_seeds(inner[EntitySeeds], inner[EntityPassages]),
        ExpandPool: Steps(_expand_pool),
        RelationsAround: _relations_around(inner[RelationsAround]),
        GetRelations: _get_relations(inner[GetRelations]),
        OwnRelations: _own_relations(inner[OwnRelations]),
        EntityPassages: _entity_passages(inner[EntityPassages]),
        # a tenant's spreads count its passages only: read, never the rows' recorded ones
        BridgeSpreads: Steps(read_spreads),
        EntityDegrees: Steps(_entity_degrees),
        RankPassages: _rank_passages(inner[RankPassages]),
        RankWords: Steps(_no_words),
        MatchWords: Steps(_no_words),
    })
    return table
