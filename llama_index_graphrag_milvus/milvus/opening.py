"""How a store finds, creates and opens its collections: an index exists once its relation
collection does, which a creation makes last (see :mod:`~.leftovers`); opening loads the
three collections and wraps the passages in a ``MilvusVectorStore``.

A mixin of :class:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from llama_index.core.vector_stores import MetadataFilters
from llama_index.vector_stores.milvus import MilvusVectorStore
from pymilvus import AsyncMilvusClient, MilvusClient

from llama_index_graphrag_milvus.errors import MilvusStoreError
from llama_index_graphrag_milvus.milvus.filters import check_server_can, to_milvus_expression
from llama_index_graphrag_milvus.milvus.fulltext import (
    FOLD_ACCENTS,
    FOLD_PROPERTY,
    FULL_TEXT_FIELD,
    LEXICAL_FIELD,
    NEW_INDEX_FOLD,
    TEXT_FIELD,
    PassageVectorStore,
    analyzer_of,
    full_text_input,
    same_analyzer,
    vector_store_kwargs,
)
from llama_index_graphrag_milvus.milvus.leftovers import Fits, field_names, settle_leftover
from llama_index_graphrag_milvus.milvus.lite import quiet_lite
from llama_index_graphrag_milvus.milvus.schema import (
    ENTITY_FIELDS,
    ENTITY_KEY_FIELDS,
    ENTITY_KEY_INDEXES,
    ENTITY_PASSAGE_FIELDS,
    ENTITY_TENANT_FIELDS,
    KIND_FIELDS,
    RELATION_FIELDS,
    RELATION_TENANT_FIELDS,
    SPREAD_FIELDS,
    Fields,
    add_scalar_index,
    create_collection,
    field_indexes,
    milvus_errors,
    recorded_properties,
)
from llama_index_graphrag_milvus.milvus.served import ENDPOINT_INDEXES
from llama_index_graphrag_milvus.milvus.tenants import (
    TENANT_KEY_PROPERTY,
    partition_key_works,
    passage_store_class,
    server_version,
)

logger = logging.getLogger(__name__)


class StoreOpening:
    """The set-up of a store (see the module docstring)."""

    prefix: str
    uri: str
    connect_uri: str
    is_lite: bool
    entity_collection: str
    relation_collection: str
    passage_collection: str
    upgrade_collection: str
    index_type: str
    index_params: dict[str, Any]
    consistency_level: str
    properties: dict[str, str]
    records_kinds: bool
    records_spreads: bool
    records_entity_passages: bool
    records_name_keys: bool
    _entities_current: bool
    tenant_key: str | None
    full_text: bool
    full_text_analyzer: dict[str, Any] | None
    full_text_field: str
    folds_words: bool
    dim: int | None
    _token: str
    _client_kwargs: dict[str, Any]
    _open_lock: threading.Lock
    _passages: MilvusVectorStore | None

    @property
    def client(self) -> MilvusClient:
        raise NotImplementedError

    def aclient(self) -> AsyncMilvusClient:
        raise NotImplementedError

    def check_dimension(self, dim: int, source: str, given: bool = False) -> None:
        raise NotImplementedError

    def _read_dim(self) -> int | None:
        with milvus_errors("list collections"):
            existing = set(self.client.list_collections())
        if self.relation_collection not in existing:
            return None
        with milvus_errors(f"describe {self.relation_collection}"):
            info = self.client.describe_collection(self.relation_collection)
        self.properties = recorded_properties(info)
        self.tenant_key = self.properties.get(TENANT_KEY_PROPERTY) or None
        names = {f["name"] for f in info["fields"]}
        self.records_kinds = names >= set(KIND_FIELDS)
        self.records_spreads = names >= set(SPREAD_FIELDS)
        if not self.records_kinds:
            logger.info("%s was written before entity kinds were recorded: kinds are "
                        "inferred from names; rebuild the index to record them",
                        self.relation_collection)
        if self.entity_collection not in existing and self.upgrade_collection in existing:
            logger.warning("an upgrade of %s stopped before its last step: renaming %s to %s",
                           self.entity_collection, self.upgrade_collection,
                           self.entity_collection)
            self.finish_upgrade()
        self.read_layout()
        if not self.records_entity_passages:
            logger.info("%s was written before entities recorded their passages: they are "
                        "read from the relations (slower on a served graph); "
                        "index.upgrade() records them", self.entity_collection)
        elif not self.records_name_keys:
            logger.info("%s was written before entities recorded their names without "
                        "accents: names are matched as written; index.upgrade() records "
                        "them", self.entity_collection)
        for field in info["fields"]:
            if field["name"] == "embedding":
                return int(field["params"]["dim"])
        raise MilvusStoreError(
            f"collection {self.relation_collection!r} has no 'embedding' field: it was not "
            "created by llama_index_graphrag_milvus; choose another collection_prefix."
        )

    def _open(self, dim: int) -> None:
        with milvus_errors("load the graph collections"):
            self._index_endpoints()
            for name in (self.entity_collection, self.relation_collection):
                self.client.load_collection(name)
            self._open_passages(dim)

    def _open_passages(self, dim: int) -> None:
        """The passage collection as a vector store, loaded; created when missing, with
        this store's full-text search (callers wrap Milvus errors)."""
        kind = (passage_store_class(self.tenant_key, self._partition_key())
                if self.tenant_key else PassageVectorStore)
        reads = LEXICAL_FIELD
        if self.passage_collection in self.client.list_collections():
            info = self.client.describe_collection(self.passage_collection)
            found = full_text_input(info)
            self.full_text, reads = found is not None, found or LEXICAL_FIELD
            if found is not None:
                self.full_text_analyzer = analyzer_of(info, found)
        self.full_text_field = reads
        sparse = vector_store_kwargs(self.full_text_analyzer, reads) if self.full_text else {}
        with quiet_lite("grpc._server", "Method not implemented"):
            self._passages = kind(
                uri=self.connect_uri,
                token=self._token,
                collection_name=self.passage_collection,
                dim=dim,
                similarity_metric="cosine",
                # the graph collections' vector index (a server's AUTOINDEX, not
                # MilvusVectorStore's FLAT, which scans every passage per search)
                index_config={"index_type": self.index_type, **self.index_params},
                upsert_mode=True,
                consistency_level=self.consistency_level,
                use_async_client=True,
                **sparse,
                **self._client_kwargs,
            )
        self._passages.use_loop_clients(self.aclient)
        self._set_folds_words()
        if self.words_unfolded:
            logger.info("%s was written before BM25 folded accents and case: its words are "
                        "matched as written; index.upgrade() folds them",
                        self.passage_collection)
        self.client.load_collection(self.passage_collection)

    def _partition_key(self) -> bool:
        """Whether a passage collection created now gets the tenant key as its partition key
        (see :func:`~llama_index_graphrag_milvus.milvus.tenants.partition_key_works`)."""
        version = "" if self.is_lite else str(self.client.get_server_version())
        works = partition_key_works(version, self.is_lite)
        if not works:
            logger.warning("Milvus %s misroutes upserts into a partition-key collection: the "
                           "tenant field of %s is a plain field (filters on it scan); Milvus "
                           "2.4 and later partition by it", version, self.passage_collection)
        return works

    @cached_property
    def server_version(self) -> tuple[int, ...]:
        """The Milvus server's version, ``()`` for Milvus Lite or an unreadable one.

        Example::

            if index.store.server_version and index.store.server_version < (2, 4):
                print("no substring filters on this server")
        """
        return () if self.is_lite else server_version(str(self.client.get_server_version()))

    def filter_expression(self, filters: MetadataFilters | None) -> str:
        """``filters`` as the Milvus expression of this store (``""`` for none), refused when
        this server cannot evaluate it (a substring match before Milvus 2.4).

        Raises:
            InvalidInputError: see :func:`~.filters.to_milvus_expression` and
                :func:`~.filters.check_server_can`.
        """
        if filters is None:
            return ""
        expression = to_milvus_expression(filters, fields=[self.tenant_key] if self.tenant_key
                                          else ())
        check_server_can(filters, self.server_version)
        return expression

    def open_if_created(self) -> bool:
        """Whether the collections exist, opening them when another process created them
        after this store was opened (a query worker started before the first ingestion).

        Example::

            if not index.store.open_if_created():
                print("nothing ingested yet")
        """
        if self.dim is not None:
            return True
        with self._open_lock:
            if self.dim is None:
                dim = self._read_dim()
                if dim is not None:
                    self._open(dim)
                    self.dim = dim
        return self.dim is not None

    def create(self, dim: int, properties: Mapping[str, str] | None = None) -> None:
        """Create the three collections for vectors of ``dim`` (no-op when they exist);
        ``properties`` (what the index records about itself) go on the relation
        collection."""
        # held while the collections are made: a reader of this process that sees the
        # relation collection (open_if_created) would otherwise create the passage
        # collection beside this call ("collection ... already exists")
        with self._open_lock:
            self._create_collections(dim, properties)

    def _create_collections(self, dim: int, properties: Mapping[str, str] | None) -> None:
        if self.dim is not None:
            self.check_dimension(dim, "the embedding model")
            return
        self.properties = dict(properties or {})
        if self.tenant_key:
            self.properties[TENANT_KEY_PROPERTY] = self.tenant_key
        tenants = self.tenant_key is not None
        entity_fields = (*ENTITY_FIELDS, *ENTITY_PASSAGE_FIELDS, *ENTITY_KEY_FIELDS,
                         *(ENTITY_TENANT_FIELDS if tenants else ()))
        with milvus_errors("list the collections"):
            existing = set(self.client.list_collections())
        made: list[str] = []  # dropped again if this creation fails
        # a server's loads are started, then waited for together at the end: each waits
        # for the server's next check of its loads (about a second apart), so one after
        # the other the creation took a second longer per collection
        loading: list[str] | None = None if self.is_lite else []
        try:
            with milvus_errors("create the graph collections"):
                if not self._kept(self.entity_collection, dim, existing,
                                  lambda info: field_names(info) == {
                                      "id", "embedding", *(f[0] for f in entity_fields)}):
                    made.append(self.entity_collection)
                    self._create(self.entity_collection, entity_fields, dim,
                                 scalar_indexes=() if self.is_lite else ENTITY_KEY_INDEXES,
                                 loads=loading)
                if not self._kept(self.passage_collection, dim, existing, self._fits_passages):
                    made.append(self.passage_collection)
                    if self.full_text:  # its BM25 reads words folded (a kept one: as it was)
                        self.properties[FOLD_PROPERTY] = NEW_INDEX_FOLD
                self.dim = dim
                self._open_passages(dim)  # creates it (its analyzer may be refused)
                # last: the relation collection says that the index exists (see .leftovers)
                made.append(self.relation_collection)
                self._create(self.relation_collection,
                             (*RELATION_FIELDS, *(RELATION_TENANT_FIELDS if tenants else ())),
                             dim, self.properties, () if self.is_lite else ENDPOINT_INDEXES,
                             loads=loading)
                for name in loading or ():  # waits until each is loaded
                    self.client.load_collection(name)
            self.records_entity_passages = self.records_name_keys = True
            self._entities_current = True
        except BaseException:
            self.dim = None
            self._passages = None
            with milvus_errors("drop the collections of a failed creation"):
                for name in made:
                    if self.client.has_collection(name):
                        self.client.drop_collection(name)
            raise

    def _kept(self, name: str, dim: int, existing: set[str], fits: Fits) -> bool:
        """Whether ``name`` is left by a creation that stopped and kept for this one
        (:func:`~.leftovers.settle_leftover`; dropped when not)."""
        return name in existing and settle_leftover(self.client, name, dim, fits,
                                                    self.relation_collection)

    def _fits_passages(self, info: Mapping[str, Any]) -> bool:
        """Whether a described passage collection is the one this store creates: its fields
        (the full-text ones, the tenant field), its BM25 input and analyzer."""
        found = full_text_input(info)
        fields = {"id", "embedding", TEXT_FIELD, "doc_id",
                  *((LEXICAL_FIELD, FULL_TEXT_FIELD) if self.full_text else ()),
                  *((self.tenant_key,) if self.tenant_key else ())}
        return (field_names(info) == fields
                and found == (LEXICAL_FIELD if self.full_text else None)
                and (found is None or same_analyzer(analyzer_of(info, found),
                                                    self.full_text_analyzer)))

    def read_layout(self) -> None:
        """Read again whether the entity rows list their passages
        (``records_entity_passages``) and record their names' keys (``records_name_keys``)
        and, once open, whether BM25 reads the words folded
        (``folds_words``): another process's ``index.upgrade()`` may have added the field or
        folded the words since this store opened, and a write without the field is refused
        by Milvus, one of unfolded words would not match a folded query.
        Called before each write and by ``index.refresh()`` (:meth:`layout_read_again`).
        What is current stays so (an upgrade only adds): an index of this version's layout
        is described once, not before each write."""
        if not self._entities_current:
            with milvus_errors(f"describe {self.entity_collection}"):
                entity_info = self.client.describe_collection(self.entity_collection)
            entity_fields = {f["name"] for f in entity_info["fields"]}
            self.records_entity_passages = "passage_ids" in entity_fields
            self.records_name_keys = "name_key" in entity_fields
            self._entities_current = self.records_entity_passages and self.records_name_keys
        if self._passages is not None and self.words_unfolded:  # another may fold them
            with milvus_errors(f"describe {self.relation_collection}"):
                info = self.client.describe_collection(self.relation_collection)
            self.properties = recorded_properties(info)
            self._set_folds_words()

    def passages_scanned(self) -> bool:
        """Whether the passage collection has a ``FLAT`` vector index (what
        ``MilvusVectorStore`` gave it before 0.2: every search compares the query with every
        passage) where this store builds another (a server's ``AUTOINDEX``); ``False`` on
        Milvus Lite (``FLAT`` only) and before the first write."""
        return self.scanned_passage_index() is not None

    def scanned_passage_index(self) -> dict[str, Any] | None:
        """The passage collection's vector index as Milvus describes it (``{}`` when it has
        none) where :meth:`passages_scanned` holds, else ``None``: what
        ``index.upgrade()`` drops, read in one request."""
        if (self.index_type == "FLAT" or not self.open_if_created()
                or self.passage_collection not in self.client.list_collections()):
            return None
        dense = field_indexes(self.client, self.passage_collection).get("embedding")
        if dense is None:
            return {}
        return dense if dense.get("index_type") == "FLAT" else None

    def needs_upgrade(self) -> bool:
        """Whether ``index.upgrade()`` has something to do: entity rows that do not list
        their passages or record their names' keys, BM25 words not folded (on an index with
        full-text search on its own field), or a scanned passage collection
        (:meth:`passages_scanned`). Reads the layout again first (another process may have
        upgraded the index).

        Example::

            if index.store.needs_upgrade():
                index.upgrade()
        """
        if not self.layout_read_again():
            return False
        with milvus_errors(f"describe {self.passage_collection}"):
            return (not self.records_entity_passages or not self.records_name_keys
                    or self.words_unfolded
                    or self.passages_scanned())

    @property
    def words_unfolded(self) -> bool:
        """Whether BM25 reads this index's own full-text field with its words as written
        (an index created before the fold): what ``index.upgrade()`` folds."""
        return (self.full_text and self.full_text_field == LEXICAL_FIELD
                and not self.folds_words)

    def _set_folds_words(self) -> None:
        """``folds_words`` from what the index records (:data:`~.fulltext.FOLD_PROPERTY`),
        told to the passage store, which folds the texts of its BM25 queries and writes."""
        self.folds_words = (self.full_text and self.full_text_field == LEXICAL_FIELD
                            and self.properties.get(FOLD_PROPERTY) == FOLD_ACCENTS)
        if isinstance(self._passages, PassageVectorStore):
            self._passages.fold_words(self.folds_words)

    def finish_upgrade(self) -> None:
        """Put the entity collection an upgrade built in the old one's place (dropped
        before; see :mod:`~..ingestion.upgrade`)."""
        with milvus_errors(f"rename {self.upgrade_collection}"):
            self.client.rename_collection(self.upgrade_collection, self.entity_collection)
            self.client.load_collection(self.entity_collection)
        self.records_entity_passages = self.records_name_keys = True

    def _index_endpoints(self) -> None:
        """On a server, the scalar indexes of the relations' ``subject_id`` and
        ``object_id`` (the served graph's filters): an index created before they were gets
        them on its first open (Milvus 2.3 indexes only a released collection: the
        relation collection is released, indexed and loaded again, once). Milvus Lite has no
        scalar indexes: its filters scan."""
        if self.is_lite:
            return
        name = self.relation_collection
        indexed = field_indexes(self.client, name)
        missing = [field for field in ENDPOINT_INDEXES if field not in indexed]
        if missing:
            logger.warning(
                "%s was created before its relations' ends were indexed: indexing %s for the "
                "served graph, once (the collection is released and loaded again: other "
                "processes' queries on it fail meanwhile; open the index once before "
                "starting workers)", name, ", ".join(missing))
            params = self.client.prepare_index_params()
            for field in missing:
                add_scalar_index(params, field)
            self.client.release_collection(name)
            self.client.create_index(name, params, sync=False)

    def _create(self, name: str, fields: Fields, dim: int,
                properties: Mapping[str, str] | None = None,
                scalar_indexes: Sequence[str] = (), loads: list[str] | None = None) -> None:
        """Create ``name``; its load waited for, or started and added to ``loads``."""
        create_collection(self.client, name, fields, dim, self.index_type,
                          self.consistency_level, properties, scalar_indexes, self.index_params,
                          wait_for_load=loads is None)
        if loads is not None:
            loads.append(name)

    def layout_read_again(self) -> bool:
        """Whether the collections exist (:meth:`open_if_created`); when they do, their
        layout is read again (:meth:`read_layout`) first."""
        if not self.open_if_created():
            return False
        self.read_layout()
        return True

