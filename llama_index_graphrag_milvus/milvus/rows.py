"""The requests a store sends and the parsers of their answers, shared by the sync and async
methods of :class:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore` (only the
client call differs between the two)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from llama_index_graphrag_milvus.milvus.filters import in_list
from llama_index_graphrag_milvus.milvus.schema import METRIC
from llama_index_graphrag_milvus.records import MILVUS_MAX_TOP_K, EntityHit, RelationHit

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
    return {
        **({"filter": id_filter(ids, where)} if ids is not None else {}),
        "collection_name": collection,
        "data": [list(v) for v in vectors],
        "limit": min(limit, MILVUS_MAX_TOP_K),  # more is a ParamError on a server
        "output_fields": output_fields,
        "search_params": {"metric_type": METRIC},
    }


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


def parse_relation_hits(result: Any, threshold: float | None) -> list[RelationHit]:
    """The relation hits of one search, those below ``threshold`` left out."""
    return [
        RelationHit(id=h["id"], text=h["entity"]["text"], score=float(h["distance"]),
                    subject_id=h["entity"].get("subject_id", ""),
                    object_id=h["entity"].get("object_id", ""),
                    subject_kind=h["entity"].get("subject_kind") or "",
                    object_kind=h["entity"].get("object_kind") or "",
                    passage_ids=tuple(h["entity"].get("passage_ids") or ()))
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
