"""Ingestion: passages with their triplets become passage, entity and relation rows.

:func:`plan_ingestion` is pure: it validates every passage before anything is written and
turns the input into one :class:`IngestionPlan`. :func:`write_plan` embeds what is new and
writes passages first, then entities, then relations, so a relation never points at a row
that is missing; an interrupted run is repaired by running it again (ids are deterministic,
writes are upserts, a relation's passage links are merged with the stored ones).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, TextNode
from pydantic_core import to_jsonable_python

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction.triplets import (
    is_utf8,
    store_triplets,
    to_triplets,
    triplets_from_node,
)
from llama_index_graphrag_milvus.ingestion.deletion import drop_stale_links
from llama_index_graphrag_milvus.ingestion.identity import (
    ALL_METADATA,
    identity_key,
    identity_metadata,
)
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import (
    PASSAGE_TEXT_MAX_BYTES,
    RELATION_TEXT_MAX_BYTES,
    TRIPLETS_KEY,
    Triplet,
    passage_id,
)

logger = logging.getLogger(__name__)

PassageInput = str | BaseNode
"""A passage: its text, or a LlamaIndex node (metadata and source document are kept)."""
TripletInput = Sequence[str] | Triplet
"""A ``(subject, predicate, object)`` tuple or a :class:`Triplet`."""


@dataclass
class PlannedRelation:
    """A relation to write and the passages (ids) it was extracted from."""

    triplet: Triplet
    passage_ids: list[str] = field(default_factory=list)


@dataclass
class IngestionPlan:
    """Everything one ingestion call writes, validated."""

    passages: list[TextNode]
    entities: dict[str, str]
    relations: dict[str, PlannedRelation]
    dropped_triplets: int = 0


@dataclass(frozen=True)
class IngestionStats:
    """What one ingestion call wrote (counts of rows upserted, triplets skipped) and where
    its time went (``seconds`` per stage: ``embed_passages``, ``embed_entities``,
    ``embed_relations``, ``read_stored``, ``create``, ``write_passages``, ``write_entities``,
    ``write_relations``, ``stale_links``, ``flush``)."""

    passages: int
    new_entities: int
    relations: int
    dropped_triplets: int
    seconds: dict[str, float] = field(default_factory=dict, compare=False)


def _passage_node(position: int, passage: PassageInput, identity_keys: Sequence[str] | str
                  ) -> TextNode:
    if isinstance(passage, str):
        text, metadata, source = passage, {}, None
        excluded_embed: list[str] = []
        excluded_llm: list[str] = []
    elif isinstance(passage, BaseNode):
        text = passage.get_content(metadata_mode=MetadataMode.NONE)
        metadata = {k: v for k, v in passage.metadata.items()
                    if k not in (KG_NODES_KEY, KG_RELATIONS_KEY)}
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
    try:  # what Milvus stores: the JSON form pydantic gives (dates as text...), UTF-8
        json.dumps(to_jsonable_python(metadata), ensure_ascii=False, allow_nan=False).encode()
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
        for triplet in triplets:
            if len(triplet.text.encode()) > RELATION_TEXT_MAX_BYTES:
                dropped += 1
                continue
            entities.setdefault(triplet.subject_id, triplet.subject)
            entities.setdefault(triplet.object_id, triplet.object)
            planned = relations.setdefault(triplet.id, PlannedRelation(triplet))
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
    """:func:`plan_ingestion` for nodes that carry their triplets in metadata."""
    pairs = []
    dropped = 0
    for node in nodes:
        triplets, skipped = triplets_from_node(node)
        dropped += skipped
        pairs.append((node, triplets))
    plan = plan_ingestion(pairs, identity_keys)
    plan.dropped_triplets += dropped
    return plan


def _merge_passage_ids(stored: Sequence[str], new: Sequence[str], relation_id: str) -> list[str]:
    merged = list(dict.fromkeys([*stored, *new]))
    if len(merged) > MAX_PASSAGES_PER_RELATION:
        logger.warning(
            "relation %s is supported by %d passages; Milvus arrays hold %d, the rest are "
            "not linked", relation_id, len(merged), MAX_PASSAGES_PER_RELATION,
        )
        merged = merged[:MAX_PASSAGES_PER_RELATION]
    return merged


def _links(plan: IngestionPlan) -> dict[str, set[str]]:
    """Each planned passage and the relations it supports."""
    links: dict[str, set[str]] = {p.node_id: set() for p in plan.passages}
    for relation_id, planned in plan.relations.items():
        for passage in planned.passage_ids:
            links[passage].add(relation_id)
    return links


def _embed(embed_model: BaseEmbedding, texts: list[str], show_progress: bool
           ) -> list[list[float]]:
    return embed_model.get_text_embedding_batch(texts, show_progress=show_progress) if texts \
        else []


def write_plan(plan: IngestionPlan, store: MilvusGraphStore, embed_model: BaseEmbedding,
               show_progress: bool = False, properties: Mapping[str, str] | None = None
               ) -> IngestionStats:
    """Embed what is new in ``plan`` and upsert it (passages, entities, then relations).

    Passages stored before with other triplets lose their old links (see
    :func:`~llama_index_graphrag_milvus.ingestion.deletion.drop_stale_links`). ``properties`` are
    recorded on the collections if this call creates them.
    """
    seconds: dict[str, float] = {}
    timed = partial(timed_stage, seconds)
    with timed("embed_passages"):
        passage_vectors = _embed(
            embed_model, [p.get_content(metadata_mode=MetadataMode.EMBED)
                          for p in plan.passages], show_progress)
    if passage_vectors:
        store.check_dimension(len(passage_vectors[0]), "the embedding model")
    stored_entities: set[str] = set()
    stored_relations: dict[str, dict[str, Any]] = {}
    if store.dim is not None:
        with timed("read_stored"):
            stored_entities = set(store.get_rows(store.entity_collection,
                                                 list(plan.entities), ["id"]))
            stored_relations = store.get_rows(store.relation_collection, list(plan.relations),
                                              ["passage_ids", "embedding"])
    new_entities = [eid for eid in plan.entities if eid not in stored_entities]
    with timed("embed_entities"):
        entity_vectors = _embed(embed_model, [plan.entities[e] for e in new_entities],
                                show_progress)
    new_relations = [rid for rid in plan.relations if rid not in stored_relations]
    with timed("embed_relations"):
        relation_vectors = dict(zip(new_relations, _embed(
            embed_model, [plan.relations[r].triplet.text for r in new_relations],
            show_progress), strict=True))
    existed = store.dim is not None
    if not existed and passage_vectors:
        with timed("create"):
            store.create(len(passage_vectors[0]), properties)

    for node, vector in zip(plan.passages, passage_vectors, strict=True):
        node.embedding = vector
    with timed("write_passages"):
        store.upsert_passages(plan.passages)
    with timed("write_entities"):
        store.upsert_rows(store.entity_collection, [
            {"id": eid, "name": plan.entities[eid], "embedding": vector}
            for eid, vector in zip(new_entities, entity_vectors, strict=True)
        ])
    relation_rows = []
    for rid, planned in plan.relations.items():
        stored = stored_relations.get(rid)
        relation_rows.append({
            "id": rid,
            "text": planned.triplet.text,
            "subject_id": planned.triplet.subject_id,
            "object_id": planned.triplet.object_id,
            "passage_ids": _merge_passage_ids(stored["passage_ids"] if stored else [],
                                              planned.passage_ids, rid),
            "embedding": list(stored["embedding"]) if stored else relation_vectors[rid],
        })
    with timed("write_relations"):
        store.upsert_rows(store.relation_collection, relation_rows)
    if existed:
        with timed("stale_links"):
            stale = drop_stale_links(store, _links(plan))
        if stale.relations_updated or stale.relations_deleted:
            logger.info("ingestion: passages ingested again with other triplets: %s", stale)
    with timed("flush"):
        store.flush()
    return IngestionStats(len(plan.passages), len(new_entities), len(relation_rows),
                          plan.dropped_triplets, seconds)


@contextmanager
def timed_stage(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds spent in the ``with`` block to ``seconds[stage]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - start
