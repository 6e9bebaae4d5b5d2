"""Entities of a parsed passage for the LLM-free extractor: mentions and their kinds, the
passage's main entity, and the pronouns and descriptions that refer to it.

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
_NOT_AUTHOR_LABELS = PLACE_LABELS | DATE_LABELS | {"EVENT"}
_PERSON_PRONOUNS = frozenset({"he", "she", "him", "his", "her", "hers", "himself", "herself"})
_THING_PRONOUNS = frozenset({"it", "its", "itself"})
_KIN = frozenset({"son", "daughter", "child", "children", "sons", "daughters", "grandson",
                  "granddaughter", "grandchildren", "twins"})
"""Nouns whose "their" on a person's page is the person and a spouse ("Their son ...")."""
_DEMONSTRATIVES = frozenset({"the", "this", "that"})
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
    Vane")."""
    if not title:
        return
    spans = list(_written(doc, title, rules, casefold=True))
    head = _comma_head(title)
    if not spans and head is not None:
        key = normalize_name(title)
        spans = [replace(m, name=title, key=key)
                 for m in _written(doc, head, rules, casefold=False)]
    for mention in spans:  # "Margaret Vane, Countess of Ardmore (1702–1761)": the title
        yield replace(mention, end=with_comma_title(doc, mention.start, mention.end,
                                                    rules.max_entity_words))


def _comma_head(title: str) -> str | None:
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
            mention = _make_mention(doc, ent.start, end, ent.root.i, kind, ent.label_, rules)
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
                mention = _make_mention(doc, chunk.start, chunk.end, chunk.root.i,
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


# ---------------------------------------------------------------------------- the topic


@dataclass(frozen=True)
class Topic:
    """The passage's main entity: its mention (kind ``"title"``), whether it is a person, the
    keys of the other names it goes by in the passage, and the nouns a definite description
    of it may use ("film" for "the film")."""

    mention: Mention
    person: bool
    aliases: frozenset[str]
    nouns: frozenset[str]
    alias_name: str | None = None
    """The first sentence's subject when it names the topic otherwise than the title does
    ("Marcus Ulpius Traianus" in the passage "Trajan")."""

    def named_by(self, mention: Mention) -> bool:
        """Whether a mention names the topic: its key, or a specific mention of an alias."""
        return mention.key == self.mention.key or (mention.specific
                                                   and mention.key in self.aliases)


def _copula_types(doc: Doc, subject_tokens: set[int], rules: Rules) -> set[str]:
    """Head nouns of "<subject> is a <noun>" for a subject among ``subject_tokens``."""
    nouns = set()
    for token in doc:
        if token.dep_ in SUBJECT_DEPS and token.i in subject_tokens:
            verb = token.head
            if lemma(verb, rules) == "be":
                for child in verb.children:
                    if child.dep_ == "attr" and child.pos_ == "NOUN":
                        nouns.add(lemma(child, rules))
    return nouns


def _first_sentence(doc: Doc) -> Span:
    """The first sentence that has a subject (a title or a heading before it has none), else
    the first sentence."""
    if not doc.has_annotation("SENT_START"):
        return doc[:]
    sentences = list(doc.sents)
    return next((s for s in sentences if any(t.dep_ in SUBJECT_DEPS for t in s)), sentences[0])


_LIFE_SPAN = re.compile(r"\d{3,4}\s*[-–—]\s*\d{2,4}")
"""Years of birth and death: "1890–1960", "1551 – 1608"."""
_LIFE_WORDS = frozenset({"born", "b.", "died", "d."})


def _life_dates(doc: Doc, mention: Mention) -> bool:
    """Whether a mention is followed by a person's dates: "(born 5 May 1980)", "(died
    1197)", "(6 October 1919 – 26 March 1989)", "(1890–1960)", "(1551 – 1608)"."""
    if mention.end >= len(doc) or doc[mention.end].text != "(":
        return False
    for token in doc[mention.end + 1:mention.end + 16]:
        if token.text == ")":
            return False
        if token.lower_ in _LIFE_WORDS or _LIFE_SPAN.fullmatch(token.text) or (
                token.ent_type_ in DATE_LABELS and token.like_num and len(token.text) == 4):
            return True
        if token.i + 2 < len(doc) and _LIFE_SPAN.fullmatch(doc[token.i:token.i + 3].text):
            return True
    return False


def _called_he_or_she(doc: Doc, mentions: Sequence[Mention], own: Sequence[Mention],
                      first: Span) -> bool:
    """Whether the passage calls its topic "he", "she", "his"... before it names any other
    person or says "it": the first such pronoun that opens a sentence, or one in the first
    sentence before any other name ("Paulo Reis is a Brazilian actor. He is married to ...",
    "X is an actress who made her debut in ...": a person the recognizer did not label; not
    "Addicted is Ace Young's second single, after his 2006 song"). Only asked when the first
    sentence's subject names the topic."""
    inside = {i for m in own for i in range(m.start, m.end)}  # "The Pale Horse and His Rider"
    others = {m.start for m in mentions if m not in own and (
        m.label == "PERSON" or _an_author(doc, m))}
    names = {m.start for m in mentions if m not in own and m.specific}
    named_before = False
    for token in doc:
        if token.i in others or token.lower_ in _THING_PRONOUNS:
            return False
        named_before = named_before or token.i in names
        if (token.lower_ in _PERSON_PRONOUNS and token.pos_ == "PRON"
                and token.i not in inside and (token.is_sent_start or (
                    token.i < first.end and not named_before))):
            return True
    return False


def short_names(name: str, person: bool) -> set[str]:
    """Keys of the shorter names of an entity: the last words of its name before a comma,
    and a person's first name.

    >>> sorted(short_names("Heathrow Terminal 3", False))
    ['3', 'terminal 3']
    >>> sorted(short_names("Leonhard Euler", True))
    ['euler', 'leonhard']
    """
    words = normalize_name(name.split(",")[0]).split(" ")
    names = {" ".join(words[i:]) for i in range(1, len(words))}
    if person and len(words) > 1:
        names.add(words[0])
    return names


def find_topic(doc: Doc, mentions: Sequence[Mention], title: str | None, rules: Rules
               ) -> Topic | None:
    """The passage's main entity: the ``title`` (without its disambiguation) when given, else
    the first sentence's subject when it is a specific entity.

    The topic also goes by the last words of its name (a person by the first name too) and,
    when the first sentence does not name it, by that sentence's subject if the passage
    starts with it ("Marcus Ulpius Traianus was born ..." in the passage "Trajan"), and by
    the head of a title with a comma where the text writes only that ("Johnnycake" in the
    passage "Johnnycake, West Virginia"). Its
    nouns are its disambiguation's words, the lowercase words of its name and the head nouns
    of "<topic> is a <noun>" sentences.
    """
    if not len(doc):
        return None
    first = _first_sentence(doc)
    subject = next((m for m in mentions if m.start < first.end and m.specific
                    and doc[m.end - 1].dep_ in SUBJECT_DEPS), None)
    disambiguation = ""
    alias: Mention | None = None
    if title:
        name, disambiguation = split_title(title)
        key = normalize_name(name)
        if not key or len(name.encode()) > ENTITY_NAME_MAX_BYTES:
            return None
        in_text = [m for m in mentions if m.key == key]
        label = in_text[0].label if in_text else ""
        if (subject is not None and subject.key != key
                and not any(m.start < first.end for m in in_text)
                and not any(doc[i].is_alpha for i in range(subject.start))):
            alias = subject
            label = label or subject.label
        head = _comma_head(name)
        if alias is None and head is not None and any(
                clean_text(doc[m.start:m.end].text) == head for m in in_text):
            alias = Mention(head, normalize_name(head), "named", -1, -1)  # "Johnnycake"
    elif subject is not None:
        name, key, label = subject.name, subject.key, subject.label
    else:
        return None
    own = [m for m in mentions if m.key == key or m is alias]
    person = (label == "PERSON" or any(_life_dates(doc, m) for m in own)
              or (subject in own and _called_he_or_she(doc, mentions, own, first)))
    aliases = short_names(name, person)
    if alias is not None:
        aliases |= {alias.key} | short_names(alias.name, person)
    mention = Mention(name, key, "title", -1, -1, "PERSON" if person else label)
    naming = {i for m in mentions if m.key == key or m.key in aliases
              for i in range(m.start, m.end)}
    nouns = {w.casefold() for w in re.findall(r"[A-Za-z]+", name)}
    nouns |= set(disambiguation.split()) | _copula_types(doc, naming, rules)
    return Topic(mention, person, frozenset(aliases), frozenset(nouns),
                 alias.name if alias is not None else None)


def resolve_references(doc: Doc, mentions: Sequence[Mention], topic: Topic | None
                       ) -> list[Mention]:
    """The mentions with the topic's name over its other names, and over the pronouns and
    definite descriptions that refer to it ("he", "its", "the film"). "he" and "she" refer to
    the topic when it is a person or when no other person was named before them ("Theresa
    Connelly is an American film director. She was born in Philadelphia": a person the
    recognizer missed or took for an organization; "Sunil Kumar is an Indian actor who
    works in Kannada films. He is the son of ..."), else to the last person named before
    them. A name after "by" counts as a person whatever the recognizer took it for ("a
    1998 film by Theresa Connelly. She ...": her, not the film). On a person's page "their"
    before a child ("Their son, Peter Stone, ...") is the person's, with a spouse's."""
    resolved: list[Mention] = []
    last_person: Mention | None = None
    by_start = {m.start: m for m in mentions}
    position = 0
    while position < len(doc):
        mention = by_start.get(position)
        if mention is not None:
            if topic is not None and (topic.named_by(mention)
                                      or _describes_topic(doc, mention, topic)):
                mention = topic.mention.over(mention.start, mention.end)
            elif topic is not None and _owned_by_topic(doc, mention, topic):
                # "the film's music": the film is the topic, the music its own (see
                # spacy_rules._subject_mention), as in "its music"
                mention = topic.mention.over(mention.start, mention.start + 1)
            resolved.append(mention)
            if mention.label == "PERSON" or _an_author(doc, mention):
                last_person = mention
            position = mention.end
            continue
        token = doc[position]
        word = token.lower_
        if token.pos_ == "PRON" or token.tag_ in ("PRP", "PRP$"):
            target: Mention | None = None
            if word in _PERSON_PRONOUNS:
                target = (topic.mention if topic is not None and (
                    topic.person or last_person is None) else last_person)
            elif word in _THING_PRONOUNS and topic is not None and not topic.person:
                target = topic.mention
            elif (word == "their" and topic is not None and topic.person
                  and token.head.lower_ in _KIN):
                target = topic.mention
            if target is not None:
                resolved.append(target.over(position, position + 1))
        position += 1
    return resolved


def _an_author(doc: Doc, mention: Mention) -> bool:
    """Whether a named mention is what follows "by" ("directed by X", "a film by X"), not a
    place or a date."""
    if not mention.specific or mention.label in _NOT_AUTHOR_LABELS or mention.start < 0:
        return False
    root = doc[mention.start:mention.end].root
    return root.head.lower_ == "by" and root.head.i < mention.start


def _describes_topic(doc: Doc, mention: Mention, topic: Topic) -> bool:
    """A definite description of the topic: "the film", "this journal" (a determiner and a
    noun of the topic's, nothing else)."""
    return (mention.kind == "concept" and mention.end - mention.start == 1
            and _topic_noun(doc, mention.start, topic))


def _owned_by_topic(doc: Doc, mention: Mention, topic: Topic) -> bool:
    """A phrase whose owner is a definite description of the topic: "the film's music"."""
    return (mention.kind == "concept" and doc[mention.start].dep_ == "poss"
            and _topic_noun(doc, mention.start, topic))


def _topic_noun(doc: Doc, position: int, topic: Topic) -> bool:
    """Whether a determiner and a noun of the topic's are written at ``position``."""
    head = doc[position]
    return (position > 0 and doc[position - 1].lower_ in _DEMONSTRATIVES
            and head.lower_ in topic.nouns and head.pos_ == "NOUN")


