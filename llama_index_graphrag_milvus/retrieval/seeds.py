"""The seeds of a query, shared by the methods that walk the graph: the entities it names
(LLM NER, or the query vector) and the relations most similar to it, searched in memory or
in Milvus (see :class:`~.method.SeedConfig`), and the bounded k-hop pool they expand into."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from llama_index_graphrag_milvus.records import EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.method import QueryContext, SeedConfig
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedTexts,
    GetRelationTexts,
    Known,
    LoadEntities,
    LoadGraph,
    Ner,
    Plan,
    Request,
    SearchEntities,
    SearchRelations,
    Together,
)
from llama_index_graphrag_milvus.retrieval.steps import Seeds


@dataclass(frozen=True)
class RelationSearch:
    """How one query's relation seeds are found: ``hits`` found in memory (with their texts
    when the graph holds them, else still to read), or ``None`` for a Milvus search."""

    hits: tuple[RelationHit, ...] | None
    texts_known: bool = False

    def request(self, query: QueryContext, config: SeedConfig) -> Request[Any]:
        """The request: the Milvus search, the read of the in-memory hits' texts, or none."""
        if self.hits is None:
            return SearchRelations(query.vector, config.relation_top_k,
                                   config.relation_threshold)
        if self.texts_known:
            return Known(None)
        return GetRelationTexts(tuple(h.id for h in self.hits))

    def finish(self, answer: Any) -> list[RelationHit]:
        """The hits, from the request's answer (a relation whose text is gone from Milvus,
        deleted since the graph was loaded, is left out)."""
        if self.hits is None:
            return list(answer)
        if self.texts_known:
            return list(self.hits)
        return [replace(h, text=answer[h.id]) for h in self.hits if h.id in answer]


def plan_relation_search(query: QueryContext, config: SeedConfig) -> Plan[RelationSearch]:
    """Decide where the relation seeds come from; rank them now when it is memory (with
    ``"auto"``: up to the query's ``memory_search_max_floats``, and always on Milvus Lite)."""
    if config.relation_search == "milvus" or query.graph_served:
        return RelationSearch(None)
    graph = yield from LoadGraph()
    # the graph holds the relation vectors anyway: the budget only bounds the scan's time,
    # and a Milvus Lite search scans them too, slower than numpy (2.3 s against about 25 ms
    # for a million relations of 64 dimensions)
    if not (query.in_memory(config.relation_search, graph.num_relations,
                            graph.vectors.shape[1])
            or (config.relation_search == "auto" and query.milvus_lite)):
        return RelationSearch(None)
    rows, scores = graph.nearest_relations(query.vector, config.relation_top_k,
                                           config.relation_threshold)
    ends = graph.endpoints[rows]
    texts = graph.texts.get(rows) if graph.texts is not None else [""] * len(rows)
    return RelationSearch(tuple(
        RelationHit(rid, text, float(score), graph.entity_ids[int(subject)],
                    graph.entity_ids[int(obj)], *kinds)
        for rid, text, score, (subject, obj), kinds in zip(
            graph.relation_ids.ids(rows), texts, scores.tolist(), ends.tolist(),
            graph.endpoint_kinds(rows), strict=True)),
        texts_known=graph.texts is not None)


def search_relations(query: QueryContext, config: SeedConfig) -> Plan[list[RelationHit]]:
    """The relation seeds alone (in memory or in Milvus, see :class:`~.method.SeedConfig`)."""
    search = yield from plan_relation_search(query, config)
    return search.finish((yield from search.request(query, config)))


def entity_search(query: QueryContext, vectors: Sequence[Sequence[float]],
                  names: Sequence[str], top_k: int, threshold: float | None, setting: str
                  ) -> Plan[Request[list[list[EntityHit]]]]:
    """The request that answers an entity seed search (hits per searched name): the hits
    found in the index's entity table (``Known``), or the Milvus search."""
    if setting != "milvus" and not query.graph_served:
        graph = yield from LoadGraph()
        if query.in_memory(setting, graph.num_entities, graph.vectors.shape[1]):
            table = yield from LoadEntities()
            return Known(table.search(vectors, names, top_k, threshold))
    return SearchEntities(vectors, tuple(names), top_k, threshold)


def find_seeds(query: QueryContext, config: SeedConfig, *alongside: Request[Any]
               ) -> Plan[tuple[Seeds, tuple[Any, ...]]]:
    """NER (when an LLM is given), then the entity and relation searches at the same time,
    with any ``alongside`` requests; returns the seeds and the answers of those requests."""
    names = yield from Ner(query.text)
    vectors = (yield from EmbedTexts(tuple(names))) if names else [query.vector]
    relations = yield from plan_relation_search(query, config)
    entities = yield from entity_search(query, vectors, names or [query.text],
                                        config.entity_top_k, config.entity_threshold,
                                        config.entity_search)
    entity_hits, relation_answer, *others = yield from Together((
        entities,
        relations.request(query, config),
        *alongside,
    ))
    seeds = Seeds(tuple(h for hits in entity_hits for h in hits),
                  tuple(relations.finish(relation_answer)))
    return seeds, tuple(others)
