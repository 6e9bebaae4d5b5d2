"""Entities of a parsed passage for the LLM-free extractor: mentions and their kinds (the
passage's main entity and what refers to it are
:mod:`~llama_index_graphrag_milvus.extraction.spacy_topic`'s).

Pure functions over a spaCy ``Doc``; :mod:`~llama_index_graphrag_milvus.extraction.spacy_rules`
reads triplets off the parse with them (see there for what the rules get right).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from llama_index_graphrag_milvus.extraction.kinds import SPECIFIC_KINDS
from llama_index_graphrag_milvus.extraction.spacy_names import (
    ARTICLES,
    DATE_LABELS,
    PLACE_LABELS,
    SUBJECT_DEPS,
    is_proper,
    name_end,
    with_comma_title,
    written_words,
)
from llama_index_graphrag_milvus.ids import clean_text, normalize_name
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

EntityKind = Literal["named", "title", "date", "concept"]
"""What an extracted entity is: ``"named"`` (a named entity or a proper-noun phrase),
``"title"`` (the passage's main entity, or a quoted title), ``"date"`` (a date or a time),
``"concept"`` (a common-noun phrase: a type or an attribute of a specific entity)."""

_FUNCTION_POS = frozenset({"PRON", "DET", "PUNCT", "SYM", "SPACE", "NUM", "PART", "ADP",
                           "CCONJ", "SCONJ", "AUX"})
_CONCEPT_LABELS = frozenset({"NORP"})
"""Named-entity labels of words that describe rather than name ("British", "Catholic")."""
_NOT_DATED_LABELS = PLACE_LABELS | {"PERSON"}
"""Names a number before them does not belong to: "1060 West Addison Street" is an address."""
_OPENING_QUOTES = frozenset({'"', "``", "“", "‘‘"})
_CLOSING_QUOTES = frozenset({'"', "''", "”", "’’"})
_MAX_QUOTED_TOKENS = 12
_PARENTHETICAL = re.compile(r"\s*\(([^()]*)\)\s*$")


@dataclass(frozen=True)
class Mention:
    """An entity mention: its name, the entity's key (``normalize_name``), its kind, and the
    tokens ``[start, end)`` it covers. A pronoun or a definite description resolved to
    another entity carries that entity's name and key over its own tokens."""

    name: str
    key: str
    kind: EntityKind
    start: int
    end: int
    label: str = ""
    """The named-entity label (``PERSON``, ``GPE``...) when the recognizer gave one."""

    @property
    def specific(self) -> bool:
        return self.kind in SPECIFIC_KINDS

    def overlaps(self, other: Mention) -> bool:
        return self.start < other.end and other.start < self.end

    def over(self, start: int, end: int) -> Mention:
        """The same entity, mentioned at ``[start, end)``."""
        return Mention(self.name, self.key, self.kind, start, end, self.label)


@dataclass(frozen=True)
class Rules:
    """The extractor's settings the pure rules need."""

    entity_kinds: tuple[str, ...] = ("named_entities", "noun_chunks")
    excluded_entity_labels: frozenset[str] = frozenset(
        {"CARDINAL", "ORDINAL", "PERCENT", "QUANTITY", "MONEY"})
    max_entity_words: int = 8
    max_cooccurrences_per_sentence: int = 5
    cooccurrence_predicate: str = "co-occurs with"
    resolve_references: bool = True
    lemmatize: Callable[[Token], list[str]] | None = None
    """A disabled lemmatizer of the pipeline, run only on the words of predicates."""


# ---------------------------------------------------------------------------- names


def split_title(title: str) -> tuple[str, str]:
    """A passage title as an entity name (no disambiguation, no leading article, as names
    of the text lose theirs), and the disambiguation's words.

    >>> split_title("Hello Love (song)")
    ('Hello Love', 'song')
    >>> split_title("  The   Pizza Head Show ")
    ('Pizza Head Show', '')
    """
    cleaned = clean_text(title)
    disambiguation = ""
    match = _PARENTHETICAL.search(cleaned)
    if match is not None and match.start() > 0:
        cleaned, disambiguation = cleaned[:match.start()], match.group(1).casefold()
    words = cleaned.split(" ")
    if len(words) > 1 and words[0].casefold() in ARTICLES:
        cleaned = " ".join(words[1:])
    return cleaned, disambiguation


def lemma(token: Token, rules: Rules) -> str:
    """The token's lemma, lowercased: from the pipeline, else from its disabled lemmatizer,
    else the word as written."""
    if token.lemma_:
        return token.lemma_.lower()
    if rules.lemmatize is not None:
        lemmas = rules.lemmatize(token)
        if lemmas and lemmas[0]:
            return lemmas[0].lower()
    return token.lower_


def _has_alnum(token: Token) -> bool:
    return any(c.isalnum() for c in token.text)


def _name_start(chunk: Span) -> int:
    """Where the name of a proper-noun chunk starts: after a possessive pronoun and the
    common nouns that follow it ("her uncle Charles II, Archduke of Austria" is "Charles II,
    Archduke of Austria"); a chunk without a possessive starts where it starts."""
    doc = chunk.doc
    if doc[chunk.start].tag_ != "PRP$":
        return chunk.start
    start = chunk.start + 1
    while start < chunk.root.i and doc[start].pos_ == "NOUN" and doc[start].is_lower:
        start += 1
    return start


def _unrecognized_owner(chunk: Span) -> Token | None:
    """The last word of the proper name that opens a common-noun chunk as its owner when
    the recognizer did not label it ("Grieve" of "Grieve's father"; "Euler" of "Euler's
    teacher" is a named entity already), or ``None``."""
    doc = chunk.doc
    owner = next((t for t in chunk if t.dep_ == "poss"), None)
    if (owner is None or owner.i + 2 >= chunk.end or doc[owner.i + 1].tag_ != "POS"
            or not all(is_proper(t) and not t.ent_type_
                       for t in doc[chunk.start:owner.i + 1])):
        return None
    return owner


def _with_year(doc: Doc, start: int, end: int) -> int:
    """Where a name that a year opens starts: "the 1928 Summer Olympics", "the 2018 FIFA
    World Cup" (the recognizer takes "Summer Olympics" alone, which names every games)."""
    year = doc[start - 1] if start else None
    if (year is not None and year.dep_ == "nummod" and start <= year.head.i < end
            and year.text.isdigit() and 1000 <= int(year.text) <= 2099):
        return start - 1
    return start


def _strippable(token: Token, named: bool) -> bool:
    """A leading word a name loses: articles; for common-noun chunks also other determiners
    and possessive pronouns ("this", "his")."""
    if token.lower_ in ARTICLES:
        return True
    return not named and (token.pos_ == "DET" or token.tag_ == "PRP$")


def _segment_of_root(doc: Doc, start: int, end: int, root: int) -> tuple[int, int]:
    """The part of ``[start, end)`` between line breaks that holds the root (the last part
    when the root is outside): a title line and the sentence under it are two names."""
    breaks = [i for i in range(start, end) if doc[i].is_space]
    if not breaks:
        return start, end
    for cut in breaks:
        if root < cut:
            return start, cut
        start = cut + 1
    return start, end


_ABBREVIATION = re.compile(r"[^\W\d_]{1,3}\.")
"""A word of at most three letters and a period ("Jr.", "c.", "b.", "Inc."): alone, what a
parse leaves of "Lon Chaney, Jr." or "(c. 1555 – 1633)", never a name."""


def _make_mention(doc: Doc, start: int, end: int, root: int, kind: EntityKind, label: str,
                  rules: Rules) -> Mention | None:
    """The mention of tokens ``[start, end)``, trimmed (leading articles, edge tokens with no
    letter or digit), or ``None`` when it is not an entity: only function words, numbers or
    punctuation (a date may be a number), an abbreviation alone ("Jr.", "c."), too many
    words, or too long to store."""
    named = kind != "concept"
    while start < end and (_strippable(doc[start], named) or not _has_alnum(doc[start])):
        start += 1
    while end > start and (not _has_alnum(doc[end - 1]) or doc[end - 1].tag_ == "POS"):
        end -= 1
    start, end = _segment_of_root(doc, start, end, root)
    if start == end or written_words(doc, start, end) > rules.max_entity_words:
        return None
    tokens = doc[start:end]
    name = clean_text(tokens.text)
    if kind == "date":
        wanted = any(c.isalnum() for c in name)
    else:
        wanted = (any(c.isalpha() for c in name)
                  and not all(t.pos_ in _FUNCTION_POS or t.is_punct for t in tokens))
    if not wanted or len(name.encode()) > ENTITY_NAME_MAX_BYTES or (
            kind != "title" and end - start == 1 and _ABBREVIATION.fullmatch(name)):
        return None
    return Mention(name, normalize_name(name), kind, start, end, label)


def _quoted_titles(doc: Doc, rules: Rules) -> Iterator[Mention]:
    """Titles between quotes ("``All You Need Is Love''", "\\"West of the River\\""): at
    most ``_MAX_QUOTED_TOKENS`` tokens, in one sentence, starting with a capital or a
    digit."""
    opened: int | None = None
    for token in doc:
        text = token.text
        if opened is not None and (text in _CLOSING_QUOTES or token.is_sent_start):
            first = doc[opened + 1] if opened + 1 < len(doc) else None
            if (text in _CLOSING_QUOTES and first is not None and first.i < token.i
                    and token.i - opened - 1 <= _MAX_QUOTED_TOKENS
                    and (first.text[:1].isupper() or first.text[:1].isdigit())):
                mention = _make_mention(doc, opened + 1, token.i, opened + 1, "title", "",
                                        rules)
                if mention is not None:
                    yield mention
            opened = None
            continue
        if opened is None and text in _OPENING_QUOTES:
            opened = token.i


def _title_spans(doc: Doc, title: str | None, rules: Rules) -> Iterator[Mention]:
    """The places where the text writes the passage's title (case-insensitively, whole
    tokens): "G-Men from Hell" is one name, whatever the recognizer makes of it. A title
    with a comma that the text never writes whole is written by its head, as the title
    writes it: "Johnnycake" names the passage "Johnnycake, West Virginia". A noble's title
    after it is the topic's too ("Margaret Vane, Countess of Ardmore" in "Margaret
    Vane"), and so is the longer name the text opens with (see :func:`_opening_name_end`),
    or, where the text never writes the title, the full name it opens with (see
    :func:`_opening_full_name`)."""
    if not title:
        return
    spans = list(_written(doc, title, rules, casefold=True))
    head = comma_head(title)
    if not spans:  # 'Sergio Leonel "Kun" Agüero' in the passage "Sergio Agüero"
        spans = [replace(m, name=title, key=normalize_name(title))
                 for m in _opening_full_name(doc, title, rules)]
    if not spans and head is not None:
        key = normalize_name(title)
        spans = [replace(m, name=title, key=key)
                 for m in _written(doc, head, rules, casefold=False)]
    for mention in spans:  # "Margaret Vane, Countess of Ardmore (1702–1761)": the title
        yield replace(mention, end=_opening_name_end(doc, mention.start, with_comma_title(
            doc, mention.start, mention.end, rules.max_entity_words)))


def _first_word(doc: Doc) -> int | None:
    """Where the text opens: its first word (past quotes and brackets), or ``None``."""
    return next((t.i for t in doc if t.is_alpha), None)


_GENERATIONS = frozenset({"Jr", "Sr", "II", "III", "IV"})
"""What follows a person's name after a comma ("Lon Chaney, Jr.")."""


def _opening_full_name(doc: Doc, title: str, rules: Rules) -> list[Mention]:
    """The name the text opens with as its subject when it writes the title's words in
    order among its own, ending with the title's last word: a person's full name with
    middle names or a quoted nickname ('Nicholas Lofton "Nick" Hexum' in the passage "Nick
    Hexum", 'Sergio Leonel "Kun" Agüero' in "Sergio Agüero"); none otherwise."""
    words = [w.casefold() for w in title.split()]
    start = _first_word(doc)
    if start is None or len(words) < 2:
        return []
    end = start
    while end < len(doc) and (is_proper(doc[end]) or doc[end].is_quote or (
            doc[end].text[:1].isupper() and doc[end].text.casefold() in words)):
        end += 1  # a word of the title the tagger takes for a common noun too ("Agüero")
    name = [t.text.casefold() for t in doc[start:end] if not t.is_quote]
    if (not name or name[-1] != words[-1] or len(name) > rules.max_entity_words
            or not any(t.dep_ in SUBJECT_DEPS for t in doc[start:end])):
        return []
    found = iter(name)
    if not all(word in found for word in words):  # the title's words in order
        return []
    if (end + 1 < len(doc) and doc[end].text == ","
            and doc[end + 1].text.rstrip(".") in _GENERATIONS):
        end += 2  # "George William Wilson, Sr. (February 3, 1914 – ...)"
    mention = _make_mention(doc, start, end, end - 1, "title", "", rules)
    return [] if mention is None else [mention]


def _opening_name_end(doc: Doc, start: int, end: int) -> int:
    """The end of the longer name a title opens when that name is the subject the text
    starts with ("Abd al-Aziz ibn Musa was the first governor of ..." in the passage "Abd
    al-Aziz"), else ``end``: the subject is the topic, not a name beside it."""
    if start != _first_word(doc) or end >= len(doc):
        return end
    ent_end = end
    while ent_end < len(doc) and doc[ent_end].ent_iob_ == "I":
        ent_end += 1
    return ent_end if ent_end > end and doc[ent_end - 1].dep_ in SUBJECT_DEPS else end


def comma_head(title: str) -> str | None:
    """What a title with a comma starts with ("Johnnycake" of "Johnnycake, West
    Virginia"), or ``None`` for a title without a comma or a head without a letter."""
    head = title.split(",")[0].strip()
    return head if head != title.strip() and any(c.isalpha() for c in head) else None


def _written(doc: Doc, name: str, rules: Rules, casefold: bool) -> Iterator[Mention]:
    """Title mentions where the text writes ``name`` (whole tokens)."""
    text = doc.text.casefold() if casefold else doc.text
    wanted = name.casefold() if casefold else name
    start = text.find(wanted)
    while start >= 0:
        span = doc.char_span(start, start + len(wanted))
        if span is not None:
            mention = _make_mention(doc, span.start, span.end, span.root.i, "title", "", rules)
            if mention is not None:
                yield mention
        start = text.find(wanted, start + len(wanted))


def _modifies_noun(ent: Span) -> bool:
    """Whether a named entity only modifies a common noun ("Bernoulli" in "the Bernoulli
    principle"): the noun phrase is the entity then."""
    root = ent.root
    return (root.dep_ == "compound" and root.head.pos_ == "NOUN"
            and not ent.start <= root.head.i < ent.end)


def _describes(ent: Span) -> bool:
    """Whether a named entity describes rather than names: a nationality or a religion
    ("British", "Catholic"), or a language's name as an adjective ("an English footballer",
    which the recognizer labels a language)."""
    return ent.label_ in _CONCEPT_LABELS or (ent.label_ == "LANGUAGE"
                                             and ent.root.pos_ == "ADJ")


def _inside_a_longer(mention: Mention, names: Sequence[Mention]) -> bool:
    """Whether a mention lies inside a longer one of ``names``."""
    return any(n.start <= mention.start and mention.end <= n.end
               and n.end - n.start > mention.end - mention.start for n in names)


def find_mentions(doc: Doc, rules: Rules, title: str | None = None) -> list[Mention]:
    """Every entity mention of a parsed doc, in text order, overlapping mentions resolved.

    Priority: the passage's ``title`` where the text writes it, quoted titles, proper names
    with "of" ("University of Copenhagen", "Officer of the Order of Canada"), named entities
    (not those that only modify a noun: "the Bernoulli principle" is one name), proper-noun
    chunks, common-noun chunks (named when a proper noun modifies their head, else
    concepts), then dates and descriptive entities ("British") that no chunk holds: "a 1952
    British crime film" is one concept, not a date and a nationality. A proper-noun chunk
    inside a date ("December", "7 December" of "7 December 1988") is not a name: the
    recognizer's date is taken whole.
    A proper name with "of" inside a longer recognized name yields to it: "the Society for
    the Exploration of Psychotherapy Integration" is one name, not "Society" and
    "Exploration of Psychotherapy Integration". A name keeps the number that ends it ("U.S.
    Route 52", "BWV 564"): every route is not "U.S. Route". A mention that overlaps one
    already taken is dropped.
    """
    titles = [*_title_spans(doc, title, rules), *_quoted_titles(doc, rules)]
    named: list[Mention] = []
    described: list[Mention] = []
    if "named_entities" in rules.entity_kinds:
        for ent in doc.ents:
            if ent.label_ in rules.excluded_entity_labels or _modifies_noun(ent):
                continue
            kind: EntityKind = ("date" if ent.label_ in DATE_LABELS
                                else "concept" if _describes(ent) else "named")
            end = (name_end(doc, ent, ent.label_, rules.max_entity_words)[1]
                   if kind == "named" else ent.end)
            start = (_with_year(doc, ent.start, end) if kind == "named"
                     and ent.label_ not in _NOT_DATED_LABELS else ent.start)
            mention = _make_mention(doc, start, end, ent.root.i, kind, ent.label_, rules)
            if mention is not None:
                (named if kind == "named" else described).append(mention)
    with_of: list[Mention] = []
    proper: list[Mention] = []
    common: list[Mention] = []
    if "noun_chunks" in rules.entity_kinds and doc.has_annotation("DEP"):
        for chunk in doc.noun_chunks:
            if chunk.root.pos_ == "PRON":
                continue
            if is_proper(chunk.root):
                if chunk.root.ent_type_ in DATE_LABELS:
                    # "December", "7 December" (of "7 December 1988"): a month is a proper
                    # noun but names a date, which the recognizer's date mention holds whole
                    continue
                start = _name_start(chunk)
                of_end, end = name_end(doc, doc[start:chunk.end], chunk.root.ent_type_,
                                       rules.max_entity_words)
                mention = _make_mention(doc, start, end, chunk.root.i, "named",
                                        chunk.root.ent_type_, rules)
                if mention is not None:  # "University of Copenhagen" before "Copenhagen"
                    (with_of if of_end > chunk.end else proper).append(mention)
            elif chunk.root.ent_type_ not in DATE_LABELS:
                modified = any(c.dep_ == "compound" and is_proper(c)
                               for c in chunk.root.children)
                owner = _unrecognized_owner(chunk)
                if owner is not None:  # "Grieve's father": Grieve, and "father"
                    proper.extend(m for m in [_make_mention(
                        doc, chunk.start, owner.i + 1, owner.i, "named", "", rules)]
                        if m is not None)
                start = chunk.start if owner is None else owner.i + 2
                mention = _make_mention(doc, start, chunk.end, chunk.root.i,
                                        "named" if modified else "concept", "", rules)
                if mention is not None:
                    common.append(mention)
    taken: list[Mention] = []
    covered: set[int] = set()
    inside = [m for m in with_of if _inside_a_longer(m, named)]
    around = [m for m in with_of if m not in inside
              and any(m.start < t.start and t.end <= m.end for t in titles)]
    outside = [m for m in with_of if m not in inside and m not in around]
    for mention in (*around, *titles, *outside, *named, *inside, *proper, *common,
                    *described):
        tokens = range(mention.start, mention.end)
        if any(i in covered for i in tokens):
            continue
        covered.update(tokens)
        taken.append(mention)
    taken.sort(key=lambda m: m.start)
    return taken
