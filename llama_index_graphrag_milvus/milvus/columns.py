"""Whole-collection reads: the in-memory graph, entity table and passage table come from here.

A collection is read in primary-key ranges (the ids are hex hashes, so the ranges are even)
of about :attr:`CollectionReads.range_rows` rows on a server and of about
:attr:`CollectionReads.lite_range_bytes` on Milvus Lite, the next request in flight while
the previous answer is decoded. Answers are decoded column by column (:class:`ColumnQuery`),
which loads a million relations from a server in well under a minute where pymilvus' query
iterator and its per-row decoding take several; from Milvus Lite in about 70 s (2 cores).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import Any, Generic, TypeVar

import numpy as np
from pymilvus import MilvusClient
from tqdm import tqdm

from llama_index_graphrag_milvus.milvus.filters import quote
from llama_index_graphrag_milvus.milvus.schema import milvus_errors
from llama_index_graphrag_milvus.records import EntityColumns, PassageColumns, RelationColumns
from llama_index_graphrag_milvus.validation import check_instance, check_int

logger = logging.getLogger(__name__)

C = TypeVar("C", bound=Sized)

RANGE_ROWS = 16384
"""Rows per primary-key range when a whole collection is read from a server (and the fewest
rows per range on Milvus Lite)."""
LITE_RANGE_BYTES = 64 << 20
"""About how many bytes one range's answer may carry on Milvus Lite (its gRPC limit is
256 MiB). Lite scans the whole collection for every range filter, so a million relations in
ranges of 16,384 rows took 165 s to read where ranges of 131,072 rows took 58 s."""
ROW_BYTES_BESIDES_VECTOR = 256
"""What a row carries besides its float32 vector (ids, text, passage ids), for the ranges'
size on Lite."""
READ_AHEAD = 2
"""Range requests in flight while the previous answer is decoded, on a server. On Milvus Lite
(in-process threads under one interpreter lock) one: a second request in flight saved nothing
on a million relations (71 s against 69 s) and held 0.9 GB more at the peak."""
EMPTY_COLLECTION = 26
"""Status code of a query on a collection that holds nothing yet."""


@dataclass(frozen=True)
class CollectionReads:
    """How whole collections are read (see the module docstring); the defaults are the
    measured ones, the other values are for tests and experiments.

    Args:
        range_rows: rows per primary-key range on a server, and the fewest on Lite.
        lite_range_bytes: about how many bytes one range's answer carries on Milvus Lite
            (0: ranges of ``range_rows`` there too).
        read_ahead: range requests in flight on a server (one on Lite).
        column_path: decode answers column by column (:class:`ColumnQuery`) when this
            pymilvus allows it; ``False`` reads rows with ``client.query``.

    >>> reads = CollectionReads()
    >>> reads.rows_per_range(False, 384), reads.rows_per_range(True, 64)
    (16384, 131072)
    >>> reads.rows_per_range(True, 384)
    37449
    """

    range_rows: int = RANGE_ROWS
    lite_range_bytes: int = LITE_RANGE_BYTES
    read_ahead: int = READ_AHEAD
    column_path: bool = True

    def __post_init__(self) -> None:
        check_int("range_rows", self.range_rows)
        check_int("lite_range_bytes", self.lite_range_bytes, minimum=0)
        check_int("read_ahead", self.read_ahead)
        check_instance("column_path", self.column_path, bool, "True or False")

    def rows_per_range(self, is_lite: bool, dim: int) -> int:
        """Rows per primary-key range: ``range_rows`` on a server; on Milvus Lite as many
        as fit ``lite_range_bytes`` (at least ``range_rows``), since Lite scans every row of
        the collection for each range filter (a server prunes by its segments' key stats)."""
        if not is_lite:
            return self.range_rows
        return max(self.range_rows,
                   self.lite_range_bytes // (4 * dim + ROW_BYTES_BESIDES_VECTOR))


def pk_ranges(rows: int, per_range: int = RANGE_ROWS) -> list[str]:
    """Filters that split the hex-hash primary keys into ranges of about ``per_range`` rows.

    Every string falls in exactly one range (the first and last are open-ended), so ids that
    are not hashes are read too, only in fewer ranges.

    >>> pk_ranges(40000)
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


class ColumnQuery:
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
    def connect(cls, client: MilvusClient, consistency_level: str) -> ColumnQuery | None:
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
        if EMPTY_COLLECTION in (response.status.code, response.status.error_code):
            return []
        self._check(response.status)
        return list(response.fields_data)


def _column_strings(by_name: Mapping[str, Any], name: str) -> list[str]:
    return list(by_name[name].scalars.string_data.data)


def _column_vectors(by_name: Mapping[str, Any], dim: int) -> np.ndarray:
    return np.asarray(by_name["embedding"].vectors.float_vector.data, np.float32).reshape(-1, dim)


def relation_columns(fields_data: Sequence[Any], dim: int) -> RelationColumns:
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


def entity_columns(fields_data: Sequence[Any], dim: int) -> EntityColumns:
    """Entity columns from the ``FieldData`` protobufs of a query answer."""
    by_name = {field.field_name: field for field in fields_data}
    if not by_name:
        return EntityColumns([], [], np.zeros((0, dim), np.float32))
    return EntityColumns(_column_strings(by_name, "id"), _column_strings(by_name, "name"),
                         _column_vectors(by_name, dim))


def passage_columns(fields_data: Sequence[Any], dim: int) -> PassageColumns:
    """Passage ids and vectors from the ``FieldData`` protobufs of a query answer."""
    by_name = {field.field_name: field for field in fields_data}
    if not by_name:
        return PassageColumns([], np.zeros((0, dim), np.float32))
    return PassageColumns(_column_strings(by_name, "id"), _column_vectors(by_name, dim))


def passage_rows_to_columns(rows: Sequence[dict[str, Any]], dim: int) -> PassageColumns:
    """Passage ids and vectors from query rows (``id``, ``embedding``)."""
    vectors = np.asarray([r["embedding"] for r in rows], np.float32).reshape(len(rows), dim)
    return PassageColumns([r["id"] for r in rows], vectors)


def entity_rows_to_columns(rows: Sequence[dict[str, Any]], dim: int) -> EntityColumns:
    """Entity columns from query rows (``id``, ``name``, ``embedding``)."""
    vectors = np.asarray([r["embedding"] for r in rows], np.float32).reshape(len(rows), dim)
    return EntityColumns([r["id"] for r in rows], [r["name"] for r in rows], vectors)


@dataclass(frozen=True)
class ColumnKind(Generic[C]):
    """What the rows of one collection are read into: the fields, the decoders of a column
    answer and of query rows, and the progress bar's words."""

    fields: list[str]
    from_columns: Callable[[Sequence[Any], int], C]
    from_rows: Callable[[Sequence[dict[str, Any]], int], C]
    desc: str
    unit: str


RELATION_COLUMNS = ColumnKind(
    ["id", "subject_id", "object_id", "passage_ids", "embedding", "text"], relation_columns,
    RelationColumns.from_rows, "Loading graph from Milvus", " relations")
ENTITY_COLUMNS = ColumnKind(["id", "name", "embedding"], entity_columns,
                            entity_rows_to_columns, "Loading entity vectors from Milvus",
                            " entities")
PASSAGE_COLUMNS = ColumnKind(["id", "embedding"], passage_columns, passage_rows_to_columns,
                             "Loading passage vectors from Milvus", " passages")


def column_fetcher(client: MilvusClient, collection: str, kind: ColumnKind[C], dim: int,
                   consistency_level: str, column_path: bool = True) -> Callable[[str], C]:
    """A function from a filter to the matching rows as columns: the fast column path
    when this pymilvus has it (and ``column_path``), else ``client.query`` and a conversion
    of its rows."""
    columns = ColumnQuery.connect(client, consistency_level) if column_path else None
    if columns is not None:
        return lambda filter_: kind.from_columns(columns(collection, filter_, kind.fields), dim)
    if column_path:
        logger.info("this pymilvus has no column query path; reading %s row by row",
                    collection)
    return lambda filter_: kind.from_rows(
        client.query(collection_name=collection, filter=filter_, output_fields=kind.fields,
                     consistency_level=consistency_level), dim)


def read_columns(client: MilvusClient, collection: str, kind: ColumnKind[C], total: int,
                 dim: int, is_lite: bool, consistency_level: str, reads: CollectionReads,
                 show_progress: bool = False) -> Iterator[C]:
    """The ``total`` rows of ``collection`` in primary-key ranges, as column batches, the
    next range in flight while a batch is used (see the module docstring)."""
    fetch = column_fetcher(client, collection, kind, dim, consistency_level, reads.column_path)
    ahead = 1 if is_lite else reads.read_ahead
    with milvus_errors(f"read {collection}"), ThreadPoolExecutor(max_workers=ahead) as pool:
        queued = iter(pk_ranges(total, reads.rows_per_range(is_lite, dim)))
        pending: deque[Future[C]] = deque(
            pool.submit(fetch, filter_) for filter_ in islice(queued, ahead))
        progress = tqdm(total=total, desc=kind.desc, unit=kind.unit, disable=not show_progress)
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
