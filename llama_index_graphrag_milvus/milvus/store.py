"""The Milvus side: three linked collections per graph. The only module that imports pymilvus.

``{prefix}_entities``   one row per normalized entity name: ``id``, ``name``, ``embedding``.
``{prefix}_relations``  one row per (subject, predicate, object): ``id``, ``text``,
                        ``subject_id``, ``object_id`` (entity ids), ``passage_ids``, ``embedding``.
``{prefix}_passages``   a :class:`~llama_index.vector_stores.milvus.MilvusVectorStore`, so that
                        naive vector RAG and any LlamaIndex tool can read the passages.
``{prefix}_communities`` (after ``build_communities``) one row per community and report; see
                        :data:`COMMUNITY_FIELDS`.
``{prefix}_descriptions`` (after ``build_communities`` on passages extracted with
                        descriptions) merged entity and relation descriptions; see
                        :data:`DESCRIPTION_FIELDS`.

An entity's relations are found through the relation rows' ``subject_id`` / ``object_id``;
nothing is stored twice. Sync and async methods share the request builders and the result
parsers; only the client call differs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import weakref
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from itertools import islice, pairwise
from typing import Any, TypeVar
from urllib.parse import urlparse

import numpy as np
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from llama_index.vector_stores.milvus import MilvusVectorStore
from pymilvus import AsyncMilvusClient, DataType, MilvusClient, MilvusException
from tqdm import tqdm

from llama_index_graphrag_milvus.errors import (
    EmbeddingDimensionError,
    InvalidInputError,
    MilvusStoreError,
)
from llama_index_graphrag_milvus.records import (
    ENTITY_NAME_MAX_BYTES,
    MILVUS_MAX_TOP_K,
    RELATION_TEXT_MAX_BYTES,
    EntityColumns,
    EntityHit,
    PassageColumns,
    RelationColumns,
    RelationHit,
)

logger = logging.getLogger(__name__)

_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C", bound=Sized)

ID_MAX_LENGTH = 64
MAX_PASSAGES_PER_RELATION = 4096
"""Milvus' largest ARRAY capacity: a relation links to at most this many passages."""
WRITE_BATCH_SIZE = 1000
METRIC = "COSINE"
CONSISTENCY_LEVELS = ("Strong", "Bounded", "Session", "Eventually")
"""The Milvus consistency levels ``consistency_level`` accepts."""
_PREFIX_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}\Z")  # \Z: no trailing newline
_PASSAGE_FIELDS = ["text", "_node_content", "_node_type"]
_RELATION_GRAPH_FIELDS = ["id", "subject_id", "object_id", "passage_ids", "embedding", "text"]
_ENTITY_TABLE_FIELDS = ["id", "name", "embedding"]
_PASSAGE_TABLE_FIELDS = ["id", "embedding"]
COMMUNITY_MEMBERS_PER_ROW = 4096
"""Entity ids (and child ids) one community row holds; a larger community continues in
part rows (``part`` 1, 2, ...)."""
COMMUNITY_TEXT_MAX_BYTES = 65535
"""Longest report summary or findings text (UTF-8 bytes) the community collection accepts."""
COMMUNITY_FIELDS: tuple[tuple[str, Any, int], ...] = (
    ("community_id", DataType.VARCHAR, ID_MAX_LENGTH),
    ("part", DataType.INT64, 0),
    ("level", DataType.INT64, 0),
    ("parent", DataType.VARCHAR, ID_MAX_LENGTH),
    ("children", DataType.ARRAY, COMMUNITY_MEMBERS_PER_ROW),
    ("entity_ids", DataType.ARRAY, COMMUNITY_MEMBERS_PER_ROW),
    ("num_entities", DataType.INT64, 0),
    ("num_relations", DataType.INT64, 0),
    ("num_passages", DataType.INT64, 0),
    ("title", DataType.VARCHAR, 2048),
    ("summary", DataType.VARCHAR, COMMUNITY_TEXT_MAX_BYTES),
    ("findings", DataType.VARCHAR, COMMUNITY_TEXT_MAX_BYTES),
    ("rating", DataType.DOUBLE, 0),
    ("rating_explanation", DataType.VARCHAR, 8192),
    ("kind", DataType.VARCHAR, 32),
    ("context_hash", DataType.VARCHAR, ID_MAX_LENGTH),
)
"""The scalar fields of the community collection (name, type, max length or capacity),
besides ``id`` (``community_id`` for part 0, ``community_id.part`` after) and ``embedding``
(the report's vector). ``findings`` is JSON text."""

DESCRIPTION_TEXT_MAX_BYTES = 65535
"""Longest merged description (UTF-8 bytes) the description collection accepts."""
DESCRIPTION_FIELDS: tuple[tuple[str, Any, int], ...] = (
    ("kind", DataType.VARCHAR, 16),
    ("name", DataType.VARCHAR, RELATION_TEXT_MAX_BYTES),
    ("type", DataType.VARCHAR, 256),
    ("description", DataType.VARCHAR, DESCRIPTION_TEXT_MAX_BYTES),
    ("strength", DataType.DOUBLE, 0),
    ("degree", DataType.INT64, 0),
    ("source_hash", DataType.VARCHAR, ID_MAX_LENGTH),
)
"""The scalar fields of the description collection (one row per described entity or
relation, ``id`` its id), besides ``embedding`` (of ``"name: description"``)."""

_RANGE_ROWS = 16384
"""Rows per primary-key range when a whole collection is read from a server (and the fewest
rows per range on Milvus Lite)."""
_LITE_RANGE_BYTES = 64 << 20
"""About how many bytes one range's answer may carry on Milvus Lite (its gRPC limit is
256 MiB). Lite scans the whole collection for every range filter, so a million relations in
ranges of 16,384 rows took 165 s to read where ranges of 131,072 rows took 58 s."""
_ROW_BYTES_BESIDES_VECTOR = 256
"""What a row carries besides its float32 vector (ids, text, passage ids), for the ranges'
size on Lite."""
_READ_AHEAD = 2
"""Range requests in flight while the previous answer is decoded, on a server. On Milvus Lite
(in-process threads under one interpreter lock) one: a second request in flight saved nothing
on a million relations (71 s against 69 s) and held 0.9 GB more at the peak."""
_EMPTY_COLLECTION = 26
"""Status code of a query on a collection that holds nothing yet."""


def validate_collection_prefix(prefix: str) -> str:
    """Return ``prefix`` if Milvus can use ``{prefix}_entities`` as a collection name."""
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise InvalidInputError(
            f"collection_prefix={prefix!r} cannot name a Milvus collection: use a letter or "
            "underscore followed by letters, digits or underscores (at most 201 characters), "
            "for example 'graphrag' or 'wiki_2024'."
        )
    return prefix


@contextmanager
def _milvus_errors(action: str) -> Iterator[None]:
    """Turn pymilvus errors into :class:`MilvusStoreError` with what we were doing."""
    try:
        yield
    except MilvusException as exc:
        raise MilvusStoreError(f"Milvus failed to {action}: {exc}") from exc


class _DropLiteNoise(logging.Filter):
    """Drops one known-benign log message of Milvus Lite (see :func:`_quiet_lite`)."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle = needle

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += repr(record.exc_info[1])
        return self.needle not in text


@contextmanager
def _quiet_lite(logger_name: str, needle: str) -> Iterator[None]:
    """Milvus Lite's in-process server lacks the AllocTimestamp RPC: pymilvus' index wait
    falls back correctly, but grpc logs a traceback each time. Drop just those records while
    the call runs."""
    target = logging.getLogger(logger_name)
    quiet = _DropLiteNoise(needle)
    target.addFilter(quiet)
    try:
        yield
    finally:
        target.removeFilter(quiet)


# Milvus Lite 3.x serves each .db path from one in-process gRPC server
# (``milvus_lite.server_manager``), started by the path's first pymilvus client and shared by
# the later ones. The server holds an flock on ``{path}/LOCK`` until it is stopped. Closing
# pymilvus clients does not stop it: only ``server_manager_instance.release_server(path)``
# or the end of the process does. Meanwhile another process that opens the path gets
# pymilvus' bare "Open local milvus failed"; the cause is only in milvus_lite's log.

_LITE_LOCK = threading.Lock()
"""Held while a store connects to a Lite path or stops its server: no store connects to a
server that is being stopped."""
_LITE_STORES: dict[str, weakref.WeakSet[MilvusGraphStore]] = {}
"""The open stores of each Lite path (absolute, as milvus_lite keys its servers)."""


class _LiteLockedByOther(logging.Filter):
    """Catches milvus_lite's log record of a server that could not start for ``path``
    because another process holds the file's lock, and drops it: the error raised instead
    says what happened."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.cause: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if (type(exc).__name__ == "DataDirLockedError" and isinstance(record.args, tuple)
                and self.path in record.args):
            self.cause = exc
            return False
        return True


@contextmanager
def _lite_connection(store: MilvusGraphStore) -> Iterator[None]:
    """Around the connect of a Lite store: registers the store as a user of its path, and
    turns the failure to open a file that another process holds into a clear error."""
    path = os.path.abspath(store.uri)
    watch = _LiteLockedByOther(path)
    target = logging.getLogger("milvus_lite.server_manager")
    target.addFilter(watch)
    try:
        with _LITE_LOCK:
            yield
            _LITE_STORES.setdefault(path, weakref.WeakSet()).add(store)
    except MilvusException as exc:
        if watch.cause is None:
            raise
        raise MilvusStoreError(
            f"the Milvus Lite file {path!r} is held by another process ({watch.cause}). "
            "Milvus Lite allows one process per file: close the index in the other process "
            "(index.close(), or end that process) and open it again, give each process its "
            "own Lite file, or run a Milvus server and pass its uri "
            "(uri=\"http://localhost:19530\") to share one index between processes."
        ) from exc
    finally:
        target.removeFilter(watch)


def _release_lite(store: MilvusGraphStore) -> None:
    """Stop the in-process Lite server of ``store``'s path unless another open store of this
    process uses it: this releases the file's lock, so another process can open it."""
    path = os.path.abspath(store.uri)
    with _LITE_LOCK:
        users = _LITE_STORES.get(path)
        if users is not None:
            users.discard(store)
            if users:
                logger.debug("Milvus Lite file %s stays open: %d other store(s) use it",
                             path, len(users))
                return
            del _LITE_STORES[path]
        try:
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:  # no milvus-lite: nothing was started
            return
        server_manager_instance.release_server(path)


async def _close_async_clients(clients: Sequence[AsyncMilvusClient]) -> None:
    for client in clients:
        await client.close()


def quote(value: str) -> str:
    r"""``value`` as a Milvus string literal: backslashes, double quotes and line breaks
    escaped, so that user input in a filter expression is matched literally.

    A raw line break inside a literal is a parse error; Milvus reads ``\n`` and ``\r`` back
    as the line break. Every other character (tabs, control characters, non-ASCII) is matched
    as it is (checked on Milvus Lite 3.2, tests/test_filter_parity.py).

    >>> print(quote('say "hi" \ bye'))
    "say \"hi\" \\ bye"
    >>> print(quote("line\nbreak\r"))
    "line\nbreak\r"

    Raises:
        InvalidInputError: ``value`` holds a lone surrogate (such as ``"\ud800"``): it is not
            UTF-8 text, so Milvus can neither store nor match it.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"filter value {value!r} holds characters UTF-8 cannot encode (lone surrogates "
            "such as '\\ud800', often from text decoded with errors='surrogateescape'): "
            "Milvus can neither store nor match it; clean it, for example with "
            "value.encode('utf-8', 'replace').decode('utf-8')."
        ) from exc
    return '"' + (value.replace("\\", "\\\\").replace('"', '\\"')
                  .replace("\n", "\\n").replace("\r", "\\r")) + '"'


def in_list(field: str, values: Sequence[str]) -> str:
    """A filter expression ``field in [...]`` with every value quoted."""
    return f"{field} in [{', '.join(quote(v) for v in values)}]"


_GET_CHUNK = 4096
"""Ids per read by primary key (a longer ``id in [...]`` expression is one more round trip,
not a failure)."""


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in consecutive slices of at most ``size`` (none for no items)."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _id_filter(ids: Sequence[str], where: str = "") -> str:
    """``id in [...]``, and ``where`` (a filter expression on metadata) when given."""
    return in_list("id", ids) + (f" and {where}" if where else "")


def _search_kwargs(collection: str, vectors: Sequence[Sequence[float]], limit: int,
                   output_fields: list[str], ids: Sequence[str] | None = None,
                   where: str = "") -> dict[str, Any]:
    return {
        **({"filter": _id_filter(ids, where)} if ids is not None else {}),
        "collection_name": collection,
        "data": [list(v) for v in vectors],
        "limit": min(limit, MILVUS_MAX_TOP_K),  # more is a ParamError on a server
        "output_fields": output_fields,
        "search_params": {"metric_type": METRIC},
    }


def _parse_entity_hits(result: Any, searched: Sequence[str],
                       threshold: float | None) -> list[list[EntityHit]]:
    return [
        [
            EntityHit(id=h["id"], name=h["entity"]["name"], score=float(h["distance"]),
                      searched=name)
            for h in hits
            if threshold is None or float(h["distance"]) >= threshold
        ]
        for name, hits in zip(searched, result, strict=True)
    ]


_RELATION_HIT_FIELDS = ["text", "subject_id", "object_id"]


def _parse_relation_hits(result: Any, threshold: float | None) -> list[RelationHit]:
    return [
        RelationHit(id=h["id"], text=h["entity"]["text"], score=float(h["distance"]),
                    subject_id=h["entity"].get("subject_id", ""),
                    object_id=h["entity"].get("object_id", ""))
        for h in result[0]
        if threshold is None or float(h["distance"]) >= threshold
    ]


def _rows_to_passages(rows: Sequence[dict[str, Any]], ids: Sequence[str]) -> list[BaseNode]:
    by_id = {row["id"]: metadata_dict_to_node(row, text=row.get("text")) for row in rows}
    return [by_id[i] for i in ids if i in by_id]


def _parse_passage_hits(result: Any) -> list[list[tuple[BaseNode, float]]]:
    return [[(metadata_dict_to_node(h["entity"], text=h["entity"].get("text")),
              float(h["distance"])) for h in hits] for hits in result]


def _rows_per_range(is_lite: bool, dim: int) -> int:
    """Rows per primary-key range of a whole-collection read: :data:`_RANGE_ROWS` on a
    server; on Milvus Lite as many as fit :data:`_LITE_RANGE_BYTES`, since Lite scans every
    row of the collection for each range filter (a server prunes by its segments' key stats).

    >>> _rows_per_range(False, 384), _rows_per_range(True, 64), _rows_per_range(True, 384)
    (16384, 131072, 37449)
    """
    if not is_lite:
        return _RANGE_ROWS
    return max(_RANGE_ROWS, _LITE_RANGE_BYTES // (4 * dim + _ROW_BYTES_BESIDES_VECTOR))


def _pk_ranges(rows: int, per_range: int = _RANGE_ROWS) -> list[str]:
    """Filters that split the hex-hash primary keys into ranges of about ``per_range`` rows.

    Every string falls in exactly one range (the first and last are open-ended), so ids that
    are not hashes are read too, only in fewer ranges.

    >>> _pk_ranges(40000)
    ['id < "55555555"', 'id >= "55555555" and id < "aaaaaaaa"', 'id >= "aaaaaaaa"']
    """
    parts = min(max(1, -(-rows // per_range)), 1 << 16)
    step = (1 << 32) // parts
    bounds = [quote(f"{i * step:08x}") for i in range(1, parts)]
    if not bounds:
        return ['id != ""']
    return ([f"id < {bounds[0]}"]
            + [f"id >= {lo} and id < {hi}" for lo, hi in pairwise(bounds)]
            + [f"id >= {bounds[-1]}"])


class _ColumnQuery:
    """Milvus' query RPC without pymilvus' per-row decoding: the answer as column protobufs.

    pymilvus has no public column-wise query, and turning a million rows into dicts (with an
    enum conversion per array cell) costs minutes. This sends the request ``MilvusClient.query``
    sends, built by the same pymilvus functions (request, consistency, status check), and
    hands back ``fields_data``. It relies on pymilvus internals: :meth:`connect` returns
    ``None`` when they are missing and the store then uses ``client.query``; the tests check
    that this path is taken with the pinned pymilvus and that both paths agree.
    """

    def __init__(self, client: MilvusClient, consistency_level: str) -> None:
        from pymilvus.client import ts_utils
        from pymilvus.client.call_context import _api_level_md
        from pymilvus.client.prepare import Prepare
        from pymilvus.client.utils import check_status

        handler = client._get_connection()
        self._stub = handler._stub
        self._address = handler.server_address
        self._metadata = _api_level_md(client._generate_call_context())
        self._consistency = consistency_level
        self._guarantee = ts_utils.construct_guarantee_ts
        self._request = Prepare.query_request
        self._check = check_status

    @classmethod
    def connect(cls, client: MilvusClient, consistency_level: str) -> _ColumnQuery | None:
        try:
            return cls(client, consistency_level)
        except (ImportError, AttributeError) as exc:
            logger.debug("no column query path in this pymilvus: %r", exc)
            return None

    def __call__(self, collection: str, filter_: str, fields: list[str]) -> Sequence[Any]:
        kwargs: dict[str, Any] = {"consistency_level": self._consistency}
        default = self._guarantee(collection, kwargs, self._address)
        request = self._request(collection, filter_, fields, [],
                                use_default_consistency=default, **kwargs)
        response = self._stub.Query(request, metadata=self._metadata)
        if _EMPTY_COLLECTION in (response.status.code, response.status.error_code):
            return []
        self._check(response.status)
        return list(response.fields_data)


def _column_strings(by_name: Mapping[str, Any], name: str) -> list[str]:
    return list(by_name[name].scalars.string_data.data)


def _column_vectors(by_name: Mapping[str, Any], dim: int) -> np.ndarray:
    return np.asarray(by_name["embedding"].vectors.float_vector.data, np.float32).reshape(-1, dim)


def _relation_columns(fields_data: Sequence[Any], dim: int) -> RelationColumns:
    """Relation columns from the ``FieldData`` protobufs of a query answer."""
    by_name = {field.field_name: field for field in fields_data}
    if not by_name:
        return RelationColumns([], [], [], [], np.zeros((0, dim), np.float32), [])
    return RelationColumns(
        _column_strings(by_name, "id"), _column_strings(by_name, "subject_id"),
        _column_strings(by_name, "object_id"),
        [list(cell.string_data.data) for cell in by_name["passage_ids"].scalars.array_data.data],
        _column_vectors(by_name, dim), _column_strings(by_name, "text"),
    )


def _entity_columns(fields_data: Sequence[Any], dim: int) -> EntityColumns:
    """Entity columns from the ``FieldData`` protobufs of a query answer."""
    by_name = {field.field_name: field for field in fields_data}
    if not by_name:
        return EntityColumns([], [], np.zeros((0, dim), np.float32))
    return EntityColumns(_column_strings(by_name, "id"), _column_strings(by_name, "name"),
                         _column_vectors(by_name, dim))


def _passage_columns(fields_data: Sequence[Any], dim: int) -> PassageColumns:
    """Passage ids and vectors from the ``FieldData`` protobufs of a query answer."""
    by_name = {field.field_name: field for field in fields_data}
    if not by_name:
        return PassageColumns([], np.zeros((0, dim), np.float32))
    return PassageColumns(_column_strings(by_name, "id"), _column_vectors(by_name, dim))


def _passage_rows_to_columns(rows: Sequence[dict[str, Any]], dim: int) -> PassageColumns:
    vectors = np.asarray([r["embedding"] for r in rows], np.float32).reshape(len(rows), dim)
    return PassageColumns([r["id"] for r in rows], vectors)


def _entity_rows_to_columns(rows: Sequence[dict[str, Any]], dim: int) -> EntityColumns:
    vectors = np.asarray([r["embedding"] for r in rows], np.float32).reshape(len(rows), dim)
    return EntityColumns([r["id"] for r in rows], [r["name"] for r in rows], vectors)


class MilvusGraphStore:
    """Entities, relations and passages of one graph in Milvus (Lite, server or Zilliz Cloud).

    Args:
        uri: a local path for Milvus Lite (``"./graphrag.db"``) or a server URL
            (``"http://localhost:19530"``, a Zilliz Cloud endpoint).
        token: ``"user:password"`` or an API key for a server; empty for Lite.
        collection_prefix: several graphs can share one Milvus under different prefixes.
        consistency_level: Milvus consistency for the collections this store creates.
        client_kwargs: passed on to :class:`pymilvus.MilvusClient` (TLS paths, timeouts...).

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
        self._client_kwargs = dict(client_kwargs or {})
        self.consistency_level = consistency_level
        self._read = {"consistency_level": consistency_level}
        self.is_lite = "://" not in uri
        self.index_type = "FLAT" if self.is_lite else "AUTOINDEX"
        self.entity_collection = f"{self.prefix}_entities"
        self.relation_collection = f"{self.prefix}_relations"
        self.passage_collection = f"{self.prefix}_passages"
        self.community_collection = f"{self.prefix}_communities"
        self.description_collection = f"{self.prefix}_descriptions"
        self._closed = False
        with _milvus_errors(f"connect to {uri!r}"), \
                (_lite_connection(self) if self.is_lite else nullcontext()):
            self._client = MilvusClient(uri=uri, token=token, **self._client_kwargs)
        self._async_clients: dict[int, AsyncMilvusClient] = {}
        # threads start on first use; a shared pool bounds them however many threads query
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="graphrag-milvus")
        self._passages: MilvusVectorStore | None = None
        self.properties: dict[str, str] = {}
        """What the index recorded about itself (relation collection properties)."""
        try:
            self.dim: int | None = self._read_dim()
            if self.dim is not None:
                self._open(self.dim)
        except BaseException:
            self.close()  # release a Milvus Lite file this failed open would keep held
            raise

    # ------------------------------------------------------------------ set-up

    def _read_dim(self) -> int | None:
        with _milvus_errors("list collections"):
            existing = set(self.client.list_collections())
        if self.relation_collection not in existing:
            return None
        with _milvus_errors(f"describe {self.relation_collection}"):
            info = self.client.describe_collection(self.relation_collection)
        self.properties = {str(k): str(v) for k, v in (info.get("properties") or {}).items()}
        for field in info["fields"]:
            if field["name"] == "embedding":
                return int(field["params"]["dim"])
        raise MilvusStoreError(
            f"collection {self.relation_collection!r} has no 'embedding' field: it was not "
            "created by llama_index_graphrag_milvus; choose another collection_prefix."
        )

    def _open(self, dim: int) -> None:
        with _milvus_errors("load the graph collections"):
            for name in (self.entity_collection, self.relation_collection):
                self.client.load_collection(name)
            with _quiet_lite("grpc._server", "Method not implemented"):
                self._passages = MilvusVectorStore(
                    uri=self.uri,
                    token=self._token,
                    collection_name=self.passage_collection,
                    dim=dim,
                    similarity_metric="cosine",
                    upsert_mode=True,
                    consistency_level=self.consistency_level,
                    use_async_client=True,
                    **self._client_kwargs,
                )
            self.client.load_collection(self.passage_collection)

    def create(self, dim: int, properties: Mapping[str, str] | None = None) -> None:
        """Create the three collections for vectors of ``dim`` (no-op when they exist);
        ``properties`` (what the index records about itself) go on the relation
        collection."""
        if self.dim is not None:
            self.check_dimension(dim, "the embedding model")
            return
        self.properties = dict(properties or {})
        with _milvus_errors("create the graph collections"):
            self._create_collection(
                self.entity_collection, dim, [("name", ENTITY_NAME_MAX_BYTES)], arrays=False
            )
            self._create_collection(
                self.relation_collection,
                dim,
                [("text", RELATION_TEXT_MAX_BYTES), ("subject_id", ID_MAX_LENGTH),
                 ("object_id", ID_MAX_LENGTH)],
                arrays=True, properties=self.properties,
            )
        self.dim = dim
        self._open(dim)

    def _create_collection(self, name: str, dim: int, varchars: list[tuple[str, int]],
                           arrays: bool, properties: Mapping[str, str] | None = None) -> None:
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_MAX_LENGTH)
        for field, max_length in varchars:
            schema.add_field(field, DataType.VARCHAR, max_length=max_length)
        if arrays:
            schema.add_field("passage_ids", DataType.ARRAY, element_type=DataType.VARCHAR,
                             max_capacity=MAX_PASSAGES_PER_RELATION, max_length=ID_MAX_LENGTH)
        schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dim)
        index_params = self.client.prepare_index_params()
        index_params.add_index("embedding", index_type=self.index_type, metric_type=METRIC)
        self.client.create_collection(name, schema=schema,
                                      consistency_level=self.consistency_level,
                                      **({"properties": dict(properties)} if properties else {}))
        # sync=False: Milvus builds the index in the background and load waits for it; the
        # synchronous wait polls every 0.5 s through an RPC Milvus Lite does not implement.
        self.client.create_index(name, index_params, sync=False)
        self.client.load_collection(name)

    def set_properties(self, properties: Mapping[str, str]) -> None:
        """Record ``properties`` on the relation collection (what the index says of itself)."""
        with _milvus_errors(f"alter {self.relation_collection}"):
            self.client.alter_collection_properties(self.relation_collection,
                                                    properties=dict(properties))
        self.properties.update(properties)

    def check_dimension(self, dim: int, source: str) -> None:
        """Raise :class:`EmbeddingDimensionError` if ``dim`` differs from the stored one
        (and :class:`MilvusStoreError` if the store is closed: retrievers check this first)."""
        self._check_open()
        if self.dim is not None and dim != self.dim:
            raise EmbeddingDimensionError(
                f"{source} gives {dim}-dimensional vectors, but the collections under prefix "
                f"{self.prefix!r} at {self.uri!r} hold {self.dim}-dimensional ones. Use the "
                "embedding model the index was built with, or a new collection_prefix."
            )

    @property
    def passages(self) -> MilvusVectorStore:
        """The passage collection as a LlamaIndex vector store (exists after ingestion)."""
        self._check_open()
        if self._passages is None:
            raise MilvusStoreError(
                f"the passage collection {self.passage_collection!r} does not exist yet: "
                "ingest passages first."
            )
        return self._passages

    def _aclient(self) -> AsyncMilvusClient:
        """One async client per running event loop (a gRPC channel is bound to its loop)."""
        self._check_open()
        loop_id = id(asyncio.get_running_loop())
        client = self._async_clients.get(loop_id)
        if client is None:
            with _milvus_errors(f"connect to {self.uri!r}"):
                client = AsyncMilvusClient(uri=self.uri, token=self._token,
                                           **self._client_kwargs)
            self._async_clients = {loop_id: client}
        return client

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`aclose`."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise MilvusStoreError(
                f"the graph store at {self.uri!r} (collection_prefix={self.prefix!r}) is "
                "closed: close() was called on it or on its GraphRAGIndex. Open a new "
                "GraphRAGIndex with the same uri to use the graph again."
            )

    @property
    def client(self) -> MilvusClient:
        """The pymilvus client; raises :class:`MilvusStoreError` once the store is closed."""
        self._check_open()
        return self._client

    @property
    def _worker(self) -> ThreadPoolExecutor:
        self._check_open()
        return self._pool

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
        async_clients = [*self._async_clients.values()]
        self._async_clients = {}
        try:
            if self._passages is not None:
                self._passages.client.close()
                if self._passages.aclient is not None:
                    async_clients.append(self._passages.aclient)
            self._client.close()
            if async_clients:
                # their channels belong to event loops that may be gone or busy: release
                # them from a fresh loop in a worker thread (this only drops references)
                self._pool.submit(asyncio.run, _close_async_clients(async_clients)).result()
        finally:
            self._pool.shutdown(wait=True)
            if self.is_lite:
                _release_lite(self)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: the async client of the running event loop is closed
        on it, the rest in a worker thread."""
        if self._closed:
            return
        client = self._async_clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.close()
        await asyncio.to_thread(self.close)

    def concurrently(self, first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
        """Run two blocking Milvus calls at the same time: ``second`` in this thread while
        ``first`` runs in the store's worker thread (gRPC waits release the GIL)."""
        answer_first, answer_second = self.concurrently_all([first, second])
        return answer_first, answer_second

    def concurrently_all(self, calls: Sequence[Callable[[], Any]]) -> tuple[Any, ...]:
        """Run blocking Milvus calls at the same time: all but the last in the store's
        worker threads, the last in this thread; answers in order."""
        if len(calls) == 1:
            return (calls[0](),)
        futures = [self._worker.submit(call) for call in calls[:-1]]
        try:
            last = calls[-1]()
        finally:
            answers = [future.result() for future in futures]
        return (*answers, last)

    # ------------------------------------------------------------------ writes

    def upsert_passages(self, nodes: Sequence[BaseNode]) -> None:
        """Upsert passage nodes (with embeddings) into the passage collection."""
        with _milvus_errors(f"upsert into {self.passage_collection}"):
            for start in range(0, len(nodes), WRITE_BATCH_SIZE):
                self.passages.add(list(nodes[start:start + WRITE_BATCH_SIZE]))

    def upsert_rows(self, collection: str, rows: Sequence[dict[str, Any]]) -> None:
        """Upsert rows into the entity or relation collection, in batches."""
        with _milvus_errors(f"upsert into {collection}"):
            for start in range(0, len(rows), WRITE_BATCH_SIZE):
                self.client.upsert(collection, list(rows[start:start + WRITE_BATCH_SIZE]))

    def delete_rows(self, collection: str, ids: Sequence[str]) -> None:
        """Delete rows of ``collection`` by primary key, in batches."""
        with _milvus_errors(f"delete from {collection}"):
            for start in range(0, len(ids), WRITE_BATCH_SIZE):
                self.client.delete(collection, ids=list(ids[start:start + WRITE_BATCH_SIZE]))

    def document_passages(self, ref_doc_id: str, where: str = "") -> list[BaseNode]:
        """The passage nodes whose source document is ``ref_doc_id`` (and that match
        ``where``, a filter expression on metadata, when given)."""
        if self.dim is None:
            return []
        expression = f"doc_id == {quote(ref_doc_id)}" + (f" and {where}" if where else "")
        with _milvus_errors(f"read {self.passage_collection}"):
            rows = self.client.query(collection_name=self.passage_collection,
                                     **self._read,
                                     filter=expression,
                                     output_fields=["id", *_PASSAGE_FIELDS])
        return _rows_to_passages(rows, [row["id"] for row in rows])

    def entities_in_use(self, entity_ids: Sequence[str],
                        excluding: Collection[str] = ()) -> set[str]:
        """Those of ``entity_ids`` that are the subject or object of a stored relation
        (other than the relations ``excluding`` names)."""
        used: set[str] = set()
        with _milvus_errors(f"read {self.relation_collection}"):
            for start in range(0, len(entity_ids), WRITE_BATCH_SIZE):
                batch = list(entity_ids[start:start + WRITE_BATCH_SIZE])
                expression = f"{in_list('subject_id', batch)} or {in_list('object_id', batch)}"
                for row in self.client.query(collection_name=self.relation_collection,
                                             **self._read, filter=expression,
                                             output_fields=["id", "subject_id", "object_id"]):
                    if row["id"] not in excluding:
                        used.update((row["subject_id"], row["object_id"]))
        return used & set(entity_ids)

    def relations_linking(self, passage_ids: Sequence[str]) -> dict[str, list[str]]:
        """The relations whose ``passage_ids`` contain any of ``passage_ids``: relation id
        to its passage ids."""
        linked: dict[str, list[str]] = {}
        if self.dim is None:
            return linked
        with _milvus_errors(f"read {self.relation_collection}"):
            for start in range(0, len(passage_ids), WRITE_BATCH_SIZE):
                batch = ", ".join(quote(p) for p in passage_ids[start:start + WRITE_BATCH_SIZE])
                for row in self.client.query(
                        collection_name=self.relation_collection, **self._read,
                        filter=f"array_contains_any(passage_ids, [{batch}])",
                        output_fields=["id", "passage_ids"]):
                    linked[row["id"]] = list(row["passage_ids"])
        return linked

    def flush(self) -> None:
        """Seal what was written, so that searches run on indexed segments."""
        with _milvus_errors("flush the graph collections"):
            for name in (self.entity_collection, self.relation_collection,
                         self.passage_collection):
                self.client.flush(name)

    # ------------------------------------------------------------------ communities

    def has_communities(self) -> bool:
        """Whether the community collection exists (``build_communities`` ran once)."""
        with _milvus_errors("list collections"):
            return self.client.has_collection(self.community_collection)

    def create_communities(self) -> None:
        """Create (and load) the community collection when it does not exist."""
        self._create_side_collection(self.community_collection, COMMUNITY_FIELDS)

    def _create_side_collection(self, name: str,
                                fields: Sequence[tuple[str, Any, int]]) -> None:
        """Create (and load) a collection of ``fields`` plus ``id`` and ``embedding`` when
        it does not exist."""
        if self.dim is None:
            raise MilvusStoreError("the graph collections do not exist yet: ingest first")
        with _milvus_errors("list collections"):
            if self.client.has_collection(name):
                return
        with _milvus_errors(f"create {name}"):
            schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("id", DataType.VARCHAR, is_primary=True,
                             max_length=ID_MAX_LENGTH)
            for field, kind, size in fields:
                if kind == DataType.VARCHAR:
                    schema.add_field(field, kind, max_length=size)
                elif kind == DataType.ARRAY:
                    schema.add_field(field, kind, element_type=DataType.VARCHAR,
                                     max_capacity=size, max_length=ID_MAX_LENGTH)
                else:
                    schema.add_field(field, kind)
            schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=self.dim)
            index_params = self.client.prepare_index_params()
            index_params.add_index("embedding", index_type=self.index_type, metric_type=METRIC)
            self.client.create_collection(name, schema=schema,
                                          consistency_level=self.consistency_level)
            self.client.create_index(name, index_params, sync=False)
            self.client.load_collection(name)

    # ---- descriptions

    def has_descriptions(self) -> bool:
        """Whether the description collection exists."""
        with _milvus_errors("list collections"):
            return self.client.has_collection(self.description_collection)

    def read_descriptions(self) -> list[dict[str, Any]]:
        """Every stored description row (with its vector)."""
        with _milvus_errors(f"load {self.description_collection}"):
            self.client.load_collection(self.description_collection)
        return self.read_all(self.description_collection,
                             [name for name, _, _ in DESCRIPTION_FIELDS] + ["embedding"])

    def write_descriptions(self, rows: Sequence[dict[str, Any]], stale: Sequence[str]
                           ) -> None:
        """Upsert description rows and delete the ``stale`` ids."""
        self._create_side_collection(self.description_collection, DESCRIPTION_FIELDS)
        self.upsert_rows(self.description_collection, rows)
        self.delete_rows(self.description_collection, stale)
        self.flush_collection(self.description_collection)

    def drop_descriptions(self) -> None:
        """Drop the description collection (no-op when it does not exist)."""
        if self.has_descriptions():
            with _milvus_errors(f"drop {self.description_collection}"):
                self.client.drop_collection(self.description_collection)

    def all_passages(self) -> list[BaseNode]:
        """Every stored passage node (text and metadata, no vector)."""
        if self.dim is None:
            return []
        rows = self.read_all(self.passage_collection, _PASSAGE_FIELDS)
        return _rows_to_passages(rows, [row["id"] for row in rows])

    # ---- communities

    def drop_communities(self) -> None:
        """Drop the community collection (no-op when it does not exist)."""
        if self.has_communities():
            with _milvus_errors(f"drop {self.community_collection}"):
                self.client.drop_collection(self.community_collection)

    def community_properties(self) -> dict[str, str]:
        """What the last ``build_communities`` recorded on the community collection
        (empty when it does not exist)."""
        if not self.has_communities():
            return {}
        with _milvus_errors(f"describe {self.community_collection}"):
            info = self.client.describe_collection(self.community_collection)
            self.client.load_collection(self.community_collection)  # reopened: not loaded
        return {str(k): str(v) for k, v in (info.get("properties") or {}).items()}

    def set_community_properties(self, properties: Mapping[str, str]) -> None:
        """Record ``properties`` on the community collection."""
        with _milvus_errors(f"alter {self.community_collection}"):
            self.client.alter_collection_properties(self.community_collection,
                                                    properties=dict(properties))

    def read_all(self, collection: str, output_fields: list[str]) -> list[dict[str, Any]]:
        """Every row of ``collection`` (``output_fields`` and ``id``), read in primary-key
        ranges (the ids are hex hashes)."""
        rows: list[dict[str, Any]] = []
        with _milvus_errors(f"read {collection}"):
            total = self.client.query(collection_name=collection, **self._read, filter="",
                                      output_fields=["count(*)"])[0]["count(*)"]
            for filter_ in _pk_ranges(int(total)):
                rows.extend(self.client.query(collection_name=collection, **self._read,
                                              filter=filter_,
                                              output_fields=["id", *output_fields]))
        return rows

    def flush_collection(self, collection: str) -> None:
        """Seal what was written to one collection."""
        with _milvus_errors(f"flush {collection}"):
            self.client.flush(collection)

    # ------------------------------------------------------------------ reads

    def get_rows(self, collection: str, ids: Sequence[str],
                 output_fields: list[str]) -> dict[str, dict[str, Any]]:
        """Rows of ``collection`` by primary key (missing ids are absent from the result)."""
        found: dict[str, dict[str, Any]] = {}
        with _milvus_errors(f"read {collection}"):
            for start in range(0, len(ids), WRITE_BATCH_SIZE):
                batch = list(ids[start:start + WRITE_BATCH_SIZE])
                for row in self.client.get(collection_name=collection, **self._read,
                                           ids=batch, output_fields=output_fields):
                    found[row["id"]] = row
        return found

    def count(self, collection: str) -> int:
        """Exact number of rows in ``collection`` (0 when it does not exist)."""
        if self.dim is None:
            return 0
        with _milvus_errors(f"count {collection}"):
            rows = self.client.query(collection_name=collection, **self._read, filter="",
                                     output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def read_relations(self, show_progress: bool = False) -> Iterator[RelationColumns]:
        """Every relation row (ids, passage ids, vector, text) as column batches: what the
        in-memory graph is built from.

        The collection is read in primary-key ranges (relation ids are hashes, so the ranges
        are even) of about 16,384 rows on a server and of about 64 MiB on Milvus Lite (see
        :func:`_rows_per_range`), the next request in flight while the previous answer is
        decoded (two on a server). Answers are decoded column by column (see
        :class:`_ColumnQuery`), which loads a million relations from a server in well under a
        minute where pymilvus' query iterator and its per-row decoding take several; from
        Milvus Lite in about 70 s (2 cores).
        """
        return self._read_columns(self.relation_collection, _RELATION_GRAPH_FIELDS,
                                  _relation_columns, RelationColumns.from_rows,
                                  "Loading graph from Milvus", " relations", show_progress)

    def read_entities(self, show_progress: bool = False) -> Iterator[EntityColumns]:
        """Every entity row (id, name, vector) as column batches, read as
        :meth:`read_relations` reads relations: what entity seed searches in memory use."""
        return self._read_columns(self.entity_collection, _ENTITY_TABLE_FIELDS,
                                  _entity_columns, _entity_rows_to_columns,
                                  "Loading entity vectors from Milvus", " entities",
                                  show_progress)

    def read_passage_vectors(self, show_progress: bool = False) -> Iterator[PassageColumns]:
        """Every passage's id and vector as column batches, read as :meth:`read_relations`
        reads relations: what passage searches in memory use."""
        return self._read_columns(self.passage_collection, _PASSAGE_TABLE_FIELDS,
                                  _passage_columns, _passage_rows_to_columns,
                                  "Loading passage vectors from Milvus", " passages",
                                  show_progress)

    def _read_columns(self, collection: str, fields: list[str],
                      from_columns: Callable[[Sequence[Any], int], _C],
                      from_rows: Callable[[Sequence[dict[str, Any]], int], _C],
                      desc: str, unit: str, show_progress: bool) -> Iterator[_C]:
        """A whole collection in primary-key ranges, as column batches (see
        :meth:`read_relations`)."""
        if self.dim is None:
            return
        total = self.count(collection)
        fetch = self._column_fetcher(collection, fields, from_columns, from_rows)
        ahead = 1 if self.is_lite else _READ_AHEAD
        with _milvus_errors(f"read {collection}"), \
                ThreadPoolExecutor(max_workers=ahead) as pool:
            queued = iter(_pk_ranges(total, _rows_per_range(self.is_lite, self.dim)))
            pending: deque[Future[_C]] = deque(
                pool.submit(fetch, filter_) for filter_ in islice(queued, ahead))
            progress = tqdm(total=total, desc=desc, unit=unit, disable=not show_progress)
            try:
                while pending:
                    batch = pending.popleft().result()
                    for filter_ in islice(queued, 1):  # the next request, while this is used
                        pending.append(pool.submit(fetch, filter_))
                    progress.update(len(batch))
                    yield batch
            finally:
                for future in pending:
                    future.cancel()
                progress.close()

    def _column_fetcher(self, collection: str, fields: list[str],
                        from_columns: Callable[[Sequence[Any], int], _C],
                        from_rows: Callable[[Sequence[dict[str, Any]], int], _C]
                        ) -> Callable[[str], _C]:
        """A function from a filter to the matching rows as columns: the fast column path
        when this pymilvus has it, else ``client.query`` and a conversion of its rows."""
        assert self.dim is not None
        dim = self.dim
        columns = _ColumnQuery.connect(self.client, self.consistency_level)
        if columns is not None:
            return lambda filter_: from_columns(columns(collection, filter_, fields), dim)
        logger.info("this pymilvus has no column query path; reading %s row by row", collection)
        return lambda filter_: from_rows(
            self.client.query(collection_name=collection, filter=filter_,
                              output_fields=fields, **self._read), dim)

    def search_entities(self, vectors: Sequence[Sequence[float]], names: Sequence[str],
                        top_k: int, threshold: float | None) -> list[list[EntityHit]]:
        """All entity searches of one query in one batched call: hits per searched name."""
        if not vectors:
            return []
        kwargs = _search_kwargs(self.entity_collection, vectors, top_k, ["name"])
        with _milvus_errors(f"search {self.entity_collection}"):
            result = self.client.search(**kwargs, **self._read)
        return _parse_entity_hits(result, names, threshold)

    async def asearch_entities(self, vectors: Sequence[Sequence[float]], names: Sequence[str],
                               top_k: int, threshold: float | None) -> list[list[EntityHit]]:
        """Async twin of :meth:`search_entities`."""
        if not vectors:
            return []
        kwargs = _search_kwargs(self.entity_collection, vectors, top_k, ["name"])
        with _milvus_errors(f"search {self.entity_collection}"):
            result = await self._aclient().search(**kwargs, **self._read)
        return _parse_entity_hits(result, names, threshold)

    def search_relations(self, vector: Sequence[float], top_k: int,
                         threshold: float | None) -> list[RelationHit]:
        """The relations most similar to the query vector."""
        kwargs = _search_kwargs(self.relation_collection, [vector], top_k,
                                _RELATION_HIT_FIELDS)
        with _milvus_errors(f"search {self.relation_collection}"):
            result = self.client.search(**kwargs, **self._read)
        return _parse_relation_hits(result, threshold)

    async def asearch_relations(self, vector: Sequence[float], top_k: int,
                                threshold: float | None) -> list[RelationHit]:
        """Async twin of :meth:`search_relations`."""
        kwargs = _search_kwargs(self.relation_collection, [vector], top_k,
                                _RELATION_HIT_FIELDS)
        with _milvus_errors(f"search {self.relation_collection}"):
            result = await self._aclient().search(**kwargs, **self._read)
        return _parse_relation_hits(result, threshold)

    def get_relation_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Relation texts by id, in one call."""
        if not ids:
            return {}
        with _milvus_errors(f"read {self.relation_collection}"):
            rows = self.client.get(collection_name=self.relation_collection, **self._read,
                                   ids=list(ids),
                                   output_fields=["text"])
        return {row["id"]: row["text"] for row in rows}

    async def aget_relation_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Async twin of :meth:`get_relation_texts`."""
        if not ids:
            return {}
        with _milvus_errors(f"read {self.relation_collection}"):
            rows = await self._aclient().get(collection_name=self.relation_collection,
                                             **self._read, ids=list(ids),
                                             output_fields=["text"])
        return {row["id"]: row["text"] for row in rows}

    def search_passages(self, vector: Sequence[float], ids: Sequence[str], limit: int,
                        where: str = "") -> list[tuple[BaseNode, float]]:
        """The ``limit`` passages among ``ids`` (and matching ``where``, a filter expression
        on metadata) most similar to ``vector``, best first."""
        if not ids:
            return []
        return self.search_passage_lists([vector], limit, ids, where)[0]

    def search_passage_lists(self, vectors: Sequence[Sequence[float]], limit: int,
                             ids: Sequence[str] | None = None, where: str = ""
                             ) -> list[list[tuple[BaseNode, float]]]:
        """One batched search: for each vector, the ``limit`` most similar passages (among
        ``ids`` when given, matching ``where``), best first."""
        kwargs = self._passage_search_kwargs(vectors, limit, ids, where)
        if kwargs is None:
            return [[] for _ in vectors]
        with _milvus_errors(f"search {self.passage_collection}"):
            result = self.client.search(**kwargs, **self._read)
        return _parse_passage_hits(result)

    async def asearch_passage_lists(self, vectors: Sequence[Sequence[float]], limit: int,
                                    ids: Sequence[str] | None = None, where: str = ""
                                    ) -> list[list[tuple[BaseNode, float]]]:
        """Async twin of :meth:`search_passage_lists`."""
        kwargs = self._passage_search_kwargs(vectors, limit, ids, where)
        if kwargs is None:
            return [[] for _ in vectors]
        with _milvus_errors(f"search {self.passage_collection}"):
            result = await self._aclient().search(**kwargs, **self._read)
        return _parse_passage_hits(result)

    def _passage_search_kwargs(self, vectors: Sequence[Sequence[float]], limit: int,
                               ids: Sequence[str] | None, where: str
                               ) -> dict[str, Any] | None:
        """The search request, or ``None`` when it cannot match anything."""
        if not vectors or (ids is not None and not ids):
            return None
        kwargs = _search_kwargs(self.passage_collection, vectors, limit, _PASSAGE_FIELDS, ids,
                                where)
        if ids is None and where:
            kwargs["filter"] = where
        return kwargs

    def get_passages(self, ids: Sequence[str], where: str = "") -> list[BaseNode]:
        """Passage nodes by id (and matching ``where``), in the order of ``ids``; unknown
        ids are left out."""
        rows: list[dict[str, Any]] = []
        with _milvus_errors(f"read {self.passage_collection}"):
            for chunk in _chunks(ids, _GET_CHUNK):
                rows += self.client.query(collection_name=self.passage_collection, **self._read,
                                          filter=_id_filter(chunk, where),
                                          output_fields=["id", *_PASSAGE_FIELDS])
        return _rows_to_passages(rows, ids)

    async def aget_passages(self, ids: Sequence[str], where: str = "") -> list[BaseNode]:
        """Async twin of :meth:`get_passages`."""
        rows: list[dict[str, Any]] = []
        with _milvus_errors(f"read {self.passage_collection}"):
            for chunk in _chunks(ids, _GET_CHUNK):
                rows += await self._aclient().query(
                    collection_name=self.passage_collection, **self._read,
                    filter=_id_filter(chunk, where), output_fields=["id", *_PASSAGE_FIELDS])
        return _rows_to_passages(rows, ids)
