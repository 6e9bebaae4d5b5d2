"""Deletion of a source document: its passages, the relations only it supported, and the
entities left with no relation.

Relations and entities shared with other documents stay; a shared relation only loses the
deleted passages from its ``passage_ids``. The order of the writes (relations, then entities,
then passages) makes an interrupted deletion safe to run again: the passages, which say what
to undo, go last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llama_index_graphrag_milvus.extraction import triplets_from_node
from llama_index_graphrag_milvus.store import MilvusGraphStore

_RELATION_FIELDS = ["text", "subject_id", "object_id", "passage_ids", "embedding"]


@dataclass(frozen=True)
class DeletionStats:
    """What one deletion removed or changed (row counts)."""

    passages: int
    relations_deleted: int
    relations_updated: int
    entities_deleted: int


def relation_changes(stored: Mapping[str, dict[str, Any]], removed_passages: set[str]
                     ) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows to upsert (fewer passages) and ids to delete (no passage left).

    >>> rows = {"r1": {"id": "r1", "passage_ids": ["p1", "p2"], "embedding": [1.0]},
    ...         "r2": {"id": "r2", "passage_ids": ["p1"], "embedding": [0.5]}}
    >>> updates, deletes = relation_changes(rows, {"p1"})
    >>> [(u["id"], u["passage_ids"]) for u in updates], deletes
    ([('r1', ['p2'])], ['r2'])
    """
    updates: list[dict[str, Any]] = []
    deletes: list[str] = []
    for relation_id, row in stored.items():
        remaining = [p for p in row["passage_ids"] if p not in removed_passages]
        if not remaining:
            deletes.append(relation_id)
        elif len(remaining) < len(row["passage_ids"]):
            updates.append({**row, "id": relation_id, "passage_ids": remaining,
                            "embedding": [float(x) for x in row["embedding"]]})
    return updates, deletes


def delete_document(store: MilvusGraphStore, ref_doc_id: str) -> DeletionStats:
    """Remove what ``ref_doc_id`` contributed to the graph; a no-op for an unknown id."""
    passages = store.document_passages(ref_doc_id)
    if not passages:
        return DeletionStats(0, 0, 0, 0)
    removed = {p.node_id for p in passages}
    triplets = [t for p in passages for t in triplets_from_node(p)[0]]
    relation_ids = sorted({t.id for t in triplets})
    entity_ids = sorted({e for t in triplets for e in (t.subject_id, t.object_id)})
    stored = store.get_rows(store.relation_collection, relation_ids, _RELATION_FIELDS)
    updates, deletes = relation_changes(stored, removed)
    store.upsert_rows(store.relation_collection, updates)
    store.delete_rows(store.relation_collection, deletes)
    in_use = store.entities_in_use(entity_ids) if entity_ids else set()
    orphans = [e for e in entity_ids if e not in in_use]
    store.delete_rows(store.entity_collection, orphans)
    store.delete_rows(store.passage_collection, sorted(removed))
    store.flush()
    return DeletionStats(len(removed), len(deletes), len(updates), len(orphans))
