"""The writes of a store: passages and rows upserted, rows deleted, and the lookups that
deletion needs (a document's passages, the relations linking passages, the entities still in
use).

A mixin of :class:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.vector_stores.milvus import MilvusVectorStore
from pymilvus import MilvusClient

from llama_index_graphrag_milvus.milvus.filters import in_list, like_literal, quote
from llama_index_graphrag_milvus.milvus.rows import GET_CHUNK, chunks, id_filter, rows_to_passages
from llama_index_graphrag_milvus.milvus.schema import (
    KIND_FIELDS,
    PASSAGE_FIELDS,
    SPREAD_FIELDS,
    TENANT_FIELDS,
    UNKNOWN_SPREAD,
    VECTOR_STORE_KEYS,
    WRITE_BATCH_SIZE,
    milvus_errors,
)
from llama_index_graphrag_milvus.milvus.served import around_filter
from llama_index_graphrag_milvus.words import name_key

IN_USE_WINDOW = 4096
"""Relation ends one query of :meth:`StoreWrites.entities_in_use` reads at most."""
MAX_EXCLUDED_IN_FILTER = 10_000
"""Excluded relation ids :meth:`StoreWrites.entities_in_use` puts in its filter at most."""
ROW_KEYS = frozenset({"id", *VECTOR_STORE_KEYS})
"""The keys of a passage row that are not the passage's metadata (MilvusVectorStore's)."""
FLUSHED_LEVELS = frozenset({"Bounded", "Eventually"})
"""The consistency levels at which a write on a server ends with a flush (their reads do
not wait for the write)."""
DOCUMENTS_PER_READ = 256
"""Documents :meth:`StoreWrites.document_passage_ids` asks for in one query."""


class StoreWrites:
    """The write methods of a store (see the module docstring)."""

    entity_collection: str
    relation_collection: str
    passage_collection: str
    write_options: dict[str, Any]
    consistency_level: str
    records_kinds: bool
    records_spreads: bool
    records_entity_passages: bool
    records_name_keys: bool
    tenant_key: str | None
    dim: int | None
    is_lite: bool

    @property
    def client(self) -> MilvusClient:
        raise NotImplementedError

    @property
    def passages(self) -> MilvusVectorStore:
        raise NotImplementedError


    def upsert_passages(self, nodes: Sequence[BaseNode]) -> None:
        """Upsert passage nodes (with embeddings) into the passage collection."""
        with milvus_errors(f"upsert into {self.passage_collection}"):
            if self.is_lite:
                self._drop_rows_losing_keys(nodes)
            for start in range(0, len(nodes), WRITE_BATCH_SIZE):
                self.passages.add(list(nodes[start:start + WRITE_BATCH_SIZE]))

    def _drop_rows_losing_keys(self, nodes: Sequence[BaseNode]) -> None:
        """Delete the stored rows of ``nodes`` that hold metadata keys the nodes no longer
        have: Milvus Lite's upsert merges a row's dynamic fields into the stored ones, so a
        key removed from a passage (a metadata field, the mark of a failed extraction)
        would stay in its row and go on matching filters."""
        metadata = {node.node_id: node.metadata for node in nodes}
        losing: list[str] = []
        for chunk in chunks(list(metadata), GET_CHUNK):
            for row in self.client.query(collection_name=self.passage_collection,
                                         **self.write_options, filter=id_filter(chunk),
                                         output_fields=["id", "$meta"]):
                if set(row) - ROW_KEYS - set(metadata[row["id"]]):
                    losing.append(row["id"])
        if losing:
            self.client.delete(self.passage_collection, ids=losing)

    def upsert_rows(self, collection: str, rows: Sequence[dict[str, Any]]) -> None:
        """Upsert rows into the entity or relation collection, in batches. Relation rows get
        the kinds of their ends as the collection records them: ``""`` where a row has none,
        none at all in a collection written before kinds were recorded; likewise where their
        ends lead (:data:`~.schema.SPREAD_FIELDS`, :data:`~.schema.UNKNOWN_SPREAD` where a
        row has none: read from the entity rows until a write records it); entity rows lose
        their ``passage_ids`` in a collection written before they were recorded, and get
        their ``name_key`` from their name where the collection records it (none where it
        does not)."""
        if collection == self.relation_collection:
            rows = [{**dict.fromkeys(KIND_FIELDS, ""), **row} if self.records_kinds
                    else {k: v for k, v in row.items() if k not in KIND_FIELDS} for row in rows]
            rows = [{**dict.fromkeys(SPREAD_FIELDS, UNKNOWN_SPREAD), **row}
                    if self.records_spreads
                    else {k: v for k, v in row.items() if k not in SPREAD_FIELDS}
                    for row in rows]
        if collection == self.entity_collection:
            dropped = {*(() if self.records_entity_passages else ("passage_ids",)),
                       *(() if self.records_name_keys else ("name_key",))}
            rows = [{**{k: v for k, v in row.items() if k not in dropped},
                     **({"name_key": name_key(row["name"])} if self.records_name_keys else {})}
                    for row in rows]
        if not self.tenant_key:  # an index without a tenant key has no tenant fields
            rows = [{k: v for k, v in row.items() if k not in TENANT_FIELDS} for row in rows]
        with milvus_errors(f"upsert into {collection}"):
            for start in range(0, len(rows), WRITE_BATCH_SIZE):
                self.client.upsert(collection, list(rows[start:start + WRITE_BATCH_SIZE]))

    def delete_rows(self, collection: str, ids: Sequence[str]) -> None:
        """Delete rows of ``collection`` by primary key, in batches."""
        with milvus_errors(f"delete from {collection}"):
            for start in range(0, len(ids), WRITE_BATCH_SIZE):
                self.client.delete(collection, ids=list(ids[start:start + WRITE_BATCH_SIZE]))

    def document_passages(self, ref_doc_id: str, where: str = "") -> list[BaseNode]:
        """The passage nodes whose source document is ``ref_doc_id`` (and that match
        ``where``, a filter expression on metadata, when given)."""
        if self.dim is None:
            return []
        expression = f"doc_id == {quote(ref_doc_id)}" + (f" and {where}" if where else "")
        with milvus_errors(f"read {self.passage_collection}"):
            rows = self.client.query(collection_name=self.passage_collection,
                                     **self.write_options,
                                     filter=expression,
                                     output_fields=["id", *PASSAGE_FIELDS])
        return rows_to_passages(rows, [row["id"] for row in rows])

    def document_passage_ids(self, ref_doc_ids: Sequence[str], where: str = ""
                             ) -> dict[str, set[str]]:
        """The ids of the passages of each of ``ref_doc_ids`` (that match ``where``), read
        without their text: one query per :data:`DOCUMENTS_PER_READ` documents."""
        found: dict[str, set[str]] = {doc_id: set() for doc_id in ref_doc_ids}
        if self.dim is None:
            return found
        with milvus_errors(f"read {self.passage_collection}"):
            for chunk in chunks(list(found), DOCUMENTS_PER_READ):
                expression = in_list("doc_id", chunk) + (f" and {where}" if where else "")
                for row in self.client.query(collection_name=self.passage_collection,
                                             **self.write_options, filter=expression,
                                             output_fields=["id", "doc_id"]):
                    found[row["doc_id"]].add(row["id"])
        return found

    def document_ids(self, prefix: str) -> set[str]:
        """The ids of the stored documents that start with ``prefix`` (a folder's path, for
        the documents read from its files), from the passages' ``doc_id`` column: queries
        of at most :data:`IN_USE_WINDOW` rows, the documents found leaving the next one.

        ``%``, ``_`` and backslashes of ``prefix`` match any one character in Milvus Lite's
        ``LIKE`` (no escape there): the ids are checked again here.
        """
        if self.dim is None:
            return set()
        found: set[str] = set()
        like = f"doc_id like {quote(like_literal(prefix) + '%')}"
        with milvus_errors(f"read {self.passage_collection}"):
            while True:
                expression = like + (f" and not ({in_list('doc_id', sorted(found))})"
                                     if found else "")
                rows = self.client.query(collection_name=self.passage_collection,
                                         **self.write_options, filter=expression,
                                         output_fields=["doc_id"], limit=IN_USE_WINDOW)
                found.update(row["doc_id"] for row in rows)
                if len(rows) < IN_USE_WINDOW:
                    break
        return {doc_id for doc_id in found if doc_id.startswith(prefix)}

    def entities_in_use(self, entity_ids: Sequence[str],
                        excluding: Collection[str] = ()) -> set[str]:
        """Those of ``entity_ids`` that are the subject or object of a stored relation
        (other than the relations ``excluding`` names).

        Bounded whatever the entities' degrees: each query reads at most
        :data:`IN_USE_WINDOW` relation ends, and the entities it found in use leave the next
        one, so a hub with a million relations costs one window, not its million rows
        (each full window finds at least one entity). Beyond :data:`MAX_EXCLUDED_IN_FILTER`
        excluded relations (a filter that long), the relations are read whole."""
        wanted = list(dict.fromkeys(entity_ids))
        excluded = sorted(set(excluding))
        if len(excluded) > MAX_EXCLUDED_IN_FILTER:
            return self._entities_in_use_read_whole(wanted, excluding)
        return self._ends_in_windows(wanted, "", excluded)

    def _ends_in_windows(self, entity_ids: Sequence[str], where: str,
                         excluded: Sequence[str]) -> set[str]:
        """Those of ``entity_ids`` that are an end of a stored relation matching ``where``
        (and not among ``excluded``): queries of at most :data:`IN_USE_WINDOW` relation ends,
        the entities found leaving the next query (a full window finds one at least)."""
        found: set[str] = set()
        with milvus_errors(f"read {self.relation_collection}"):
            for start in range(0, len(entity_ids), WRITE_BATCH_SIZE):
                remaining = list(entity_ids[start:start + WRITE_BATCH_SIZE])
                while remaining:
                    parts = [f"({around_filter(remaining)})", *([where] if where else []),
                             *([f"not ({in_list('id', excluded)})"] if excluded else [])]
                    rows = self.client.query(collection_name=self.relation_collection,
                                             **self.write_options, filter=" and ".join(parts),
                                             output_fields=["subject_id", "object_id"],
                                             limit=IN_USE_WINDOW)
                    ends = {e for row in rows for e in (row["subject_id"], row["object_id"])}
                    found.update(ends.intersection(remaining))
                    if len(rows) < IN_USE_WINDOW:
                        break
                    remaining = [e for e in remaining if e not in ends]
        return found

    def _entities_in_use_read_whole(self, entity_ids: Sequence[str],
                                    excluding: Collection[str]) -> set[str]:
        used: set[str] = set()
        with milvus_errors(f"read {self.relation_collection}"):
            for start in range(0, len(entity_ids), WRITE_BATCH_SIZE):
                batch = list(entity_ids[start:start + WRITE_BATCH_SIZE])
                expression = f"{in_list('subject_id', batch)} or {in_list('object_id', batch)}"
                for row in self.client.query(collection_name=self.relation_collection,
                                             **self.write_options, filter=expression,
                                             output_fields=["id", "subject_id", "object_id"]):
                    if row["id"] not in excluding:
                        used.update((row["subject_id"], row["object_id"]))
        return used & set(entity_ids)

    def tenants_in_use(self, asked: Mapping[str, Collection[str]], excluding: Collection[str]
                       ) -> dict[str, set[str]] | None:
        """For each entity of ``asked``, those of its tenants ``asked[entity]`` that a stored
        relation of it (other than the relations ``excluding`` names) still has; ``None``
        when ``excluding`` is too long for a filter (:data:`MAX_EXCLUDED_IN_FILTER`).

        One windowed query series per tenant (as :meth:`entities_in_use`): the entities found
        with the tenant leave the next query, so a hub costs one window."""
        excluded = sorted(set(excluding))
        if len(excluded) > MAX_EXCLUDED_IN_FILTER:
            return None
        by_tenant: dict[str, list[str]] = {}
        for entity, tenants in asked.items():
            for tenant in tenants:
                by_tenant.setdefault(tenant, []).append(entity)
        found: dict[str, set[str]] = {entity: set() for entity in asked}
        for tenant, entities in sorted(by_tenant.items()):
            where = f"array_contains(tenants, {quote(tenant)})"
            for entity in self._ends_in_windows(entities, where, excluded):
                found[entity].add(tenant)
        return found

    def entity_tenants_in_use(self, entity_ids: Sequence[str], excluding: Collection[str] = (),
                              replaced: Mapping[str, Sequence[str]] | None = None
                              ) -> dict[str, set[str]]:
        """Those of ``entity_ids`` that are an end of a stored relation (other than the
        relations ``excluding`` names), each with the tenants of those relations (a relation
        of ``replaced`` with the tenants given there: it is about to be written so)."""
        replaced = replaced or {}
        used: dict[str, set[str]] = {}
        wanted = set(entity_ids)
        with milvus_errors(f"read {self.relation_collection}"):
            for start in range(0, len(entity_ids), WRITE_BATCH_SIZE):
                batch = list(entity_ids[start:start + WRITE_BATCH_SIZE])
                expression = f"{in_list('subject_id', batch)} or {in_list('object_id', batch)}"
                for row in self.client.query(
                        collection_name=self.relation_collection, **self.write_options,
                        filter=expression,
                        output_fields=["id", "subject_id", "object_id", "tenants"]):
                    if row["id"] in excluding:
                        continue
                    tenants = replaced.get(row["id"], row.get("tenants") or ())
                    for end in (row["subject_id"], row["object_id"]):
                        if end in wanted:
                            used.setdefault(end, set()).update(tenants)
        return used

    def relations_linking(self, passage_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The relations whose ``passage_ids`` contain any of ``passage_ids``: relation id
        to its row's ``passage_ids``, ``subject_id`` and ``object_id``."""
        linked: dict[str, dict[str, Any]] = {}
        if self.dim is None:
            return linked
        with milvus_errors(f"read {self.relation_collection}"):
            for start in range(0, len(passage_ids), WRITE_BATCH_SIZE):
                batch = ", ".join(quote(p) for p in passage_ids[start:start + WRITE_BATCH_SIZE])
                for row in self.client.query(
                        collection_name=self.relation_collection, **self.write_options,
                        filter=f"array_contains_any(passage_ids, [{batch}])",
                        output_fields=["id", "passage_ids", "subject_id", "object_id"]):
                    linked[row["id"]] = {**row, "passage_ids": list(row["passage_ids"])}
        return linked

    def flush(self) -> None:
        """End a write: Milvus Lite seals what was written; a server at ``Strong`` or
        ``Session`` consistency is not flushed (acknowledged rows are in its log, and the
        reads that follow see them: ``Strong`` all, ``Session`` this process's; it seals
        segments itself), at ``Bounded`` or ``Eventually`` the three collections are
        flushed at once, so that the process's next reads find the write.

        A flush after every write was most of a small write's time on a server (5 passages at
        ``Strong``: 3.4 s p50 against 0.69 s) and left many small segments that slowed
        searches."""
        names = (self.entity_collection, self.relation_collection, self.passage_collection)
        with milvus_errors("flush the graph collections"):
            if self.is_lite:  # in-process: nothing to wait for
                for name in names:
                    self.client.flush(name)
            elif self.consistency_level in FLUSHED_LEVELS:
                self.concurrently_all([partial(self.client.flush, name) for name in names])

    def concurrently_all(self, calls: Sequence[Callable[[], Any]]) -> tuple[Any, ...]:
        raise NotImplementedError
