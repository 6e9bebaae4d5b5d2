"""Ingestion, first step: passages with their triplets become one :class:`IngestionPlan`.

:func:`plan_ingestion` is pure: it validates every passage before anything is written and
groups the input into the passage, entity and relation rows to write
(:func:`~llama_index_graphrag_milvus.ingestion.write.prepare_write` and
:func:`~llama_index_graphrag_milvus.ingestion.write.commit_write` write them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, TextNode
from pydantic_core import to_jsonable_python

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction.kinds import ENTITY_KINDS, stronger_kind
from llama_index_graphrag_milvus.extraction.triplets import (
    is_core_kg,
    store_triplets,
    to_triplets,
    triplets_from_node,
)
from llama_index_graphrag_milvus.ids import normalize_name, passage_id
from llama_index_graphrag_milvus.ingestion.identity import (
    ALL_METADATA,
    identity_key,
    identity_metadata,
)
from llama_index_graphrag_milvus.limits import (
    INT64_MAX,
    INT64_MIN,
    PASSAGE_TEXT_MAX_BYTES,
    RELATION_TEXT_MAX_BYTES,
)
from llama_index_graphrag_milvus.metadata import ENTITY_KINDS_KEY, TRIPLETS_KEY, sets_sorted
from llama_index_graphrag_milvus.milvus.fulltext import FULL_TEXT_FIELD
from llama_index_graphrag_milvus.records import Triplet
from llama_index_graphrag_milvus.validation import is_utf8

logger = logging.getLogger(__name__)

PassageInput = str | BaseNode
"""A passage: its text, or a LlamaIndex node (metadata and source document are kept)."""


@dataclass
class PlannedRelation:
    """A relation to write, the passages (ids) it was extracted from, and the kinds of its
    subject and object as its passages record them (``""``: not recorded)."""

    triplet: Triplet
    passage_ids: list[str] = field(default_factory=list)
    subject_kind: str = ""
    object_kind: str = ""

    def add_kinds(self, kinds: dict[str, str]) -> None:
        """Merge the kinds a passage records for the relation's ends (by entity name)."""
        self.subject_kind = stronger_kind(self.subject_kind,
                                          kinds.get(normalize_name(self.triplet.subject), ""))
        self.object_kind = stronger_kind(self.object_kind,
                                         kinds.get(normalize_name(self.triplet.object), ""))


def entity_kinds(node: BaseNode) -> dict[str, str]:
    """The kinds a passage records for its entities (``metadata["graphrag_entity_kinds"]``,
    written by the spaCy extractor), by normalized name; values that are not a name and one
    of :data:`~llama_index_graphrag_milvus.extraction.kinds.ENTITY_KINDS` are left out.

    >>> entity_kinds(TextNode(text="x", metadata={"graphrag_entity_kinds": {
    ...     "Ada Kovar": "named", "film": "concept", "x": "unknown"}}))
    {'ada kovar': 'named', 'film': 'concept'}
    """
    recorded = node.metadata.get(ENTITY_KINDS_KEY)
    if not isinstance(recorded, dict):
        return {}
    return {normalize_name(name): kind for name, kind in recorded.items()
            if isinstance(name, str) and kind in ENTITY_KINDS}


@dataclass
class IngestionPlan:
    """Everything one ingestion call writes, validated."""

    passages: list[TextNode]
    entities: dict[str, str]
    relations: dict[str, PlannedRelation]
    dropped_triplets: int = 0


def _beyond_int64(value: Any) -> Iterator[int]:
    """The integers of a JSON value outside -2**63 .. 2**63 - 1 (Milvus stored one up to
    2**64 - 1, after which every filter on its key failed, for every passage).

    >>> list(_beyond_int64({"a": [1, 2**64], "b": -2**63, "c": True}))
    [18446744073709551616]
    """
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _beyond_int64(item)
    elif isinstance(value, list):
        for item in value:
            yield from _beyond_int64(item)


def _passage_node(position: int, passage: PassageInput, identity_keys: Sequence[str] | str
                  ) -> TextNode:
    if isinstance(passage, str):
        text, metadata, source = passage, {}, None
        excluded_embed: list[str] = []
        excluded_llm: list[str] = []
    elif isinstance(passage, BaseNode):
        text = passage.get_content(metadata_mode=MetadataMode.NONE)
        metadata = {k: sets_sorted(v) for k, v in passage.metadata.items()
                    if not is_core_kg(k, v)}  # core's extractors' output: read as triplets
        source = (passage.as_related_node_info() if isinstance(passage, Document)
                  else passage.source_node)
        excluded_embed = list(passage.excluded_embed_metadata_keys)
        excluded_llm = list(passage.excluded_llm_metadata_keys)
    else:
        raise InvalidInputError(
            f"passage {position} is a {type(passage).__name__}; expected a str or a "
            "LlamaIndex node (TextNode, Document)."
        )
    if not text.strip():
        raise InvalidInputError(
            f"passage {position} is empty or whitespace; remove it or give it text."
        )
    if not is_utf8(text):
        raise InvalidInputError(
            f"passage {position} holds characters UTF-8 cannot encode (lone surrogates such "
            "as '\\ud800', often from text decoded with errors='surrogateescape'); clean it, "
            "for example with text.encode('utf-8', 'replace').decode('utf-8')."
        )
    size = len(text.encode())
    if size > PASSAGE_TEXT_MAX_BYTES:
        raise InvalidInputError(
            f"passage {position} is {size} bytes of UTF-8, more than the {PASSAGE_TEXT_MAX_BYTES} "
            "a Milvus VARCHAR holds; split long documents first, for example with "
            "SentenceSplitter(chunk_size=1024)."
        )
    reserved = [key for key in metadata if key == FULL_TEXT_FIELD or key.startswith("$")]
    if reserved:
        raise InvalidInputError(
            f"the metadata of passage {position} has the key {reserved[0]!r}, a name Milvus "
            "keeps for itself (" + ("its dynamic field" if reserved[0].startswith("$") else
                                    "full-text search's BM25 terms") + "): rename the key.")
    try:  # what Milvus stores: the JSON form pydantic gives (dates as text...), UTF-8
        stored = to_jsonable_python(metadata)
        json.dumps(stored, ensure_ascii=False, allow_nan=False).encode()
        big = next(_beyond_int64(stored), None)
        if big is not None:
            raise ValueError(f"the integer {big} is beyond the 64-bit integers Milvus "
                             "stores and compares; store it as a string or a float")
    except (TypeError, ValueError) as exc:  # PydanticSerializationError, UnicodeEncodeError
        raise InvalidInputError(
            f"the metadata of passage {position} cannot be stored as JSON ({exc}); use "
            "strings, finite numbers, booleans, None, and lists or dicts of them, with text "
            "UTF-8 can encode (no lone surrogates such as '\\ud800')."
        ) from exc
    document_id = source.node_id if source is not None else None
    identity = identity_key(identity_metadata(metadata, identity_keys))
    node = TextNode(id_=passage_id(text, document_id, identity), text=text, metadata=metadata,
                    excluded_embed_metadata_keys=excluded_embed,
                    excluded_llm_metadata_keys=excluded_llm)
    if source is not None:
        node.relationships[NodeRelationship.SOURCE] = source
    if isinstance(passage, BaseNode) and passage.embedding is not None:
        node.embedding = passage.embedding  # used as it is (checked when the plan is embedded)
    return node


def plan_ingestion(items: Iterable[tuple[PassageInput, Iterable[Any]]],
                   identity_keys: Sequence[str] | str = ALL_METADATA) -> IngestionPlan:
    """Validate ``(passage, triplets)`` pairs and group them into rows to write.

    A passage's id covers its text, its source document and the metadata named by
    ``identity_keys`` (all of it by default). A passage given twice (same id) is one passage
    with the triplets of both.

    Raises:
        InvalidInputError: ``items`` is not a list of pairs; a passage is not text, is
            empty, is longer than Milvus allows, or has metadata that cannot be stored as
            JSON. Nothing has been written then.
    """
    passages: dict[str, TextNode] = {}
    entities: dict[str, str] = {}
    relations: dict[str, PlannedRelation] = {}
    dropped = 0
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidInputError(
            f"data must be a list of (passage, triplets) pairs, got a {type(items).__name__}: "
            "for example [('Euler was born in Basel.', [('Euler', 'born in', 'Basel')])].")
    for position, pair in enumerate(items):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InvalidInputError(
                f"item {position} of data is {pair!r:.100}; expected a (passage, triplets) "
                "pair such as ('Euler was born in Basel.', [('Euler', 'born in', 'Basel')]). "
                "Nothing has been written.")
        passage, raw_triplets = pair
        node = _passage_node(position, passage, identity_keys)
        if raw_triplets is None or isinstance(raw_triplets, (str, bytes)) or not isinstance(
                raw_triplets, Iterable):
            raise InvalidInputError(
                f"the triplets of passage {position} are a {type(raw_triplets).__name__}; "
                "expected a list of (subject, predicate, object) tuples (an empty list for "
                "none). Nothing has been written.")
        triplets, skipped = to_triplets(raw_triplets)
        dropped += skipped
        earlier = passages.get(node.node_id)
        if earlier is not None:  # the same passage twice: one passage, both triplet lists
            known = {t.id for t in triplets}
            triplets = [*triplets, *(t for t in _stored_triplets(earlier) if t.id not in known)]
        store_triplets(node, triplets)
        passages[node.node_id] = node
        kinds = entity_kinds(node)
        for triplet in triplets:
            if len(triplet.text.encode()) > RELATION_TEXT_MAX_BYTES:
                dropped += 1
                continue
            entities.setdefault(triplet.subject_id, triplet.subject)
            entities.setdefault(triplet.object_id, triplet.object)
            planned = relations.setdefault(triplet.id, PlannedRelation(triplet))
            planned.add_kinds(kinds)
            if node.node_id not in planned.passage_ids:
                planned.passage_ids.append(node.node_id)
    if dropped:
        logger.warning(
            "ingestion: skipped %d triplets that were not (subject, predicate, object) with "
            "three non-empty parts within the size limits", dropped,
        )
    return IngestionPlan(list(passages.values()), entities, relations, dropped)


def _stored_triplets(node: TextNode) -> list[Triplet]:
    return [Triplet(*parts) for parts in node.metadata[TRIPLETS_KEY]]


def plan_from_nodes(nodes: Sequence[BaseNode], identity_keys: Sequence[str] | str = ALL_METADATA
                    ) -> IngestionPlan:
    """:func:`plan_ingestion` for nodes that carry their triplets in metadata.

    Raises:
        InvalidInputError: ``nodes`` is not a list of LlamaIndex nodes."""
    if isinstance(nodes, str | bytes | BaseNode) or not isinstance(nodes, Iterable):
        raise InvalidInputError(
            f"nodes must be a list of LlamaIndex nodes, got a {type(nodes).__name__}: pass "
            "[TextNode(text=...)], or (text, triplets) pairs to insert_triplets.")
    pairs = []
    dropped = 0
    for position, node in enumerate(nodes):
        if not isinstance(node, BaseNode):
            raise InvalidInputError(
                f"node {position} is not a LlamaIndex node (got a {type(node).__name__}): "
                "pass TextNode(text=...) objects, or (text, triplets) pairs to "
                "insert_triplets.")
        triplets, skipped = triplets_from_node(node)
        dropped += skipped
        pairs.append((node, triplets))
    plan = plan_ingestion(pairs, identity_keys)
    plan.dropped_triplets += dropped
    return plan
