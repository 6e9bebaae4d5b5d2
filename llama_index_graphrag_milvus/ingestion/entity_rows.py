"""The entity rows a write changes: an entity's ``passage_ids`` (the distinct passages its
relations come from, see :data:`~llama_index_graphrag_milvus.milvus.schema.
ENTITY_PASSAGE_FIELDS`) and, with a ``tenant_key``, its ``tenants`` (see :mod:`.tenants`).

- An ingestion adds the passages of the relations it writes to their ends' lists (the
  relations' merged passages, so a list an interrupted run left short is mended too).
- Removing a link from a relation to a passage takes the passage off the list of each of
  the relation's ends, unless another relation of that entity still links to it.

Both are set operations, so running an interrupted write again leaves the same rows. A list
holds :data:`~llama_index_graphrag_milvus.milvus.schema.MAX_PASSAGES_PER_RELATION` passages
(a Milvus ARRAY's capacity): a hub's list keeps its first ones; what reads it only needs to
know that the entity leads to many passages.

All pure: the writes (:mod:`.write`, :mod:`.deletion`) read and upsert the rows. An upsert
replaces a whole row, so a changed row is the stored row (read with
:attr:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore.entity_row_fields`) with
its changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from llama_index_graphrag_milvus.ingestion.tenants import entity_tenants
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION

Unlink = Callable[[str, str], bool]
"""Whether the link from a relation (first argument) to a passage (second) goes."""

ENDS = ("subject_id", "object_id")


def entity_passages(passages: Iterable[str]) -> list[str]:
    """An entity's ``passage_ids`` field: each passage once, in order, at most an ARRAY's
    capacity.

    >>> entity_passages(["p2", "p1", "p2"])
    ['p2', 'p1']
    """
    return list(dict.fromkeys(passages))[:MAX_PASSAGES_PER_RELATION]


def of_ends(relations: Iterable[Mapping[str, Any]], field: str) -> dict[str, list[str]]:
    """Each end of ``relations`` (rows with ``subject_id`` and ``object_id``) and the values
    of their array ``field`` (``passage_ids``, ``tenants``) over those that name it, each
    once, in order.

    >>> of_ends([{"subject_id": "a", "object_id": "b", "tenants": ["acme"]},
    ...          {"subject_id": "b", "object_id": "c", "tenants": ["globex", "acme"]}],
    ...         "tenants")
    {'a': ['acme'], 'b': ['acme', 'globex'], 'c': ['globex', 'acme']}
    """
    found: dict[str, dict[str, None]] = {}
    for row in relations:
        for end in dict.fromkeys(row[e] for e in ENDS):
            found.setdefault(end, {}).update(dict.fromkeys(row.get(field) or ()))
    return {entity: list(values) for entity, values in found.items()}


def passages_of_ends(relations: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each end of ``relations`` (rows with ``subject_id``, ``object_id`` and
    ``passage_ids``) and its ``passage_ids`` field: the passages of those of them that name
    it (:func:`of_ends`, at most an ARRAY's capacity).

    >>> passages_of_ends([{"subject_id": "a", "object_id": "b", "passage_ids": ["p1"]},
    ...                   {"subject_id": "b", "object_id": "c", "passage_ids": ["p2"]}])
    {'a': ['p1'], 'b': ['p1', 'p2'], 'c': ['p2']}
    """
    return {entity: entity_passages(passages)
            for entity, passages in of_ends(relations, "passage_ids").items()}


def rewritten(row: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A stored entity row with ``changes``, as a row to upsert (its vector as floats)."""
    return {**row, "embedding": [float(x) for x in row["embedding"]], **changes}


def grown_entities(stored: Mapping[str, Mapping[str, Any]],
                   tenants: Mapping[str, Iterable[str]] | None,
                   passages: Mapping[str, Sequence[str]] | None) -> list[dict[str, Any]]:
    """The stored entity rows (id to row, see the module docstring) that an ingestion
    changes, as rows to upsert: their ``tenants`` grown by the ``tenants`` linked to them
    now (``None``: the index has no tenant key), their ``passage_ids`` by the ``passages``
    (``None``: the collection does not record them).

    >>> row = {"id": "a", "name": "a", "embedding": [1], "passage_ids": ["p1"]}
    >>> [r["passage_ids"] for r in grown_entities({"a": row}, None, {"a": ["p1", "p2"]})]
    [['p1', 'p2']]
    >>> grown_entities({"a": row}, None, {"a": ["p1"]})
    []
    """
    rows = []
    for entity, row in stored.items():
        changes: dict[str, list[str]] = {}
        if tenants is not None:
            before = list(row.get("tenants") or ())
            after = entity_tenants([*before, *tenants.get(entity, ())])
            if after != sorted(set(before)):
                changes["tenants"] = after
        if passages is not None:
            listed = list(row.get("passage_ids") or ())
            grown = entity_passages([*listed, *passages.get(entity, ())])
            if grown != listed:
                changes["passage_ids"] = grown
        if changes:
            rows.append(rewritten(row, **changes))
    return rows


def lost_passages(linking: Mapping[str, Mapping[str, Any]], unlink: Unlink
                  ) -> dict[str, set[str]]:
    """Each entity and the passages it no longer leads to once ``unlink``'s links go:
    ``linking`` holds every relation that links to the passages concerned (id to a row with
    its ends and ``passage_ids``); a passage stays with an entity while one of its
    relations keeps its link.

    >>> linking = {"r1": {"subject_id": "a", "object_id": "b", "passage_ids": ["p1"]},
    ...            "r2": {"subject_id": "a", "object_id": "c", "passage_ids": ["p1", "p2"]}}
    >>> lost_passages(linking, lambda relation, passage: relation == "r1")
    {'b': {'p1'}}
    """
    lost: dict[str, set[str]] = {}
    kept: set[tuple[str, str]] = set()
    for relation_id, row in linking.items():
        for passage in row["passage_ids"]:
            for end in (row[e] for e in ENDS):
                if unlink(relation_id, passage):
                    lost.setdefault(end, set()).add(passage)
                else:
                    kept.add((end, passage))
    found = {entity: {p for p in passages if (entity, p) not in kept}
             for entity, passages in lost.items()}
    return {entity: passages for entity, passages in found.items() if passages}


def shrunk_passages(rows: Mapping[str, Mapping[str, Any]], lost: Mapping[str, set[str]]
                    ) -> dict[str, dict[str, Any]]:
    """Those of the entity ``rows`` (id to row) whose ``passage_ids`` lose passages of
    ``lost``, with the list they keep.

    >>> row = {"id": "b", "name": "b", "embedding": [1], "passage_ids": ["p1", "p2"]}
    >>> shrunk_passages({"b": row}, {"b": {"p1"}})["b"]["passage_ids"]
    ['p2']
    """
    changed = {}
    for entity, row in rows.items():
        listed = list(row.get("passage_ids") or ())
        kept = [p for p in listed if p not in lost.get(entity, ())]
        if kept != listed:
            changed[entity] = rewritten(row, passage_ids=kept)
    return changed
