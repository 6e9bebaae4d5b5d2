"""How much of an LLM's graph an offline extractor finds: the triplets of the same passages
side by side (``--extractor spacy`` on a dataset with ``triplets.jsonl`` reports it).

- ``llm_entities_found``: the share of the LLM's entities (subjects and objects, per
  passage) that the offline graph of that passage names too: the same name (case, articles,
  quotes and spaces aside), or a name that holds at least two thirds of its words and of
  whose words it holds at least half ("Johann Sebastian Bach" for "Johann Bach");
  ``llm_entities_found_exact`` counts the same name only.
- ``llm_relations_linked``: the share of the LLM's triplets whose two ends are both found
  and linked by some offline triplet of the same passage (either way round): the relations
  an offline graph can walk where the LLM's can.
- triplets per passage on both sides.

>>> llm = {"p": [["Leonhard Euler", "was a student of", "Johann Bernoulli"]]}
>>> offline = {"p": [["Leonhard Euler", "study under", "Johann Bernoulli"]]}
>>> agreement(llm, offline).llm_relations_linked
100.0
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_ARTICLE = re.compile(r"^(the|a|an)\s+")
_QUOTES = re.compile(r"[\"'`“”‘’]+")
_HYPHEN = re.compile(r"\s*-\s*")
_WORD = re.compile(r"\w+")


def comparable(name: str) -> str:
    """A name for comparison: case-folded, spaces collapsed, no quotes, no leading article,
    no trailing punctuation, hyphens without spaces.

    >>> comparable("The  ``Beatles'' ")
    'beatles'
    """
    text = _QUOTES.sub("", " ".join(str(name).split()).casefold())
    return _ARTICLE.sub("", _HYPHEN.sub("-", text)).strip(" .,;:")


def _words(name: str) -> set[str]:
    return set(_WORD.findall(comparable(name)))


def match(name: str, candidates: Iterable[str]) -> tuple[str | None, bool]:
    """The candidate (a :func:`comparable` name) that names ``name``, and whether exactly."""
    wanted = comparable(name)
    pool = set(candidates)
    if wanted in pool:
        return wanted, True
    words = _words(name)
    best, best_score = None, 0.0
    for candidate in sorted(pool):
        theirs = _words(candidate)
        if not words or not theirs:
            continue
        shared = len(words & theirs)
        if shared / len(words) >= 2 / 3 and shared / len(theirs) >= 0.5:
            score = shared / len(words | theirs)
            if score > best_score:
                best, best_score = candidate, score
    return best, False


@dataclass(frozen=True)
class Agreement:
    """The offline graph measured against the LLM's, on the passages both cover."""

    passages: int
    llm_entities_found_exact: float
    llm_entities_found: float
    llm_relations_linked: float
    offline_triplets_per_passage: float
    llm_triplets_per_passage: float


def _triplets(rows: Sequence[Sequence[str]]) -> list[tuple[str, str, str]]:
    return [(str(t[0]), str(t[1]), str(t[2])) for t in rows
            if isinstance(t, (list, tuple)) and len(t) == 3]


def agreement(llm: Mapping[str, Sequence[Sequence[str]]],
              offline: Mapping[str, Sequence[Sequence[str]]]) -> Agreement:
    """Compare the triplets of each passage id of ``llm`` with ``offline``'s (a passage the
    offline graph lacks counts as one with no triplets)."""
    exact = found = entities = linked = relations = offline_count = 0
    for passage, rows in llm.items():
        theirs = _triplets(rows)
        ours = _triplets(offline.get(passage, ()))
        offline_count += len(ours)
        names = {comparable(n) for t in ours for n in (t[0], t[2])}
        links = {frozenset((comparable(t[0]), comparable(t[2]))) for t in ours}
        matched: dict[str, str | None] = {}
        for name in {n for t in theirs for n in (t[0], t[2])}:
            candidate, is_exact = match(name, names)
            matched[comparable(name)] = candidate
            entities += 1
            found += candidate is not None
            exact += is_exact
        for subject, _, obj in theirs:
            relations += 1
            a, b = matched.get(comparable(subject)), matched.get(comparable(obj))
            linked += bool(a and b and a != b and frozenset((a, b)) in links)
    count = max(len(llm), 1)
    return Agreement(
        passages=len(llm),
        llm_entities_found_exact=round(100 * exact / max(entities, 1), 1),
        llm_entities_found=round(100 * found / max(entities, 1), 1),
        llm_relations_linked=round(100 * linked / max(relations, 1), 1),
        offline_triplets_per_passage=round(offline_count / count, 1),
        llm_triplets_per_passage=round(relations / count, 1))
