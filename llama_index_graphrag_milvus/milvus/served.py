"""The graph served by Milvus: the graph queries a retrieval makes when the index does not
hold the graph in the process (``GraphRAGIndex(graph="milvus")``).

Every query reads a bounded number of relation rows, whatever the size of the graph:

- :meth:`ServedGraph.relations_around`: the relations of some entities (``subject_id in
  [...] or object_id in [...]``), the ``limit`` most similar to the query first. A
  ``count(*)`` of the filter says how many there are; when they fit in ``exact_bytes`` of
  vectors, a filtered query reads them with their vectors and they are ranked exactly in the
  process; else (a hub among them) a filtered vector search answers, so that a hub with a
  million relations costs what a small entity costs (``read_first``: no count, the read at
  once, the search when it fills ``exact_bytes``). (A vector index's search with a filter
  that keeps a few rows among millions misses most of them: measured by
  ``benchmarks.graph_options``.) With a FLAT index (Milvus Lite's) the filtered search is
  exact, and it is the one request.
- :meth:`ServedGraph.relations`: relation rows by primary key, scored against the query
  (the own relations of a passage: the ids of its stored triplets).
- :meth:`ServedGraph.entity_passages`: the passages an entity's relations come from, at most
  ``cap`` of them (one filtered query for all the entities; again for those a hub crowded
  out of its answer).
- :meth:`ServedGraph.entity_degrees`: the relation count of some entities (one filtered
  query of their relations' ends).

On a Milvus server the relation collection has scalar indexes on ``subject_id`` and
``object_id`` (created with the collection, or on the first open of an older one), so the
filters are index lookups; Milvus Lite scans every row for a filter, which is slow at scale
(see the deployment docs).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.milvus.filters import in_list
from llama_index_graphrag_milvus.milvus.rows import search_kwargs, spread_of
from llama_index_graphrag_milvus.milvus.schema import milvus_errors
from llama_index_graphrag_milvus.records import CandidateRelation, best_relations

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

AROUND_EXACT_BYTES = 1 << 18
"""The vectors :meth:`ServedGraph.relations_around` reads to rank an entity set's relations
exactly (256 KiB: 1,024 relations of 64 dimensions; at least ``limit + 1`` relations, so an
entity set with at most ``limit`` relations is always read whole)."""
GRAPH_FIELDS = ["text", "subject_id", "object_id", "passage_ids"]
"""What a served relation is read with (and the kinds of its ends, where recorded)."""
ENDPOINT_INDEXES = ("subject_id", "object_id")
"""The relation fields a server indexes for the served graph's filters."""


def around_filter(entity_ids: Sequence[str]) -> str:
    """The relations of ``entity_ids``: either end among them.

    >>> around_filter(["a", "b"])
    'subject_id in ["a", "b"] or object_id in ["a", "b"]'
    """
    return f"{in_list('subject_id', entity_ids)} or {in_list('object_id', entity_ids)}"


def to_relation(fields: dict[str, Any], relation_id: str, score: float) -> CandidateRelation:
    """A served relation row as a candidate relation (hop 0)."""
    return CandidateRelation(
        id=relation_id, score=score, hop=0, text=fields.get("text") or "",
        passage_ids=tuple(fields.get("passage_ids") or ()),
        subject_id=fields.get("subject_id") or "", object_id=fields.get("object_id") or "",
        subject_kind=fields.get("subject_kind") or "", object_kind=fields.get("object_kind") or "",
        subject_passages=spread_of(fields, "subject_passages"),
        object_passages=spread_of(fields, "object_passages"))



def parse_around(result: Any) -> list[CandidateRelation]:
    """The relations of a filtered search, best first."""
    return [to_relation(h["entity"], h["id"], float(h["distance"])) for h in result[0]]


def exact_around(rows: Sequence[dict[str, Any]], cap: int, vector: Sequence[float], limit: int
                 ) -> list[CandidateRelation] | None:
    """The ``limit`` relations most similar to ``vector`` among ``rows``, exactly, best first
    (ties by id); ``None`` when the read stopped at ``cap`` rows (there may be more)."""
    if len(rows) >= cap:
        return None
    return best_relations(scored_rows(rows, vector), limit)


def scored_rows(rows: Sequence[dict[str, Any]], vector: Sequence[float]
                ) -> list[CandidateRelation]:
    """Relation rows read with their vectors, scored by cosine similarity to ``vector``."""
    if not rows:
        return []
    matrix = np.asarray([row["embedding"] for row in rows], np.float32)
    query = np.asarray(vector, np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    scores = matrix @ query / np.where(norms == 0, 1.0, norms)
    return [to_relation(row, row["id"], float(score))
            for row, score in zip(rows, scores.tolist(), strict=True)]


class ServedGraph:
    """The graph queries of one store, blocking and awaitable (each pair builds the same
    request and parses the same answer; only the client call differs)."""

    def __init__(self, store: MilvusGraphStore, exact_bytes: int = AROUND_EXACT_BYTES,
                 where: str = "", on_call: Callable[[], None] | None = None) -> None:
        self.store = store
        self.exact_bytes = exact_bytes
        self.where = where
        """A filter on relation rows every query adds (a scoped query's tenants)."""
        self.on_call = on_call or (lambda: None)
        """Called once per Milvus call (a query's request count)."""

    def _around(self, entity_ids: Sequence[str]) -> str:
        """The relations of ``entity_ids`` (and matching :attr:`where`)."""
        around = around_filter(entity_ids)
        return f"({around}) and {self.where}" if self.where else around

    @property
    def fields(self) -> list[str]:
        return self.store.relation_fields(GRAPH_FIELDS)

    @property
    def _query_first(self) -> bool:
        """Whether to read the relations before searching: not with a FLAT index (Milvus
        Lite's), whose filtered search is exact already (and, on Lite, faster than a query)."""
        return self.store.index_type != "FLAT"

    def _around_cap(self, limit: int) -> int:
        """Rows read to rank exactly: ``exact_bytes`` of vectors, at least ``limit + 1``."""
        per_row = 4 * (self.store.dim or 1)
        return min(MILVUS_MAX_TOP_K, max(limit + 1, self.exact_bytes // per_row))

    def _around_query_kwargs(self, entity_ids: Sequence[str], cap: int) -> dict[str, Any]:
        return {"collection_name": self.store.relation_collection,
                "filter": self._around(entity_ids),
                "output_fields": [*self.fields, "embedding"], "limit": cap,
                **self.store.read_options}

    def _around_kwargs(self, vector: Sequence[float], entity_ids: Sequence[str], limit: int
                       ) -> dict[str, Any]:
        kwargs = search_kwargs(self.store.relation_collection, [vector],
                               min(limit, MILVUS_MAX_TOP_K), self.fields)
        return {**kwargs, "filter": self._around(entity_ids)}

    def relations_around(self, vector: Sequence[float], entity_ids: Sequence[str], limit: int,
                         read_first: bool = False) -> list[CandidateRelation]:
        """The ``limit`` relations of ``entity_ids`` most similar to ``vector``, best first:
        counted first; read and ranked exactly when they fit the exact read, else (a hub
        among the entities) the filtered search's hits. Two Milvus calls (one with a FLAT
        index: the search, exact). ``read_first``: not counted, read at once, and searched
        only when the read fills the exact read's budget (the same answer: one call for a
        small entity set, a read of at most ``exact_bytes`` of vectors, then the search, for
        a hub)."""
        if not entity_ids or limit < 1:
            return []
        if self._query_first:
            cap = self._around_cap(limit)
            if read_first or self._count_around(entity_ids) < cap:
                exact = exact_around(self._query_around(entity_ids, cap), cap, vector, limit)
                if exact is not None:  # else a hub read first, or relations added since
                    return exact
        return parse_around(self._search_around(vector, entity_ids, limit))

    async def arelations_around(self, vector: Sequence[float], entity_ids: Sequence[str],
                                limit: int, read_first: bool = False
                                ) -> list[CandidateRelation]:
        """Async twin of :meth:`relations_around`."""
        if not entity_ids or limit < 1:
            return []
        if self._query_first:
            cap = self._around_cap(limit)
            if read_first or await self._acount_around(entity_ids) < cap:
                exact = exact_around(await self._aquery_around(entity_ids, cap), cap, vector,
                                     limit)
                if exact is not None:
                    return exact
        return parse_around(await self._asearch_around(vector, entity_ids, limit))

    def _count_kwargs(self, entity_ids: Sequence[str]) -> dict[str, Any]:
        return {"collection_name": self.store.relation_collection,
                "filter": self._around(entity_ids), "output_fields": ["count(*)"],
                **self.store.read_options}

    def _count_around(self, entity_ids: Sequence[str]) -> int:
        self.on_call()
        with milvus_errors(f"count {self.store.relation_collection}"):
            return counted(self.store.client.query(**self._count_kwargs(entity_ids)))

    async def _acount_around(self, entity_ids: Sequence[str]) -> int:
        self.on_call()
        with milvus_errors(f"count {self.store.relation_collection}"):
            return counted(await self.store.aclient().query(**self._count_kwargs(entity_ids)))

    def _query_around(self, entity_ids: Sequence[str], cap: int) -> list[dict[str, Any]]:
        self.on_call()
        with milvus_errors(f"read {self.store.relation_collection}"):
            return self.store.client.query(**self._around_query_kwargs(entity_ids, cap))

    async def _aquery_around(self, entity_ids: Sequence[str], cap: int
                             ) -> list[dict[str, Any]]:
        self.on_call()
        with milvus_errors(f"read {self.store.relation_collection}"):
            return await self.store.aclient().query(**self._around_query_kwargs(entity_ids, cap))

    def _search_around(self, vector: Sequence[float], entity_ids: Sequence[str], limit: int
                       ) -> Any:
        self.on_call()
        return self.store.ranked_search(self._around_kwargs(vector, entity_ids, limit), limit)

    async def _asearch_around(self, vector: Sequence[float], entity_ids: Sequence[str],
                              limit: int) -> Any:
        self.on_call()
        return await self.store.aranked_search(self._around_kwargs(vector, entity_ids, limit),
                                               limit)

    def _get_kwargs(self, ids: Sequence[str], ends: bool) -> dict[str, Any]:
        fields = self.fields if ends else ["text"]
        return {"collection_name": self.store.relation_collection, "ids": list(ids),
                "output_fields": [*fields, "embedding"], **self.store.read_options}

    def relations(self, ids: Sequence[str], vector: Sequence[float], ends: bool = True
                  ) -> list[CandidateRelation]:
        """Relation rows by id (unknown ids left out), scored against ``vector``; with
        ``ends=False`` only their texts are read beside the vectors (no ends, kinds or
        passages in the records)."""
        if not ids:
            return []
        self.on_call()
        with milvus_errors(f"read {self.store.relation_collection}"):
            rows = self.store.client.get(**self._get_kwargs(ids, ends))
        return scored_rows(rows, vector)

    async def arelations(self, ids: Sequence[str], vector: Sequence[float], ends: bool = True
                         ) -> list[CandidateRelation]:
        """Async twin of :meth:`relations`."""
        if not ids:
            return []
        self.on_call()
        with milvus_errors(f"read {self.store.relation_collection}"):
            rows = await self.store.aclient().get(**self._get_kwargs(ids, ends))
        return scored_rows(rows, vector)

    def _passages_kwargs(self, entity_ids: Sequence[str], limit: int) -> dict[str, Any]:
        return {"collection_name": self.store.relation_collection,
                "filter": self._around(entity_ids),
                "output_fields": ["subject_id", "object_id", "passage_ids"], "limit": limit,
                **self.store.read_options}

    def _listed_kwargs(self, entity_ids: Sequence[str]) -> dict[str, Any]:
        return {"collection_name": self.store.entity_collection, "ids": list(entity_ids),
                "output_fields": ["passage_ids"], **self.store.read_options}

    def entity_passages(self, entity_ids: Sequence[str], cap: int) -> dict[str, list[str]]:
        """For each entity, the distinct passages its relations come from, at most ``cap``:
        the first ``cap`` its row lists, one read by id for all the entities (see
        :data:`~.schema.ENTITY_PASSAGE_FIELDS`). In a collection written before entities
        recorded them: those of at most ``cap`` of its relations, one query for all the
        entities (:func:`entity_passages_steps`; again for those a hub crowded out)."""
        if self.store.records_entity_passages:
            if not entity_ids:
                return {}
            self.on_call()
            with milvus_errors(f"read {self.store.entity_collection}"):
                rows = self.store.client.get(**self._listed_kwargs(entity_ids))
            return listed_passages(rows, entity_ids, cap)
        steps = entity_passages_steps(entity_ids, cap)
        request, found = advance_rows(steps, None)
        while request is not None:
            self.on_call()
            with milvus_errors(f"read {self.store.relation_collection}"):
                rows = self.store.client.query(**self._passages_kwargs(*request))
            request, found = advance_rows(steps, rows)
        return found

    async def aentity_passages(self, entity_ids: Sequence[str], cap: int
                               ) -> dict[str, list[str]]:
        """Async twin of :meth:`entity_passages`."""
        if self.store.records_entity_passages:
            if not entity_ids:
                return {}
            self.on_call()
            with milvus_errors(f"read {self.store.entity_collection}"):
                rows = await self.store.aclient().get(**self._listed_kwargs(entity_ids))
            return listed_passages(rows, entity_ids, cap)
        steps = entity_passages_steps(entity_ids, cap)
        request, found = advance_rows(steps, None)
        while request is not None:
            self.on_call()
            with milvus_errors(f"read {self.store.relation_collection}"):
                rows = await self.store.aclient().query(**self._passages_kwargs(*request))
            request, found = advance_rows(steps, rows)
        return found

    def _degrees_kwargs(self, entity_ids: Sequence[str]) -> dict[str, Any]:
        return {"collection_name": self.store.relation_collection,
                "filter": self._around(entity_ids), "output_fields": list(ENDPOINT_INDEXES),
                "limit": MILVUS_MAX_TOP_K, **self.store.read_options}

    def entity_degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """The number of relations of each entity, from one filtered query of their ends
        (at most ``MILVUS_MAX_TOP_K`` rows in all: beyond, a hub's count is a lower
        bound)."""
        if not entity_ids:
            return {}
        self.on_call()
        with milvus_errors(f"read {self.store.relation_collection}"):
            rows = self.store.client.query(**self._degrees_kwargs(entity_ids))
        return count_ends(rows, entity_ids)

    async def aentity_degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """Async twin of :meth:`entity_degrees`."""
        if not entity_ids:
            return {}
        self.on_call()
        with milvus_errors(f"read {self.store.relation_collection}"):
            rows = await self.store.aclient().query(**self._degrees_kwargs(entity_ids))
        return count_ends(rows, entity_ids)


def counted(rows: Sequence[dict[str, Any]]) -> int:
    """The answer of a ``count(*)`` query.

    >>> counted([{"count(*)": 3}])
    3
    """
    return int(rows[0]["count(*)"]) if rows else 0


def count_ends(rows: Sequence[dict[str, Any]], entity_ids: Sequence[str]) -> dict[str, int]:
    """How many of ``rows`` have each entity as an end.

    >>> count_ends([{"subject_id": "a", "object_id": "b"}, {"subject_id": "b",
    ...             "object_id": "b"}], ["a", "b", "c"])
    {'a': 1, 'b': 2, 'c': 0}
    """
    counts = dict.fromkeys(entity_ids, 0)
    for row in rows:
        for entity in {row.get("subject_id"), row.get("object_id")}:
            if entity in counts:
                counts[entity] += 1
    return counts


PassageSteps = Generator[tuple[list[str], int], list[dict[str, Any]], dict[str, list[str]]]
"""The reads of :func:`entity_passages_steps`: yields ``(entity ids, limit)`` of each query
of their relations, receives its rows, returns the passages per entity."""


def listed_passages(rows: Sequence[dict[str, Any]], entity_ids: Sequence[str], cap: int
                    ) -> dict[str, list[str]]:
    """Each of ``entity_ids`` and the first ``cap`` passages its entity row lists (none for
    an entity not stored).

    >>> listed_passages([{"id": "a", "passage_ids": ["p1", "p2"]}], ["a", "b"], 1)
    {'a': ['p1'], 'b': []}
    """
    listed = {row["id"]: list(row.get("passage_ids") or ())[:max(1, cap)] for row in rows}
    return {entity: listed.get(entity, []) for entity in dict.fromkeys(entity_ids)}


def entity_passages_steps(entity_ids: Sequence[str], cap: int) -> PassageSteps:
    """Each entity's distinct passages, those of at most ``cap`` of its relations (at most
    ``cap`` passages), read by queries of several entities' relations at once.

    A query of ``n`` entities reads at most ``cap * n`` relations (``n`` is at most
    ``MILVUS_MAX_TOP_K // cap``). An entity is done when the query returned ``cap`` of its
    relations, or when it returned fewer rows than it could (every relation of every entity
    asked was read); the others are asked again. A full answer always has an entity with
    ``cap`` rows (``cap * n`` rows, each of one of ``n`` entities at least), so each query
    finishes one entity at least: a hub among small entities costs a second query, not one
    query per entity.

    >>> steps = entity_passages_steps(["hub", "a", "b"], 2)
    >>> next(steps)
    (['hub', 'a', 'b'], 6)
    >>> rows = [{"subject_id": "hub", "object_id": "x", "passage_ids": [f"p{i}"]}
    ...         for i in range(5)] + [{"subject_id": "a", "object_id": "hub",
    ...                                 "passage_ids": ["q"]}]
    >>> steps.send(rows)   # full: the hub is done, "a" and "b" are asked again
    (['a', 'b'], 4)
    >>> try:
    ...     steps.send([{"subject_id": "a", "object_id": "hub", "passage_ids": ["q"]}])
    ... except StopIteration as done:
    ...     print(done.value)
    {'hub': ['p0', 'p1'], 'a': ['q'], 'b': []}
    """
    wanted = list(dict.fromkeys(entity_ids))
    found: dict[str, list[str]] = {}
    cap = max(1, cap)
    chunk = max(1, MILVUS_MAX_TOP_K // cap)
    remaining = list(wanted)
    while remaining:
        asked = remaining[:chunk]
        limit = min(MILVUS_MAX_TOP_K, cap * len(asked))
        rows = yield asked, limit
        relations: dict[str, list[list[str]]] = {e: [] for e in asked}
        for row in rows:
            for end in {row.get("subject_id"), row.get("object_id")}:
                if end in relations:
                    relations[end].append(list(row.get("passage_ids") or ()))
        complete = len(rows) < limit
        for entity, lists in relations.items():
            if complete or len(lists) >= cap:
                found[entity] = list(dict.fromkeys(p for ps in lists[:cap] for p in ps))[:cap]
        remaining = [e for e in remaining if e not in found]
    return {e: found[e] for e in wanted}


def advance_rows(steps: PassageSteps, rows: list[dict[str, Any]] | None
                 ) -> tuple[tuple[list[str], int] | None, dict[str, list[str]]]:
    """Send ``rows`` to ``steps`` (``None`` to start): the next query's entities and limit,
    or ``None`` and the answer."""
    try:
        return (next(steps) if rows is None else steps.send(rows)), {}
    except StopIteration as done:
        return None, done.value

