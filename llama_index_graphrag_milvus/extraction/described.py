"""Microsoft GraphRAG's described extraction: entities with a type and a description,
relations with a description and a strength, read from an LLM's JSON answer
(:func:`parse_described`) and kept in node metadata (:func:`descriptions_from_node`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.extraction.triplets import part_text, to_triplets
from llama_index_graphrag_milvus.ids import clean_text, normalize_name
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES
from llama_index_graphrag_milvus.metadata import (
    ENTITY_DESCRIPTIONS_KEY,
    RELATION_DESCRIPTIONS_KEY,
    hide_from_models,
)
from llama_index_graphrag_milvus.parsing import find_json, read_list
from llama_index_graphrag_milvus.records import EntityDescription, RelationDescription, Triplet

T = TypeVar("T")

logger = logging.getLogger(__name__)


DEFAULT_RELATION_PREDICATE = "related to"
"""The predicate of a described relation that comes without one."""
MIN_STRENGTH = 1.0
"""The weakest relation strength; also the strength of a relation without a usable one."""
MAX_STRENGTH = 10.0
"""The strongest relation strength; stronger ones are clamped to it."""

@dataclass(frozen=True)
class DescribedExtraction:
    """What :func:`parse_described` read from one answer: the triplets of the relations
    (in order), the entities and relations with their descriptions, and how many entities
    and relations were dropped as malformed."""

    triplets: list[Triplet]
    entities: list[EntityDescription]
    relations: list[RelationDescription]
    dropped: int = 0

    def cut(self, limit: int) -> DescribedExtraction:
        """The first ``limit`` triplets, entities and relations."""
        return DescribedExtraction(self.triplets[:limit], self.entities[:limit],
                                   self.relations[:limit], self.dropped)


def no_extraction() -> DescribedExtraction:
    """An extraction that found nothing."""
    return DescribedExtraction([], [], [])


def parse_strength(value: Any) -> float:
    """A relation strength: a number or a numeric string, clamped to 1..10; anything else
    (missing, ``"high"``, ``true``, NaN) is :data:`MIN_STRENGTH`.

    >>> parse_strength("8"), parse_strength(12), parse_strength(0.5), parse_strength("high")
    (8.0, 10.0, 1.0, 1.0)
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return MIN_STRENGTH
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):
        return MIN_STRENGTH
    if not math.isfinite(number):
        return MIN_STRENGTH
    return min(max(number, MIN_STRENGTH), MAX_STRENGTH)


def _first(item: dict[str, Any], *names: str) -> Any:
    """The value of the first of ``names`` that ``item`` holds, else ``None``."""
    return next((item[name] for name in names if name in item), None)


def _optional_text(value: Any) -> str:
    """A type or a description: text (numbers written as text), whitespace collapsed;
    ``""`` for anything else."""
    text = part_text(value)
    return clean_text(text) if text else ""


def _to_entity(item: Any) -> EntityDescription | None:
    """An entity from ``{"name", "type", "description"}`` (Microsoft GraphRAG's
    ``entity_name``... too), ``[name, type, description]`` or an :class:`EntityDescription`;
    ``None`` without a usable name."""
    if isinstance(item, EntityDescription):
        parts: Sequence[Any] = (item.name, item.type, item.description)
    elif isinstance(item, dict):
        parts = (_first(item, "name", "entity_name"), _first(item, "type", "entity_type"),
                 _first(item, "description", "entity_description"))
    elif isinstance(item, (list, tuple)) and 1 <= len(item) <= 3:
        parts = (*item, None, None)[:3]
    else:
        return None
    name = _optional_text(parts[0])
    if not name or len(name.encode()) > ENTITY_NAME_MAX_BYTES:
        return None
    return EntityDescription(name, _optional_text(parts[1]).upper(), _optional_text(parts[2]))


def _to_relation(item: Any) -> RelationDescription | None:
    """A relation from ``{"source", "predicate", "target", "description", "strength"}``
    (``subject``/``object`` too), ``[subject, predicate, object, description, strength]``
    (the last two optional) or a :class:`RelationDescription`; ``None`` when its parts do
    not make a triplet (see :func:`to_triplets`)."""
    if isinstance(item, RelationDescription):
        parts: Sequence[Any] = (item.subject, item.predicate, item.object, item.description,
                                item.strength)
    elif isinstance(item, dict):
        parts = (_first(item, "source", "subject", "source_entity"),
                 _first(item, "predicate", "relation"),
                 _first(item, "target", "object", "target_entity"),
                 _first(item, "description", "relationship_description"),
                 _first(item, "strength", "relationship_strength"))
    elif isinstance(item, (list, tuple)) and 3 <= len(item) <= 5:
        parts = (*item, None, None)[:5]
    else:
        return None
    subject, predicate, obj, description, strength = parts
    if predicate is None or (isinstance(predicate, str) and not predicate.strip()):
        predicate = DEFAULT_RELATION_PREDICATE
    triplets, _ = to_triplets([[subject, predicate, obj]])
    if not triplets:
        return None
    triplet = triplets[0]
    return RelationDescription(triplet.subject, triplet.predicate, triplet.object,
                               _optional_text(description), parse_strength(strength))


def _first_of_each(items: Any, convert: Callable[[Any], T | None], key: Callable[[T], str]
                   ) -> tuple[list[T], int]:
    """The items ``convert`` accepts, the first of each ``key``, and the number dropped; a
    value that is not a list (``None`` aside) counts as one dropped."""
    if not isinstance(items, list):
        return [], int(items is not None)
    kept: dict[str, T] = {}
    dropped = 0
    for item in items:
        converted = convert(item)
        if converted is None:
            dropped += 1
        else:
            kept.setdefault(key(converted), converted)
    return list(kept.values()), dropped


def entities_of(items: Any) -> tuple[list[EntityDescription], int]:
    """Clean entities: the first of each name (see :func:`normalize_name`)."""
    return _first_of_each(items, _to_entity, lambda entity: normalize_name(entity.name))


def relations_of(items: Any) -> tuple[list[RelationDescription], int]:
    """Clean relations: the first of each relation id."""
    return _first_of_each(items, _to_relation, lambda relation: relation.triplet.id)


_DESCRIBED_KEYS = ("relations", "relationships", "entities")


def _described_json(raw: str) -> dict[str, Any] | None:
    for key in _DESCRIBED_KEYS:
        value = find_json(raw, key=key)
        if isinstance(value, dict) and any(k in value for k in _DESCRIBED_KEYS):
            return value
    # no whole object: an answer cut off (the output-token limit) keeps its complete items
    lists = {key: read for key in _DESCRIBED_KEYS if (read := read_list(raw, key)) is not None}
    if not any(read.items for read in lists.values()):
        return None
    logger.warning("described extraction: the answer was cut off (the LLM's output-token "
                   "limit?); kept its complete items: %s", ", ".join(
                       f"{len(read.items)} {key}" for key, read in lists.items()))
    return {key: read.items for key, read in lists.items()}


def parse_described(raw: str) -> DescribedExtraction | None:
    """Entities, relations and their descriptions from an answer to
    :data:`DEFAULT_DESCRIBED_EXTRACT_PROMPT` (JSON, possibly fenced or wrapped in prose).

    The answer is an object with ``"relations"`` (or ``"relationships"``) and/or
    ``"entities"``. A relation needs a source and a target (``subject``/``object`` are
    read too) that make a triplet as :func:`to_triplets` cleans them (numbers kept as
    text); a relation without a predicate (missing, null or blank) gets
    :data:`DEFAULT_RELATION_PREDICATE`; its strength is a number or a numeric string
    clamped to 1..10, and 1 when missing or not a number (:func:`parse_strength`). An
    entity needs a name; its type is upper-cased (``""`` when missing) and descriptions are
    whitespace-collapsed (``""`` when missing). A relation whose endpoints are not among the
    entities is kept (they just have no description). Duplicates (same entity name, same
    relation id) are kept once, the first, and not counted as dropped; malformed entities
    and relations are dropped and counted. An answer with no such object is ``None`` and a
    warning.

    >>> found = parse_described('Sure: {"entities": [{"name": "Basel", "type": "geo"}], '
    ...     '"relations": [{"source": "Euler", "predicate": "born in", "target": "Basel", '
    ...     '"strength": "9"}]}')
    >>> found.triplets, found.entities[0].type, found.relations[0].strength
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 'GEO', 9.0)
    """
    value = _described_json(raw)
    if value is None:
        logger.warning("described extraction: no JSON object with entities or relations in "
                       "the answer %.200r", raw)
        return None
    entities, dropped_entities = entities_of(value.get("entities"))
    relations, dropped_relations = relations_of(_first(value, "relations", "relationships"))
    return DescribedExtraction([r.triplet for r in relations], entities, relations,
                               dropped_entities + dropped_relations)


def entity_lists(entities: Iterable[EntityDescription]) -> list[list[str]]:
    """Entities as ``[name, type, description]`` lists: how metadata and caches hold them."""
    return [[e.name, e.type, e.description] for e in entities]


def relation_lists(relations: Iterable[RelationDescription]) -> list[list[Any]]:
    """Relations as ``[subject, predicate, object, description, strength]`` lists."""
    return [[r.subject, r.predicate, r.object, r.description, r.strength] for r in relations]


def store_descriptions(node: BaseNode, entities: list[EntityDescription],
                        relations: list[RelationDescription]) -> None:
    """Write the descriptions to ``node.metadata`` (read back by
    :func:`descriptions_from_node`), hidden from LLMs and embedding models."""
    node.metadata[ENTITY_DESCRIPTIONS_KEY] = entity_lists(entities)
    node.metadata[RELATION_DESCRIPTIONS_KEY] = relation_lists(relations)
    hide_from_models(node, ENTITY_DESCRIPTIONS_KEY, RELATION_DESCRIPTIONS_KEY)


def descriptions_from_node(node: BaseNode
                           ) -> tuple[list[EntityDescription], list[RelationDescription]]:
    """The entity and relation descriptions ``TripletExtractor(describe=True)`` stored on
    a node (``metadata["graphrag_entity_descriptions"]`` and
    ``metadata["graphrag_relation_descriptions"]``); ``([], [])`` when there are none.
    Entries are read with the rules of :func:`parse_described`; malformed ones are skipped.

    >>> from llama_index.core.schema import TextNode
    >>> node = TextNode(text="Euler was born in Basel.", metadata={
    ...     "graphrag_entity_descriptions": [["Basel", "GEO", "A Swiss city."], ["", "X", ""]],
    ...     "graphrag_relation_descriptions": [["Euler", "born in", "Basel", "", 9], "bad"]})
    >>> entities, relations = descriptions_from_node(node)
    >>> [e.name for e in entities], [r.triplet.text for r in relations]
    (['Basel'], ['Euler born in Basel'])
    """
    entities, _ = entities_of(node.metadata.get(ENTITY_DESCRIPTIONS_KEY))
    relations, _ = relations_of(node.metadata.get(RELATION_DESCRIPTIONS_KEY))
    return entities, relations
