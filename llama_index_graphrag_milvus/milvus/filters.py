"""LlamaIndex ``MetadataFilters`` as Milvus filter expressions over passage metadata.

Values are user input (a tenant id, a document title): every string is quoted and escaped, so
a value holding quotes or Milvus expression syntax is matched literally. Keys must be plain
identifiers.

>>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
>>> print(to_milvus_expression(MetadataFilters(filters=[
...     MetadataFilter(key="tenant_id", value='acme" or "1"=="1')])))
(tenant_id == "acme\\" or \\"1\\"==\\"1")
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.milvus.fulltext import FULL_TEXT_FIELD, LEXICAL_FIELD
from llama_index_graphrag_milvus.milvus.schema import PASSAGE_FIELDS


def quote(value: str) -> str:
    r"""``value`` as a Milvus string literal: backslashes, double quotes and line breaks
    escaped, so that user input in a filter expression is matched literally.

    A raw line break inside a literal is a parse error; Milvus reads ``\n`` and ``\r`` back
    as the line break. Every other character (tabs, control characters, non-ASCII) is matched
    as it is (checked on Milvus Lite 3.2, tests/retrieval/test_filter_parity.py).

    >>> print(quote('say "hi" \ bye'))
    "say \"hi\" \\ bye"
    >>> print(quote("line\nbreak\r"))
    "line\nbreak\r"

    Raises:
        InvalidInputError: ``value`` holds a lone surrogate (such as ``"\ud800"``): it is not
            UTF-8 text, so Milvus can neither store nor match it.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"filter value {value!r} holds characters UTF-8 cannot encode (lone surrogates "
            "such as '\\ud800', often from text decoded with errors='surrogateescape'): "
            "Milvus can neither store nor match it; clean it, for example with "
            "value.encode('utf-8', 'replace').decode('utf-8')."
        ) from exc
    return '"' + (value.replace("\\", "\\\\").replace('"', '\\"')
                  .replace("\n", "\\n").replace("\r", "\\r")) + '"'


def in_list(field: str, values: Sequence[str]) -> str:
    """A filter expression ``field in [...]`` with every value quoted."""
    return f"{field} in [{', '.join(quote(v) for v in values)}]"


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_FIELDS = frozenset({"id", "embedding", *PASSAGE_FIELDS, LEXICAL_FIELD, FULL_TEXT_FIELD})
"""Fields of the passage collection (full-text search's included), not metadata: Milvus would
compare the field itself."""
_INT64 = (-(2**63), 2**63 - 1)
_COMPARISONS = {
    FilterOperator.EQ: "==", FilterOperator.NE: "!=", FilterOperator.GT: ">",
    FilterOperator.GTE: ">=", FilterOperator.LT: "<", FilterOperator.LTE: "<=",
}


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidInputError(
                f"metadata filter value {value} is outside the 64-bit integers Milvus "
                "compares; use a bound within -2**63 .. 2**63 - 1."
            )
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(
                f"metadata filter value {value!r} is not a finite number; Milvus "
                "expressions have no literal for it: use a finite bound."
            )
        return repr(value)
    if isinstance(value, str):
        return quote(value)
    raise InvalidInputError(
        f"metadata filter value {value!r} is a {type(value).__name__}; use a string, a "
        "number or a boolean (a list with the IN and NIN operators)."
    )


def _condition(item: MetadataFilter) -> str:
    if not isinstance(item.key, str) or not _KEY.match(item.key):
        raise InvalidInputError(
            f"metadata filter key {item.key!r} is not a plain identifier (letters, digits, "
            "underscores): rename the metadata key."
        )
    if item.key in _FIELDS:
        raise InvalidInputError(
            f"metadata filter key {item.key!r} names a field of the passage collection "
            f"({', '.join(sorted(_FIELDS))}), not metadata: rename the metadata key."
        )
    if item.operator in _COMPARISONS:
        return f"{item.key} {_COMPARISONS[item.operator]} {_literal(item.value)}"
    if item.operator in (FilterOperator.IN, FilterOperator.NIN):
        values = item.value if isinstance(item.value, list) else [item.value]
        keyword = "in" if item.operator == FilterOperator.IN else "not in"
        return f"{item.key} {keyword} [{', '.join(_literal(v) for v in values)}]"
    raise InvalidInputError(
        f"metadata filter operator {item.operator.value!r} is not supported; use ==, !=, >, "
        ">=, <, <=, in or nin."
    )


def to_milvus_expression(filters: MetadataFilters) -> str:
    """The Milvus expression of ``filters`` (nested filters and AND/OR/NOT included).

    ``NOT`` keeps what matches none of its filters, as core's ``SimpleVectorStore`` does:
    ``not (a or b)``.

    >>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    >>> print(to_milvus_expression(MetadataFilters(condition="not", filters=[
    ...     MetadataFilter(key="tenant_id", value="acme"),
    ...     MetadataFilter(key="year", value=2000, operator=">")])))
    not (tenant_id == "acme" or year > 2000)
    """
    if not isinstance(filters, MetadataFilters):
        hint = (": wrap it, MetadataFilters(filters=[...])"
                if isinstance(filters, MetadataFilter) else "")
        raise InvalidInputError(
            f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}{hint}")
    return _expression(filters, nested=False)


def _expression(filters: MetadataFilters, nested: bool) -> str:
    parts = [_expression(f, nested=True) if isinstance(f, MetadataFilters) else _condition(f)
             for f in filters.filters]
    if not parts:
        if nested:  # Milvus has no literal for an empty group (true in AND, false in OR)
            raise InvalidInputError(
                "a nested MetadataFilters holds no filter; remove it (an empty top-level "
                "MetadataFilters means no filtering).")
        return ""
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:
        return f"not ({' or '.join(parts)})"
    return "(" + f" {condition.value} ".join(parts) + ")"
