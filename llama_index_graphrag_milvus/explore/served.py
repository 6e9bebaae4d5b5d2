"""The explorer's graph read from Milvus by bounded requests: :class:`ServedGraphView`, for
an index whose graph Milvus serves (``graph="milvus"``). It holds nothing that grows with
the index, and no request reads more than :data:`WINDOW` rows of ids (or
:data:`~.data.MAX_PAGE` rows of relations):

- counts: the collections' row counts (``count(*)``);
- the degree distribution and the hubs: of a sample, the :data:`SAMPLE_ENTITIES` entities
  first in id order (ids are hashes of the names, so the sample is as good as a random one),
  their degrees counted by filtered queries of their relations' ends; the summary says so;
- entity search: a ``like`` query on the names (at most :data:`SEARCH_CANDIDATES`
  candidates), the hits checked and ranked in the process as the in-memory view ranks them
  (a Milvus before 2.4 matches prefixes only: names that start with the text, there);
- an entity's neighbourhood: its relations in relation id order (the in-memory view puts
  those to the most connected neighbours first: that order needs every neighbour's degree),
  one page read by primary key, the ids found by :class:`IdPages`;
- passages: in id order, as the in-memory view pages them.

Milvus Lite scans every row for a filter: correct, but slow at scale; a server answers the
filters on ``subject_id`` / ``object_id`` from scalar indexes (see :mod:`...milvus.served`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_index_graphrag_milvus.errors import MilvusStoreError
from llama_index_graphrag_milvus.explore.view import (
    HUBS,
    Degrees,
    Hit,
    degree_histogram,
    name_fold,
    no_entity,
    rank_hits,
    relation_item,
)
from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.milvus.filters import quote
from llama_index_graphrag_milvus.milvus.schema import ID_MAX_LENGTH, milvus_errors
from llama_index_graphrag_milvus.milvus.served import around_filter, count_ends
from llama_index_graphrag_milvus.words import name_key

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.index import GraphRAGIndex
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

logger = logging.getLogger(__name__)

WINDOW = MILVUS_MAX_TOP_K
"""Rows one read of ids returns at most (Milvus's query window)."""
SAMPLE_ENTITIES = 1000
"""Entities whose degrees the summary's distribution and hubs are read from."""
DEGREE_CHUNK = 100
"""Entities whose relations' ends one query reads (a chunk that reaches :data:`WINDOW`
rows is split, down to one entity, counted with ``count(*)``)."""
SEARCH_CANDIDATES = 200
"""Names an entity search reads at most (then checks and ranks in the process)."""
MAX_STEPS = 64
"""Id ranges :meth:`IdPages.page` reads or counts at most for one page."""
MAX_DEPTH = 16
"""Hex digits of the longest id prefix :class:`IdPages` cuts ranges at."""
LIKE_SPECIALS = "%_\\"
"""Characters a ``like`` pattern cannot hold literally on every Milvus: the pattern
skips them (a wildcard in their place) and the hits are checked in the process."""


def like_pattern(needle: str, infix: bool = True) -> str:
    r"""A ``like`` pattern that matches every name holding ``needle`` (``infix``) or starting
    with it (and maybe others: the hits are checked in the process).

    >>> like_pattern("50% off"), like_pattern("a\\b"), like_pattern("%")
    ('%50% off%', '%a%b%', '%')
    >>> like_pattern("ab_c", infix=False), like_pattern("_", infix=False)
    ('ab%', '%')
    """
    if not infix:
        cut = min((i for i, c in enumerate(needle) if c in LIKE_SPECIALS), default=len(needle))
        return f"{needle[:cut]}%"
    parts = [needle]
    for special in LIKE_SPECIALS:
        parts = [piece for part in parts for piece in part.split(special)]
    inner = "%".join(part for part in parts if part)
    return f"%{inner}%" if inner else "%"


def casings(text: str) -> list[str]:
    """``text`` as typed, in lower, upper and title case, capitalised: the casings a
    case-sensitive ``like`` tries.

    >>> casings("van gogh")
    ['van gogh', 'VAN GOGH', 'Van Gogh', 'Van gogh']
    """
    return list(dict.fromkeys([text, text.lower(), text.upper(), text.title(),
                               text.capitalize()]))


def storable_id(value: object) -> bool:
    """Whether ``value`` can be an id of the index (a non-empty string of at most
    ``ID_MAX_LENGTH`` UTF-8 bytes): anything else is unknown, asked of no one."""
    return (isinstance(value, str) and bool(value) and storable_text(value)
            and len(value.encode("utf-8")) <= ID_MAX_LENGTH)


def storable_text(value: str) -> bool:
    """Whether ``value`` is UTF-8 text (no lone surrogate): Milvus can hold and match it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _and(*parts: str) -> str:
    kept = [part for part in parts if part]
    return " and ".join(f"({part})" for part in kept) if len(kept) > 1 else "".join(kept)


class IdPages:
    """The ids of the rows of ``collection`` matching ``where``, a page at a time in id
    order, each read bounded by ``window`` rows.

    When the rows number at most ``window``, their ids are read once and sorted. Beyond,
    the id space is cut into ranges of hex prefixes (ids are hex hashes, so the ranges are
    about even) of at most about ``window / 2`` rows each: the range holding ``offset`` is
    estimated, the rows before it counted, and the ranges read in order until the page is
    full (at most :data:`MAX_STEPS` requests; ids that are not hex hashes still fall into
    some range; a range that fills the window is read again as its sixteen sub-ranges).
    """

    def __init__(self, store: MilvusGraphStore, collection: str, where: str = "",
                 window: int = WINDOW) -> None:
        self.store = store
        self.collection = collection
        self.where = where
        self.window = window

    def read(self, filter_: str, output: list[str], limit: int | None) -> list[dict[str, Any]]:
        """One query of the collection (``limit``: ``None`` for a count)."""
        kwargs: dict[str, Any] = {"limit": limit} if limit is not None else {}
        with milvus_errors(f"read {self.collection}"):
            return self.store.client.query(collection_name=self.collection, filter=filter_,
                                           output_fields=output, **kwargs,
                                           **self.store.read_options)

    def count(self, range_: str = "") -> int:
        """Rows matching ``where`` (and ``range_``)."""
        rows = self.read(_and(self.where, range_), ["count(*)"], None)
        return int(rows[0]["count(*)"]) if rows else 0

    def _ids(self, low: int, high: int, depth: int, reads: list[int]) -> list[str]:
        """The ids in ranges ``low .. high - 1`` of hex prefixes of ``depth`` digits, sorted;
        a range whose answer fills the window is read again as its sixteen sub-ranges.
        ``reads`` counts the requests of one page (at most :data:`MAX_STEPS`)."""
        reads[0] += 1
        if reads[0] > MAX_STEPS:
            raise MilvusStoreError(
                f"{self.collection}: one page took more than {MAX_STEPS} reads (ids that are "
                "not hashes spread evenly?); ask for a smaller page")
        ids = sorted(row["id"] for row in self.read(_and(self.where, self._range(
            low, high, depth)), ["id"], self.window))
        if len(ids) < self.window:
            return ids
        if depth >= MAX_DEPTH:
            raise MilvusStoreError(
                f"{self.collection}: more than {self.window} ids of the rows matching "
                f"{self.where or 'no filter'} share a prefix of {depth} characters: they are "
                "not hashes spread evenly, and cannot be paged in id order")
        return [i for sub in range(low * 16, high * 16)
                for i in self._ids(sub, sub + 1, depth + 1, reads)]

    def page(self, offset: int, limit: int, total: int) -> list[str]:
        """The ids at ``offset .. offset + limit`` of the ``total`` rows, in id order."""
        if offset >= total or limit < 1:
            return []
        reads = [0]
        if total <= self.window:
            return self._ids(0, 1, 0, reads)[offset:offset + limit]
        depth = 1
        while total > (self.window // 2) * 16 ** depth:
            depth += 1
        ranges = 16 ** depth
        bucket = min(ranges - 1, offset * ranges // total)
        before = self.count(self._range(0, bucket, depth)) if bucket else 0
        while before > offset:  # the estimate overshot: step back a range at a time
            bucket -= 1
            before -= self.count(self._range(bucket, bucket + 1, depth))
            reads[0] += 1
        found: list[str] = []
        while len(found) < limit and bucket < ranges:
            ids = self._ids(bucket, bucket + 1, depth, reads)
            start = max(0, offset + len(found) - before)
            found.extend(ids[start:start + limit - len(found)])
            before += len(ids)
            bucket += 1
        return found

    @staticmethod
    def _range(low: int, high: int, depth: int) -> str:
        """The ids of ranges ``low .. high - 1`` (the first has no lower bound, the last no
        upper one, so that every id is in one).

        >>> IdPages._range(0, 1, 1), IdPages._range(3, 16, 1)
        ('id < "1"', 'id >= "3"')
        """
        bounds = []
        if low > 0:
            bounds.append(f"id >= {quote(format(low, f'0{depth}x'))}")
        if high < 16 ** depth:
            bounds.append(f"id < {quote(format(high, f'0{depth}x'))}")
        return " and ".join(bounds)


class ServedGraphView:
    """The :class:`~.view.GraphView` of the graph Milvus serves (see the module docstring);
    it keeps nothing between requests. ``window``: rows one read of ids returns at most
    (smaller in tests, to page a hub by id ranges)."""

    def __init__(self, index: GraphRAGIndex, window: int = WINDOW,
                 sample: int = SAMPLE_ENTITIES) -> None:
        self.store = index.store
        self.window = window
        self.sample = sample
        self.infix = True
        """Whether this Milvus takes infix ``like`` patterns (2.4 and later, Lite)."""

    def _ends(self, entity_id: str) -> IdPages:
        quoted = quote(entity_id)
        return IdPages(self.store, self.store.relation_collection,
                       f"subject_id == {quoted} or object_id == {quoted}", self.window)

    def counts(self) -> dict[str, int]:
        store = self.store
        return {"passages": store.count(store.passage_collection),
                "entities": store.count(store.entity_collection),
                "relations": store.count(store.relation_collection)}

    def entity_degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """The number of relations of each entity, exactly: their ends read in chunks of
        :data:`DEGREE_CHUNK` entities (a chunk whose answer fills the window is split)."""
        degrees: dict[str, int] = {}
        chunks = [list(entity_ids[i:i + DEGREE_CHUNK])
                  for i in range(0, len(entity_ids), DEGREE_CHUNK)]
        while chunks:
            chunk = chunks.pop()
            if len(chunk) == 1:
                degrees[chunk[0]] = self._ends(chunk[0]).count()
                continue
            pages = IdPages(self.store, self.store.relation_collection, around_filter(chunk))
            rows = pages.read(pages.where, ["subject_id", "object_id"], self.window)
            if len(rows) >= self.window:
                chunks += [chunk[:len(chunk) // 2], chunk[len(chunk) // 2:]]
            else:
                degrees.update(count_ends(rows, chunk))
        return {eid: degrees[eid] for eid in entity_ids}

    def degrees(self) -> Degrees:
        store = self.store
        total = store.count(store.entity_collection)
        ids = IdPages(store, store.entity_collection, "", self.window).page(0, self.sample,
                                                                            total)
        degrees = self.entity_degrees(ids)
        hubs = sorted(degrees.items(), key=lambda item: (-item[1], item[0]))[:HUBS]
        return Degrees(degree_histogram(np.asarray(list(degrees.values()), np.int64)), hubs,
                       {"entities": len(ids), "of": total})

    def names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        found = self.store.get_entity_names(list(dict.fromkeys(entity_ids)))
        return {eid: found.get(eid, eid) for eid in entity_ids}

    def search(self, text: str, limit: int) -> list[dict[str, Any]]:
        """Names read by ``like`` on their keys (``name_key``: accents and case aside, see
        :func:`~.view.name_fold`), or on an index made before 0.3 on the names in the
        casings of :func:`casings` (Milvus compares case: a name in another mix of cases
        is not found), checked in the process; at most :data:`SEARCH_CANDIDATES` names
        read. A Milvus before 2.4 matches prefixes only: there, names that start with the
        text (the first refusal is logged)."""
        if not storable_text(text):
            return []  # no name holds it (the in-memory view finds none either)
        fold = name_fold(self.store)
        needle = fold(text)
        try:
            rows = self._like(text, self.infix)
        except MilvusStoreError:
            if not self.infix:
                raise
            logger.info("this Milvus refuses infix 'like' patterns (before 2.4): the "
                        "explorer's entity search matches names by their start")
            self.infix = False
            rows = self._like(text, infix=False)
        names = {row["id"]: row["name"] for row in rows
                 if needle in fold(row.get("name") or "")}
        degrees = self.entity_degrees(list(names))
        return rank_hits([Hit(eid, name, degrees[eid]) for eid, name in names.items()],
                         needle, limit, fold)

    def _like(self, text: str, infix: bool) -> list[dict[str, Any]]:
        store = self.store
        pattern = (f"name_key like {quote(like_pattern(name_key(text), infix))}"
                   if store.records_name_keys else
                   " or ".join(f"name like {quote(like_pattern(cased, infix))}"
                               for cased in casings(text)))
        with milvus_errors(f"read {store.entity_collection}"):
            rows: list[dict[str, Any]] = store.client.query(
                collection_name=store.entity_collection, filter=pattern,
                output_fields=["name"], limit=SEARCH_CANDIDATES, **store.read_options)
        return rows

    def neighbourhood(self, entity_id: str, offset: int, limit: int) -> dict[str, Any]:
        """Relations in relation id order."""
        if not storable_id(entity_id):
            raise no_entity(entity_id)
        pages = self._ends(entity_id)
        total = pages.count()
        if total == 0:
            raise no_entity(entity_id)
        ids = pages.page(offset, limit, total)
        rows = self.store.get_rows(self.store.relation_collection, ids,
                                   ["text", "subject_id", "object_id", "passage_ids"])
        found = [rows[rid] for rid in ids if rid in rows]  # a relation deleted meanwhile
        names = self.names([entity_id, *(row[end] for row in found
                                         for end in ("subject_id", "object_id"))])
        items = [relation_item(row["id"], row.get("text") or "",
                               (row["subject_id"], row["object_id"]),
                               list(row.get("passage_ids") or ()), names) for row in found]
        return {"entity": {"id": entity_id, "name": names[entity_id], "degree": total},
                "offset": offset, "limit": limit, "total": total, "relations": items}

    def passage_page(self, offset: int, limit: int) -> tuple[int, list[str]]:
        store = self.store
        total = store.count(store.passage_collection)
        pages = IdPages(store, store.passage_collection, "", self.window)
        return total, pages.page(offset, limit, total)
