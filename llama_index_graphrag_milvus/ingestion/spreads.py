"""Where each relation's ends lead, recorded on the relation rows
(:data:`~llama_index_graphrag_milvus.milvus.schema.SPREAD_FIELDS`): how many distinct
passages each end's entity row lists, at most
:data:`~llama_index_graphrag_milvus.milvus.schema.SPREAD_CAP`, so that the relation search of
a served graph brings where the bridges of its hits lead (no read of the entity rows).

- A write sets them on the relation rows it writes (:func:`with_spreads`, from the passage
  lists its entity rows will hold), then rewrites the other relations of its entities whose
  recorded spread disagrees (:func:`refresh_spreads`), before it writes the entity rows: a
  run killed in between reads the same entity rows again and does the same.
- A delete refreshes the entities that lost passages, after its writes (its passages, which
  say what to undo, go last).

Bounded: only the entities whose count was (before a write) or is (after a delete) under the
cap are refreshed, and only the rows that disagree are read and written; a hub's relations,
recorded at the cap, never are. A row a write could not tell holds
:data:`~llama_index_graphrag_milvus.milvus.schema.UNKNOWN_SPREAD` (the served graph then reads
the entity row), until the next refresh of that entity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index_graphrag_milvus.milvus.filters import in_list
from llama_index_graphrag_milvus.milvus.rows import chunks
from llama_index_graphrag_milvus.milvus.schema import (
    SPREAD_CAP,
    SPREAD_FIELDS,
    UNKNOWN_SPREAD,
    milvus_errors,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

ENTITIES_PER_REFRESH = 512
"""Entities one refresh query checks."""
ROWS_PER_REFRESH = 4096
"""Relation rows one refresh step reads and rewrites."""
RELATION_ROW_FIELDS = ["text", "subject_id", "object_id", "passage_ids", "embedding"]
"""What a relation row is read with to be written again (and its kinds, spreads and tenant
fields, where recorded)."""


def spread(passages: Sequence[str]) -> int:
    """The recorded spread of an entity that lists ``passages``.

    >>> spread(["p1", "p2"]), spread([f"p{i}" for i in range(100)])
    (2, 65)
    """
    return min(len(passages), SPREAD_CAP)


def with_spreads(rows: Iterable[Mapping[str, Any]], counts: Mapping[str, int]
                 ) -> list[dict[str, Any]]:
    """Relation rows with the spreads of their ends from ``counts`` (entity id to its
    :func:`spread`), those not in ``counts`` as the rows hold them (else unknown).

    >>> with_spreads([{"subject_id": "a", "object_id": "b"}], {"a": 2})
    [{'subject_id': 'a', 'object_id': 'b', 'subject_passages': 2, 'object_passages': -1}]
    """
    result = []
    for row in rows:
        changed = dict(row)
        for end, field in zip(("subject_id", "object_id"), SPREAD_FIELDS, strict=True):
            count = counts.get(row[end])
            changed[field] = count if count is not None else row.get(field, UNKNOWN_SPREAD)
        result.append(changed)
    return result


def stale_filter(counts: Mapping[str, int]) -> str:
    """The relation rows of the entities of ``counts`` that record another spread for them.

    >>> stale_filter({"a": 1, "b": 1})
    '(subject_id in ["a", "b"] and subject_passages != 1) or (object_id in ["a", "b"] and object_passages != 1)'
    """  # noqa: E501
    by_count: dict[int, list[str]] = {}
    for entity, count in sorted(counts.items()):
        by_count.setdefault(count, []).append(entity)
    parts = [f"({in_list(end, entities)} and {field} != {count})"
             for count, entities in sorted(by_count.items())
             for end, field in zip(("subject_id", "object_id"), SPREAD_FIELDS, strict=True)]
    return " or ".join(parts)


def refresh_spreads(store: MilvusGraphStore, counts: Mapping[str, int],
                    known: Mapping[str, int] | None = None) -> int:
    """Rewrite the relation rows of the entities of ``counts`` (entity id to its
    :func:`spread`) that record another spread for them; the other end of a rewritten row
    gets its own from ``known`` (the spreads a write is about to record), else from its
    entity row. Returns how many rows were rewritten (none on a
    collection that does not record spreads)."""
    if not store.records_spreads or not counts:
        return 0
    rewritten = 0
    for part in chunks(sorted(counts), ENTITIES_PER_REFRESH):
        asked = {entity: counts[entity] for entity in part}
        done: set[str] = set()
        while True:
            with milvus_errors(f"read {store.relation_collection}"):
                stale = [row["id"] for row in store.client.query(
                    collection_name=store.relation_collection, **store.write_options,
                    filter=stale_filter(asked), output_fields=["id"],
                    limit=ROWS_PER_REFRESH)]
            if not stale or done.issuperset(stale):  # (a row written meanwhile: its writer's)
                break
            rows = store.get_rows(store.relation_collection, stale,
                                  store.relation_fields(RELATION_ROW_FIELDS), for_write=True)
            given = {**(known or {}), **asked}
            others = sorted({row[end] for row in rows.values()
                             for end in ("subject_id", "object_id")} - set(given))
            listed = store.get_rows(store.entity_collection, others, ["passage_ids"],
                                    for_write=True)
            known = {**{entity: spread(row.get("passage_ids") or ())
                        for entity, row in listed.items()}, **given}
            store.upsert_rows(store.relation_collection, with_spreads(
                ({**row, "embedding": [float(x) for x in row["embedding"]]}
                 for row in rows.values()), known))
            rewritten += len(rows)
            done.update(stale)
            if len(stale) < ROWS_PER_REFRESH:
                break
    return rewritten


def listed_counts(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """The spreads of entity rows (id to a row with its ``passage_ids``)."""
    return {entity: spread(row.get("passage_ids") or ()) for entity, row in rows.items()}
