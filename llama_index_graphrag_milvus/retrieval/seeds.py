"""The seeds of a query, shared by the methods that walk the graph: the entities it names
(LLM NER, or the query vector and the entities whose whole name the query holds as words)
and the relations most similar to it, searched where the query's graph source searches them
(see :class:`~.settings.SearchSettings`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.records import EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.method import QueryContext, SeedConfig
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedTexts,
    EntitySeeds,
    Known,
    Ner,
    Plan,
    RelationSeeds,
    Request,
    Together,
)
from llama_index_graphrag_milvus.words import name_key, name_spans

NAMED_PER_KEY = 4
"""Entities the named search returns per distinct key among a query's spans (the search asks
for ``4 x keys`` in all, so one key may take more than 4 when another takes fewer): names
that differ only by accents or case ("Zürich" and "Zurich" written by two extractors) share
a key."""


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


def named_seeds(query: QueryContext, config: SeedConfig, names: Sequence[str]
                ) -> tuple[list[str], Request[list[list[EntityHit]]]]:
    """The spans of the query that may be whole entity names (none when an LLM named the
    entities, or with ``config.entity_names`` off), and the request of the stored entities
    they name (whatever their accents and case where the index records the names' keys,
    see :func:`~llama_index_graphrag_milvus.words.name_key`), scored by their similarity to
    the query."""
    spans = name_spans(query.text) if config.entity_names and not names else []
    among = tuple(dict.fromkeys(map(entity_id, spans)))
    if not among:
        return [], Known([[]])
    keys = tuple(dict.fromkeys(map(name_key, spans)))
    return spans, EntitySeeds((query.vector,), (query.text,), NAMED_PER_KEY * len(keys),
                              None, among, keys)


def whole_names(spans: Sequence[str], found: Sequence[EntityHit]) -> list[EntityHit]:
    """The entities of ``found`` a span names (the same :func:`~llama_index_graphrag_milvus.
    words.name_key`), longest span first, each hit's ``searched`` the span; a span inside a
    longer one already taken is skipped ("Kim Jong-il" named, "Kim" not).

    >>> hits = [EntityHit(entity_id(n), n, 0.5, "q") for n in ("Kim", "Kim Jong-il", "Zürich")]
    >>> [(h.name, h.searched) for h in whole_names(["Kim JONG-IL", "Kim", "Zurich"], hits)]
    [('Kim Jong-il', 'Kim JONG-IL'), ('Zürich', 'Zurich')]
    """
    by_key: dict[str, list[EntityHit]] = {}
    for hit in found:
        by_key.setdefault(name_key(hit.name), []).append(hit)
    taken: list[EntityHit] = []
    for span in spans:  # longest first
        hits = by_key.pop(name_key(span), [])
        if not any(span in h.searched for h in taken):
            taken.extend(replace(hit, searched=span) for hit in hits)
    return taken


def find_seeds(query: QueryContext, config: SeedConfig, *alongside: Request[Any]
               ) -> Plan[tuple[Seeds, tuple[Any, ...]]]:
    """NER (when an LLM is given), then the entity and relation searches at the same time,
    with any ``alongside`` requests; returns the seeds and the answers of those requests.
    Without NER names, the entities whose whole name the query holds (:func:`whole_names`)
    follow the entity hits, scored like them by their similarity to the query."""
    names = yield from Ner(query.text)
    vectors = (yield from EmbedTexts(tuple(names))) if names else [query.vector]
    spans, named = named_seeds(query, config, names)
    entity_hits, relation_hits, [stored], *others = yield from Together((
        EntitySeeds(vectors, tuple(names or [query.text]), config.entity_top_k,
                    config.entity_threshold),
        relation_seeds(query, config),
        named,
        *alongside,
    ))
    hits = with_names([h for found in entity_hits for h in found], spans, stored)
    return Seeds(tuple(hits), tuple(relation_hits)), tuple(others)


def with_names(hits: Sequence[EntityHit], spans: Sequence[str], stored: Sequence[EntityHit]
               ) -> list[EntityHit]:
    """The entity ``hits``, then the entities of ``stored`` that ``spans`` name
    (:func:`whole_names`) and the hits lack."""
    known = {h.id for h in hits}
    return [*hits, *(h for h in whole_names(spans, stored) if h.id not in known)]


def question_entities(query: QueryContext, config: SeedConfig, top_k: int
                      ) -> Plan[list[EntityHit]]:
    """The ``top_k`` entities most similar to the whole query, then (with
    ``config.entity_names``) those whose whole name it holds as words, searched in one
    round: local search's entities."""
    spans, named = named_seeds(query, config, [])
    [hits], [stored] = yield from Together((
        EntitySeeds((query.vector,), (query.text,), top_k), named))
    return with_names(hits, spans, stored)
