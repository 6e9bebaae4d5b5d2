"""Document maintenance of :class:`~llama_index_graphrag_milvus.index.GraphRAGIndex`, with
LlamaIndex's names: ``insert`` / ``insert_nodes`` (and ``insert_documents``,
``insert_triplets``), ``update_ref_doc``, ``refresh_ref_docs``, ``delete_ref_doc``, each
with an async twin.

Each write and its async twin build the same plan (pure, :mod:`.plan`); the async twin
extracts through the extractor's async API and runs the embeddings and the Milvus writes in a
worker thread, so the event loop is never blocked. Every write drops the index's in-memory
copies (:class:`~llama_index_graphrag_milvus.index_cache.IndexCache`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, Document
from llama_index.core.settings import Settings
from llama_index.core.vector_stores import MetadataFilters

from llama_index_graphrag_milvus.errors import ExtractionError, InvalidInputError
from llama_index_graphrag_milvus.extraction.extraction_report import extraction_failures
from llama_index_graphrag_milvus.index_cache import IndexCache
from llama_index_graphrag_milvus.ingestion.deletion import DeletionStats, delete_document
from llama_index_graphrag_milvus.ingestion.documents import (
    ExtractionOptions,
    aextract_documents,
    check_document,
    check_options,
    extract_documents,
)
from llama_index_graphrag_milvus.ingestion.identity import EmbedModelRecord, IndexSettings
from llama_index_graphrag_milvus.ingestion.plan import (
    IngestionPlan,
    PassageInput,
    plan_from_nodes,
    plan_ingestion,
)
from llama_index_graphrag_milvus.ingestion.refresh import RefreshPlan, refresh_plan
from llama_index_graphrag_milvus.ingestion.upgrade import (
    fold_passage_words,
    reindex_passages,
    upgrade_entity_rows,
)
from llama_index_graphrag_milvus.ingestion.write import (
    IngestionStats,
    PreparedWrite,
    commit_write,
    prepare_write,
)
from llama_index_graphrag_milvus.milvus.filters import matches, to_milvus_expression
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

if TYPE_CHECKING:
    from typing import Unpack

logger = logging.getLogger(__name__)


class DocumentMaintenance:
    """The writes of an index (see the module docstring); a base of ``GraphRAGIndex``."""

    store: MilvusGraphStore
    embed_model: BaseEmbedding
    show_progress: bool
    passage_identity_keys: tuple[str, ...] | str
    cache: IndexCache

    # ------------------------------------------------------------------ ingestion
    # Each write has an async twin. Both build the same plan (pure); the async twin extracts
    # through the extractor's async API and runs the embeddings and the Milvus writes in a
    # worker thread, so the event loop is never blocked.

    def insert_triplets(self, data: Iterable[tuple[PassageInput, Iterable[Any]]]
                        ) -> IngestionStats:
        """Upsert passages with their triplets; see :meth:`from_triplets`."""
        return self._write(plan_ingestion(data, self.passage_identity_keys))

    async def ainsert_triplets(self, data: Iterable[tuple[PassageInput, Iterable[Any]]]
                               ) -> IngestionStats:
        """Async twin of :meth:`insert_triplets`."""
        return await self._awrite(plan_ingestion(data, self.passage_identity_keys))

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> IngestionStats:
        """Upsert nodes whose triplets are in metadata (LlamaIndex's ``insert_nodes``).

        Read from ``metadata["graphrag_triplets"]`` (written by ``TripletExtractor``) or
        from the ``nodes``/``relations`` keys written by core's path extractors. A node with
        no triplets is stored as a passage (searchable by naive RAG) with no relations.
        ``insert_kwargs`` are refused (core's indexes pass them to their storage).
        """
        self._no_extra("insert_nodes", insert_kwargs)
        return self._write(plan_from_nodes(nodes, self.passage_identity_keys))

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any
                            ) -> IngestionStats:
        """Async twin of :meth:`insert_nodes`."""
        self._no_extra("ainsert_nodes", insert_kwargs)
        return await self._awrite(plan_from_nodes(nodes, self.passage_identity_keys))

    def insert_documents(self, documents: Sequence[Document],
                         **extraction: Unpack[ExtractionOptions]) -> IngestionStats:
        """Split, extract and upsert documents; ``extraction``: ``llm``,
        ``transformations``, ``kg_extractor``, ``extraction_cache``,
        ``extraction_workers`` (see :meth:`from_documents`). Give documents stable ids
        (``Document(doc_id=...)``, ``SimpleDirectoryReader(filename_as_id=True)``): passage
        ids include them, so the same document ingested twice is an upsert, and
        :meth:`delete_ref_doc` finds it."""
        return self.insert_nodes(extract_documents(documents, extraction, self.show_progress))

    async def ainsert_documents(self, documents: Sequence[Document],
                                **extraction: Unpack[ExtractionOptions]) -> IngestionStats:
        """Async twin of :meth:`insert_documents` (the extractor's ``acall``: the LLM's
        async API)."""
        nodes = await aextract_documents(documents, extraction, self.show_progress)
        return await self.ainsert_nodes(nodes)

    def insert(self, document: Document, **extraction: Unpack[ExtractionOptions]
               ) -> IngestionStats:
        """Upsert one document (LlamaIndex's ``insert``); options as for
        :meth:`insert_documents`."""
        return self.insert_documents([document], **extraction)

    async def ainsert(self, document: Document, **extraction: Unpack[ExtractionOptions]
                      ) -> IngestionStats:
        """Async twin of :meth:`insert`."""
        return await self.ainsert_documents([document], **extraction)

    def update_ref_doc(self, document: Document, *, filters: MetadataFilters | None = None,
                       **extraction: Unpack[ExtractionOptions]) -> IngestionStats:
        """Replace what ``document.node_id`` contributed with the document's new content
        (LlamaIndex's ``update_ref_doc``; :meth:`update` is the same method).

        Extraction and the new content's embeddings run first (an error there deletes
        nothing); then the old passages the new content does not have again (of those
        matching ``filters``, when given: see :meth:`delete_ref_doc`), the relations only
        they supported and the entities left with no relation are deleted, and the new
        content is written (a passage it has again is overwritten in place).
        ``extraction`` as for :meth:`insert_documents`.
        """
        check_document(document)
        where = self._delete_scope(document.node_id, filters)
        nodes = extract_documents([document], extraction, self.show_progress)
        self._within_scope(document.node_id, nodes, filters)
        self._extracted(document.node_id, nodes)
        return self._update(document.node_id, where, nodes)

    async def aupdate_ref_doc(self, document: Document, *,
                              filters: MetadataFilters | None = None,
                              **extraction: Unpack[ExtractionOptions]) -> IngestionStats:
        """Async twin of :meth:`update_ref_doc`."""
        check_document(document)
        where = self._delete_scope(document.node_id, filters)
        nodes = await aextract_documents([document], extraction, self.show_progress)
        self._within_scope(document.node_id, nodes, filters)
        self._extracted(document.node_id, nodes)
        return await asyncio.to_thread(self._update, document.node_id, where, nodes)

    update = update_ref_doc
    """The name of :meth:`update_ref_doc` in 0.1.0 (kept as an alias)."""

    def refresh_ref_docs(self, documents: Sequence[Document], *,
                         filters: MetadataFilters | None = None,
                         **extraction: Unpack[ExtractionOptions]) -> list[bool]:
        """Bring the index in line with ``documents`` (LlamaIndex's ``refresh_ref_docs``):
        a document whose id the index does not hold is inserted, one whose passages or
        metadata changed is updated, one now without text has its stored passages deleted,
        and one stored as the same passages is left as it is, without an LLM call. Returns,
        in order, whether each document was inserted, updated or deleted.

        Documents are compared by their passages (the node parsers of ``extraction`` run,
        not the extractor): the same text and identity metadata give the same passage ids,
        and their other metadata is compared too. A document whose last write was
        interrupted, or a passage of which the LLM failed to extract, counts as changed,
        so a refresh run again finishes the job. The new and changed documents are
        extracted together (``extraction_workers`` LLM calls in flight). A changed
        document the LLM could not extract is left as it was (``False``, and a warning): its
        graph is not replaced by passages without triplets; a new one is stored with its
        failed passages marked, as an insert does. With ``filters``, documents are compared
        with, and updated in, the matching copy only (one tenant's: see
        :meth:`delete_ref_doc`). ``extraction`` as for :meth:`insert_documents`.

        Raises:
            InvalidInputError: documents that are not ``Document`` objects, two with one
                id, a new or changed document outside ``filters``, or an extraction option
                the index does not take; before anything is extracted or written.

        Example::

            documents = SimpleDirectoryReader("./docs", filename_as_id=True).load_data()
            changed = index.refresh_ref_docs(documents, llm=llm)
            print(f"{sum(changed)} of {len(documents)} documents inserted or updated")
        """
        plan = self._refresh_plan(documents, filters, extraction)
        todo = [*plan.new, *plan.changed]
        nodes = extract_documents(todo, extraction, self.show_progress) if todo else []
        return self._refresh_write(plan, nodes)

    async def arefresh_ref_docs(self, documents: Sequence[Document], *,
                                filters: MetadataFilters | None = None,
                                **extraction: Unpack[ExtractionOptions]) -> list[bool]:
        """Async twin of :meth:`refresh_ref_docs`."""
        plan = await asyncio.to_thread(self._refresh_plan, documents, filters, extraction)
        todo = [*plan.new, *plan.changed]
        nodes = await aextract_documents(todo, extraction, self.show_progress) if todo else []
        return await asyncio.to_thread(self._refresh_write, plan, nodes)

    def _refresh_plan(self, documents: Sequence[Document], filters: MetadataFilters | None,
                      extraction: ExtractionOptions) -> RefreshPlan:
        check_options(extraction)  # before anything is read
        where = self.store.filter_expression(filters)
        plan = refresh_plan(self.store, documents,
                            extraction.get("transformations") or [Settings.node_parser],
                            self.passage_identity_keys, where)
        for document in [*plan.new, *plan.changed]:  # before any extraction or write
            self._within_scope(document.node_id, plan.nodes[document.node_id], filters)
        return plan

    def _refresh_write(self, plan: RefreshPlan, nodes: Sequence[BaseNode]) -> list[bool]:
        """The writes of a refresh, its documents extracted: the new ones inserted in one
        write, each changed one updated (unless its extraction failed), each emptied one
        deleted, in the plan's scope."""
        by_document: dict[str, list[BaseNode]] = {}
        for node in nodes:
            by_document.setdefault(node.ref_doc_id or "", []).append(node)
        inserted = [n for d in plan.new for n in by_document.get(d.node_id, [])]
        if inserted:
            self._write(plan_from_nodes(inserted, self.passage_identity_keys))
        refreshed = dict(zip(plan.ids, plan.refreshed, strict=True))
        left = []
        for document in plan.changed:
            changed = by_document.get(document.node_id, [])
            if extraction_failures(changed):
                left.append(document.node_id)
                refreshed[document.node_id] = False
                continue
            self._update(document.node_id, plan.where, changed)
        for doc_id in plan.emptied:
            self._delete(doc_id, plan.where)
        if left:
            logger.warning("refresh: %d changed document(s) left as they were, the LLM could "
                           "not extract them (%s); run the refresh again once it answers",
                           len(left), ", ".join(repr(d) for d in left[:5]))
        return list(refreshed.values())

    def delete_ref_doc(self, ref_doc_id: str, filters: MetadataFilters | None = None,
                       delete_from_docstore: bool = False) -> DeletionStats:
        """Delete a source document's passages, the relations only they supported (shared
        relations just lose those passages) and the entities left with no relation
        (LlamaIndex's ``delete_ref_doc``; :meth:`delete` is the same method).

        A document id names the document in every tenant: ``delete_ref_doc("handbook.md")``
        removes each tenant's copy. Pass ``filters`` (on passage metadata, as for
        retrieval) to delete only the matching passages of the document.
        ``delete_from_docstore`` is accepted for core's signature and changes nothing: the
        index has no docstore, Milvus holds everything.

        Example::

            index.delete_ref_doc("handbook.md", filters=MetadataFilters(
                filters=[MetadataFilter(key="tenant_id", value="acme")]))
        """
        return self._delete(ref_doc_id, self._delete_scope(ref_doc_id, filters))

    async def adelete_ref_doc(self, ref_doc_id: str, filters: MetadataFilters | None = None,
                              delete_from_docstore: bool = False) -> DeletionStats:
        """Async twin of :meth:`delete_ref_doc`."""
        where = self._delete_scope(ref_doc_id, filters)
        return await asyncio.to_thread(self._delete, ref_doc_id, where)

    delete = delete_ref_doc
    """The name of :meth:`delete_ref_doc` in 0.1.0 (kept as an alias)."""

    def _delete_scope(self, ref_doc_id: str, filters: MetadataFilters | None) -> str:
        """The metadata expression a delete is restricted to; checks the arguments."""
        if not isinstance(ref_doc_id, str) or not ref_doc_id:
            raise InvalidInputError(
                f"ref_doc_id must be a non-empty string (the id of the source document, as "
                f"node.ref_doc_id gives it), got {ref_doc_id!r}")
        return self.store.filter_expression(filters)  # checks them

    @staticmethod
    def _within_scope(doc_id: str, nodes: Sequence[BaseNode],
                      filters: MetadataFilters | None) -> None:
        """Refuse a scoped update whose new passages fall outside its own ``filters``: it
        would replace the scope's copy with a document of another scope (another
        tenant's), which a later update in that scope could not find."""
        if filters is None:
            return
        metadata = {node.node_id: node.metadata for node in nodes}
        for node in nodes:
            if not matches(metadata[node.node_id], filters):
                raise InvalidInputError(
                    f"the new content of {doc_id!r} is outside the filters of its update "
                    f"(a passage's metadata {repr(metadata[node.node_id])[:120]} does not match "
                    f"{to_milvus_expression(filters)}): give the document the metadata of "
                    "the copy it replaces, or update another scope's copy with that "
                    "scope's filters. Nothing was deleted or written.")

    @staticmethod
    def _extracted(doc_id: str, nodes: Sequence[BaseNode]) -> None:
        """Refuse an update whose new passages the LLM could not extract: it would replace
        the document's graph with passages that have none."""
        failed = extraction_failures(nodes)
        if failed:
            first = next(iter(failed.values()))
            raise ExtractionError(
                f"the LLM could not extract {len(failed)} of the {len(nodes)} passages of the "
                f"new content of {doc_id!r} (first: {first[:200]}): nothing was deleted or "
                "written; run the update again once the LLM answers.")

    @staticmethod
    def _no_extra(method: str, kwargs: dict[str, Any]) -> None:
        if kwargs:
            raise InvalidInputError(
                f"{method} takes no other arguments, got {sorted(kwargs)}: this index keeps "
                "everything in Milvus (no docstore or storage context to configure).")

    # ------------------------------------------------------------------ upgrade

    def upgrade(self) -> int:
        """Bring an index written by an earlier version to this version's layout: its
        entity rows get the list of their passages (what the served graph reads to know
        where an entity leads, see :mod:`~.upgrade`) and their names' keys (what the entity
        seeds by name and the explorer's search compare, accents and case aside), the text
        BM25 reads of its passages is folded (accents and case, as a new index's:
        :func:`~.upgrade.fold_passage_words`),
        and on a Milvus server a passage collection with a ``FLAT`` index (a scan of every
        passage per search) gets the graph collections' ``AUTOINDEX``
        (:func:`~.upgrade.reindex_passages`). The number of rows written (entity rows, then
        passage rows); 0 when there is nothing to do. Run it once, with no other writer
        (readers fail while the entity collection is swapped and the passage index built,
        and match fewer accented words while the passages are folded); it reads the
        entity rows once, the relation collection once where they do not list their
        passages and, to fold them, the passages once. Interrupted, run it
        again: it goes on where it stopped.

        Example::

            index = GraphRAGIndex(uri="graph.db", embed_model=embed_model)
            if index.store.needs_upgrade():
                index.upgrade()
        """
        with self.store.gate.writing():
            try:
                written = upgrade_entity_rows(self.store, self.show_progress)
                written += fold_passage_words(self.store, self.show_progress)
                reindex_passages(self.store)
            finally:
                self.store.gate.changed()
        self.cache.drop()
        return written

    async def aupgrade(self) -> int:
        """Async twin of :meth:`upgrade`."""
        return await asyncio.to_thread(self.upgrade)

    def _delete(self, ref_doc_id: str, where: str) -> DeletionStats:
        self.store.layout_read_again()  # another process may have upgraded it
        with self.store.gate.writing():
            return self._delete_held(ref_doc_id, where)

    def _delete_held(self, ref_doc_id: str, where: str, keep: Collection[str] = ()
                     ) -> DeletionStats:
        """The delete (but of the passages in ``keep``), holding the graph's write lock."""
        try:
            stats = delete_document(self.store, ref_doc_id, where, keep)
        finally:
            self.store.gate.changed()
        if stats.passages:
            self.store.mark_written()
        self.cache.drop()
        return stats

    def _prepare(self, plan: IngestionPlan) -> tuple[PreparedWrite, dict[str, str] | None]:
        """``plan`` embedded (before the write lock is taken), and the settings to record
        when its write creates the collections."""
        properties = None
        # this write creates them: record the settings; else another process may have
        # upgraded them
        if not self.store.layout_read_again():
            properties = IndexSettings(EmbedModelRecord.of(self.embed_model),
                                       self.passage_identity_keys).to_properties()
        return prepare_write(plan, self.store, self.embed_model, self.show_progress), properties

    def _commit(self, prepared: PreparedWrite, properties: dict[str, str] | None
                ) -> IngestionStats:
        """The write of ``prepared``, holding the graph's write lock."""
        stats = commit_write(prepared, self.store, properties)
        if prepared.plan.passages:
            self.store.mark_written()
        self.cache.drop()
        return stats

    def _write(self, plan: IngestionPlan) -> IngestionStats:
        prepared, properties = self._prepare(plan)
        with self.store.gate.writing():
            return self._commit(prepared, properties)

    def _update(self, ref_doc_id: str, where: str, nodes: Sequence[BaseNode]
                ) -> IngestionStats:
        """Replace the document's passages in ``where`` by ``nodes``: the new content is
        embedded first (an embedding error deletes nothing), then the old passages the new
        version does not have are deleted and the new ones written (those it has again are
        overwritten in place, never missing), holding the write lock once."""
        prepared, properties = self._prepare(plan_from_nodes(nodes, self.passage_identity_keys))
        with self.store.gate.writing():
            self._delete_held(ref_doc_id, where, {p.node_id for p in prepared.plan.passages})
            return self._commit(prepared, properties)

    async def _awrite(self, plan: IngestionPlan) -> IngestionStats:
        return await asyncio.to_thread(self._write, plan)

