"""What an entity is (named, title, date, concept): the kinds the spaCy extractor records,
and the rules that infer a kind from a name alone (an LLM's or a user's triplets)."""

from __future__ import annotations

import re

from llama_index_graphrag_milvus.ids import clean_text

ENTITY_KINDS = ("named", "title", "date", "concept")
"""What an entity is: ``"named"`` (a named entity or a proper-noun phrase), ``"title"`` (a
passage's main entity, or a quoted title), ``"date"``, ``"concept"`` (a common-noun phrase:
a type or an attribute of a specific entity). The spaCy extractor records the kind of each
entity it names; for other triplets it is inferred from the name (:func:`infer_kind`)."""

KIND_CODES: dict[str, int] = {"": 0, **{kind: code for code, kind in enumerate(ENTITY_KINDS, 1)}}
"""A small integer per kind (0: not recorded), as the in-memory graph holds them."""

SPECIFIC_KINDS: frozenset[str] = frozenset({"named", "title"})
"""The kinds that name one thing, and so can link passages and be bridges."""

_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split())

_DATE_WORDS = frozenset("ad bc bce ce between to and from until or century early mid late "
                        "the of in on c circa st nd rd th s".split())

_DATE_TOKEN = re.compile(r"[a-z]+|\d+(?:st|nd|rd|th|s)?")

_WORDS = re.compile(r"(?<!\S)[\"'(\[“‘]*([^\W\d_]\S*)")
"""Words (between spaces) that start with a letter: not "26th"; "Jong-chul" is one."""



def _is_date(name: str) -> bool:
    """Whether a name is only a date or a span of dates: numbers, month names and the
    words of dates ("July 1967", "1–14 August 2014", "18th century", "1990s")."""
    tokens = _DATE_TOKEN.findall(name.casefold())
    if not tokens or any(not (t[0].isdigit() or t in _MONTHS or t in _DATE_WORDS)
                         for t in tokens):
        return False
    return any(t in _MONTHS or (t[0].isdigit() and (len(t) >= 3 or t.endswith(
        ("st", "nd", "rd", "th")))) for t in tokens)



def stronger_kind(first: str, second: str) -> str:
    """The kind to record when two passages give one entity two kinds: a recorded kind over
    none, then title, named, date, concept (a name some passage names specifically is a
    specific entity).

    >>> stronger_kind("concept", "named"), stronger_kind("", "date")
    ('named', 'date')
    """
    order = ("title", "named", "date", "concept", "")
    return min(first, second, key=lambda kind: order.index(kind) if kind in order else 5)



def infer_kind(name: str) -> str:
    """The kind of an entity known only by its name (an LLM's or a user's triplets): a date
    ("July 1967", "1–14 August 2014", "18th century"); a concept unless its first and last
    words are capitalized ("son", "frontman of Slipknot", "Portuguese retired footballer",
    "1,231 retail locations": a description, not a name) or written in a script without
    capitals ("ヨハン・ベルヌーイ", "欧拉": taken as named, since letters cannot tell); else
    named.

    >>> [infer_kind(n) for n in ("July 1967", "son", "frontman of Slipknot",
    ...                          "Portuguese retired footballer", "Johann Bernoulli",
    ...                          "26th Chess Olympiad", "University of Copenhagen")]
    ['date', 'concept', 'concept', 'concept', 'named', 'named', 'named']
    >>> [infer_kind(n) for n in ("ヨハン・ベルヌーイ", "流体力学", "son of 欧拉", "1700年2月8日")]
    ['named', 'named', 'concept', 'date']
    """
    cleaned = clean_text(name)
    if _is_date(cleaned):
        return "date"
    words = _WORDS.findall(cleaned)
    if not words:
        return "concept"
    return "named" if all(_capitalized_or_caseless(w) for w in (words[0], words[-1])) \
        else "concept"


def recorded_or_inferred(recorded: str, name: str) -> str:
    """The kind of an entity as a relation records it (``recorded``), else inferred from its
    name (:func:`infer_kind`). A recorded ``"named"`` whose name is only a date is a date:
    the spaCy extractor of 0.2 and earlier recorded a month the parser took for a proper
    noun ("December", "7 December" of "7 December 1988") as named, which made it a bridge.

    >>> [recorded_or_inferred(k, n) for k, n in (("named", "7 December"), ("", "July 1967"),
    ...                                          ("title", "1984"), ("named", "Ada Kovar"))]
    ['date', 'date', 'title', 'named']
    """
    if not recorded:
        return infer_kind(name)
    if recorded == "named" and _is_date(clean_text(name)):
        return "date"
    return recorded


def _capitalized_or_caseless(word: str) -> bool:
    """Whether a word has a capital letter, or no cased letter at all (a script without
    capitals: Chinese, Japanese, Korean, Arabic, Hebrew, Devanagari... whose names cannot be
    told from descriptions by their letters, and are taken as names)."""
    return any(c.isupper() for c in word) or not any(c.islower() for c in word)
