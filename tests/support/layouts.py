"""Indexes of an earlier version's layout: the entity and relation collections created as an
earlier version created them, before the first write (which creates the passages)."""

from __future__ import annotations

from llama_index_graphrag_milvus.milvus.schema import (
    ENTITY_TENANT_FIELDS,
    RELATION_FIELDS,
    RELATION_TENANT_FIELDS,
    Fields,
    create_collection,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.milvus.tenants import TENANT_KEY_PROPERTY


def create_older_layout(uri: str, entity_fields: Fields, tenant_key: str | None = None,
                        dim: int = 64) -> None:
    """Create the entity collection with ``entity_fields`` (and the tenant fields with a
    ``tenant_key``) and this version's relation collection at ``uri``."""
    store = MilvusGraphStore(uri)
    tenants = tenant_key is not None
    for name, fields, properties in (
            (store.entity_collection,
             (*entity_fields, *(ENTITY_TENANT_FIELDS if tenants else ())), None),
            (store.relation_collection,
             (*RELATION_FIELDS, *(RELATION_TENANT_FIELDS if tenants else ())),
             {TENANT_KEY_PROPERTY: tenant_key} if tenants else None)):
        create_collection(store.client, name, fields, dim, store.index_type,
                          store.consistency_level, properties)
    store.close()
