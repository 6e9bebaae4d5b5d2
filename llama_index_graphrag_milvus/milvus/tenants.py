"""The layout Milvus recommends for many tenants, for an index created with a ``tenant_key``.

- The passage collection has the tenant field as its *partition key*: a query filtered to a
  tenant reads that tenant's partition only, not every tenant's rows.
- A relation row records the tenants whose passages support it (``tenants``) and the tenant
  of each of its passages (``passage_tenants``, aligned with ``passage_ids``); an entity row
  the tenants whose relations name it (``tenants``). Ingestion, updates and deletions keep
  them exact (:mod:`~llama_index_graphrag_milvus.ingestion.tenants`).
- A query filtered on the tenant key (``tenant_id == "acme"``, or ``in [...]``) searches the
  relations and entities of those tenants only (``array_contains_any(tenants, [...])``): the
  seeds, hubs and hops of a served graph come from the tenant's own rows
  (:func:`pinned_tenants`, :func:`tenants_filter`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.vector_stores import FilterCondition, FilterOperator, MetadataFilters
from pymilvus import DataType

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.milvus.filters import quote
from llama_index_graphrag_milvus.milvus.fulltext import PassageVectorStore
from llama_index_graphrag_milvus.milvus.schema import MANY_TENANTS, TENANT_MAX_BYTES

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}\Z")
TENANT_KEY_PROPERTY = "graphrag.tenant_key"
"""The collection property that records an index's tenant key."""


def check_tenant_key(key: Any) -> str | None:
    """``key`` when it can name a Milvus field (or ``None``: no tenant key).

    >>> check_tenant_key("tenant_id")
    'tenant_id'
    >>> check_tenant_key("tenant-id")
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: tenant_key must be a metadata key that can name a Milvus field (a letter or underscore, then letters, digits or underscores), got 'tenant-id'
    """  # noqa: E501
    if key is None:
        return None
    if not isinstance(key, str) or not _KEY.match(key) or key in ("id", "text", "embedding",
                                                                   "doc_id"):
        raise InvalidInputError(
            f"tenant_key must be a metadata key that can name a Milvus field (a letter or "
            f"underscore, then letters, digits or underscores), got {key!r}")
    return key


def check_tenant(value: Any, key: str, where: str) -> str:
    """A passage's tenant: a string, not blank (whitespace only), of at most
    :data:`TENANT_MAX_BYTES` UTF-8 bytes in ``metadata[key]``.

    >>> check_tenant("acme", "tenant_id", "passage 0")
    'acme'
    >>> check_tenant(None, "tenant_id", "passage 0")
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: passage 0 has no metadata['tenant_id']: the index's tenant_key; every passage of such an index names its tenant, a string, not blank. Nothing has been written.
    """  # noqa: E501
    if value is None:
        raise InvalidInputError(
            f"{where} has no metadata[{key!r}]: the index's tenant_key; every passage of such "
            "an index names its tenant, a string, not blank. Nothing has been written.")
    if not isinstance(value, str) or not value.strip() or value == MANY_TENANTS or len(
            value.encode("utf-8", "surrogatepass")) > TENANT_MAX_BYTES:
        raise InvalidInputError(
            f"{where} has metadata[{key!r}]={value!r:.80}: a tenant is a string, not blank, of "
            f"at most {TENANT_MAX_BYTES} UTF-8 bytes, other than {MANY_TENANTS!r}. Nothing has "
            "been written.")
    return value


PARTITION_KEY_SINCE = (2, 4)
"""The oldest Milvus server whose upserts keep a partition key: 2.3.5 upserts a row into
another partition than its key's, and a query on the key then misses it (seen on the
embedded 2.3.5 server). Milvus Lite keeps it."""


def server_version(text: str) -> tuple[int, ...]:
    """``"v2.3.5-lite"`` as ``(2, 3, 5)`` (``()`` when it cannot be read).

    >>> server_version("v2.3.5-lite"), server_version("2.5.10"), server_version("dev")
    ((2, 3, 5), (2, 5, 10), ())
    """
    found = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(part) for part in found.group(1).split(".")) if found else ()


def partition_key_works(version: str, is_lite: bool) -> bool:
    """Whether the passage collection may have the tenant field as its partition key: on
    Milvus Lite, and on servers from :data:`PARTITION_KEY_SINCE` (an unreadable version is
    taken to be recent).

    >>> partition_key_works("v2.3.5-lite", False), partition_key_works("v2.5.4", False)
    (False, True)
    """
    found = server_version(version)
    return is_lite or not found or found >= PARTITION_KEY_SINCE


def passage_store_class(tenant_key: str, partition_key: bool = True
                        ) -> type[PassageVectorStore]:
    """``MilvusVectorStore`` whose collection, when it creates it, has ``tenant_key`` as a
    VARCHAR field, its partition key unless ``partition_key`` is false (the node's
    ``metadata[tenant_key]`` goes there)."""

    class TenantPassageStore(PassageVectorStore):
        def _add_fields_to_schema(self, schema: Any) -> Any:
            schema = super()._add_fields_to_schema(schema)
            schema.add_field(field_name=tenant_key, datatype=DataType.VARCHAR,
                             max_length=TENANT_MAX_BYTES, is_partition_key=partition_key)
            return schema

    return TenantPassageStore


def pinned_tenants(filters: MetadataFilters | None, tenant_key: str | None
                   ) -> tuple[str, ...] | None:
    """The tenants a filter allows at most: its top-level AND (or a single filter) holds
    ``tenant_key == value`` or ``tenant_key in [...]`` (string values); ``None`` when it does
    not pin them (then every tenant's rows are candidates, and the passages decide).

    >>> from llama_index.core.vector_stores import MetadataFilter
    >>> pinned_tenants(MetadataFilters(filters=[
    ...     MetadataFilter(key="tenant_id", value="acme"),
    ...     MetadataFilter(key="year", value=2020, operator=">")]), "tenant_id")
    ('acme',)
    >>> pinned_tenants(MetadataFilters(filters=[MetadataFilter(key="year", value=2020)]),
    ...                "tenant_id") is None
    True
    >>> pinned_tenants(MetadataFilters(condition="not", filters=[  # every tenant but acme
    ...     MetadataFilter(key="tenant_id", value="acme")]), "tenant_id") is None
    True
    """
    if filters is None or tenant_key is None or filters.condition == FilterCondition.NOT or (
            len(filters.filters) > 1 and filters.condition != FilterCondition.AND):
        return None
    allowed: set[str] | None = None
    for item in filters.filters:
        if isinstance(item, MetadataFilters) or item.key != tenant_key:
            continue
        if item.operator == FilterOperator.EQ and isinstance(item.value, str):
            values = {item.value}
        elif item.operator == FilterOperator.IN and isinstance(item.value, list) and all(
                isinstance(v, str) for v in item.value):
            values = {str(v) for v in item.value}
        else:
            continue
        allowed = values if allowed is None else allowed & values
    return None if allowed is None else tuple(sorted(allowed))


def tenants_filter(tenants: Sequence[str] | None) -> str:
    """The filter on a relation's or entity's ``tenants`` (``""``: none), an entity named by
    too many tenants to list included.

    >>> tenants_filter(["acme"])
    'array_contains_any(tenants, ["acme", "*"])'
    """
    if tenants is None:
        return ""
    values = ", ".join(quote(t) for t in (*tenants, MANY_TENANTS))
    return f"array_contains_any(tenants, [{values}])"
