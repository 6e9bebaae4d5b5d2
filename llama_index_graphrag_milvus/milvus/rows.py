"""The requests a store sends and the parsers of their answers, shared by the sync and async
methods of :class:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore` (only the
client call differs between the two)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.milvus.filters import in_list
from llama_index_graphrag_milvus.milvus.schema import METRIC
from llama_index_graphrag_milvus.records import UNRECORDED, EntityHit, RelationHit

GET_CHUNK = 4096
"""Ids per read by primary key (a longer ``id in [...]`` expression is one more round trip,
not a failure)."""


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in consecutive slices of at most ``size`` (none for no items)."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def id_filter(ids: Sequence[str], where: str = "") -> str:
    """``id in [...]``, and ``where`` (a filter expression on metadata) when given."""
    return in_list("id", ids) + (f" and {where}" if where else "")


def search_kwargs(collection: str, vectors: Sequence[Sequence[float]], limit: int,
                   output_fields: list[str], ids: Sequence[str] | None = None,
                   where: str = "") -> dict[str, Any]:
    """The arguments of a vector search of ``collection`` (among ``ids`` when given, and
    matching ``where``)."""
    expression = id_filter(ids, where) if ids is not None else where
    return {
        **({"filter": expression} if expression else {}),
        "collection_name": collection,
        "data": [list(v) for v in vectors],
        "limit": min(limit, MILVUS_MAX_TOP_K),  # more is a ParamError on a server
        "output_fields": output_fields,
        "search_params": {"metric_type": METRIC},
    }


TIE_SLACK = 8
"""Rows a search reads past its limit, so that a tie at the cut is seen."""

SearchSteps = Generator[dict[str, Any], Any, list[list[dict[str, Any]]]]
"""A search that settles its ties: yields the arguments of each ``client.search`` call,
receives its result, returns the hits (see :func:`ranked_search`)."""


def similarity(hit: dict[str, Any]) -> float:
    """A search hit's similarity as Milvus reports it (``distance``: larger is closer for
    the package's cosine and inner-product searches)."""
    return float(hit["distance"])


def ranked_search(kwargs: dict[str, Any], limit: int,
                  score: Callable[[dict[str, Any]], float] = similarity) -> SearchSteps:
    """The ``limit`` best hits of each list of a search, highest ``score`` first and ties by
    id, as the in-memory searches rank them: the search reads :data:`TIE_SLACK` rows past
    the limit, and again with twice as many while a list's tie at the cut runs past the rows
    read (Milvus cuts a tie group anywhere).

    >>> steps = ranked_search({"collection_name": "c"}, 2)
    >>> next(steps)["limit"]
    10
    >>> tied = [[{"id": i, "distance": d} for i, d in zip("dcbazyxwvu", [.9] + [.5] * 9)]]
    >>> steps.send(tied)["limit"]  # the tie at the cut runs past the 10 rows read: again
    20
    >>> try:
    ...     steps.send([tied[0][:6]])
    ... except StopIteration as done:
    ...     print([h["id"] for h in done.value[0]])
    ['d', 'a']
    """
    asked = min(limit + TIE_SLACK, MILVUS_MAX_TOP_K)
    while True:
        result = yield {**kwargs, "limit": asked}
        lists = [list(hits) for hits in result]
        if asked >= MILVUS_MAX_TOP_K or not any(
                len(hits) >= asked and limit >= 1
                and score(hits[limit - 1]) == score(hits[-1])
                for hits in lists):
            return [sorted(hits, key=lambda h: (-score(h), str(h["id"])))[:limit]
                    for hits in lists]
        asked = min(2 * asked, MILVUS_MAX_TOP_K)


def advance(steps: SearchSteps, result: Any
            ) -> tuple[dict[str, Any] | None, list[list[dict[str, Any]]]]:
    """Send ``result`` to ``steps``: the next search's arguments, or ``None`` and the hits."""
    try:
        return steps.send(result), []
    except StopIteration as done:
        return None, done.value


def parse_entity_hits(result: Any, searched: Sequence[str],
                       threshold: float | None) -> list[list[EntityHit]]:
    """Entity hits per searched name, those below ``threshold`` left out."""
    return [
        [
            EntityHit(id=h["id"], name=h["entity"]["name"], score=float(h["distance"]),
                      searched=name)
            for h in hits
            if threshold is None or float(h["distance"]) >= threshold
        ]
        for name, hits in zip(searched, result, strict=True)
    ]


RELATION_HIT_FIELDS = ["text", "subject_id", "object_id", "passage_ids"]
"""What a relation hit is read with (and the kinds of its ends, where they are recorded)."""


def spread_of(fields: dict[str, Any], name: str) -> int:
    """A relation row's recorded spread of one end (:data:`~..records.UNRECORDED` when the
    row was read without it).

    >>> spread_of({"subject_passages": 3}, "subject_passages"), spread_of({}, "object_passages")
    (3, -1)
    """
    value = fields.get(name)
    return UNRECORDED if value is None else int(value)


def parse_relation_hits(result: Any, threshold: float | None) -> list[RelationHit]:
    """The relation hits of one search, those below ``threshold`` left out."""
    return [
        RelationHit(id=h["id"], text=h["entity"]["text"], score=float(h["distance"]),
                    subject_id=h["entity"].get("subject_id", ""),
                    object_id=h["entity"].get("object_id", ""),
                    subject_kind=h["entity"].get("subject_kind") or "",
                    object_kind=h["entity"].get("object_kind") or "",
                    passage_ids=tuple(h["entity"].get("passage_ids") or ()),
                    subject_passages=spread_of(h["entity"], "subject_passages"),
                    object_passages=spread_of(h["entity"], "object_passages"))
        for h in result[0]
        if threshold is None or float(h["distance"]) >= threshold
    ]


def rows_to_passages(rows: Sequence[dict[str, Any]], ids: Sequence[str]) -> list[BaseNode]:
    """Passage nodes from query rows, in the order of ``ids`` (missing ids left out)."""
    by_id = {row["id"]: metadata_dict_to_node(row, text=row.get("text")) for row in rows}
    return [by_id[i] for i in ids if i in by_id]


def parse_passage_hits(result: Any) -> list[list[tuple[BaseNode, float]]]:
    """``(node, similarity)`` lists of a batched passage search, one per query vector."""
    return [[(metadata_dict_to_node(h["entity"], text=h["entity"].get("text")),
              float(h["distance"])) for h in hits] for hits in result]
