"""Triplet extraction: an LLM turns passages into (subject, predicate, object) triplets.

:class:`TripletExtractor` is a LlamaIndex ``TransformComponent``: it writes the triplets of
each node into ``node.metadata["graphrag_triplets"]``. Triplets that core's own path
extractors (``SimpleLLMPathExtractor``, ``SchemaLLMPathExtractor``,
``DynamicLLMPathExtractor``) leave in node metadata are read too, see
:func:`triplets_from_node`.

Extraction of a real corpus is concurrent (at most ``num_workers`` LLM requests in flight),
retried (``max_retries`` with exponential backoff from ``retry_base_delay``), cached and
resumable: an :class:`ExtractionCache` keeps the triplets of every passage extracted
successfully, keyed by the passage text, the prompt and the model, in a LlamaIndex kvstore
(a JSON file by default, persisted as the run goes; Redis, MongoDB, Postgres... through any
``BaseKVStore``). A run that crashed, or that left passages failed, is simply run again:
only the passages missing from the cache go to the LLM.

The cache belongs to the extraction, not to the index: its keys say nothing of where the
triplets are stored, so one cache serves a Milvus Lite file, a Milvus server or Zilliz
Cloud alike, and any number of indexes. Keep it next to the ingestion job (a file on the
machine that runs it), or in a shared kvstore when several machines ingest into one server.

With ``describe=True`` the extractor runs Microsoft GraphRAG's extraction instead: the LLM
returns entities with a type and a description, and relations with a predicate, a
description and a 1-10 strength (:data:`DEFAULT_DESCRIBED_EXTRACT_PROMPT`,
:func:`parse_described`). The triplets are stored as above; the descriptions go to
``metadata["graphrag_entity_descriptions"]`` and ``metadata["graphrag_relation_descriptions"]``
and are read back with :func:`descriptions_from_node`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
from llama_index.core.ingestion import IngestionCache
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.settings import Settings
from llama_index.core.storage.kvstore import SimpleKVStore
from llama_index.core.storage.kvstore.types import BaseKVStore
from tqdm import tqdm

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.llm import (
    Sleep,
    Threads,
    call_with_retries,
    gather_bounded,
    run_with_threads,
)
from llama_index_graphrag_milvus.parsing import find_json
from llama_index_graphrag_milvus.records import (
    ENTITY_DESCRIPTIONS_KEY,
    ENTITY_NAME_MAX_BYTES,
    RELATION_DESCRIPTIONS_KEY,
    TRIPLETS_KEY,
    EntityDescription,
    RelationDescription,
    Triplet,
    clean_text,
    hide_from_models,
    normalize_name,
)
from llama_index_graphrag_milvus.validation import check_int

T = TypeVar("T")

logger = logging.getLogger(__name__)

DEFAULT_TRIPLET_EXTRACT_PROMPT = PromptTemplate(
    "Extract knowledge-graph triplets from the passage below. A triplet is "
    "[subject, predicate, object]: subject and object are named entities or concise noun "
    "phrases, written as in the passage with pronouns resolved to the names they refer to; "
    "the predicate is a short verb phrase. Extract at most {max_triplets} triplets.\n"
    'Answer with JSON only, in the form {"triplets": [["subject", "predicate", "object"], '
    "...]}.\n\n"
    "Example passage: Leonhard Euler was born in Basel and was a student of Johann "
    "Bernoulli.\n"
    'Example answer: {"triplets": [["Leonhard Euler", "was born in", "Basel"], '
    '["Leonhard Euler", "was a student of", "Johann Bernoulli"]]}\n\n'
    "Passage:\n{text}\n\nAnswer:"
)
"""The default extraction prompt; variables ``{text}`` and ``{max_triplets}``."""

DEFAULT_ENTITY_TYPES = ("organization", "person", "geo", "event")
"""The entity types Microsoft GraphRAG's extraction asks for by default."""
DEFAULT_RELATION_PREDICATE = "related to"
"""The predicate of a described relation that comes without one."""
MIN_STRENGTH = 1.0
"""The weakest relation strength; also the strength of a relation without a usable one."""
MAX_STRENGTH = 10.0
"""The strongest relation strength; stronger ones are clamped to it."""

# The JSON examples use single braces: core's PromptTemplate formats with a SafeFormatter
# that leaves unknown ``{...}`` groups as written (and would show ``{{`` doubled).
DEFAULT_DESCRIBED_EXTRACT_PROMPT = PromptTemplate(
    "Extract the entities of the passage below and the relations between them, for a "
    "knowledge graph.\n"
    "1. Entities: every entity of one of these types: {entity_types}. For each, give its "
    "name as written in the passage (pronouns resolved to the names they refer to), its "
    "type (one of the types above) and a short description of its attributes and "
    "activities as the passage tells them.\n"
    "2. Relations: the pairs of those entities (source, target) that the passage clearly "
    "relates. "
    "For each, give a predicate (a short verb phrase, so that \"source predicate target\" "
    "reads as a sentence), a short description of how they are related, and a strength "
    "from 1 to 10 (a number: how strong the relation is). Extract at most {max_triplets} "
    "relations.\n"
    'Answer with JSON only, in the form {"entities": [{"name": "...", "type": "...", '
    '"description": "..."}], "relations": [{"source": "...", "predicate": "...", '
    '"target": "...", "description": "...", "strength": 1}]}.\n\n'
    "Example passage: Leonhard Euler was born in Basel and was a student of Johann "
    "Bernoulli.\n"
    'Example answer: {"entities": [{"name": "Leonhard Euler", "type": "PERSON", '
    '"description": "A mathematician born in Basel who studied with Johann Bernoulli."}, '
    '{"name": "Basel", "type": "GEO", "description": "The city where Leonhard Euler was '
    'born."}, {"name": "Johann Bernoulli", "type": "PERSON", "description": "The teacher '
    'of Leonhard Euler."}], "relations": [{"source": "Leonhard Euler", "predicate": "was '
    'born in", "target": "Basel", "description": "Basel is the birthplace of Leonhard '
    'Euler.", "strength": 9}, {"source": "Leonhard Euler", "predicate": "was a student of", '
    '"target": "Johann Bernoulli", "description": "Johann Bernoulli taught Leonhard '
    'Euler.", "strength": 8}]}\n\n'
    "Passage:\n{text}\n\nAnswer:"
)
"""The default prompt of ``TripletExtractor(describe=True)`` (Microsoft GraphRAG's
extraction, answered in JSON); variables ``{text}``, ``{max_triplets}`` and
``{entity_types}`` (the types joined by ``", "``)."""


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (no lone surrogates such as ``"\\ud800"``).

    >>> is_utf8("Ōsaka"), is_utf8("bad \\ud800")
    (True, False)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _part_text(part: Any) -> str | None:
    """A triplet part as text: strings, and numbers (years, counts) written as text; a
    string Milvus cannot store (lone surrogates, not valid UTF-8) is ``None``."""
    if isinstance(part, str):
        return part if is_utf8(part) else None
    if isinstance(part, int) and not isinstance(part, bool):
        try:
            return str(part)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            return None
    if isinstance(part, float) and math.isfinite(part):  # NaN, infinities: no entity
        return str(part)
    return None


def _triplet_parts(item: Any) -> Sequence[Any] | None:
    if isinstance(item, Triplet):
        return (item.subject, item.predicate, item.object)
    if isinstance(item, dict):
        keys = ("subject", "predicate", "object")
        return tuple(item.get(k) for k in keys) if all(k in item for k in keys) else None
    if isinstance(item, (list, tuple)):
        return item
    return None


def to_triplets(items: Iterable[Any]) -> tuple[list[Triplet], int]:
    """Clean ``items`` into :class:`Triplet` objects; returns them and how many were dropped.

    Accepted items: 3-sequences of strings, ``{"subject", "predicate", "object"}`` dicts and
    :class:`Triplet`; a number part (``["Eleanor", "was born in", 1122]``) is kept as its
    text. Dropped: other lengths (2- or 4-tuples), empty parts or parts that are neither
    text nor numbers, and names longer than the entity collection allows. Whitespace is
    collapsed; the text is otherwise kept as written. Duplicates (same relation id) are kept
    once and not counted as dropped.

    >>> to_triplets([["Euler", "born in", "Basel"], ["Euler", "Basel"], ["", "x", "y"]])
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 2)
    """
    triplets: dict[str, Triplet] = {}
    dropped = 0
    for item in items:
        parts = _triplet_parts(item)
        texts = [_part_text(p) for p in parts] if parts is not None else []
        if len(texts) != 3 or any(t is None for t in texts):
            dropped += 1
            continue
        subject, predicate, obj = (clean_text(t or "") for t in texts)
        too_long = any(len(p.encode()) > ENTITY_NAME_MAX_BYTES for p in (subject, predicate, obj))
        if not subject or not predicate or not obj or too_long:
            dropped += 1
            continue
        triplet = Triplet(subject, predicate, obj)
        triplets.setdefault(triplet.id, triplet)
    return list(triplets.values()), dropped


def parse_triplets(raw: str) -> tuple[list[Triplet], int]:
    """Triplets from an LLM answer (JSON, possibly fenced or wrapped in prose).

    The answer is ``{"triplets": [...]}`` (an object with that key wins over a bracketed
    aside before it), a bare list of triplets, or one bare triplet. Returns the triplets and
    the number of items dropped; an answer with no JSON list at all yields ``([], 0)`` and a
    warning.

    >>> parse_triplets('From [1]: {"triplets": [["Euler", "born in", "Basel"]]}')
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 0)
    """
    value = find_json(raw, key="triplets")
    if isinstance(value, dict):
        value = value.get("triplets")
    if not isinstance(value, list):
        logger.warning("triplet extraction: no JSON list of triplets in the answer %.200r", raw)
        return [], 0
    if len(value) == 3 and all(isinstance(part, str) for part in value):
        value = [value]  # one triplet, not a list of them: strings are never triplets
    return to_triplets(value)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _core_kg_triplets(metadata: dict[str, Any]) -> list[Any]:
    """(subject, label, object) from the ``nodes``/``relations`` core's extractors write.

    Entries are core's ``EntityNode``/``Relation`` objects or their dict dumps (metadata read
    back from JSON, where an entity has no ``id``: core's id is the name with ``"`` replaced
    by a space). An unreadable entry becomes an item that :func:`to_triplets` drops.
    """
    names: dict[str, str] = {}
    for node in metadata.get(KG_NODES_KEY) or []:
        name, node_id = _field(node, "name"), _field(node, "id")
        if isinstance(name, str):
            names[str(node_id or name.replace('"', " "))] = name
    items = []
    for rel in metadata.get(KG_RELATIONS_KEY) or []:
        source, target = _field(rel, "source_id"), _field(rel, "target_id")
        items.append([names.get(source, source) if isinstance(source, str) else source,
                      _field(rel, "label"),
                      names.get(target, target) if isinstance(target, str) else target])
    return items


def triplets_from_node(node: BaseNode) -> tuple[list[Triplet], int]:
    """The triplets stored in a node's metadata, by this package or by core's extractors.

    Looks at ``metadata["graphrag_triplets"]`` first, then at the ``nodes`` and ``relations``
    keys that ``SimpleLLMPathExtractor``, ``SchemaLLMPathExtractor`` and
    ``DynamicLLMPathExtractor`` write. Returns the triplets and the number dropped.
    """
    if TRIPLETS_KEY in node.metadata:
        return to_triplets(node.metadata[TRIPLETS_KEY] or [])
    return to_triplets(_core_kg_triplets(node.metadata))


def store_triplets(node: BaseNode, triplets: Sequence[Triplet]) -> None:
    """Write ``triplets`` to ``node.metadata["graphrag_triplets"]`` (as ``[subject,
    predicate, object]`` lists), hidden from LLMs and embedding models: what ingestion
    reads back (:func:`triplets_from_node`)."""
    node.metadata[TRIPLETS_KEY] = [[t.subject, t.predicate, t.object] for t in triplets]
    hide_from_models(node, TRIPLETS_KEY)


# ---------------------------------------------------------------- described extraction


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


def _no_extraction() -> DescribedExtraction:
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
    text = _part_text(value)
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


def _entities_of(items: Any) -> tuple[list[EntityDescription], int]:
    """Clean entities: the first of each name (see :func:`normalize_name`)."""
    return _first_of_each(items, _to_entity, lambda entity: normalize_name(entity.name))


def _relations_of(items: Any) -> tuple[list[RelationDescription], int]:
    """Clean relations: the first of each relation id."""
    return _first_of_each(items, _to_relation, lambda relation: relation.triplet.id)


_DESCRIBED_KEYS = ("relations", "relationships", "entities")


def _described_json(raw: str) -> dict[str, Any] | None:
    for key in _DESCRIBED_KEYS:
        value = find_json(raw, key=key)
        if isinstance(value, dict) and any(k in value for k in _DESCRIBED_KEYS):
            return value
    return None


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
    entities, dropped_entities = _entities_of(value.get("entities"))
    relations, dropped_relations = _relations_of(_first(value, "relations", "relationships"))
    return DescribedExtraction([r.triplet for r in relations], entities, relations,
                               dropped_entities + dropped_relations)


def _entity_lists(entities: Iterable[EntityDescription]) -> list[list[str]]:
    return [[e.name, e.type, e.description] for e in entities]


def _relation_lists(relations: Iterable[RelationDescription]) -> list[list[Any]]:
    return [[r.subject, r.predicate, r.object, r.description, r.strength] for r in relations]


def _store_descriptions(node: BaseNode, entities: list[EntityDescription],
                        relations: list[RelationDescription]) -> None:
    node.metadata[ENTITY_DESCRIPTIONS_KEY] = _entity_lists(entities)
    node.metadata[RELATION_DESCRIPTIONS_KEY] = _relation_lists(relations)
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
    entities, _ = _entities_of(node.metadata.get(ENTITY_DESCRIPTIONS_KEY))
    relations, _ = _relations_of(node.metadata.get(RELATION_DESCRIPTIONS_KEY))
    return entities, relations


# ---------------------------------------------------------------------------- the cache

EXTRACTION_ERROR_KEY = "graphrag_extraction_error"
"""Node metadata key set when the extraction of a passage failed: ``"<ExceptionType>: <message>"``.

Excluded from what LLMs and embedding models see; removed again when a later run succeeds.
"""
DEFAULT_CACHE_COLLECTION = "graphrag_triplets"
"""The kvstore collection of :class:`ExtractionCache` entries."""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _triplet_lists(triplets: Iterable[Triplet]) -> list[list[str]]:
    return [[t.subject, t.predicate, t.object] for t in triplets]


class ExtractionCache:
    """The triplets of every passage extracted successfully, in a LlamaIndex kvstore.

    Keys come from :meth:`TripletExtractor.cache_key`: the SHA-256 of the passage text as
    the LLM sees it, a hash of the prompt template and ``max_triplets_per_chunk`` (and of
    ``describe`` and ``entity_types`` for described runs), and the LLM's
    ``metadata.model_name``; a value is ``{"triplets": [[subject, predicate, object],
    ...]}``, plus ``"entities": [[name, type, description], ...]`` and ``"relations":
    [[subject, predicate, object, description, strength], ...]`` when a described run found
    some (:meth:`put_described`; an entry without them reads as no descriptions). A failed
    extraction is never stored, so the next run retries just those passages. The cache
    does not depend on the index: the same cache serves Milvus Lite, a Milvus server or
    Zilliz Cloud.

    Args:
        persist_path: a JSON file in the format of core's ``SimpleKVStore`` (the store of
            ``IngestionCache``). Loaded when it exists; written every ``persist_every`` new
            entries and at the end of every extraction call, a crashed one included (to a
            temporary file first, then renamed: a kill never leaves half a file).
        kvstore: any other LlamaIndex kvstore instead of the file (``RedisKVStore``,
            ``MongoDBKVStore``, ``PostgresKVStore``...), persistent by itself: the choice for
            several machines ingesting into one Milvus server.
        collection: the kvstore collection of the entries.
        persist_every: new entries between two writes of ``persist_path``.

    Example:
        >>> cache = ExtractionCache()  # in memory; ExtractionCache("./extraction.json") persists
        >>> cache.put("key", [Triplet("Euler", "born in", "Basel")])
        >>> cache.get("key")
        [Triplet(subject='Euler', predicate='born in', object='Basel')]
        >>> cache.get("another key") is None
        True
    """

    def __init__(
        self,
        persist_path: str | os.PathLike[str] | None = None,
        kvstore: BaseKVStore | None = None,
        collection: str = DEFAULT_CACHE_COLLECTION,
        persist_every: int = 100,
    ) -> None:
        if persist_path is not None and kvstore is not None:
            raise InvalidInputError(
                "ExtractionCache got both persist_path and kvstore; pass persist_path for a "
                "JSON file, or a kvstore that persists by itself, not both."
            )
        check_int("persist_every", persist_every)
        self.persist_path = Path(persist_path) if persist_path is not None else None
        self.collection = collection
        self.persist_every = persist_every
        self._unsaved = 0
        self.kvstore: BaseKVStore = kvstore or self._load(self.persist_path)

    @staticmethod
    def _load(path: Path | None) -> SimpleKVStore:
        if path is None or not path.exists():
            return SimpleKVStore()
        try:
            return SimpleKVStore.from_persist_path(str(path))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise InvalidInputError(
                f"the extraction cache {path} is not a JSON kvstore file ({exc}); delete it "
                "(the triplets are extracted again) or pass another persist_path."
            ) from exc

    @classmethod
    def from_ingestion_cache(cls, cache: IngestionCache,
                             collection: str = DEFAULT_CACHE_COLLECTION) -> ExtractionCache:
        """Share the kvstore of an ``IngestionCache`` (e.g. the one of an ``IngestionPipeline``);
        the entries go to their own ``collection``.

        >>> from llama_index.core.ingestion import IngestionCache
        >>> ExtractionCache.from_ingestion_cache(IngestionCache()).collection
        'graphrag_triplets'
        """
        return cls(kvstore=cache.cache, collection=collection)

    @staticmethod
    def _decode(value: dict[str, Any] | None) -> DescribedExtraction | None:
        items = value.get("triplets") if isinstance(value, dict) else None
        if not isinstance(value, dict) or not isinstance(items, list):
            return None
        return DescribedExtraction(to_triplets(items)[0], _entities_of(value.get("entities"))[0],
                                   _relations_of(value.get("relations"))[0])

    @staticmethod
    def _encode(extraction: DescribedExtraction) -> dict[str, Any]:
        value: dict[str, Any] = {"triplets": _triplet_lists(extraction.triplets)}
        if extraction.entities:
            value["entities"] = _entity_lists(extraction.entities)
        if extraction.relations:
            value["relations"] = _relation_lists(extraction.relations)
        return value

    def _saved_one(self) -> None:
        self._unsaved += 1
        if self._unsaved >= self.persist_every:
            self.persist()

    def get(self, key: str) -> list[Triplet] | None:
        """The cached triplets of ``key``, or ``None`` when there are none."""
        found = self.get_described(key)
        return None if found is None else found.triplets

    async def aget(self, key: str) -> list[Triplet] | None:
        """:meth:`get` through the kvstore's async API."""
        found = await self.aget_described(key)
        return None if found is None else found.triplets

    def get_described(self, key: str) -> DescribedExtraction | None:
        """The cached triplets of ``key`` with their entity and relation descriptions (none
        for an entry written by :meth:`put`), or ``None`` when there is no entry.

        >>> cache = ExtractionCache()
        >>> cache.put_described("key", DescribedExtraction(
        ...     [Triplet("Euler", "born in", "Basel")], [EntityDescription("Basel", "GEO", "")],
        ...     [RelationDescription("Euler", "born in", "Basel", "", 9.0)]))
        >>> cache.get_described("key").relations
        [RelationDescription(subject='Euler', predicate='born in', object='Basel', \
description='', strength=9.0)]
        """
        return self._decode(self.kvstore.get(key, collection=self.collection))

    async def aget_described(self, key: str) -> DescribedExtraction | None:
        """:meth:`get_described` through the kvstore's async API."""
        return self._decode(await self.kvstore.aget(key, collection=self.collection))

    def put(self, key: str, triplets: Sequence[Triplet]) -> None:
        """Store the triplets of ``key`` (an empty list is a valid answer)."""
        self.put_described(key, DescribedExtraction(list(triplets), [], []))

    async def aput(self, key: str, triplets: Sequence[Triplet]) -> None:
        """:meth:`put` through the kvstore's async API."""
        await self.aput_described(key, DescribedExtraction(list(triplets), [], []))

    def put_described(self, key: str, extraction: DescribedExtraction) -> None:
        """Store the triplets of ``key`` with their entity and relation descriptions."""
        self.kvstore.put(key, self._encode(extraction), collection=self.collection)
        self._saved_one()

    async def aput_described(self, key: str, extraction: DescribedExtraction) -> None:
        """:meth:`put_described` through the kvstore's async API."""
        await self.kvstore.aput(key, self._encode(extraction), collection=self.collection)
        self._saved_one()

    def __len__(self) -> int:
        return len(self.kvstore.get_all(collection=self.collection))

    def __bool__(self) -> bool:
        return True  # an empty cache is still a cache: ``cache or default`` keeps it

    def persist(self) -> None:
        """Write the file of ``persist_path`` (nothing to do for other kvstores)."""
        if self.persist_path is None or not isinstance(self.kvstore, SimpleKVStore):
            return
        self.persist_path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.persist_path.with_name(f"{self.persist_path.name}.{os.getpid()}.tmp")
        self.kvstore.persist(str(partial))
        os.replace(partial, self.persist_path)
        self._unsaved = 0


# ---------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class ExtractionFailure:
    """A passage whose extraction failed after every retry."""

    node_id: str
    error: str
    attempts: int


@dataclass(frozen=True)
class ExtractionReport:
    """What one extraction call did.

    ``passages`` counts the nodes, ``cached`` those answered by the cache, ``llm_calls`` the
    LLM requests (retries included), ``triplets`` those written to the nodes.
    """

    passages: int
    cached: int
    llm_calls: int
    triplets: int
    failures: tuple[ExtractionFailure, ...]
    seconds: float

    @property
    def failed_node_ids(self) -> list[str]:
        """The ids of the nodes left without triplets by an LLM failure."""
        return [f.node_id for f in self.failures]

    def summary(self) -> str:
        """One line for the log.

        >>> ExtractionReport(3, 1, 3, 5, (ExtractionFailure("n2", "TimeoutError: ", 2),),
        ...                  1.5).summary()
        'triplet extraction: 3 passages (1 from the cache), 3 LLM calls, 5 triplets, 1 failed \
in 1.5 s; failed: n2 (TimeoutError: )'
        """
        line = (f"triplet extraction: {self.passages} passages ({self.cached} from the cache), "
                f"{self.llm_calls} LLM calls, {self.triplets} triplets, {len(self.failures)} "
                f"failed in {self.seconds:.1f} s")
        if self.failures:
            shown = ", ".join(f"{f.node_id} ({f.error})" for f in self.failures[:10])
            more = f" and {len(self.failures) - 10} more" if len(self.failures) > 10 else ""
            line += f"; failed: {shown}{more}"
        return line


def extraction_failures(nodes: Iterable[BaseNode]) -> dict[str, str]:
    """Node id -> error of the nodes whose last extraction failed (see
    :data:`EXTRACTION_ERROR_KEY`): the nodes to run the extractor on again.

    >>> from llama_index.core.schema import TextNode
    >>> extraction_failures([TextNode(id_="a", text="x"),
    ...     TextNode(id_="b", text="y", metadata={EXTRACTION_ERROR_KEY: "TimeoutError: "})])
    {'b': 'TimeoutError: '}
    """
    return {n.node_id: str(n.metadata[EXTRACTION_ERROR_KEY]) for n in nodes
            if EXTRACTION_ERROR_KEY in n.metadata}


@dataclass(frozen=True)
class _Outcome:
    """The result for one distinct passage text (one cache key)."""

    extraction: DescribedExtraction
    error: str | None = None
    llm_calls: int = 0
    cached: bool = False

    @property
    def triplets(self) -> list[Triplet]:
        return self.extraction.triplets


@dataclass
class _Tally:
    """Running counts behind the progress bar and the report."""

    bar: tqdm
    cached: int = 0
    llm_calls: int = 0
    triplets: int = 0
    failures: list[ExtractionFailure] = field(default_factory=list)

    def add(self, outcome: _Outcome, nodes: Sequence[BaseNode]) -> None:
        self.llm_calls += outcome.llm_calls
        self.cached += len(nodes) if outcome.cached else 0
        self.triplets += len(outcome.triplets) * len(nodes)
        if outcome.error is not None:
            self.failures.extend(ExtractionFailure(n.node_id, outcome.error, outcome.llm_calls)
                                 for n in nodes)
        self.bar.set_postfix(triplets=self.triplets, failures=len(self.failures),
                             cached=self.cached, refresh=False)
        self.bar.update(len(nodes))

    def report(self, passages: int, seconds: float) -> ExtractionReport:
        return ExtractionReport(passages, self.cached, self.llm_calls, self.triplets,
                                tuple(self.failures), seconds)


@dataclass(frozen=True)
class _Io:
    """The I/O of one extraction call: the only part that differs between sync and async."""

    predict: Callable[[dict[str, Any]], Awaitable[str]]
    cache_get: Callable[[str], Awaitable[DescribedExtraction | None]]
    cache_put: Callable[[str, DescribedExtraction], Awaitable[None]]


def _as_async(function: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    async def call(*args: Any) -> T:
        return function(*args)

    return call


async def _no_cached(key: str) -> DescribedExtraction | None:
    return None


async def _no_put(key: str, extraction: DescribedExtraction) -> None:
    return None


def _check_entity_types(value: Any) -> tuple[str, ...]:
    """``entity_types`` cleaned (whitespace collapsed, duplicates dropped), or
    :class:`InvalidInputError`."""
    items = list(value) if isinstance(value, Iterable) and not isinstance(value, str) else None
    if not items or not all(isinstance(t, str) and clean_text(t) for t in items):
        raise InvalidInputError(
            f"entity_types must be a non-empty sequence of type names, got {value!r:.200}; "
            f"for example {DEFAULT_ENTITY_TYPES!r} (Microsoft GraphRAG's)."
        )
    return tuple(dict.fromkeys(clean_text(t) for t in items))


class TripletExtractor(TransformComponent, PromptMixin):
    """Extract triplets from nodes with an LLM; a ``TransformComponent``.

    Each node gets ``metadata["graphrag_triplets"] = [[subject, predicate, object], ...]``,
    excluded from what LLMs and embedding models see. At most ``num_workers`` LLM requests
    are in flight, in the sync call (the LLM's sync API in worker threads) and in ``acall``
    (its async API). A failing LLM call is retried ``max_retries`` times, waiting
    ``retry_base_delay`` seconds, then twice as long at each retry; a passage that still
    fails gets no triplets and ``metadata["graphrag_extraction_error"]``, a warning is
    logged, and the run goes on. An answer with no usable JSON is an answer: no triplets, a
    warning, no retry. The passage is stored and searchable either way.

    With an :class:`ExtractionCache` (``cache=``), passages already extracted with the same
    text, prompt and model are not sent to the LLM again; failures are not cached, so running
    the same input again after a crash or after failures extracts only what is missing.
    :meth:`extract` / :meth:`aextract` return an :class:`ExtractionReport` (counts and the
    failed node ids); ``__call__`` / ``acall`` log it at INFO and return the nodes.
    Passages with identical text in one call cost one LLM request.

    With ``describe=True``, the extraction is Microsoft GraphRAG's: the LLM names the
    entities (of ``entity_types``) with a type and a description, and the relations between
    them with a predicate, a description and a 1-10 strength
    (:data:`DEFAULT_DESCRIBED_EXTRACT_PROMPT`, read by :func:`parse_described`). The
    triplets of the relations go to ``metadata["graphrag_triplets"]`` as above, the
    descriptions to ``metadata["graphrag_entity_descriptions"]`` (``[[name, type,
    description], ...]``) and ``metadata["graphrag_relation_descriptions"]`` (``[[subject,
    predicate, object, description, strength], ...]``), both excluded from what LLMs and
    embedding models see (read them with :func:`descriptions_from_node`). At most
    ``max_triplets_per_chunk`` relations and as many entities are kept per passage. The
    prompt is chosen at construction: ``DEFAULT_DESCRIBED_EXTRACT_PROMPT`` unless
    ``extract_prompt`` is given.

    Args:
        llm: the extraction LLM; defaults to ``Settings.llm``.
        cache: where extracted triplets are kept between runs; none by default.
        sleep: the async sleep of the retry backoff (default ``asyncio.sleep``; tests pass
            a recorder).
        **kwargs: the fields (``extract_prompt``, ``describe``, ``entity_types``,
            ``max_triplets_per_chunk``, ``num_workers``, ``max_retries``,
            ``retry_base_delay``).

    Raises:
        InvalidInputError: ``entity_types`` is a string, empty, or holds a blank or
            non-text type.

    Example::

        from llama_index.core.ingestion import IngestionPipeline
        from llama_index.core.node_parser import SentenceSplitter
        extractor = TripletExtractor(llm=llm, num_workers=16,
                                     cache=ExtractionCache("./extraction_cache.json"))
        pipeline = IngestionPipeline(transformations=[SentenceSplitter(), extractor])
        nodes = pipeline.run(documents=documents, show_progress=True)
        index = GraphRAGIndex.from_nodes(nodes, uri="./graphrag.db")
        print(extraction_failures(nodes))  # run the pipeline again to retry just these
    """

    llm: SerializeAsAny[LLM] = Field(description="The LLM that extracts triplets.")
    extract_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=DEFAULT_TRIPLET_EXTRACT_PROMPT,
        description="Prompt with {text} and {max_triplets} (and {entity_types} with "
        "describe); must ask for JSON triplets, or with describe for JSON entities and "
        "relations. Default: DEFAULT_TRIPLET_EXTRACT_PROMPT, or "
        "DEFAULT_DESCRIBED_EXTRACT_PROMPT with describe=True.",
    )
    describe: bool = Field(
        default=False, description="Microsoft GraphRAG's extraction: entities with a type "
        "and a description, relations with a description and a 1-10 strength, stored next "
        "to the triplets."
    )
    entity_types: tuple[str, ...] = Field(
        default=DEFAULT_ENTITY_TYPES, description="The entity types the described prompt "
        "asks for ({entity_types}, joined by ', '); Microsoft GraphRAG's by default."
    )
    max_triplets_per_chunk: int = Field(
        default=15, gt=0, description="Upper bound on triplets asked for per passage."
    )
    num_workers: int = Field(
        default=4, gt=0, description="LLM requests in flight at most (sync and async)."
    )
    max_retries: int = Field(
        default=3, ge=0, description="Retries of a failed LLM call before the passage is "
        "recorded as failed."
    )
    retry_base_delay: float = Field(
        default=1.0, ge=0.0, description="Seconds before the first retry; doubled at each "
        "further retry."
    )
    _cache: ExtractionCache | None = PrivateAttr(default=None)
    _sleep: Sleep | None = PrivateAttr(default=None)  # None: asyncio.sleep

    def __init__(self, llm: LLM | None = None, cache: ExtractionCache | None = None,
                 sleep: Sleep | None = None, **kwargs: Any) -> None:
        kwargs["llm"] = llm or Settings.llm
        if "entity_types" in kwargs:
            kwargs["entity_types"] = _check_entity_types(kwargs["entity_types"])
        prompt_given = kwargs.get("extract_prompt") is not None
        if not prompt_given:
            kwargs.pop("extract_prompt", None)
        super().__init__(**kwargs)
        if self.describe and not prompt_given:
            self.extract_prompt = DEFAULT_DESCRIBED_EXTRACT_PROMPT
        self._cache = cache
        self._sleep = sleep

    @classmethod
    def class_name(cls) -> str:
        return "GraphRAGTripletExtractor"

    @property
    def cache(self) -> ExtractionCache | None:
        """The :class:`ExtractionCache` given at construction, if any."""
        return self._cache

    def _get_prompts(self) -> PromptDictType:
        return {"extract_prompt": self.extract_prompt}

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "extract_prompt" in prompts:
            self.extract_prompt = prompts["extract_prompt"]

    def _prompt_kwargs(self, node: BaseNode) -> dict[str, Any]:
        kwargs = {"text": node.get_content(metadata_mode=MetadataMode.LLM),
                  "max_triplets": self.max_triplets_per_chunk}
        if self.describe:
            kwargs["entity_types"] = ", ".join(self.entity_types)
        return kwargs

    def cache_key(self, text: str) -> str:
        """The cache key of a passage text (as the LLM sees it, metadata included):
        ``"<sha256 of text>:<16 hex of the prompt hash>:<model name>"``; the prompt hash
        covers the template text and ``max_triplets_per_chunk``, and with ``describe`` the
        described mode and ``entity_types`` (keys without ``describe`` are those of earlier
        versions, so their caches stay valid).

        >>> from llama_index.core.llms import MockLLM
        >>> key = TripletExtractor(llm=MockLLM()).cache_key("Euler was born in Basel.")
        >>> key.split(":")[0][:12], len(key.split(":")[1]), key.split(":")[2]
        ('432ec192c350', 16, 'unknown')
        """
        prompt = f"{self.extract_prompt.get_template()}\x00{self.max_triplets_per_chunk}"
        if self.describe:
            prompt += "\x00described\x00" + "\x1f".join(self.entity_types)
        return f"{_sha256(text)}:{_sha256(prompt)[:16]}:{self.llm.metadata.model_name}"

    # ------------------------------------------------------------------ shared helpers

    def _parse(self, raw: str, node_ids: str) -> DescribedExtraction:
        if self.describe:
            extraction = parse_described(raw) or _no_extraction()
            what = "entities or relations"
        else:
            triplets, dropped = parse_triplets(raw)
            extraction, what = DescribedExtraction(triplets, [], [], dropped), "triplets"
        if extraction.dropped:
            logger.info("triplet extraction: dropped %d malformed %s of node %s",
                        extraction.dropped, what, node_ids)
        return extraction.cut(self.max_triplets_per_chunk)

    async def _predict_with_retries(self, prompt_kwargs: dict[str, Any], node_ids: str,
                                    io: _Io) -> _Outcome:
        answer = await call_with_retries(
            lambda: io.predict(prompt_kwargs), f"triplet extraction of node {node_ids}",
            self.max_retries, self.retry_base_delay, self._sleep, logger)
        if answer.error is not None:
            return _Outcome(_no_extraction(), answer.error, answer.attempts)
        return _Outcome(self._parse(answer.text, node_ids), llm_calls=answer.attempts)

    async def _extract_passage(self, key: str, prompt_kwargs: dict[str, Any],
                               nodes: list[BaseNode], io: _Io, tally: _Tally) -> None:
        cached = await io.cache_get(key)
        if cached is not None:
            outcome = _Outcome(cached.cut(self.max_triplets_per_chunk), cached=True)
        else:
            node_ids = ", ".join(n.node_id for n in nodes)
            outcome = await self._predict_with_retries(prompt_kwargs, node_ids, io)
            if outcome.error is None:
                await io.cache_put(key, outcome.extraction)
        for node in nodes:
            store_triplets(node, outcome.triplets)
            if self.describe:
                _store_descriptions(node, outcome.extraction.entities,
                                    outcome.extraction.relations)
            else:  # descriptions of an earlier described run would not match the triplets
                node.metadata.pop(ENTITY_DESCRIPTIONS_KEY, None)
                node.metadata.pop(RELATION_DESCRIPTIONS_KEY, None)
            if outcome.error is None:
                node.metadata.pop(EXTRACTION_ERROR_KEY, None)
            else:
                node.metadata[EXTRACTION_ERROR_KEY] = outcome.error
                hide_from_models(node, EXTRACTION_ERROR_KEY)
        tally.add(outcome, nodes)

    async def _extract_all(self, nodes: Sequence[BaseNode], show_progress: bool,
                           io: _Io) -> ExtractionReport:
        started = time.perf_counter()
        passages: dict[str, tuple[dict[str, Any], list[BaseNode]]] = {}
        for node in nodes:
            prompt_kwargs = self._prompt_kwargs(node)
            key = self.cache_key(prompt_kwargs["text"])
            passages.setdefault(key, (prompt_kwargs, []))[1].append(node)
        tally = _Tally(tqdm(total=len(nodes), desc="Extracting triplets",
                            disable=not show_progress))
        try:  # a crash stops the other passages; what is done is kept
            await gather_bounded([functools.partial(self._extract_passage, key, kwargs, group,
                                                    io, tally)
                                  for key, (kwargs, group) in passages.items()],
                                 self.num_workers)
        finally:
            tally.bar.close()
            if self._cache is not None:
                self._cache.persist()
        report = tally.report(len(nodes), time.perf_counter() - started)
        logger.log(logging.INFO if report.failures else logging.DEBUG, "%s", report.summary())
        return report

    def _async_io(self) -> _Io:
        async def predict(prompt_kwargs: dict[str, Any]) -> str:
            return await self.llm.apredict(self.extract_prompt, **prompt_kwargs)

        cache = self._cache
        if cache is None:
            return _Io(predict, _no_cached, _no_put)
        return _Io(predict, cache.aget_described, cache.aput_described)

    def _threaded_io(self, threads: Threads) -> _Io:
        async def predict(prompt_kwargs: dict[str, Any]) -> str:
            return await threads.call(self.llm.predict, self.extract_prompt, **prompt_kwargs)

        cache = self._cache
        if cache is None:
            return _Io(predict, _no_cached, _no_put)
        return _Io(predict, _as_async(cache.get_described), _as_async(cache.put_described))

    # ------------------------------------------------------------------ entry points

    async def aextract(self, nodes: Sequence[BaseNode], show_progress: bool = False
                       ) -> ExtractionReport:
        """Extract the triplets of ``nodes`` in place through the LLM's async API; returns
        the report (see the class docstring)."""
        return await self._extract_all(nodes, show_progress, self._async_io())

    def extract(self, nodes: Sequence[BaseNode], show_progress: bool = False
                ) -> ExtractionReport:
        """:meth:`aextract` through the LLM's sync API, ``num_workers`` calls at a time in
        worker threads (for LLMs whose async API is missing or bound to another loop)."""
        return run_with_threads(
            self.num_workers, "graphrag-extract",
            lambda threads: self._extract_all(nodes, show_progress, self._threaded_io(threads)))

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                 **kwargs: Any) -> Sequence[BaseNode]:
        self.extract(nodes, show_progress=show_progress)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                    **kwargs: Any) -> Sequence[BaseNode]:
        await self.aextract(nodes, show_progress=show_progress)
        return nodes
