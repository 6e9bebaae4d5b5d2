"""Tolerant reading of JSON answers from LLMs (code fences, prose around the JSON)."""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def find_json(raw: str) -> Any | None:
    """The first JSON object or array in ``raw``, or ``None`` when there is none.

    Code fences and text before or after the JSON are ignored.

    >>> find_json('Sure! ```json\\n{"named_entities": ["Euler"]}\\n``` Hope it helps.')
    {'named_entities': ['Euler']}
    >>> find_json("no json here") is None
    True
    """
    if not isinstance(raw, str):
        return None
    for start, char in enumerate(raw):
        if char not in "{[":
            continue
        try:
            value, _ = _DECODER.raw_decode(raw, start)
        except json.JSONDecodeError:
            continue
        return value
    return None


def string_list(value: Any, key: str) -> list[str] | None:
    """``value[key]`` (or ``value`` itself when it is a list) as a list of strings.

    Returns ``None`` when the shape is wrong; non-string items are dropped.
    """
    if isinstance(value, dict):
        value = value.get(key)
    if not isinstance(value, list):
        return None
    return [item.strip() for item in value if isinstance(item, str) and item.strip()]
