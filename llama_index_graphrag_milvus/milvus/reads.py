"""The reads of a store beyond the query path: whole collections (in primary-key ranges or
as column batches: what the in-memory copies are built from), rows by id, counts.

A mixin of :class:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from pymilvus import MilvusClient
from tqdm import tqdm

from llama_index_graphrag_milvus.milvus.columns import (
    ENTITY_COLUMNS,
    PASSAGE_COLUMNS,
    RELATION_COLUMNS,
    RELATION_COLUMNS_WITH_KINDS,
    C,
    CollectionReads,
    ColumnKind,
    pk_ranges,
    read_columns,
)
from llama_index_graphrag_milvus.milvus.fulltext import FULL_TEXT_FIELD, bm25_parameters
from llama_index_graphrag_milvus.milvus.rows import rows_to_passages
from llama_index_graphrag_milvus.milvus.schema import (
    KIND_FIELDS,
    PASSAGE_FIELDS,
    SPREAD_FIELDS,
    TENANT_FIELDS,
    WRITE_BATCH_SIZE,
    milvus_errors,
)
from llama_index_graphrag_milvus.records import EntityColumns, PassageColumns, RelationColumns


class StoreReads:
    """The whole-collection and by-id reads of a store (see the module docstring)."""

    relation_collection: str
    entity_collection: str
    passage_collection: str
    read_options: dict[str, Any]
    write_options: dict[str, Any]
    records_kinds: bool
    records_spreads: bool
    records_entity_passages: bool
    reads: CollectionReads
    dim: int | None
    is_lite: bool
    consistency_level: str
    tenant_key: str | None
    full_text: bool
    full_text_field: str

    @property
    def client(self) -> MilvusClient:
        raise NotImplementedError


    def all_passages(self) -> list[BaseNode]:
        """Every stored passage node (text and metadata, no vector)."""
        if self.dim is None:
            return []
        rows = self.read_all(self.passage_collection, PASSAGE_FIELDS)
        return rows_to_passages(rows, [row["id"] for row in rows])

    def read_all(self, collection: str, output_fields: list[str], for_write: bool = False
                 ) -> list[dict[str, Any]]:
        """Every row of ``collection`` (``output_fields`` and ``id``), read in primary-key
        ranges (the ids are hex hashes); ``for_write``: read for a write, at ``Strong``
        whatever the index's level."""
        rows: list[dict[str, Any]] = []
        options = self.write_options if for_write else self.read_options
        with milvus_errors(f"read {collection}"):
            total = self.client.query(collection_name=collection, **options, filter="",
                                      output_fields=["count(*)"])[0]["count(*)"]
            for filter_ in pk_ranges(int(total), self.reads.range_rows):
                rows.extend(self.client.query(collection_name=collection, **options,
                                              filter=filter_,
                                              output_fields=["id", *output_fields]))
        return rows

    def passage_ids_where(self, where: str) -> list[str]:
        """The ids of every passage that matches ``where`` (a filter expression on
        metadata), read in primary-key ranges."""
        if self.dim is None:
            return []
        ids: list[str] = []
        with milvus_errors(f"read {self.passage_collection}"):
            total = self.count(self.passage_collection)
            for range_ in pk_ranges(int(total), self.reads.range_rows):
                ids.extend(row["id"] for row in self.client.query(
                    collection_name=self.passage_collection, **self.read_options,
                    filter=f"({range_}) and {where}", output_fields=["id"]))
        return ids

    def flush_collection(self, collection: str) -> None:
        """Seal what was written to one collection."""
        with milvus_errors(f"flush {collection}"):
            self.client.flush(collection)


    def relation_fields(self, fields: Sequence[str]) -> list[str]:
        """``fields`` of the relation collection to read, with the kinds of the ends and
        where they lead (:data:`~.schema.SPREAD_FIELDS`) where the collection records
        them."""
        return [*fields, *(KIND_FIELDS if self.records_kinds else ()),
                *(SPREAD_FIELDS if self.records_spreads else ()),
                *(TENANT_FIELDS if self.tenant_key else ())]

    @property
    def entity_row_fields(self) -> list[str]:
        """The fields an entity row is read with to be written again (an upsert replaces a
        whole row): its name and vector, and its passages and tenants where recorded."""
        return ["id", "name", "embedding",
                *(("passage_ids",) if self.records_entity_passages else ()),
                *(("tenants",) if self.tenant_key else ())]

    def get_rows(self, collection: str, ids: Sequence[str], output_fields: list[str],
                 for_write: bool = False) -> dict[str, dict[str, Any]]:
        """Rows of ``collection`` by primary key (missing ids are absent from the result);
        ``for_write``: read for a write, at ``Strong`` whatever the index's level."""
        found: dict[str, dict[str, Any]] = {}
        options = self.write_options if for_write else self.read_options
        with milvus_errors(f"read {collection}"):
            for start in range(0, len(ids), WRITE_BATCH_SIZE):
                batch = list(ids[start:start + WRITE_BATCH_SIZE])
                for row in self.client.get(collection_name=collection, **options,
                                           ids=batch, output_fields=output_fields):
                    found[row["id"]] = row
        return found

    def count(self, collection: str) -> int:
        """Exact number of rows in ``collection`` (0 when it does not exist)."""
        if self.dim is None:
            return 0
        with milvus_errors(f"count {collection}"):
            rows = self.client.query(collection_name=collection, **self.read_options, filter="",
                                     output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def read_relations(self, show_progress: bool = False, reads: CollectionReads | None = None
                       ) -> Iterator[RelationColumns]:
        """Every relation row (ids, passage ids, vector, text) as column batches: what the
        in-memory graph is built from, read as
        :mod:`~llama_index_graphrag_milvus.milvus.columns` says (``reads``: this store's
        :attr:`reads` by default)."""
        kind = RELATION_COLUMNS_WITH_KINDS if self.records_kinds else RELATION_COLUMNS
        return self._read_columns(self.relation_collection, kind, show_progress, reads)

    def read_entities(self, show_progress: bool = False, reads: CollectionReads | None = None
                      ) -> Iterator[EntityColumns]:
        """Every entity row (id, name, vector) as column batches, read as
        :meth:`read_relations` reads relations: what entity seed searches in memory use."""
        return self._read_columns(self.entity_collection, ENTITY_COLUMNS, show_progress, reads)

    def read_passage_vectors(self, show_progress: bool = False,
                             reads: CollectionReads | None = None) -> Iterator[PassageColumns]:
        """Every passage's id and vector as column batches, read as :meth:`read_relations`
        reads relations: what passage searches in memory use."""
        return self._read_columns(self.passage_collection, PASSAGE_COLUMNS, show_progress,
                                  reads)

    def read_passage_words(self, show_progress: bool = False
                           ) -> Iterator[tuple[list[str], list[str]]]:
        """Every passage's id and the text its BM25 reads (:attr:`full_text_field`), as
        ``(ids, texts)`` batches read in primary-key ranges: what BM25 in memory uses.
        Nothing when the passages have no full-text search."""
        if self.dim is None or not self.full_text:
            return
        total = self.count(self.passage_collection)
        field = self.full_text_field
        with milvus_errors(f"read {self.passage_collection}"), tqdm(
                total=total, desc="Reading passage words", unit="passage",
                disable=not show_progress) as progress:
            for range_ in pk_ranges(total, self.reads.range_rows):
                rows = self.client.query(collection_name=self.passage_collection,
                                         **self.read_options, filter=range_,
                                         output_fields=["id", field])
                progress.update(len(rows))
                yield [row["id"] for row in rows], [row.get(field) or "" for row in rows]

    def full_text_bm25(self) -> tuple[float, float]:
        """BM25's ``(k1, b)`` on the passages: the sparse index's, else (no parameters, or
        an index not named after its field) Milvus's defaults."""
        info: dict[str, Any] = {}
        with milvus_errors(f"describe the indexes of {self.passage_collection}"):
            if FULL_TEXT_FIELD in self.client.list_indexes(self.passage_collection):
                info = self.client.describe_index(self.passage_collection,
                                                  FULL_TEXT_FIELD) or {}
        return bm25_parameters(info, self.is_lite)

    def _read_columns(self, collection: str, kind: ColumnKind[C], show_progress: bool,
                      reads: CollectionReads | None) -> Iterator[C]:
        if self.dim is None:
            return
        yield from read_columns(self.client, collection, kind, self.count(collection),
                                self.dim, self.is_lite, self.consistency_level,
                                reads or self.reads, show_progress)
