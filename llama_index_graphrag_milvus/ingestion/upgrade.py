"""Bringing an index written by an earlier version to this version's layout: entity rows
that list their passages (:data:`~llama_index_graphrag_milvus.milvus.schema.
ENTITY_PASSAGE_FIELDS`) and record their names' keys (:data:`~llama_index_graphrag_milvus.
milvus.schema.ENTITY_KEY_FIELDS`), passages whose BM25 text is folded (:func:`fold_passage_words`),
and on a server a passage collection indexed like the graph collections
(:func:`reindex_passages`).

Milvus cannot add a field to a collection, so :func:`upgrade_entity_rows` builds a new entity
collection and puts it in the old one's place:

1. ``{prefix}_entities_upgrade`` is created with the current fields and the old collection's
   vector index (dropped first when an interrupted run left it: the old collection is then
   still whole);
2. where the entity rows do not list their passages, the relations are read once (their
   ends and passages: the lists); then the entity rows in primary-key ranges, written to the
   new collection with their lists (those they have, else in the order the relations were
   read: the order of linking is not recorded) and their names' keys;
3. the old entity collection is dropped and the new one renamed in its place.

A run interrupted between the two calls of the last step leaves no entity collection: the
next open of the index finishes the rename
(:meth:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore.open_if_created`). Run it
with no other writer; readers of the index fail while the collections are swapped.
"""

from __future__ import annotations

import logging
from typing import Any

from tqdm import tqdm

from llama_index_graphrag_milvus.ingestion.entity_rows import passages_of_ends
from llama_index_graphrag_milvus.milvus.columns import pk_ranges
from llama_index_graphrag_milvus.milvus.fulltext import LEXICAL_FIELD, fitted, folded_words
from llama_index_graphrag_milvus.milvus.schema import (
    ENTITY_FIELDS,
    ENTITY_KEY_FIELDS,
    ENTITY_KEY_INDEXES,
    ENTITY_PASSAGE_FIELDS,
    ENTITY_TENANT_FIELDS,
    METRIC,
    WRITE_BATCH_SIZE,
    create_collection,
    field_indexes,
    milvus_errors,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.words import name_key

logger = logging.getLogger(__name__)


def vector_index(store: MilvusGraphStore, collection: str) -> tuple[str, dict[str, Any]]:
    """The type and build parameters of ``collection``'s vector index (the store's defaults
    when it has none)."""
    info = field_indexes(store.client, collection).get("embedding")
    if info is None:
        return store.index_type, dict(store.index_params)
    params = {k: int(v) if str(v).isdigit() else v for k, v in info.items()
              if k not in ("index_type", "field_name", "index_name", "metric_type",
                           "total_rows", "indexed_rows", "pending_index_rows", "state")}
    return str(info.get("index_type") or store.index_type), params


def upgrade_entity_rows(store: MilvusGraphStore, show_progress: bool = False) -> int:
    """Give every entity row of an index written before entities listed their passages or
    recorded their names' keys (:data:`~llama_index_graphrag_milvus.milvus.schema.
    ENTITY_KEY_FIELDS`) what it lacks (see the module docstring); the number of entity rows
    written (0 when the index records both already, or holds nothing yet). A row's list
    kept where the collection has one. Raises :class:`~llama_index_graphrag_milvus.errors.
    MilvusStoreError` on a closed store."""
    client = store.client  # raises on a closed store
    if not store.open_if_created() or (store.records_entity_passages
                                       and store.records_name_keys):
        return 0
    old, new = store.entity_collection, store.upgrade_collection
    listed = store.records_entity_passages  # the lists as they are, in the order linked
    with milvus_errors(f"upgrade {old}"):
        if new in client.list_collections():
            client.drop_collection(new)
        index_type, index_params = vector_index(store, old)
        create_collection(client, new, (
            *ENTITY_FIELDS, *ENTITY_PASSAGE_FIELDS, *ENTITY_KEY_FIELDS,
            *(ENTITY_TENANT_FIELDS if store.tenant_key else ())), int(store.dim or 0),
            index_type, store.consistency_level, index_params=index_params,
            scalar_indexes=() if store.is_lite else ENTITY_KEY_INDEXES)
    lists = {} if listed else passages_of_ends(store.read_all(
        store.relation_collection, ["subject_id", "object_id", "passage_ids"], for_write=True))
    fields = ["name", "embedding", *(("passage_ids",) if listed else ()),
              *(("tenants",) if store.tenant_key else ())]
    written = 0
    ranges = pk_ranges(store.count(old), WRITE_BATCH_SIZE)
    with milvus_errors(f"upgrade {old}"):
        for where in tqdm(ranges, desc="Upgrading the entity rows", unit=" ranges",
                          disable=not show_progress):
            rows = client.query(collection_name=old, filter=where,
                                      output_fields=["id", *fields], **store.write_options)
            if rows:
                client.upsert(new, [
                    {**row, "embedding": [float(x) for x in row["embedding"]],
                     "passage_ids": list(row["passage_ids"]) if listed
                     else lists.get(row["id"], []),
                     "name_key": name_key(row["name"])} for row in rows])
                written += len(rows)
        client.flush(new)
        client.drop_collection(old)
    store.finish_upgrade()
    logger.info("%s upgraded: %d entities list their passages and their names' keys", old,
                written)
    return written


def fold_passage_words(store: MilvusGraphStore, show_progress: bool = False) -> int:
    """Fold the text BM25 reads of every passage of an index created before BM25 read words
    without accents or case (:func:`~llama_index_graphrag_milvus.milvus.fulltext.
    folded_words`), then record it, so that "Aschenbrodel" finds "Aschenbrödel" as on a new
    index; the number of passage rows written (0 when the index folds already, has no
    full-text search, or its BM25 reads a field of the user's). Each row is written again
    with its vector, text and metadata as they are (Milvus computes its BM25 vector from
    the new text); only the passages whose text changes are written.

    Interrupted, the index still matches words as written (the record comes last) with some
    passages folded, which a query of accented words no longer matches; the next call
    folds the rest (a folded text folds to itself)."""
    client = store.client  # raises on a closed store
    if not store.open_if_created() or not store.words_unfolded:
        return 0
    collection = store.passage_collection
    with milvus_errors(f"fold the words of {collection}"):
        info = client.describe_collection(collection)
        computed = {name for function in info.get("functions") or ()  # BM25's vector
                    for name in function.get("output_field_names") or ()}
        written = 0
        ranges = pk_ranges(store.count(collection), WRITE_BATCH_SIZE)
        for where in tqdm(ranges, desc="Folding the passages' words", unit=" ranges",
                          disable=not show_progress):
            rows = client.query(collection_name=collection, filter=where,
                                output_fields=["*"], **store.write_options)
            changed = [
                {**{k: v for k, v in row.items() if k not in computed},
                 "embedding": [float(x) for x in row["embedding"]], LEXICAL_FIELD: folded}
                for row in rows
                if (folded := fitted(folded_words(row[LEXICAL_FIELD] or "")))
                != row[LEXICAL_FIELD]]
            if changed:
                client.upsert(collection, changed)
                written += len(changed)
        client.flush(collection)
    store.record_folded_words()
    logger.info("%s upgraded: the words of %d passages folded", collection, written)
    return written


def reindex_passages(store: MilvusGraphStore) -> bool:
    """Give the passage collection the store's vector index when it has ``FLAT`` (what
    ``MilvusVectorStore`` gave it before this version) and the store builds another (a
    server's ``AUTOINDEX``): a ``FLAT`` search compares the query with every passage. The
    collection is released, its dense index dropped and built again, and loaded: its
    searches fail meanwhile. ``True`` when it was rebuilt; Milvus Lite (``FLAT`` only) and
    a passage collection already indexed otherwise are left as they are.

    Interrupted after the drop, the collection has no vector index: the next open of the
    index builds the store's (``MilvusVectorStore`` creates a missing index), as does the
    next call."""
    client = store.client  # raises on a closed store
    collection = store.passage_collection
    with milvus_errors(f"index {collection}"):
        dense = store.scanned_passage_index()
        if dense is None:
            return False
        client.release_collection(collection)
        if dense:
            client.drop_index(collection, dense["index_name"])
        params = client.prepare_index_params()
        params.add_index("embedding", index_type=store.index_type, metric_type=METRIC,
                         index_name="embedding", params=dict(store.index_params))
        client.create_index(collection, params)
        client.load_collection(collection)
    logger.info("%s indexed with %s (was FLAT)", collection, store.index_type)
    return True
