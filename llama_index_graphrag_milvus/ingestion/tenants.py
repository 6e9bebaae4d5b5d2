"""The tenant fields of relation and entity rows, kept exact by every write of an index with
a ``tenant_key`` (see :mod:`~llama_index_graphrag_milvus.milvus.tenants`).

- A relation's ``passage_tenants`` is the tenant of each of its ``passage_ids`` (in their
  order), its ``tenants`` those tenants once each: written with the relation, narrowed with
  its passages when passages go.
- An entity's ``tenants`` is the union of the tenants of its relations (:data:`~llama_index_
  graphrag_milvus.milvus.schema.MANY_TENANTS` alone when more than an ARRAY holds): grown when
  an ingestion links it to a new tenant (:func:`.entity_rows.grown_entities`), recomputed
  from its remaining relations when relations lose passages or go.

All pure: the writes (:mod:`.write`, :mod:`.deletion`) read and upsert the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.milvus.schema import MANY_TENANTS, MAX_PASSAGES_PER_RELATION
from llama_index_graphrag_milvus.milvus.tenants import check_tenant


def passage_tenants(passages: Sequence[BaseNode], tenant_key: str) -> dict[str, str]:
    """Each passage's tenant (``metadata[tenant_key]``), checked before anything is written.

    Raises:
        InvalidInputError: a passage names no tenant, or a tenant that is not a non-empty
            string of at most 256 bytes.
    """
    return {p.node_id: check_tenant(p.metadata.get(tenant_key), tenant_key,
                                    f"passage {p.node_id} ({p.get_content()[:40]!r})")
            for p in passages}


def relation_tenants(passage_ids: Sequence[str], tenant_of: Mapping[str, str],
                     stored: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """The tenant fields of a relation linked to ``passage_ids``: the tenants of the
    passages written now (``tenant_of``), else as ``stored`` records them.

    >>> relation_tenants(["p1", "p2"], {"p2": "globex"},
    ...                  {"passage_ids": ["p1"], "passage_tenants": ["acme"]})
    {'passage_tenants': ['acme', 'globex'], 'tenants': ['acme', 'globex']}
    """
    known = dict(zip((stored or {}).get("passage_ids") or (),
                     (stored or {}).get("passage_tenants") or (), strict=False))
    aligned = [tenant_of.get(p) or known.get(p) or MANY_TENANTS for p in passage_ids]
    return {"passage_tenants": aligned, "tenants": list(dict.fromkeys(aligned))}


def entity_tenants(tenants: Iterable[str]) -> list[str]:
    """An entity's ``tenants`` field: each once, sorted; :data:`MANY_TENANTS` alone when
    there are more than an ARRAY holds (or one of them is already that).

    >>> entity_tenants(["globex", "acme", "acme"]), entity_tenants(["acme", "*"])
    (['acme', 'globex'], ['*'])
    """
    distinct = sorted(set(tenants))
    if MANY_TENANTS in distinct or len(distinct) > MAX_PASSAGES_PER_RELATION:
        return [MANY_TENANTS]
    return distinct


def narrowed_tenants(row: Mapping[str, Any], kept: Sequence[str]) -> dict[str, list[str]]:
    """A stored relation row's tenant fields once only its passages ``kept`` remain (none
    when the row has no tenant fields).

    >>> narrowed_tenants({"passage_ids": ["p1", "p2"], "passage_tenants": ["acme", "globex"]},
    ...                  ["p2"])
    {'passage_tenants': ['globex'], 'tenants': ['globex']}
    """
    if "passage_tenants" not in row:
        return {}
    return relation_tenants(kept, {}, row)

