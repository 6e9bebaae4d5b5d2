"""Triplets in, triplets out: cleaning, reading an LLM's JSON answer, and node metadata.

:func:`to_triplets` is the one rule of what a triplet is (three non-empty texts within the
size limits; numbers kept as text); :func:`parse_triplets` reads an LLM answer;
:func:`triplets_from_node` reads what this package or core's path extractors left on a node,
:func:`store_triplets` writes it.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.ids import clean_text
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY, hide_from_models
from llama_index_graphrag_milvus.parsing import cut_list, find_json, keyed_list
from llama_index_graphrag_milvus.records import Triplet
from llama_index_graphrag_milvus.validation import is_utf8

logger = logging.getLogger(__name__)


def part_text(part: Any) -> str | None:
    """A triplet part as text: strings, and numbers (years, counts) written as text; a
    string Milvus cannot store (lone surrogates, not valid UTF-8) is ``None``."""
    if isinstance(part, str):
        return part if is_utf8(part) else None
    if isinstance(part, int) and not isinstance(part, bool):
        try:
            return str(part)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            return None
    if isinstance(part, float) and math.isfinite(part):  # NaN, infinities: no entity
        return str(part)
    return None


def _triplet_parts(item: Any) -> Sequence[Any] | None:
    if isinstance(item, Triplet):
        return (item.subject, item.predicate, item.object)
    if isinstance(item, dict):
        keys = ("subject", "predicate", "object")
        return tuple(item.get(k) for k in keys) if all(k in item for k in keys) else None
    if isinstance(item, (list, tuple)):
        return item
    return None


def visible(text: str) -> bool:
    """Whether ``text`` shows something: a character that is neither a space, a control
    nor a format character (a zero-width space, a word joiner, a byte-order mark).

    >>> visible("Euler"), visible("\u200b\ufeff "), visible("")
    (True, False, False)
    """
    return any(unicodedata.category(c)[0] not in "ZC" for c in text)


def to_triplets(items: Iterable[Any]) -> tuple[list[Triplet], int]:
    """Clean ``items`` into :class:`Triplet` objects; returns them and how many were dropped.

    Accepted items: 3-sequences of strings, ``{"subject", "predicate", "object"}`` dicts and
    :class:`Triplet`; a number part (``["Eleanor", "was born in", 1122]``) is kept as its
    text. Dropped: other lengths (2- or 4-tuples), empty parts (or only invisible
    characters: a zero-width space, a byte-order mark) or parts that are neither text nor
    numbers, and names longer than the entity collection allows. Whitespace is
    collapsed and control characters (NUL, BEL, ESC) dropped; the text is otherwise kept as
    written. Duplicates (same relation id) are kept once and not counted as dropped.

    >>> to_triplets([["Euler", "born in", "Basel"], ["Euler", "Basel"], ["", "x", "y"],
    ...              ["\u200b", "x", "y"]])
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 3)
    """
    triplets: dict[str, Triplet] = {}
    dropped = 0
    for item in items:
        parts = _triplet_parts(item)
        texts = [part_text(p) for p in parts] if parts is not None else []
        if len(texts) != 3 or any(t is None for t in texts):
            dropped += 1
            continue
        subject, predicate, obj = (clean_text(t or "") for t in texts)
        too_long = any(len(p.encode()) > ENTITY_NAME_MAX_BYTES for p in (subject, predicate, obj))
        if not all(map(visible, (subject, predicate, obj))) or too_long:
            dropped += 1
            continue
        triplet = Triplet(subject, predicate, obj)
        triplets.setdefault(triplet.id, triplet)
    return list(triplets.values()), dropped


TUPLE_LINE = re.compile(
    r"^[^\S\n]*(?:[-*\u2022]|\d{1,4}[.)])?[^\S\n]*\(([^()\n]*)\)[^\S\n]*[,;.]?[^\S\n]*$",
    re.MULTILINE)
"""A line that is one parenthesized tuple, maybe numbered or bulleted: ``(Euler, born in,
Basel)``, the format of core's knowledge-graph prompts."""


def tuple_lines(raw: str) -> list[list[str]]:
    """The parts of each line of ``raw`` that is one parenthesized tuple (a tuple inside a
    sentence is prose, not read), split on commas, quotes stripped.

    >>> tuple_lines('Triplets:\\n1. (Euler, born in, "Basel")\\nHe said (a, b, c) once.')
    [['Euler', 'born in', 'Basel']]
    """
    return [[part.strip().strip("\"'").strip() for part in match.group(1).split(",")]
            for match in TUPLE_LINE.finditer(raw)]


def parse_triplets(raw: str) -> tuple[list[Triplet], int]:
    """Triplets from an LLM answer (JSON, possibly fenced or wrapped in prose).

    The answer is ``{"triplets": [...]}`` (an object with that key wins over a bracketed
    aside before it), a bare list of triplets, or one bare triplet. An answer cut off
    before its list closed (the LLM's output-token limit) gives its complete triplets, with
    a warning. Without JSON, lines that are one ``(subject, predicate, object)`` tuple each
    (core's knowledge-graph prompts ask for them; see :func:`tuple_lines`) are read; a
    tuple of another length is dropped. Returns the triplets and the number of items
    dropped; an answer with neither yields ``([], 0)`` and a warning.

    >>> parse_triplets('From [1]: {"triplets": [["Euler", "born in", "Basel"]]}')
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 0)
    >>> parse_triplets('{"triplets": [["Euler", "born in", "Basel"], ["Euler", "studied", '
    ...                '"math"], ["Eu')[0][1]
    Triplet(subject='Euler', predicate='studied', object='math')
    >>> parse_triplets("(Euler, born in, Basel)\\n(Euler, born in, Basel, 1707)")
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 1)
    """
    value, cut = keyed_list(raw, "triplets")
    if cut:
        logger.warning("triplet extraction: the answer was cut off before its list closed "
                       "(the LLM's output-token limit?); kept its %d complete items",
                       len(value or ()))
    if not isinstance(value, list):
        rows = tuple_lines(raw)
        if rows:
            return to_triplets(rows)
        logger.warning("triplet extraction: no JSON list of triplets in the answer %.200r", raw)
        return [], 0
    if _bare_triplet(value):
        value = [value]  # one triplet, not a list of them: strings are never triplets
    return to_triplets(value)


def answer_failure(raw: str, *keys: str) -> str | None:
    """Why an extraction answer that gave nothing gave nothing, when it is not the LLM
    saying it found nothing: a blank answer, one cut off before the first complete item
    of its list under one of ``keys``, or JSON without such a list (``{"relations": [...]}``
    asked for triplets, ``{"triplets": null}``). Such a passage counts as failed (it is not
    cached: the next run asks again); ``None`` otherwise.

    >>> answer_failure("  ", "triplets")
    'the LLM answered nothing'
    >>> answer_failure('{"triplets": [["Leonhard Euler", "was bo', "triplets")[:30]
    'the answer was cut off before '
    >>> answer_failure("I found no triplets.", "triplets") is None
    True
    >>> answer_failure('{"facts": [["a", "b", "c"]]}', "triplets")[:35]
    'the answer is JSON without a list o'
    >>> answer_failure('{"triplets": []}', "triplets") is None
    True
    """
    if not isinstance(raw, str) or not raw.strip():
        return "the LLM answered nothing"
    if any(cut_list(raw, key) is not None for key in keys):
        return ("the answer was cut off before its first complete item (raise the LLM's "
                "output-token limit, max_tokens)")
    if find_json(raw) is not None and all(keyed_list(raw, key)[0] is None for key in keys):
        return (f"the answer is JSON without a list of {keys[0]} ({raw[:80]!r}): the LLM "
                "did not follow the prompt's format")
    return None


def _bare_triplet(value: list[Any]) -> bool:
    return len(value) == 3 and all(isinstance(part, str) for part in value)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def is_core_kg(key: str, value: Any) -> bool:
    """Whether ``metadata[key]`` holds what core's KG extractors write there (``nodes``: a
    list of entities, ``relations``: a list of relations, as objects or dicts), not a
    user's value under the same common word (``{"relations": "family"}``), which stays
    metadata.

    >>> is_core_kg("relations", [{"source_id": "a", "target_id": "b", "label": "c"}])
    True
    >>> is_core_kg("relations", "family"), is_core_kg("nodes", ["a", "b"])
    (False, False)
    """
    if key not in (KG_NODES_KEY, KG_RELATIONS_KEY) or not isinstance(value, (list, tuple)):
        return False
    field = "name" if key == KG_NODES_KEY else "source_id"
    return not value or any(not isinstance(v, str) and _field(v, field) is not None
                            for v in value)  # broken entries among them are counted dropped


def _core_kg_triplets(metadata: dict[str, Any]) -> list[Any]:
    """(subject, label, object) from the ``nodes``/``relations`` core's extractors write.

    Entries are core's ``EntityNode``/``Relation`` objects or their dict dumps (metadata read
    back from JSON, where an entity has no ``id``: core's id is the name with ``"`` replaced
    by a space). An unreadable entry becomes an item that :func:`to_triplets` drops.
    """
    names: dict[str, str] = {}
    if not is_core_kg(KG_RELATIONS_KEY, metadata.get(KG_RELATIONS_KEY)):
        return []
    nodes = metadata.get(KG_NODES_KEY) or []
    for node in nodes if is_core_kg(KG_NODES_KEY, nodes) else []:
        name, node_id = _field(node, "name"), _field(node, "id")
        if isinstance(name, str):
            names[str(node_id or name.replace('"', " "))] = name
    items = []
    for rel in metadata.get(KG_RELATIONS_KEY) or []:
        source, target = _field(rel, "source_id"), _field(rel, "target_id")
        items.append([names.get(source, source) if isinstance(source, str) else source,
                      _field(rel, "label"),
                      names.get(target, target) if isinstance(target, str) else target])
    return items


def triplets_from_node(node: BaseNode) -> tuple[list[Triplet], int]:
    """The triplets stored in a node's metadata, by this package or by core's extractors.

    Looks at ``metadata["graphrag_triplets"]`` first, then at the ``nodes`` and ``relations``
    keys that ``SimpleLLMPathExtractor``, ``SchemaLLMPathExtractor`` and
    ``DynamicLLMPathExtractor`` write. Returns the triplets and the number dropped.
    """
    if TRIPLETS_KEY in node.metadata:
        given = node.metadata[TRIPLETS_KEY] or []
        if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
            raise InvalidInputError(
                f"node {node.node_id!r} has metadata[{TRIPLETS_KEY!r}] = {given!r}: it holds "
                "the passage's triplets, a list of [subject, predicate, object] lists; "
                "rename the key or give such a list.")
        return to_triplets(given)
    return to_triplets(_core_kg_triplets(node.metadata))


def triplet_lists(triplets: Iterable[Triplet]) -> list[list[str]]:
    """Triplets as ``[subject, predicate, object]`` lists: how metadata and caches hold them.

    >>> triplet_lists([Triplet("Euler", "born in", "Basel")])
    [['Euler', 'born in', 'Basel']]
    """
    return [[t.subject, t.predicate, t.object] for t in triplets]


def store_triplets(node: BaseNode, triplets: Sequence[Triplet]) -> None:
    """Write ``triplets`` to ``node.metadata["graphrag_triplets"]`` (as ``[subject,
    predicate, object]`` lists), hidden from LLMs and embedding models: what ingestion
    reads back (:func:`triplets_from_node`)."""
    node.metadata[TRIPLETS_KEY] = triplet_lists(triplets)
    hide_from_models(node, TRIPLETS_KEY)
