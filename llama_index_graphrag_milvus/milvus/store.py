"""The Milvus side of an index: :class:`MilvusGraphStore`, the collections of one graph.

What the collections hold is in :mod:`~llama_index_graphrag_milvus.milvus.schema`. An
entity's relations are found through the relation rows' ``subject_id`` / ``object_id``;
nothing is stored twice. Sync and async methods share the request builders and the result
parsers (:mod:`~llama_index_graphrag_milvus.milvus.rows`); only the client call differs.
Whole collections are read by :mod:`~llama_index_graphrag_milvus.milvus.columns`, Milvus
Lite's in-process servers are handled by :mod:`~llama_index_graphrag_milvus.milvus.lite`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any
from urllib.parse import urlparse

from llama_index.vector_stores.milvus import MilvusVectorStore
from pymilvus import AsyncMilvusClient, MilvusClient

from llama_index_graphrag_milvus.errors import (
    EmbeddingDimensionError,
    InvalidInputError,
    MilvusStoreError,
)
from llama_index_graphrag_milvus.milvus.columns import (
    CollectionReads,
)
from llama_index_graphrag_milvus.milvus.fulltext import (
    FOLD_ACCENTS,
    FOLD_PROPERTY,
    LEXICAL_FIELD,
)
from llama_index_graphrag_milvus.milvus.gate import write_gate
from llama_index_graphrag_milvus.milvus.lite import (
    lite_client_kwargs,
    lite_connection,
    lite_path,
    make_lite_folder,
    release_lite,
)
from llama_index_graphrag_milvus.milvus.opening import StoreOpening
from llama_index_graphrag_milvus.milvus.queries import QueryPath
from llama_index_graphrag_milvus.milvus.reads import StoreReads
from llama_index_graphrag_milvus.milvus.schema import (
    COMMUNITY_FIELDS,
    CONSISTENCY_LEVELS,
    DESCRIPTION_FIELDS,
    fresh_connections,
    milvus_errors,
    validate_collection_prefix,
    vector_index_choice,
)
from llama_index_graphrag_milvus.milvus.served import ServedGraph
from llama_index_graphrag_milvus.milvus.side import SideCollection
from llama_index_graphrag_milvus.milvus.writes import StoreWrites
from llama_index_graphrag_milvus.validation import check_instance

logger = logging.getLogger(__name__)

WORKER_PREFIX = "graphrag-milvus"
WRITTEN_KEY = "graphrag.written"
"""The relation collection's property that changes with every write (a random token)."""
"""The names of a store's worker threads (see :meth:`MilvusGraphStore.concurrently_all`)."""


class LoopClient(AsyncMilvusClient):
    """The async client of one event loop, connected once however many calls wait for its
    first connection: pymilvus (2.6) connects a client on its first call, and calls that
    wait for it at the same time each made a connection of their own (``dedicated``), of
    which closing the client released one, two file descriptors kept per such loop."""

    _connecting: asyncio.Lock | None = None

    async def _connect(self) -> None:
        if self._connecting is None:  # made on the loop the client belongs to
            self._connecting = asyncio.Lock()
        async with self._connecting:
            await super()._connect()  # returns at once when an earlier call connected


async def _close_async_clients(clients: Sequence[AsyncMilvusClient]) -> None:
    for client in clients:
        await client.close()


class MilvusGraphStore(StoreOpening, StoreReads, StoreWrites, QueryPath):
    """Entities, relations and passages of one graph in Milvus (Lite, server or Zilliz Cloud).

    Args:
        uri: a local path for Milvus Lite (``"./graphrag.db"``) or a server URL
            (``"http://localhost:19530"``, a Zilliz Cloud endpoint).
        token: ``"user:password"`` or an API key for a server; empty for Lite.
        collection_prefix: several graphs can share one Milvus under different prefixes.
        consistency_level: Milvus consistency for the collections this store creates.
        client_kwargs: passed on to :class:`pymilvus.MilvusClient` (TLS paths, timeouts...),
            with ``grpc.use_local_subchannel_pool`` added to its ``grpc_options`` and, on
            pymilvus 2.6, ``dedicated=True``: a connection of the store's own, closed with
            it (see :func:`~llama_index_graphrag_milvus.milvus.schema.fresh_connections`).
        reads: how whole collections are read (the graph, the entity and passage tables):
            range sizes and the column path; the defaults are the measured ones.
        index_type: the vector index of the collections this store creates (passages,
            entities, relations): one of :data:`~.schema.VECTOR_INDEX_TYPES`; default
            ``AUTOINDEX`` on a server, ``FLAT`` (the only one) on Milvus Lite.
        index_params: its build parameters (``{"M": 16, "efConstruction": 200}``).

    Example::

        store = MilvusGraphStore("./graphrag.db", collection_prefix="demo")
        print(store.dim)  # None until something is ingested
    """

    def __init__(
        self,
        uri: str,
        token: str = "",
        collection_prefix: str = "graphrag",
        consistency_level: str = "Strong",
        client_kwargs: dict[str, Any] | None = None,
        reads: CollectionReads | None = None,
        index_type: str | None = None,
        index_params: Mapping[str, Any] | None = None,
    ) -> None:
        self.prefix = validate_collection_prefix(collection_prefix)
        if not isinstance(uri, str) or not uri.strip():
            raise InvalidInputError(
                f"uri must be a Milvus Lite file path ending in .db or a server URL, got "
                f"{uri!r}: for example uri='./graphrag.db' or uri='http://localhost:19530'.")
        if "://" in uri and not urlparse(uri).hostname:
            # pymilvus would connect such a URL to localhost:19530, whatever server is there
            raise InvalidInputError(
                f"uri {uri!r} names no host: write the server's address, for example "
                f"uri='http://localhost:19530', or a Milvus Lite path like './graphrag.db'.")
        if not isinstance(consistency_level, str) or consistency_level not in CONSISTENCY_LEVELS:
            raise InvalidInputError(
                f"consistency_level must be one of {', '.join(CONSISTENCY_LEVELS)} (as "
                f"written), got {consistency_level!r}.")
        self.uri = uri
        self._token = token
        self.consistency_level = consistency_level
        self.reads = check_instance("reads", reads or CollectionReads(), CollectionReads,
                                    "a CollectionReads")
        self.read_options: dict[str, Any] = {"consistency_level": consistency_level}
        """The consistency of every read and search (the collections' own level)."""
        self.write_options: dict[str, Any] = {"consistency_level": "Strong"}
        """The consistency of the reads a write makes to merge with what is stored (the rows
        it grows, the passages it replaces or deletes): ``Strong`` at every level, since a
        write that missed an earlier one would write its rows back without it."""
        self.is_lite = "://" not in uri
        if self.is_lite and os.path.isfile(uri):  # Lite would log a traceback, then fail
            raise InvalidInputError(
                f"uri {uri!r} is a file: Milvus Lite keeps an index in a folder whose name "
                "ends in .db; give a new path or such a folder (a file of Milvus Lite 2 "
                "cannot be opened by Milvus Lite 3).")
        self.connect_uri = lite_path(uri) if self.is_lite else uri
        """What the clients connect to: ``uri``, or for Milvus Lite its folder's absolute
        path (see :func:`~.lite.lite_path`)."""
        if self.is_lite and not self.connect_uri.endswith(".db"):  # pymilvus' own refusal
            raise InvalidInputError(                                 # is a bare MilvusException
                f"uri {uri!r} is neither a server URL nor a Milvus Lite path: a Lite index is "
                "a folder whose name ends in .db (lower case), for example './graphrag.db'; "
                "a server is a URL, for example 'http://localhost:19530'.")
        if self.is_lite:
            make_lite_folder(self.connect_uri, uri)
        given = fresh_connections(client_kwargs or {})
        self._client_kwargs = lite_client_kwargs(given) if self.is_lite else given
        self.index_type, self.index_params = vector_index_choice(index_type, index_params,
                                                                 self.is_lite)
        """The vector index of the collections this store creates (Milvus Lite: ``FLAT``;
        a server: ``AUTOINDEX`` unless given), and its build parameters (``{"M": 16,
        "efConstruction": 200}`` for ``HNSW``; none for ``AUTOINDEX``, which Milvus
        tunes)."""
        self.entity_collection = f"{self.prefix}_entities"
        self.upgrade_collection = f"{self.prefix}_entities_upgrade"
        """Where :func:`~..ingestion.upgrade.upgrade_entity_rows` builds the entity
        collection of this version before putting it in the old one's place."""
        self.relation_collection = f"{self.prefix}_relations"
        self.passage_collection = f"{self.prefix}_passages"
        self.community_collection = f"{self.prefix}_communities"
        self.description_collection = f"{self.prefix}_descriptions"
        self._closed = False
        self.gate = write_gate(self.connect_uri, self.prefix)
        """The write lock this store shares with every store of its graph in the process
        (see :mod:`~.gate`)."""
        with milvus_errors(f"connect to {uri!r}"), \
                (lite_connection(self) if self.is_lite else nullcontext()):
            self._client = MilvusClient(uri=self.connect_uri, token=token,
                                        **self._client_kwargs)
        self._async: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop],
                                     AsyncMilvusClient]] = {}
        """The async client of each running event loop (by id), with (weakly) its loop."""
        self._warned_loops = False
        # threads start on first use; a shared pool bounds them however many threads query
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix=WORKER_PREFIX)
        self._inner_pool = ThreadPoolExecutor(max_workers=4,
                                              thread_name_prefix=f"{WORKER_PREFIX}-inner")
        self._passages: MilvusVectorStore | None = None
        self._open_lock = threading.Lock()
        self.properties: dict[str, str] = {}
        """What the index recorded about itself (relation collection properties)."""
        self.records_kinds = True
        """Whether the relation collection records the kinds of its relations' ends (one
        written before 0.2 does not: it is read and written without them)."""
        self.records_spreads = True
        """Whether the relation collection records where its relations' ends lead
        (:data:`~.schema.SPREAD_FIELDS`; one created before 0.3 does not: the served graph
        then reads the entity rows)."""
        self.records_entity_passages = True
        """Whether the entity collection records each entity's passages
        (:data:`~.schema.ENTITY_PASSAGE_FIELDS`; one created before 0.2 does not: it is read
        and written without them, and an entity's passages are read from its relations)."""
        self.records_name_keys = True
        """Whether the entity collection records each entity's name without accents or case
        (:data:`~.schema.ENTITY_KEY_FIELDS`; one created before 0.3 does not: names are
        then matched as written, and its rows written without it)."""
        self._entities_current = False  # both entity fields seen: not described again
        self.tenant_key: str | None = None
        """The metadata key that names a passage's tenant, when the index was created with
        one (see :mod:`~llama_index_graphrag_milvus.milvus.tenants`): recorded at creation,
        read from the collections on open."""
        self.full_text = False
        """Whether the passage collection has Milvus's BM25 full-text search (chosen at
        creation, read from its schema on open; see :mod:`~.fulltext`)."""
        self.full_text_analyzer: dict[str, Any] | None = None
        """The analyzer of the passages' BM25 (``None``: Milvus's standard one): the one a
        passage collection created now gets, read from its schema on open."""
        self.full_text_field = LEXICAL_FIELD
        """The passage field BM25 reads (read from the schema on open)."""
        self.folds_words = False
        """Whether BM25 reads the passages and the queries without accents and case
        (:func:`~.fulltext.folded_words`): recorded by an index whose passage collection
        was created with it (``graphrag_full_text_fold``); one created before matches words
        as written."""
        self.dim: int | None = None
        """The vectors' dimension; ``None`` until the collections exist."""
        try:
            self.open_if_created()
        except BaseException:
            self.close()  # release a Milvus Lite file this failed open would keep held
            raise

    # ------------------------------------------------------------------ views
    # Views of this store made at each access (they hold nothing but the store), not kept
    # in attributes: a store that refers to objects that refer to it lives on in a reference
    # cycle once dropped, until the garbage collector runs, and keeps its Milvus Lite file
    # held meanwhile (milvus.lite counts the stores alive).

    @property
    def communities(self) -> SideCollection:
        """The communities and their reports (``build_communities``)."""
        return SideCollection(self, self.community_collection, COMMUNITY_FIELDS)

    @property
    def descriptions(self) -> SideCollection:
        """The merged entity and relation descriptions (``build_communities`` on passages
        extracted with descriptions)."""
        return SideCollection(self, self.description_collection, DESCRIPTION_FIELDS)

    @property
    def served(self) -> ServedGraph:
        """The graph queries of the served graph (``GraphRAGIndex(graph="milvus")``)."""
        return ServedGraph(self)

    def mark_written(self) -> None:
        """Record that the graph changed: a new token on the relation collection, after
        every write and delete, so that what was built from the graph before (the
        communities) can tell, also in another process and when the counts are the same."""
        self.set_properties({WRITTEN_KEY: uuid.uuid4().hex})

    def written_token(self) -> str | None:
        """The token of the last write (:meth:`mark_written`), read from Milvus; ``None``
        before the first write that recorded one."""
        with milvus_errors(f"describe {self.relation_collection}"):
            info = self.client.describe_collection(self.relation_collection)
        found = (info.get("properties") or {}).get(WRITTEN_KEY)
        return None if found is None else str(found)

    def set_properties(self, properties: Mapping[str, str]) -> None:
        """Record ``properties`` on the relation collection (what the index says of itself)."""
        with milvus_errors(f"alter {self.relation_collection}"):
            self.client.alter_collection_properties(self.relation_collection,
                                                    properties=dict(properties))
        self.properties.update(properties)

    def record_folded_words(self) -> None:
        """Record that every passage's BM25 text is folded (what
        :func:`~..ingestion.upgrade.fold_passage_words` does to an older index): from now
        on queries and writes are folded too, here and, on their next write or
        ``index.refresh()``, in other processes."""
        self.set_properties({FOLD_PROPERTY: FOLD_ACCENTS})
        self._set_folds_words()

    def check_dimension(self, dim: int, source: str, given: bool = False) -> None:
        """Raise :class:`EmbeddingDimensionError` if ``dim`` differs from the stored one
        (and :class:`MilvusStoreError` if the store is closed: retrievers check this first);
        ``given``: the vector is the caller's (``QueryBundle.embedding``), not ``source``'s."""
        self.check_open()
        if self.dim is not None and dim != self.dim:
            held = (f"the collections under prefix {self.prefix!r} at {self.uri!r} hold "
                    f"{self.dim}-dimensional ones")
            if given:
                raise EmbeddingDimensionError(
                    f"QueryBundle.embedding has {dim} dimensions, but {held}: set it to a "
                    "vector of the index's embedding model, or leave it None.")
            raise EmbeddingDimensionError(
                f"{source} gives {dim}-dimensional vectors, but {held}. Use the "
                "embedding model the index was built with, or a new collection_prefix."
            )

    @property
    def passages(self) -> MilvusVectorStore:
        """The passage collection as a LlamaIndex vector store (exists after ingestion)."""
        self.check_open()
        if self._passages is None:
            raise MilvusStoreError(
                f"the passage collection {self.passage_collection!r} does not exist yet: "
                "ingest passages first."
            )
        return self._passages

    def aclient(self) -> AsyncMilvusClient:
        """One async client per running event loop (a gRPC channel is bound to its loop).

        The clients of loops that have ended are closed when another loop comes
        (``asyncio.run`` per call: pymilvus would keep each one's connection, two file
        descriptors, until the store closes), from a fresh loop in a worker thread, as
        :meth:`close` does. Loops that run at once (one per thread) keep a client each,
        with one warning; a loop left open but idle keeps its client until it is closed."""
        self.check_open()
        loop = asyncio.get_running_loop()
        found = self._async.get(id(loop))
        if found is not None and found[0]() is loop:
            return found[1]
        ended = {key for key, (ref, _) in self._async.items()
                 if (bound := ref()) is None or bound.is_closed()}  # an id reused: ended too
        if ended:
            self._pool.submit(asyncio.run, _close_async_clients(
                [self._async.pop(key)[1] for key in ended]))
        running = [bound for ref, _ in self._async.values()
                   if (bound := ref()) is not None and bound.is_running()]
        if running and not self._warned_loops:  # an idle loop (core's asyncio_run) is not
            self._warned_loops = True
            logger.warning(
                "%s: async calls from two event loops at once (threads?): each loop gets a "
                "Milvus connection of its own, kept until the loop ends. Run the async calls "
                "on one event loop where you can.", self.uri)
        with milvus_errors(f"connect to {self.uri!r}"):
            client = LoopClient(uri=self.connect_uri, token=self._token,
                                **self._client_kwargs)
        self._async[id(loop)] = (weakref.ref(loop), client)
        return client

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`aclose`."""
        return self._closed

    def check_open(self) -> None:
        """Raise :class:`MilvusStoreError` if the store was closed."""
        if self._closed:
            raise MilvusStoreError(
                f"the graph store at {self.uri!r} (collection_prefix={self.prefix!r}) is "
                "closed: close() was called on it or on its GraphRAGIndex. Open a new "
                "GraphRAGIndex with the same uri to use the graph again."
            )

    @property
    def client(self) -> MilvusClient:
        """The pymilvus client; raises :class:`MilvusStoreError` once the store is closed."""
        self.check_open()
        return self._client

    def close(self) -> None:
        """Close every Milvus client of the store (its own, sync and async, and those of the
        passage vector store) and stop its worker threads. Idempotent; afterwards any use
        raises :class:`MilvusStoreError`.

        For Milvus Lite this also stops the file's in-process Lite server, unless another
        open store of this process uses the same file: that releases the file's lock, so
        that another process can open it while this one goes on.

        Example::

            store = MilvusGraphStore("./graphrag.db")
            try:
                print(store.count(store.relation_collection))
            finally:
                store.close()
        """
        if self._closed:
            return
        self._closed = True
        async_clients = [client for _, client in self._async.values()]
        self._async = {}
        try:
            if self._passages is not None:
                self._passages.client.close()
                own = self._passages._async_milvusclient  # the rest are the store's
                if own is not None:
                    async_clients.append(own)
            self._client.close()
            if async_clients:
                # their channels belong to event loops that may be gone or busy: release
                # them from a fresh loop in a worker thread (this only drops references)
                self._pool.submit(asyncio.run, _close_async_clients(async_clients)).result()
        finally:
            self._pool.shutdown(wait=True)
            self._inner_pool.shutdown(wait=True)
            if self.is_lite:
                release_lite(self)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: the async client of the running event loop is closed
        on it, the rest in a worker thread."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        found = self._async.get(id(loop))
        if found is not None and found[0]() is loop:
            del self._async[id(loop)]
            await found[1].close()
        await asyncio.to_thread(self.close)

    def concurrently_all(self, calls: Sequence[Callable[[], Any]]) -> tuple[Any, ...]:
        """Run blocking Milvus calls at the same time: all but the last in the store's
        worker threads, the last in this thread; answers in order. Called from one of those
        worker threads (a request of a :class:`~..retrieval.requests.Together` that sends
        several calls itself, as local search's community reads do), it uses a second pool
        whose calls send nothing further: a worker that waited for its own pool could wait
        for ever once every worker waits."""
        thread = threading.current_thread().name
        if len(calls) == 1 or thread.startswith(f"{WORKER_PREFIX}-inner"):
            return tuple(call() for call in calls)
        pool = self._inner_pool if thread.startswith(WORKER_PREFIX) else self._pool
        self.check_open()
        futures = [pool.submit(call) for call in calls[:-1]]
        try:
            last = calls[-1]()
        finally:
            answers = [future.result() for future in futures]
        return (*answers, last)
