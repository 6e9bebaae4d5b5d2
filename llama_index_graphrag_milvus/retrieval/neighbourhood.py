"""The graph steps the methods share, from the graph held in memory or served by Milvus.

A method asks for the part of the graph around its query: the k-hop pool of its seeds
(:func:`expand_pool`), the relations of some entities (:func:`relations_of`), where
candidate bridges lead (:func:`bridge_spreads`), the own relations of passages
(:func:`own_relation_lists`). Each step reads the index's in-memory graph
(``QueryContext.graph_served`` false) or asks Milvus a bounded number of requests
(:class:`~.requests.RelationsAround`, :class:`~.requests.GetRelations`,
:class:`~.requests.EntityPassages`), so a method does not know where the graph lives.

The served k-hop pool follows the in-memory expansion hop by hop: hop 0 is the relations of
the seed entities (the ``per_hop_max_relations`` most similar to the query: one filtered
search) and the seed relations; each further hop searches the relations of the best
unexpanded endpoints of the previous hop. The in-memory graph probes a hub's closest
relation clusters; Milvus returns the hub's relations most similar to the query, exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.errors import EmptyIndexError
from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.records import CandidateRelation, RelationHit, best_relations
from llama_index_graphrag_milvus.retrieval.method import QueryContext
from llama_index_graphrag_milvus.retrieval.requests import (
    EntityPassages,
    GetRelations,
    GetRelationTexts,
    LoadGraph,
    Plan,
    RelationsAround,
    Together,
)
from llama_index_graphrag_milvus.retrieval.steps import Seeds, own_relations, own_triplets


def expand_pool(query: QueryContext, seeds: Seeds, config: ExpansionConfig,
                required: bool = True) -> Plan[list[CandidateRelation]]:
    """The bounded k-hop candidate pool of the seeds, best first. An index with no relation
    raises :class:`~llama_index_graphrag_milvus.errors.EmptyIndexError` when the pool is
    ``required`` (the in-memory graph; the served graph finds an empty pool), else gives an
    empty pool."""
    if query.graph_served:
        return (yield from _served_pool(query, seeds, config))
    graph = yield from LoadGraph()
    if graph.num_relations == 0:
        if not required:
            return []
        raise EmptyIndexError("the index holds passages but no relations; ingest triplets")
    return graph.expand(query.vector, [h.id for h in seeds.entities],
                        [h.id for h in seeds.relations], config)


def _served_pool(query: QueryContext, seeds: Seeds, config: ExpansionConfig
                 ) -> Plan[list[CandidateRelation]]:
    vector = tuple(query.vector)
    entities = list(dict.fromkeys(h.id for h in seeds.entities))
    around, seed_relations = yield from Together((
        RelationsAround(vector, tuple(entities), config.per_hop_max_relations),
        GetRelations(tuple(dict.fromkeys(h.id for h in seeds.relations)), vector)))
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
        found = yield from RelationsAround(vector, tuple(following),
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


def next_entities(relations: Sequence[CandidateRelation], expanded: set[str], limit: int
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


def cap_per_passage(relations: Sequence[CandidateRelation], cap: int, limit: int
                    ) -> list[CandidateRelation]:
    """The first ``limit`` relations (best first) that bring a passage still under ``cap``
    relations in the pool."""
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


def relations_of(query: QueryContext, entity_ids: Sequence[str], limit: int,
                 exclude: Iterable[str] = ()) -> Plan[list[RelationHit]]:
    """The ``limit`` relations of ``entity_ids`` most similar to the query, other than
    ``exclude``, best first, as relation hits (with their ends, kinds and passages)."""
    if not entity_ids or limit < 1:
        return []
    known = set(exclude)
    if query.graph_served:
        found = yield from RelationsAround(tuple(query.vector), tuple(entity_ids),
                                           limit + len(known))
    else:
        graph = yield from LoadGraph()
        pool = graph.expand(query.vector, entity_ids, [], ExpansionConfig(
            hops=0, max_candidate_relations=limit + len(known)))
        found = with_ends(graph, pool)
    extra = [c for c in found if c.id not in known][:limit]
    texts = yield from _texts(query, extra)
    return [RelationHit(c.id, texts[c.id], c.score, c.subject_id, c.object_id, c.subject_kind,
                        c.object_kind, c.passage_ids) for c in extra if c.id in texts]


def _texts(query: QueryContext, relations: Sequence[CandidateRelation]
           ) -> Plan[dict[str, str]]:
    """The relations' texts: those they carry, the graph's, then one Milvus read."""
    known = {c.id: c.text for c in relations if c.text}
    missing = tuple(c.id for c in relations if not c.text)
    if missing and not query.graph_served:
        graph = yield from LoadGraph()
        known.update(graph.relation_texts(missing))
        missing = tuple(rid for rid in missing if rid not in known)
    return {**known, **((yield from GetRelationTexts(missing)) if missing else {})}


def with_ends(graph: EntityRelationGraph, relations: Sequence[CandidateRelation]
              ) -> list[CandidateRelation]:
    """``relations`` with their ends' ids and kinds and their passages, from the in-memory
    graph (relations it does not know are left out)."""
    rows = graph.relation_rows([c.id for c in relations])
    found = dict(zip(graph.relation_ids.ids(rows), zip(
        graph.endpoints[rows].tolist(), graph.endpoint_kinds(rows),
        graph.passages_of(rows), strict=True), strict=True))
    return [replace(c, subject_id=graph.entity_ids[ends[0]], object_id=graph.entity_ids[ends[1]],
                    subject_kind=kinds[0], object_kind=kinds[1], passage_ids=tuple(passages))
            for c in relations if c.id in found
            for ends, kinds, passages in (found[c.id],)]


@dataclass(frozen=True)
class Spread:
    """Where an entity's relations lead: how many passages they come from (up to the cap
    asked) and whether one of them is not a passage of the relation that reached it."""

    passages: int
    elsewhere: bool


def bridge_spreads(query: QueryContext, reached: Sequence[tuple[str, RelationHit]], cap: int
                   ) -> Plan[dict[str, Spread]]:
    """For each ``(entity id, the relation that reached it)``: its :class:`Spread` (the
    passages of at most ``cap`` of its relations)."""
    if not reached:
        return {}
    if query.graph_served:
        passages = yield from EntityPassages(tuple(dict.fromkeys(e for e, _ in reached)), cap)
        return {entity: Spread(len(passages.get(entity, ())),
                               bool(set(passages.get(entity, ())) - set(hit.passage_ids)))
                for entity, hit in reached}
    graph = yield from LoadGraph()
    return {entity: Spread(len(graph.entity_passages(entity, cap)),
                           graph.leads_elsewhere(entity, hit.id))
            for entity, hit in reached}


def own_relation_lists(query: QueryContext, nodes: Sequence[BaseNode], limit: int
                       ) -> Plan[list[list[CandidateRelation]]]:
    """Each passage's own relations, most similar to the query first, at most ``limit``:
    from the in-memory graph (its links and texts, one matrix product for all), or from the
    passages' stored triplets (their relation rows read and scored: the served graph, or a
    graph built without texts)."""
    graph = None if query.graph_served else (yield from LoadGraph())
    if graph is not None and graph.texts is not None:
        texts = graph.texts
        return [[CandidateRelation(id=rid, score=similarity, hop=1, text=text,
                                   passage_ids=(node.node_id,))
                 for rid, similarity, text in zip(graph.relation_ids.ids(rows),
                                                  similarities.tolist(), texts.get(rows),
                                                  strict=True)]
                for node, (rows, similarities) in zip(
                    nodes, graph.own_relations([n.node_id for n in nodes], query.vector,
                                               limit), strict=True)]
    triplets = [[t.id for t in own_triplets(node)] for node in nodes]
    wanted = tuple(dict.fromkeys(rid for ids in triplets for rid in ids))
    if graph is not None:
        scores = graph.relation_scores(wanted, query.vector) if wanted else {}
    else:
        rows = (yield from GetRelations(wanted, tuple(query.vector))) if wanted else []
        scores = {c.id: c.score for c in rows}
    return [own_relations(node, scores, 1, limit) for node in nodes]
