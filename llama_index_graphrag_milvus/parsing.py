"""Tolerant reading of JSON answers from LLMs (code fences, prose around the JSON)."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _parse_int(text: str) -> int | float:
    """A JSON integer; one past Python's digit limit (``sys.get_int_max_str_digits``) as a
    float (an infinity past float's range), so that the rest of the answer is still read
    and a use that needs a finite number drops only that value.

    >>> _parse_int("12"), _parse_int("9" * 5000)
    (12, inf)
    """
    try:
        return int(text)
    except ValueError:
        return float(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int)


def find_json(raw: str, key: str | None = None) -> Any | None:
    """The first JSON object or array in ``raw``, or ``None`` when there is none.

    Code fences and text before or after the JSON are ignored. With ``key``, the first JSON
    object holding ``key`` wins over anything before it (prose such as "relation [4] is
    irrelevant" holds the JSON array ``[4]``); when no object holds ``key``, the first JSON
    value is returned as without ``key``.

    >>> find_json('Sure! ```json\\n{"named_entities": ["Euler"]}\\n``` Hope it helps.')
    {'named_entities': ['Euler']}
    >>> find_json('See [2]: {"picked": [1]}', key="picked")
    {'picked': [1]}
    >>> find_json("no json here") is None
    True
    >>> find_json("Sure: " + "[" * 5000 + '{"picked": [2]}', key="picked")
    {'picked': [2]}
    >>> find_json('{"picked": [' + "9" * 5000 + ", 2]}")
    {'picked': [inf, 2]}
    """
    if not isinstance(raw, str):
        return None
    openings = [match.start() for match in _OPENING.finditer(raw)]
    first: Any | None = None
    start, failures = 0, 0
    while failures < MAX_FAILED_OPENINGS:
        at = bisect.bisect_left(openings, start)
        if at == len(openings):
            break
        start = openings[at]
        try:
            value, end = _DECODER.raw_decode(raw, start)
        except ValueError:  # not JSON here, or an integer past Python's digit limit
            start, failures = start + 1, failures + 1
            continue
        except RecursionError:  # nested past the interpreter's limit: skip the run
            start, failures = _last_opening(raw, start), failures + 1
            continue
        value = _utf8(value)
        if key is None or (isinstance(value, dict) and key in value):
            return value
        if first is None:
            first = value
        start = end
    return first


_OPENING = re.compile(r"[{\[]")
MAX_FAILED_OPENINGS = 1000
"""Openings of ``{`` or ``[`` :func:`find_json` tries and fails at before it gives up: each
failed try reads on until the error, so a degenerate answer (``"[0," * 30_000``, an
unclosed run of brackets) would cost time in the square of its length."""


def _utf8(value: Any) -> Any:
    """``value`` with every lone surrogate of its strings (JSON's ``"\\ud83d"``, half an
    emoji) as U+FFFD: Milvus can neither store nor match it.

    >>> _utf8({"title": "Euler " + chr(0xD83D), "n": [1, "ok"]}) == {
    ...     "title": "Euler " + chr(0xFFFD), "n": [1, "ok"]}
    True
    """
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") \
            if not value.isascii() else value
    if isinstance(value, list):
        return [_utf8(item) for item in value]
    if isinstance(value, dict):
        return {_utf8(k): _utf8(item) for k, item in value.items()}
    return value


def _last_opening(raw: str, start: int) -> int:
    """Index of the last ``{`` or ``[`` of the run of them (white space between them
    included) that starts at ``start``: where a value nested past the interpreter's limit
    may hold one that is not; ``start + 1`` when the run is that one character.

    >>> _last_opening('[[ [{"a": 1}]', 0), _last_opening("[1]", 0)
    (4, 1)
    """
    last, end = start, start + 1
    while end < len(raw) and (raw[end] in "{[" or raw[end].isspace()):
        if raw[end] in "{[":
            last = end
        end += 1
    return last if last > start else start + 1


@dataclass(frozen=True)
class ListRead:
    """The items of a JSON list read one by one, and whether the list closed."""

    items: list[Any]
    closed: bool


def read_list(raw: str, key: str | None) -> ListRead | None:
    """The JSON list written after ``"key":`` in ``raw`` (with ``key`` ``None``: the first
    list whose first item is a list or an object), read item by item: every item when it
    closes, the complete ones when the answer stops inside it (the LLM hit its output-token
    limit) or an item is not JSON. ``None`` when no such list opens.

    >>> read_list('{"triplets": [["Euler", "born in", "Basel"], ["Euler", "stud', "triplets")
    ListRead(items=[['Euler', 'born in', 'Basel']], closed=False)
    >>> read_list('Sure: [{"a": 1}, {"a": 2}] and more', None)
    ListRead(items=[{'a': 1}, {'a': 2}], closed=True)
    """
    if not isinstance(raw, str):
        return None
    opened = re.search(rf'"{re.escape(key)}"\s*:\s*\[' if key is not None
                       else r"\[(?=\s*[\[{])", raw)
    if opened is None:
        return None
    items: list[Any] = []
    at = opened.end()
    while True:
        at = _ITEM_GAP.match(raw, at).end()  # type: ignore[union-attr]  # matches ""
        if at < len(raw) and raw[at] == "]":
            return ListRead(_utf8(items), True)
        try:
            item, at = _DECODER.raw_decode(raw, at)
        except (ValueError, RecursionError):
            return ListRead(_utf8(items), False)
        items.append(item)


def cut_list(raw: str, key: str) -> list[Any] | None:
    """The complete items of a JSON list that an answer opens but never closes: the list
    under ``"key"``, else the first list of lists or objects (:func:`read_list`). ``[]``
    when the list opens and no item is complete; ``None`` when no such list opens, or when
    it closes.

    >>> cut_list('{"triplets": [["Euler", "born in", "Basel"], ["Euler", "stud', "triplets")
    [['Euler', 'born in', 'Basel']]
    >>> cut_list('{"triplets": [["a", "b", "c"]]}', "triplets") is None
    True
    """
    read = read_list(raw, key) or read_list(raw, None)
    return None if read is None or read.closed else read.items


def keyed_list(raw: str, key: str, bare: Callable[[list[Any]], bool] = lambda value: True
               ) -> tuple[list[Any] | None, bool]:
    """The list an LLM answer gives under ``key``, and whether the answer was cut off in
    it:

    1. the value of the first JSON object holding ``key`` (``None`` when not a list);
    2. else the list written after ``"key":``, read item by item (:func:`read_list`), so
       that an object cut off in it, or broken after it, still gives its complete items;
       a bracketed aside before it (``"relation [3] is irrelevant"``) is never read;
    3. else, unless the answer is an object without ``key``, a list standing for the
       object: the first list of lists or objects when cut off, or the first JSON list
       when ``bare`` accepts it.

    ``(None, False)`` when the answer holds none of these.

    >>> keyed_list('{"why": "not [3]", "picked": [1, 2', "picked")
    ([1, 2], True)
    >>> keyed_list('Sure: [2, 1]', "picked"), keyed_list('{"other": [1]}', "picked")
    (([2, 1], False), (None, False))
    """
    value = find_json(raw, key=key)
    if isinstance(value, dict) and key in value:
        found = value[key]
        return (found if isinstance(found, list) else None), False
    read = read_list(raw, key)
    if read is not None:
        return read.items, not read.closed
    if isinstance(value, dict):
        return None, False
    read = read_list(raw, None)
    if read is not None and not read.closed:
        return read.items, True
    if isinstance(value, list) and bare(value):
        return value, False
    return None, False


_ITEM_GAP = re.compile(r"\s*,?\s*")


def string_list(value: Any, key: str) -> list[str] | None:
    """``value[key]`` (or ``value`` itself when it is a list) as a list of strings.

    Returns ``None`` when the shape is wrong; non-string items are dropped.
    """
    if isinstance(value, dict):
        value = value.get(key)
    if not isinstance(value, list):
        return None
    return [item.strip() for item in value if isinstance(item, str) and item.strip()]


def strip_echo(answer: str, prompt: str) -> str:
    """``answer`` without an echo of ``prompt``: what follows its last occurrence. Some
    completion endpoints, and core's ``MockLLM``, repeat the prompt, whose one-shot example
    would otherwise be read as the choice.

    >>> strip_echo('Example: {"useful_relationships": [7]} Answer:' + ' {"x": 1}',
    ...            'Example: {"useful_relationships": [7]} Answer:')
    ' {"x": 1}'
    """
    at = answer.rfind(prompt) if prompt else -1
    return answer[at + len(prompt):] if at >= 0 else answer
