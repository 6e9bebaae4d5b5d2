"""Removing passages from the graph: a document's delete, and the links a re-ingested
passage no longer has.

A relation links to the passages it was extracted from (``passage_ids``). When a passage is
deleted, or ingested again with other triplets, the relations lose that link; a relation left
with no passage is deleted, and so is an entity left with no relation. Relations and
entities shared with other passages stay.

The links are found in the relation collection itself (the relations whose ``passage_ids``
contain the passage), not in the passage's stored triplets, so a link the passage's metadata
no longer lists (an earlier ingestion of the same passage with other triplets) is removed
too. The order of the writes (orphaned entities, then relations, then passages) makes an
interrupted run safe to run again: the passages, which say what to undo, go last.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index_graphrag_milvus.extraction.triplets import triplets_from_node
from llama_index_graphrag_milvus.ingestion.entity_rows import (
    Unlink,
    lost_passages,
    rewritten,
    shrunk_passages,
)
from llama_index_graphrag_milvus.ingestion.spreads import listed_counts, refresh_spreads
from llama_index_graphrag_milvus.ingestion.tenants import entity_tenants, narrowed_tenants
from llama_index_graphrag_milvus.milvus.schema import MANY_TENANTS, SPREAD_CAP
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

_RELATION_FIELDS = ["text", "subject_id", "object_id", "passage_ids", "embedding"]
"""What a changed relation is read with (and its kinds and tenant fields, where recorded)."""


@dataclass(frozen=True)
class DeletionStats:
    """What one deletion removed or changed (row counts)."""

    passages: int
    relations_deleted: int
    relations_updated: int
    entities_deleted: int


@dataclass(frozen=True)
class UnlinkStats:
    """Relations updated (fewer passages) or deleted, and entities deleted, by one unlink."""

    relations_updated: int = 0
    relations_deleted: int = 0
    entities_deleted: int = 0


def relation_changes(stored: Mapping[str, dict[str, Any]], unlink: Unlink
                     ) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows to upsert (fewer passages) and ids to delete (no passage left).

    >>> rows = {"r1": {"id": "r1", "passage_ids": ["p1", "p2"], "embedding": [1.0]},
    ...         "r2": {"id": "r2", "passage_ids": ["p1"], "embedding": [0.5]}}
    >>> updates, deletes = relation_changes(rows, lambda relation, passage: passage == "p1")
    >>> [(u["id"], u["passage_ids"]) for u in updates], deletes
    ([('r1', ['p2'])], ['r2'])
    """
    updates: list[dict[str, Any]] = []
    deletes: list[str] = []
    for relation_id, row in stored.items():
        remaining = [p for p in row["passage_ids"] if not unlink(relation_id, p)]
        if not remaining:
            deletes.append(relation_id)
        elif len(remaining) < len(row["passage_ids"]):
            updates.append({**row, "id": relation_id, "passage_ids": remaining,
                            "embedding": [float(x) for x in row["embedding"]],
                            **narrowed_tenants(row, remaining)})
    return updates, deletes


def unlink_passages(store: MilvusGraphStore, passage_ids: Sequence[str], unlink: Unlink,
                    entity_ids: Collection[str] = ()) -> UnlinkStats:
    """Remove the links ``unlink`` chooses from the relations that link to ``passage_ids``;
    delete the relations left with no passage and the entities left with no relation
    (among the endpoints of the changed relations and ``entity_ids``); the entities that
    stay lose the passages none of their relations links to any more."""
    linked = store.relations_linking(passage_ids)
    changed = [rid for rid, row in linked.items()
               if any(unlink(rid, p) for p in row["passage_ids"])]
    stored = store.get_rows(store.relation_collection, changed,
                            store.relation_fields(_RELATION_FIELDS), for_write=True)
    updates, deletes = relation_changes(stored, unlink)
    ends = [stored[rid][end] for rid in deletes for end in ("subject_id", "object_id")]
    if store.tenant_key:  # the ends of narrowed relations may lose a tenant too
        ends += [row[end] for row in updates for end in ("subject_id", "object_id")]
    candidates = sorted({*entity_ids, *ends})
    in_use = store.entities_in_use(candidates, excluding=set(deletes)) if candidates \
        else set()
    rows = ({row["id"]: row for row in tenants_after(store, stored, deletes, updates, in_use)}
            if store.tenant_key and candidates else {})
    lost: dict[str, set[str]] = {}
    if store.records_entity_passages:  # an entity not a candidate keeps a relation
        lost = {e: ps for e, ps in lost_passages(linked, unlink).items()
                if e in in_use or e not in candidates}
        unread = [e for e in lost if e not in rows]
        rows.update(shrunk_passages({**store.get_rows(
            store.entity_collection, unread, store.entity_row_fields, for_write=True), **rows},
            lost))
    store.upsert_rows(store.entity_collection, list(rows.values()))
    orphans = [e for e in candidates if e not in in_use]
    store.delete_rows(store.entity_collection, orphans)
    store.upsert_rows(store.relation_collection, updates)
    store.delete_rows(store.relation_collection, deletes)
    if store.records_entity_passages:
        # where the remaining relations' ends lead, for the entities that lost passages and
        # (a run killed after its writes) the candidates: those now under the cap
        counts = listed_counts(store.get_rows(
            store.entity_collection, sorted({*lost, *(e for e in candidates if e in in_use)}),
            ["passage_ids"], for_write=True))
        refresh_spreads(store, {e: c for e, c in counts.items() if c < SPREAD_CAP})
    return UnlinkStats(len(updates), len(deletes), len(orphans))


def lost_tenants(stored: Mapping[str, Mapping[str, Any]], deletes: Sequence[str],
                 updates: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    """The tenants each entity may lose: those of its deleted relations, and those its
    narrowed relations (``updates``, as they will be written) no longer have.

    >>> stored = {"r1": {"subject_id": "a", "object_id": "b", "tenants": ["acme"]},
    ...           "r2": {"subject_id": "a", "object_id": "c", "tenants": ["acme", "globex"]}}
    >>> lost_tenants(stored, ["r1"], [{"id": "r2", "subject_id": "a", "object_id": "c",
    ...                                "tenants": ["globex"]}])
    {'a': {'acme'}, 'b': {'acme'}, 'c': {'acme'}}
    """
    lost: dict[str, set[str]] = {}
    changes = [(stored[rid], set(stored[rid].get("tenants") or ())) for rid in deletes]
    changes += [(row, set(stored[row["id"]].get("tenants") or ()) - set(row["tenants"]))
                for row in updates]
    for row, tenants in changes:
        for end in (row["subject_id"], row["object_id"]):
            lost.setdefault(end, set()).update(tenants)
    return {entity: tenants for entity, tenants in lost.items() if tenants}


def tenants_after(store: MilvusGraphStore, stored: Mapping[str, Mapping[str, Any]],
                  deletes: Sequence[str], updates: Sequence[Mapping[str, Any]],
                  in_use: Collection[str]) -> list[dict[str, Any]]:
    """The entity rows (of those still ``in_use``) whose ``tenants`` shrink: a tenant of
    theirs goes when no relation left has it (the narrowed relations as they will be
    written). Bounded reads: only the tenants each entity may lose are checked, one windowed
    query series per tenant (:meth:`~..milvus.store.MilvusGraphStore.tenants_in_use`); an
    entity of :data:`~..milvus.schema.MANY_TENANTS` keeps it. Beyond a filter's length of
    excluded relations, every relation of the entities is read (:func:`shrunk_entities`)."""
    lost = {e: t for e, t in lost_tenants(stored, deletes, updates).items() if e in in_use}
    if not lost:
        return []
    kept: dict[str, set[str]] = {e: set() for e in lost}
    for row in updates:  # the narrowed relations, as they will be written
        for end in (row["subject_id"], row["object_id"]):
            if end in lost:
                kept[end].update(lost[end].intersection(row["tenants"]))
    asked = {e: tenants - kept[e] for e, tenants in lost.items() if tenants - kept[e]}
    found = store.tenants_in_use(asked, excluding={*deletes, *(row["id"] for row in updates)})
    if found is None:
        used = store.entity_tenants_in_use(sorted(in_use), excluding=set(deletes), replaced={
            row["id"]: row["tenants"] for row in updates})
        return shrunk_entities(store, used)
    rows = store.get_rows(store.entity_collection, sorted(asked), store.entity_row_fields,
                          for_write=True)
    shrunk = []
    for entity, row in rows.items():
        before = sorted(set(row.get("tenants") or ()))
        if MANY_TENANTS in before:
            continue  # any tenant may: kept (a filtered query checks the passages)
        after = entity_tenants(set(before) - (asked[entity] - found.get(entity, set())))
        if after != before:
            shrunk.append(rewritten(row, tenants=after))
    return shrunk


def shrunk_entities(store: MilvusGraphStore, used: Mapping[str, set[str]]
                    ) -> list[dict[str, Any]]:
    """The entity rows whose ``tenants`` are more than the tenants of their remaining
    relations (``used``), with those instead."""
    stored = store.get_rows(store.entity_collection, list(used), store.entity_row_fields,
                            for_write=True)
    return [rewritten(row, tenants=after) for entity, row in stored.items()
            for after in (entity_tenants(used[entity]),)
            if after != sorted(set(row.get("tenants") or ()))]


def delete_document(store: MilvusGraphStore, ref_doc_id: str, where: str = "",
                    keep: Collection[str] = ()) -> DeletionStats:
    """Remove what ``ref_doc_id`` contributed to the graph (only its passages matching
    ``where``, a filter expression on passage metadata, when given); a no-op for an unknown
    id. Passages whose ids are in ``keep`` stay (an update writes them again: their links
    are then set by :func:`drop_stale_links`, and readers never see them missing)."""
    passages = [p for p in store.document_passages(ref_doc_id, where) if p.node_id not in keep]
    if not passages:
        return DeletionStats(0, 0, 0, 0)
    removed = {p.node_id for p in passages}
    # the entities of the passages' triplets too: an interrupted earlier run may have
    # deleted their relations already
    entities = {e for p in passages for t in triplets_from_node(p)[0]
                for e in (t.subject_id, t.object_id)}
    stats = unlink_passages(store, sorted(removed), lambda _, passage: passage in removed,
                            entities)
    store.delete_rows(store.passage_collection, sorted(removed))
    store.flush()
    return DeletionStats(len(removed), stats.relations_deleted, stats.relations_updated,
                         stats.entities_deleted)


def drop_stale_links(store: MilvusGraphStore, links: Mapping[str, Collection[str]]
                     ) -> UnlinkStats:
    """After passages were (re-)ingested: ``links`` maps each passage id to the relation ids
    it now supports; every other link to those passages goes (a passage ingested again with
    other triplets no longer supports its old relations)."""
    if not links:
        return UnlinkStats()
    return unlink_passages(store, list(links),
                           lambda relation, passage: passage in links
                           and relation not in links[passage])
