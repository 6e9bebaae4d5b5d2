"""What the collections of an index hold, how they are created, and how a Milvus call fails.

``{prefix}_entities``   one row per normalized entity name: ``id``, ``name``, ``passage_ids``,
                        ``embedding`` (:data:`ENTITY_FIELDS`, :data:`ENTITY_PASSAGE_FIELDS`).
``{prefix}_relations``  one row per (subject, predicate, object): ``id``, ``text``,
                        ``subject_id``, ``object_id`` (entity ids), ``passage_ids``,
                        ``subject_kind``, ``object_kind``, ``embedding``
                        (:data:`RELATION_FIELDS`).
``{prefix}_passages``   a :class:`~llama_index.vector_stores.milvus.MilvusVectorStore`, so that
                        naive vector RAG and any LlamaIndex tool can read the passages.
``{prefix}_communities`` (after ``build_communities``) one row per community and report; see
                        :data:`COMMUNITY_FIELDS`.
``{prefix}_descriptions`` (after ``build_communities`` on passages extracted with
                        descriptions) merged entity and relation descriptions; see
                        :data:`DESCRIPTION_FIELDS`.

Every collection but the passages' is made by :func:`create_collection` from a table of
fields: ``id`` (the primary key), the fields, then ``embedding``.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import grpc
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.exceptions import ConnectError, MilvusUnavailableException

from llama_index_graphrag_milvus.errors import (
    InvalidInputError,
    MilvusStoreError,
    MilvusUnavailableError,
)
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES, RELATION_TEXT_MAX_BYTES
from llama_index_graphrag_milvus.records import UNRECORDED

ID_MAX_LENGTH = 64
MAX_PASSAGES_PER_RELATION = 4096
"""Milvus' largest ARRAY capacity: a relation links to at most this many passages."""
WRITE_BATCH_SIZE = 1000
METRIC = "COSINE"
CONSISTENCY_LEVELS = ("Strong", "Bounded", "Session", "Eventually")
"""The Milvus consistency levels ``consistency_level`` accepts."""
VECTOR_INDEX_TYPES = ("AUTOINDEX", "FLAT", "HNSW", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "SCANN",
                      "DISKANN")
"""The vector indexes ``index_type`` accepts (on a server; Milvus Lite builds ``FLAT``)."""
_PREFIX_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}\Z")  # \Z: no trailing newline

Fields = tuple[tuple[str, Any, int], ...]
"""A collection's fields besides ``id`` and ``embedding``: (name, type, max length of a
VARCHAR or capacity of an ARRAY of ids, 0 otherwise)."""

ENTITY_FIELDS: Fields = (("name", DataType.VARCHAR, ENTITY_NAME_MAX_BYTES),)
"""The scalar fields of the entity collection (and :data:`ENTITY_PASSAGE_FIELDS`)."""
ENTITY_PASSAGE_FIELDS: Fields = (("passage_ids", DataType.ARRAY, MAX_PASSAGES_PER_RELATION),)
"""An entity's passages: the distinct passages its relations come from, in the order they
were linked (the first :data:`MAX_PASSAGES_PER_RELATION` when more), kept by every write, so
that where an entity leads is one read by id, whatever its degree. An entity collection
created before 0.2 lacks it: it is read and written without it (the passages are then read
from the relations) until ``GraphRAGIndex.upgrade()`` records them."""
ENTITY_KEY_FIELDS: Fields = (("name_key", DataType.VARCHAR, ENTITY_NAME_MAX_BYTES),)
"""An entity's name without accents, case or width (:func:`~llama_index_graphrag_milvus.
words.name_key`), so that the entity seeds by name and the explorer's search find
"Aschenbrödel" for "Aschenbrodel" on Milvus alike (its ``like`` and ``in`` compare
characters as written); indexed on a server. An entity collection created before 0.3 lacks
it: names are then matched as written until ``GraphRAGIndex.upgrade()`` records them."""
ENTITY_KEY_INDEXES = ("name_key",)
"""The entity fields a server indexes (the name seeds' ``in`` filter on millions of rows)."""
KIND_FIELDS = ("subject_kind", "object_kind")
"""The kinds of a relation's subject and object (``"named"``, ``"title"``, ``"date"``,
``"concept"``, ``""`` when not recorded), what the bridge choice reads."""
SPREAD_FIELDS = ("subject_passages", "object_passages")
"""How many distinct passages each end of a relation leads to (the length of that entity's
``passage_ids``), at most :data:`SPREAD_CAP`: kept exact by every write and delete (see
:mod:`~llama_index_graphrag_milvus.ingestion.spreads`), so that a relation search brings
where the bridges of its hits lead, with no read of the entity rows."""
UNKNOWN_SPREAD = UNRECORDED
"""A :data:`SPREAD_FIELDS` value a write could not tell (the served graph reads the entity
row instead; the next write or delete of that entity records it)."""
SPREAD_CAP = 65
"""The most :data:`SPREAD_FIELDS` count: one more than the bridge method's default
``hub_passages`` (64), enough to tell a hub. A row changes only while its end has fewer
passages than this, so that a hub's relations are never rewritten."""
RELATION_FIELDS: Fields = (
    ("text", DataType.VARCHAR, RELATION_TEXT_MAX_BYTES),
    ("subject_id", DataType.VARCHAR, ID_MAX_LENGTH),
    ("object_id", DataType.VARCHAR, ID_MAX_LENGTH),
    ("passage_ids", DataType.ARRAY, MAX_PASSAGES_PER_RELATION),
    *((field, DataType.VARCHAR, 16) for field in KIND_FIELDS),
    *((field, DataType.INT64, 0) for field in SPREAD_FIELDS),
)
"""The scalar fields of the relation collection. A collection written before 0.2 lacks
:data:`KIND_FIELDS`: it is read and written without them (kinds are then inferred from the
names); rebuild it to record them. One written before 0.3 lacks :data:`SPREAD_FIELDS`: where
its relations' ends lead is then read from the entity rows."""

TENANT_MAX_BYTES = 256
"""Longest tenant value (UTF-8 bytes) an index with a ``tenant_key`` accepts."""
TENANT_FIELDS = ("tenants", "passage_tenants")
"""With a ``tenant_key``: the tenants whose passages support a relation (``tenants``, each
once; ``passage_tenants``, the tenant of each of its ``passage_ids``, in their order), and the
tenants whose relations name an entity (``tenants``)."""
MANY_TENANTS = "*"
"""An entity's ``tenants`` when more tenants name it than an ARRAY holds: any tenant may
(a filtered query checks the entity's passages)."""
RELATION_TENANT_FIELDS: Fields = (
    ("tenants", DataType.ARRAY, MAX_PASSAGES_PER_RELATION),
    ("passage_tenants", DataType.ARRAY, MAX_PASSAGES_PER_RELATION),
)
ENTITY_TENANT_FIELDS: Fields = (("tenants", DataType.ARRAY, MAX_PASSAGES_PER_RELATION),)

COMMUNITY_MEMBERS_PER_ROW = 4096
"""Entity ids (and child ids) one community row holds; a larger community continues in
part rows (``part`` 1, 2, ...)."""
COMMUNITY_TEXT_MAX_BYTES = 65535
"""Longest report summary or findings text (UTF-8 bytes) the community collection accepts."""
COMMUNITY_FIELDS: Fields = (
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
DESCRIPTION_FIELDS: Fields = (
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

PASSAGE_FIELDS = ["text", "_node_content", "_node_type"]
"""What a passage row is read with: the fields ``MilvusVectorStore`` writes a node into."""
VECTOR_STORE_KEYS = frozenset({"doc_id", "_node_content", "_node_type", "document_id",
                               "ref_doc_id"})
"""What ``MilvusVectorStore`` writes on a passage row beside the node's metadata (over any
metadata key of the same name)."""


def add_scalar_index(index_params: Any, field: str) -> None:
    """The server's default scalar index on ``field`` (Trie on Milvus 2.3, INVERTED after):
    index lookups for the filters on it."""
    index_params.add_index(field, index_type="", index_name=f"{field}_index")


def validate_collection_prefix(prefix: str) -> str:
    """Return ``prefix`` if Milvus can use ``{prefix}_entities`` as a collection name.

    >>> validate_collection_prefix("wiki_2024")
    'wiki_2024'
    """
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise InvalidInputError(
            f"collection_prefix={prefix!r} cannot name a Milvus collection: use a letter or "
            "underscore followed by letters, digits or underscores (at most 201 characters), "
            "for example 'graphrag' or 'wiki_2024'."
        )
    return prefix


UNAVAILABLE_CODES = frozenset({2, 101})
"""Milvus error codes of a server that is away or not ready: 2 (pymilvus' "Fail connecting
to server", the server's "service unavailable") and 101 ("collection not loaded": a
restarted server loads its collections again by itself)."""
UNAVAILABLE_STATUSES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
"""gRPC statuses of a connection that failed or a call that outlived its deadline (pymilvus
lets ``DEADLINE_EXCEEDED`` through as gRPC's own error, and puts a status in ``code`` when
its retries run out)."""
_TIMEOUT_MESSAGES = ("Retry timeout", "DEADLINE_EXCEEDED")
"""What pymilvus writes in the message of a call that outlived the client timeout."""
_UNAVAILABLE_HINT = (" (the server is unreachable or did not answer in time: the call may "
                     "succeed if retried after a pause, with no action on the index)")


def is_unavailable(exc: BaseException) -> bool:
    """Whether a pymilvus or gRPC error (or one of its causes) says the server is away or
    late, so that the same call may succeed later: see :class:`MilvusUnavailableError`.

    >>> is_unavailable(MilvusException(code=2, message="Fail connecting to server"))
    True
    >>> is_unavailable(MilvusException(code=100, message="collection not found"))
    False
    """
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:  # pymilvus raises `e from e`
        seen.add(id(error))
        if isinstance(error, (MilvusUnavailableException, ConnectError, TimeoutError,
                              grpc.FutureTimeoutError)):
            return True
        status = getattr(error, "code", None)  # grpc's RpcError and AioRpcError: a method
        if isinstance(error, grpc.RpcError) and callable(status) \
                and status() in UNAVAILABLE_STATUSES:
            return True
        if isinstance(error, MilvusException) and (
                error.code in UNAVAILABLE_CODES or error.code in UNAVAILABLE_STATUSES
                or any(marker in str(error.message) for marker in _TIMEOUT_MESSAGES)):
            return True
        error = error.__cause__
    return False


@contextmanager
def milvus_errors(action: str) -> Iterator[None]:
    """Turn pymilvus errors (and the gRPC errors pymilvus lets through) into
    :class:`MilvusStoreError` with what we were doing, or :class:`MilvusUnavailableError`
    when a retry may succeed (:func:`is_unavailable`); the original error is chained as
    ``__cause__``."""
    try:
        yield
    except (MilvusException, grpc.RpcError) as exc:
        if is_unavailable(exc):
            raise MilvusUnavailableError(
                f"Milvus failed to {action}: {exc}{_UNAVAILABLE_HINT}") from exc
        raise MilvusStoreError(f"Milvus failed to {action}: {exc}") from exc


SHARED_CONNECTIONS = importlib.util.find_spec("pymilvus.client.connection_manager") is not None
"""Whether pymilvus shares client connections per address (2.6 and later; see
:func:`fresh_connections`)."""


def fresh_connections(client_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``client_kwargs`` for a pymilvus client whose gRPC channels each connect on their
    own (``grpc.use_local_subchannel_pool``; options the caller gives in ``grpc_options``
    win).

    gRPC shares a connection to an address between the channels of a process, and with it
    the wait before the next connection attempt after one failed (1 s, then longer). When a
    server comes back, pymilvus reconnects by opening a new channel, whose first call is
    not told to wait: sharing the failed connection of another channel (a client of an
    event loop that ended, a reconnect that failed while the server was away), that call
    failed at once with "Fail connecting to server" although the server answered.

    pymilvus 2.6 also shares one client connection per address and token in a process
    (its ``ConnectionManager``) and keeps it after its clients close: a second index on the
    same Milvus got the first one's connection, its own ``grpc_options`` (TLS, keepalive)
    silently ignored, and every closed index left its connection open. Where pymilvus has
    that manager, the clients ask for a connection of their own (``dedicated=True``, which
    ``close()`` closes), unless the caller says otherwise.

    >>> fresh_connections({"timeout": 5})["grpc_options"]
    {'grpc.use_local_subchannel_pool': 1}
    """
    options = {"grpc.use_local_subchannel_pool": 1, **(client_kwargs.get("grpc_options") or {})}
    own = {"dedicated": True} if SHARED_CONNECTIONS else {}
    return {**own, **client_kwargs, "grpc_options": options}


def recorded_properties(info: Mapping[str, Any]) -> dict[str, str]:
    """What a described collection records about itself (its properties), as strings.

    >>> recorded_properties({"properties": {"graphrag.dim": 384}}), recorded_properties({})
    ({'graphrag.dim': '384'}, {})
    """
    return {str(k): str(v) for k, v in (info.get("properties") or {}).items()}


def create_collection(client: MilvusClient, name: str, fields: Sequence[tuple[str, Any, int]],
                      dim: int, index_type: str, consistency_level: str,
                      properties: Mapping[str, str] | None = None,
                      scalar_indexes: Sequence[str] = (),
                      index_params: Mapping[str, Any] | None = None,
                      wait_for_load: bool = True) -> None:
    """Create and load the collection ``name``: ``id`` (a VARCHAR primary key), ``fields``,
    ``embedding`` (``dim`` floats, cosine index of ``index_type`` built with
    ``index_params``), the server's default scalar index on each of ``scalar_indexes``, and
    ``properties``. With ``wait_for_load=False`` the load is only started (the caller
    waits for it with ``client.load_collection(name)``). Raises pymilvus errors (callers
    wrap them in :func:`milvus_errors`)."""
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_MAX_LENGTH)
    for field, kind, size in fields:
        if kind == DataType.VARCHAR:
            schema.add_field(field, kind, max_length=size)
        elif kind == DataType.ARRAY:  # arrays of ids, or of tenants
            schema.add_field(field, kind, element_type=DataType.VARCHAR, max_capacity=size,
                             max_length=TENANT_MAX_BYTES if field in TENANT_FIELDS
                             else ID_MAX_LENGTH)
        else:
            schema.add_field(field, kind)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dim)
    indexes = client.prepare_index_params()
    indexes.add_index("embedding", index_type=index_type, metric_type=METRIC,
                      params=dict(index_params or {}))
    for field in scalar_indexes:
        add_scalar_index(indexes, field)
    client.create_collection(name, schema=schema, consistency_level=consistency_level,
                             **({"properties": dict(properties)} if properties else {}))
    # sync=False: Milvus builds the index in the background and load waits for it; the
    # synchronous wait polls every 0.5 s through an RPC Milvus Lite does not implement.
    client.create_index(name, indexes, sync=False)
    client.load_collection(name, **({} if wait_for_load else {"_async": True}))


def vector_index_choice(index_type: str | None, index_params: Mapping[str, Any] | None,
                        is_lite: bool) -> tuple[str, dict[str, Any]]:
    """The vector index type and build parameters of the collections a store creates:
    ``FLAT`` on Milvus Lite (its only index), ``AUTOINDEX`` on a server unless
    ``index_type`` says otherwise; raises :class:`InvalidInputError` for a type Milvus does
    not build, another type on Lite, or parameters without a type.

    >>> vector_index_choice(None, None, is_lite=False)
    ('AUTOINDEX', {})
    >>> vector_index_choice("hnsw", {"M": 16}, is_lite=False)
    ('HNSW', {'M': 16})
    """
    if index_type is None:
        if index_params:
            raise InvalidInputError(
                f"index_params {dict(index_params)!r} needs an index_type, for example "
                "index_type='HNSW', index_params={'M': 16, 'efConstruction': 200}.")
        return ("FLAT" if is_lite else "AUTOINDEX"), {}
    kind = index_type.upper() if isinstance(index_type, str) else None
    if kind not in VECTOR_INDEX_TYPES:
        raise InvalidInputError(f"index_type must be one of {', '.join(VECTOR_INDEX_TYPES)}, "
                                f"got {index_type!r}.")
    if is_lite and kind != "FLAT":
        raise InvalidInputError(
            f"index_type {index_type!r}: Milvus Lite builds FLAT indexes only (exact search); "
            "leave index_type out, or use a Milvus server for an approximate index.")
    if index_params is not None and not (isinstance(index_params, Mapping) and all(
            isinstance(k, str) for k in index_params)):
        raise InvalidInputError(f"index_params must be a mapping of parameter names to "
                                f"values, got {index_params!r}.")
    return kind, dict(index_params or {})


def field_indexes(client: MilvusClient, collection: str) -> dict[str, dict[str, Any]]:
    """Each indexed field of ``collection`` and its index as Milvus describes it
    (``index_type``, ``metric_type``, the build parameters, ``index_name``...): Milvus
    builds one index per field."""
    found = {}
    for name in client.list_indexes(collection):
        info = client.describe_index(collection, name)
        found[info["field_name"]] = {**info, "index_name": name}
    return found
