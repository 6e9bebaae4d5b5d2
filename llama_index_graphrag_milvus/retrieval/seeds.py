"""The seeds of a query, shared by the methods that walk the graph: the entities it names
(LLM NER, or the query vector) and the relations most similar to it, searched where the
query's graph source searches them (see :class:`~.settings.SearchSettings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama_index_graphrag_milvus.records import EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.method import QueryContext, SeedConfig
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedTexts,
    EntitySeeds,
    Ner,
    Plan,
    RelationSeeds,
    Request,
    Together,
)


@dataclass(frozen=True)
class Seeds:
    """What the seed searches found for one query: the start of the expansion."""

    entities: tuple[EntityHit, ...]
    relations: tuple[RelationHit, ...]


def relation_seeds(query: QueryContext, config: SeedConfig) -> RelationSeeds:
    """The request of the query's relation seeds."""
    return RelationSeeds(query.vector, config.relation_top_k, config.relation_threshold)


def search_relations(query: QueryContext, config: SeedConfig) -> Plan[list[RelationHit]]:
    """The relation seeds alone: the ``relation_top_k`` relations most similar to the query,
    with their texts, ends and passages."""
    return (yield from relation_seeds(query, config))


def find_seeds(query: QueryContext, config: SeedConfig, *alongside: Request[Any]
               ) -> Plan[tuple[Seeds, tuple[Any, ...]]]:
    """NER (when an LLM is given), then the entity and relation searches at the same time,
    with any ``alongside`` requests; returns the seeds and the answers of those requests."""
    names = yield from Ner(query.text)
    vectors = (yield from EmbedTexts(tuple(names))) if names else [query.vector]
    entity_hits, relation_hits, *others = yield from Together((
        EntitySeeds(vectors, tuple(names or [query.text]), config.entity_top_k,
                    config.entity_threshold),
        relation_seeds(query, config),
        *alongside,
    ))
    seeds = Seeds(tuple(h for hits in entity_hits for h in hits), tuple(relation_hits))
    return seeds, tuple(others)
