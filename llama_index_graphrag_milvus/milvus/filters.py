"""LlamaIndex ``MetadataFilters`` as Milvus filter expressions over passage metadata.

Values are user input (a tenant id, a document title): every string is quoted and escaped, so
a value holding quotes or Milvus expression syntax is matched literally. Keys must be plain
identifiers.

Every operator of core's ``FilterOperator`` but ``text_match_insensitive`` (Milvus has no
case-insensitive match), with core's semantics (``build_metadata_filter_fn``):

- ``contains``: a list holding the value, or (a string value) a string holding it;
- ``any`` / ``all``: a list holding any / all of the values, or a string holding them;
- ``text_match``: a string holding the value, a substring (not a pattern);
- ``is_empty``: no value, ``None``, ``""`` or ``[]``.

A key a passage does not have matches as in core: ``!=`` and ``nin`` keep the passage, every
other operator drops it, and ``NOT`` turns that around (Milvus compares a missing key as
unknown, which ``NOT`` leaves unknown: hence the ``exists`` tests).

A substring match is Milvus ``LIKE "%...%"``, in which a ``%``, ``_`` or backslash of the
value matches any one character: Milvus Lite's ``LIKE`` over metadata has no escape, so they
cannot be taken literally (``"50%"`` also matches ``"50x"``). Servers before 2.4 have no
substring ``LIKE``, nor the list test of ``is_empty``: :func:`check_server_can` refuses those
filters there with a clear error.

>>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
>>> print(to_milvus_expression(MetadataFilters(filters=[
...     MetadataFilter(key="tenant_id", value='acme" or "1"=="1')])))
(((exists tenant_id) and tenant_id == "acme\\" or \\"1\\"==\\"1"))
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from typing import Any

from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.limits import INT64_MAX, INT64_MIN
from llama_index_graphrag_milvus.milvus.fulltext import FULL_TEXT_FIELD, LEXICAL_FIELD
from llama_index_graphrag_milvus.milvus.schema import PASSAGE_FIELDS, VECTOR_STORE_KEYS


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
_COMPARISONS = {
    FilterOperator.EQ: "==", FilterOperator.NE: "!=", FilterOperator.GT: ">",
    FilterOperator.GTE: ">=", FilterOperator.LT: "<", FilterOperator.LTE: "<=",
}


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
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


def _condition(item: MetadataFilter, fields: Collection[str]) -> str:
    """``item`` as an expression; a metadata key a passage may lack is tested for first
    (see the module docstring), a key of ``fields`` (a field of the collection) is not."""
    field = item.key in fields
    found = _test(item, field)
    if field or item.operator == FilterOperator.IS_EMPTY:
        return found
    if item.operator in (FilterOperator.NE, FilterOperator.NIN):
        return f"(not (exists {item.key}) or {found})"
    return f"((exists {item.key}) and {found})"


def _test(item: MetadataFilter, field: bool) -> str:
    """``item``'s test (``field``: its key is a string field of the collection)."""
    if not isinstance(item.key, str) or not _KEY.match(item.key):
        raise InvalidInputError(
            f"metadata filter key {item.key!r} is not a plain identifier (letters, digits, "
            "underscores): rename the metadata key."
        )
    if item.key.lower() in _KEYWORDS:
        raise InvalidInputError(
            f"metadata filter key {item.key!r} is a word of Milvus's filter expressions, "
            "which cannot name a metadata key: rename the metadata key.")
    if item.key in _FIELDS:
        raise InvalidInputError(
            f"metadata filter key {item.key!r} names a field of the passage collection "
            f"({', '.join(sorted(_FIELDS))}), not metadata: rename the metadata key."
        )
    if item.key in _STORE_KEYS:
        raise InvalidInputError(
            f"metadata filter key {item.key!r} is a key MilvusVectorStore writes on every "
            "passage row over any metadata of that name: filter on doc_id for the source "
            "document, or rename the metadata key.")
    if field:
        _check_strings(item)
    if item.operator in _COMPARISONS:
        return f"{item.key} {_COMPARISONS[item.operator]} {_literal(item.value)}"
    if item.operator in (FilterOperator.IN, FilterOperator.NIN):
        return _in_values(item, field)
    if item.operator in _HOLDS:
        return _in_string(item) if field else _holds(item)
    if item.operator == FilterOperator.IS_EMPTY:
        return f'{item.key} == ""' if field else _is_empty(item.key)
    raise InvalidInputError(
        f"metadata filter operator {item.operator.value!r} is not supported (Milvus has no "
        "case-insensitive match): use text_match with the case as stored, or store a "
        "lowercased copy of the field and match that."
    )


def _in_values(item: MetadataFilter, field: bool) -> str:
    """``in`` / ``nin``: a field's value among the values by Milvus's ``in``; a metadata
    key's as equalities (Milvus Lite's ``in`` fails with "unhashable type" on a row whose
    value is a list, where ``==`` is false, as core's ``in`` is)."""
    values = item.value if isinstance(item.value, list) else [item.value]
    literals = [_literal(v) for v in values]
    if field:
        keyword = "in" if item.operator == FilterOperator.IN else "not in"
        return f"{item.key} {keyword} [{', '.join(literals)}]"
    if not literals:  # core: nothing is in [], everything is not
        return (_never(item.key) if item.operator == FilterOperator.IN
                else f"(exists {item.key})")
    among = "(" + " or ".join(f"{item.key} == {literal}" for literal in literals) + ")"
    return among if item.operator == FilterOperator.IN else f"not {among}"




def _check_strings(item: MetadataFilter) -> None:
    """A string field (the tenant key, ``doc_id``) is compared with strings only: Milvus
    fails the search otherwise (a parse error at query time). ``contains``, ``any`` and
    ``all`` take numbers, never in a string (as in core)."""
    values = item.value if isinstance(item.value, list) else [item.value]
    if item.operator not in (*_HOLDS, FilterOperator.IS_EMPTY) and not all(
            isinstance(v, str) for v in values):
        raise InvalidInputError(
            f"metadata filter {item.key!r} {item.operator.value} {item.value!r}: "
            f"{item.key!r} holds strings, so it is compared with strings only: write the "
            "value(s) as text, for example str(value).")


_KEYWORDS = frozenset({
    "and", "or", "not", "in", "like", "exists", "true", "false", "null", "is",
    "json_contains", "json_contains_all", "json_contains_any", "array_contains",
    "array_contains_all", "array_contains_any", "array_length", "text_match",
    "phrase_match", "random_sample"})
"""Words of Milvus's filter expressions (in any case): not keys."""
_HOLDS = frozenset({FilterOperator.CONTAINS, FilterOperator.ANY, FilterOperator.ALL,
                    FilterOperator.TEXT_MATCH})
"""The operators that ask whether a metadata value (a list or a string) holds values."""


_UNESCAPED = re.compile(r"[%_\\]")
"""What a ``LIKE`` pattern cannot hold literally on Milvus Lite (see the module docstring)."""


def like_literal(value: str) -> str:
    """``value`` for a ``LIKE`` pattern: its ``%``, ``_`` and backslashes as ``_`` (any one
    character; see the module docstring), so that the pattern matches ``value`` at least.

    >>> like_literal("50%_a")
    '50__a'
    """
    return _UNESCAPED.sub("_", value)


def _substring(key: str, value: str) -> str:
    """``key`` is a string holding ``value`` (``%``, ``_``, ``\\`` as any one character)."""
    return f"{key} like {quote('%' + like_literal(value) + '%')}"


def _values(item: MetadataFilter) -> list[Any]:
    """The values an operator of :data:`_HOLDS` looks for (checked)."""
    many = item.operator in (FilterOperator.ANY, FilterOperator.ALL)
    if many != isinstance(item.value, list):
        shape = "a list of values" if many else "one value (a list takes any or all)"
        raise InvalidInputError(
            f"metadata filter {item.key!r} {item.operator.value} takes {shape}, got "
            f"{item.value!r}.")
    values: list[Any] = list(item.value) if isinstance(item.value, list) else [item.value]
    if item.operator == FilterOperator.TEXT_MATCH and not isinstance(item.value, str):
        raise InvalidInputError(
            f"metadata filter {item.key!r} text_match takes a string, got {item.value!r}: "
            "use contains for a value in a list.")
    for value in values:
        _literal(value)  # checked: strings, finite numbers, booleans
    return values


def _never(key: str) -> str:
    """An expression false for every row (Milvus has no ``false`` literal in every version)."""
    return f'({key} == "" and {key} != "")'


def _in_string(item: MetadataFilter) -> str:
    """:func:`_holds` for a string field (the tenant key, ``doc_id``): never a list."""
    values = _values(item)
    strings = [v for v in values if isinstance(v, str)]
    if item.operator == FilterOperator.ALL and not values:
        return f'({item.key} != "" or {item.key} == "")'
    if not strings or (item.operator == FilterOperator.ALL and len(strings) < len(values)):
        return _never(item.key)  # core: a number is never in a string
    return _in_strings(item, strings)


def _in_strings(item: MetadataFilter, strings: Sequence[str]) -> str:
    """A string holding any of ``strings`` (all of them for ``all``)."""
    joiner = " and " if item.operator == FilterOperator.ALL else " or "
    return "(" + joiner.join(_substring(item.key, v) for v in strings) + ")"


def _holds(item: MetadataFilter) -> str:
    """Whether a list holds the value(s), or a string the string value(s), as core does."""
    values = _values(item)
    strings = [v for v in values if isinstance(v, str)]
    if item.operator == FilterOperator.TEXT_MATCH:
        return _substring(item.key, strings[0])
    if not values:  # core: any([]) is false, all([]) true for every value
        return (f"((exists {item.key}) and not (exists {item.key}))"
                if item.operator == FilterOperator.ANY else f"(exists {item.key})")
    listed = ", ".join(_literal(v) for v in values)
    # contains: json_contains_any of its one value (json_contains(key, -1) does not parse)
    function = "all" if item.operator == FilterOperator.ALL else "any"
    listed_in = f"json_contains_{function}({item.key}, [{listed}])"
    if len(strings) < len(values):  # a number is never in a string (core raises)
        return listed_in
    return f"({listed_in} or {_in_strings(item, strings)})"


def _is_empty(key: str) -> str:
    """No value, ``None``, ``""`` or ``[]``: every test known (not unknown) for every value,
    so that ``NOT`` turns it around (``json_contains_all(key, [])``: a list)."""
    return (f'(not (exists {key}) or {key} like "" or (json_contains_all({key}, []) and '
            f"array_length({key}) == 0))")


def newer_server_filters(filters: MetadataFilters | None) -> list[str]:
    """The filters of ``filters`` that servers before :data:`NEWER_SERVER` cannot evaluate
    (a substring ``LIKE``, ``is_empty``'s list test), as ``"key operator"``.

    >>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    >>> newer_server_filters(MetadataFilters(filters=[
    ...     MetadataFilter(key="title", value="Euler", operator="text_match"),
    ...     MetadataFilter(key="year", value=1707)]))
    ['title text_match']
    """
    found: list[str] = []
    for item in (filters.filters if filters is not None else []):
        if isinstance(item, MetadataFilters):
            found += newer_server_filters(item)
        elif item.operator == FilterOperator.IS_EMPTY or (item.operator in _HOLDS and any(
                isinstance(v, str) for v in (item.value if isinstance(item.value, list)
                                             else [item.value]))):
            found.append(f"{item.key} {item.operator.value}")
    return found


NEWER_SERVER = (2, 4)
"""The oldest Milvus server with a substring ``LIKE`` (2.3 matches prefixes only). Milvus
Lite has it."""


def check_server_can(filters: MetadataFilters | None, version: tuple[int, ...]) -> None:
    """Refuse the filters of :func:`newer_server_filters` on a Milvus server older than
    :data:`NEWER_SERVER` (``version`` is the server's, ``()`` for Milvus Lite or an
    unreadable version).

    >>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    >>> check_server_can(MetadataFilters(filters=[
    ...     MetadataFilter(key="title", value="Euler", operator="text_match")]), (2, 3, 5))
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: metadata filters title text_match ...

    Raises:
        InvalidInputError: a filter this server cannot evaluate.
    """
    found = newer_server_filters(filters)
    if found and version and version < NEWER_SERVER:
        raise InvalidInputError(
            f"metadata filters {', '.join(found)} need Milvus 2.4 or later (substring LIKE, "
            f"list tests); this server is {'.'.join(map(str, version))}: upgrade it, or "
            "filter on whole values (==, in) or on list members (contains, any, all with "
            "numbers).")


def to_milvus_expression(filters: MetadataFilters, fields: Collection[str] = ()) -> str:
    """The Milvus expression of ``filters`` (nested filters and AND/OR/NOT included).

    ``NOT`` keeps what matches none of its filters, as core's ``SimpleVectorStore`` does:
    ``not (a or b)``. ``fields`` are keys that are fields of the collection (the tenant key):
    every passage has them.

    >>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    >>> print(to_milvus_expression(MetadataFilters(condition="not", filters=[
    ...     MetadataFilter(key="tenant_id", value="acme"),
    ...     MetadataFilter(key="year", value=2000, operator=">")]), fields={"tenant_id"}))
    not (tenant_id == "acme" or ((exists year) and year > 2000))
    """
    if not isinstance(filters, MetadataFilters):
        hint = (": wrap it, MetadataFilters(filters=[...])"
                if isinstance(filters, MetadataFilter) else "")
        raise InvalidInputError(
            f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}{hint}")
    return _expression(filters, 0, fields={*fields, *STRING_FIELDS})


STRING_FIELDS = ("doc_id",)
"""String fields of the passage collection a filter may name (``MilvusVectorStore``'s
``doc_id``: the source document's id)."""
_STORE_KEYS = VECTOR_STORE_KEYS - _FIELDS - set(STRING_FIELDS)
"""What ``MilvusVectorStore`` writes on a passage row over metadata of the same name
(``document_id``, ``ref_doc_id``): not metadata."""
MAX_DEPTH = 32
"""How deep ``MetadataFilters`` may nest."""


def _expression(filters: MetadataFilters, depth: int, fields: Collection[str]) -> str:
    if depth > MAX_DEPTH:
        raise InvalidInputError(
            f"metadata filters nest deeper than {MAX_DEPTH} groups: flatten them (an AND of "
            "ANDs is one AND).")
    nested = depth > 0
    parts = [_expression(f, depth + 1, fields=fields) if isinstance(f, MetadataFilters)
             else _condition(f, fields) for f in filters.filters]
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


def matches(metadata: dict[str, Any], filters: MetadataFilters | MetadataFilter) -> bool:
    """Whether a node's ``metadata`` passes ``filters`` in Python, as Milvus evaluates their
    expression: core's semantics for each filter (a value of another type does not match),
    nested filters and ``NOT`` included (core's own function refuses nested filters).

    >>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    >>> matches({"tags": ["red"], "year": 1707}, MetadataFilters(condition="or", filters=[
    ...     MetadataFilter(key="tags", value="red", operator="contains"),
    ...     MetadataFilters(filters=[MetadataFilter(key="year", value=1700, operator="<")])]))
    True
    """
    return _truth(metadata, filters) is True


_ORDERINGS = frozenset({FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT,
                        FilterOperator.LTE})


def _truth(metadata: dict[str, Any], filters: MetadataFilters | MetadataFilter
           ) -> bool | None:
    """:func:`matches` in Milvus's three values: ``None`` (unknown) for an ordering of
    values of two types (``"unknown" > 2000``), which ``NOT`` leaves unknown and which keeps
    no passage, as in Milvus."""
    if isinstance(filters, MetadataFilter):
        if filters.operator in (FilterOperator.IN, FilterOperator.NIN) and not isinstance(
                filters.value, list):  # one value, as the expression reads it
            filters = filters.model_copy(update={"value": [filters.value]})
        try:
            return build_metadata_filter_fn(lambda _: metadata,
                                            MetadataFilters(filters=[filters]))("")
        except TypeError:  # core's text_match of a number, a number in a string...
            return None if filters.operator in _ORDERINGS else False
    found = [_truth(metadata, item) for item in filters.filters]
    anything = (True if True in found else None if None in found else False)
    if filters.condition == FilterCondition.OR:
        return anything
    if filters.condition == FilterCondition.NOT:
        return None if anything is None else not anything
    return False if False in found else None if None in found else True
