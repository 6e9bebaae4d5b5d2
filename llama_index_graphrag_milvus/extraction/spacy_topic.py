"""The passage's main entity (its topic) for the LLM-free extractor, and the pronouns and
definite descriptions that refer to it.

Pure functions over a spaCy ``Doc`` and the mentions
:func:`~llama_index_graphrag_milvus.extraction.spacy_mentions.find_mentions` finds in it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llama_index_graphrag_milvus.extraction.spacy_mentions import (
    Mention,
    Rules,
    comma_head,
    lemma,
    split_title,
)
from llama_index_graphrag_milvus.extraction.spacy_names import (
    DATE_LABELS,
    PLACE_LABELS,
    SUBJECT_DEPS,
)
from llama_index_graphrag_milvus.ids import clean_text, normalize_name
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

_NOT_AUTHOR_LABELS = PLACE_LABELS | DATE_LABELS | {"EVENT"}
_PERSON_PRONOUNS = frozenset({"he", "she", "him", "his", "her", "hers", "himself", "herself"})
_THING_PRONOUNS = frozenset({"it", "its", "itself"})
_KIN = frozenset({"son", "daughter", "child", "children", "sons", "daughters", "grandson",
                  "granddaughter", "grandchildren", "twins"})
"""Nouns whose "their" on a person's page is the person and a spouse ("Their son ...")."""
KIN_NOUNS = _KIN | {"wife", "husband", "mother", "father", "brother", "sister", "widow",
                     "consort", "queen", "king", "prince", "princess", "grandfather",
                     "grandmother", "uncle", "aunt", "nephew", "niece", "cousin"}
"""What only a person is ("Mary Vane was the second wife of ..."): a topic that is one is a
person."""
_OCCUPATIONS = frozenset({
    "actor", "actress", "singer", "songwriter", "musician", "composer", "pianist",
    "violinist", "guitarist", "drummer", "rapper", "dancer", "comedian", "painter",
    "sculptor", "architect", "photographer", "illustrator", "cartoonist", "writer", "author",
    "novelist", "poet", "playwright", "screenwriter", "journalist", "filmmaker",
    "politician", "diplomat", "statesman", "lawyer", "physician", "surgeon", "scientist",
    "physicist", "chemist", "biologist", "mathematician", "astronomer", "engineer",
    "inventor", "economist", "philosopher", "historian", "theologian", "priest", "bishop",
    "cardinal", "monk", "nun", "soldier", "officer", "admiral", "footballer", "cricketer",
    "athlete", "boxer", "wrestler", "swimmer", "cyclist", "businessman", "businesswoman",
    "entrepreneur", "banker", "merchant", "nobleman", "noblewoman", "aristocrat", "courtier",
    "emperor", "empress", "duke", "duchess", "countess", "activist", "professor",
    "explorer", "astronaut", "socialite", "heiress", "philanthropist", "industrialist"})
"""What only a person is by trade ("Walter Grieve was an English stage actor"): a topic that
is one is a person. Not nouns that also name things ("model", "coach", "conductor",
"player", "host")."""
_PERSON_NOUNS = KIN_NOUNS | _OCCUPATIONS
_DEMONSTRATIVES = frozenset({"the", "this", "that"})


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


def _copula_types(doc: Doc, subject_tokens: set[int], rules: Rules,
                  compounds: bool = False) -> set[str]:
    """Head nouns of "<subject> is a <noun>" for a subject among ``subject_tokens``, with
    the nouns that form the head's compound when ``compounds`` ("film" of "film noir")."""
    nouns = set()
    for token in doc:
        if token.dep_ in SUBJECT_DEPS and token.i in subject_tokens:
            verb = token.head
            if lemma(verb, rules) == "be":
                for child in verb.children:
                    if child.dep_ == "attr" and child.pos_ == "NOUN":
                        nouns.add(lemma(child, rules))
                        nouns.update(lemma(c, rules) for c in child.children if compounds
                                     and c.dep_ == "compound" and c.pos_ == "NOUN")
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


def _written_otherwise(doc: Doc, subject: Mention) -> Mention | None:
    """The topic's name as the text writes it, as another of its names, when the title
    names it otherwise: the full name a passage opens with ('Nicholas Lofton "Nick" Hexum'
    in the passage "Nick Hexum"; see
    :mod:`~llama_index_graphrag_milvus.extraction.spacy_mentions`)."""
    if subject.start < 0:
        return None
    words = [t.text for t in doc[subject.start:subject.end] if not t.is_quote]
    name = clean_text(" ".join(words).replace(" ,", ","))
    key = normalize_name(name)
    return Mention(name, key, "named", -1, -1) if key and key != subject.key else None


def _life_dates(doc: Doc, mention: Mention) -> bool:
    """Whether a mention is followed by a person's dates: "(born 5 May 1980)", "(died
    1197)", "(6 October 1919 – 26 March 1989)", "(1890–1960)", "(1551 – 1608)"; after the
    period of an abbreviation that ends the name too ("Wilson, Sr. (1914 – 1978)")."""
    opened = mention.end + (mention.end < len(doc) and doc[mention.end].text == ".")
    if opened >= len(doc) or doc[opened].text != "(":
        return False
    for token in doc[opened + 1:opened + 16]:
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


def _known_as(doc: Doc, mentions: Sequence[Mention], subject: Mention) -> Mention | None:
    """The name a participle after the subject says it goes by: "Yusuf Khan, better known
    by his stage name Dilip Kumar, was ...", "X, known as Y, was ..."; not "known for"."""
    for mention in mentions:
        token = doc[mention.end - 1]
        prep = token.head
        while prep.dep_ in ("appos", "compound") and prep.head is not prep:
            prep = prep.head.head if prep.head.dep_ == "pobj" else prep.head
        if (mention.specific and token.dep_ in ("pobj", "appos") and prep.lower_ in ("as", "by")
                and prep.head.lower_ in ("known", "called")
                and subject.start <= prep.head.head.i < subject.end):
            return mention
    return None


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
        head = comma_head(name)
        if alias is None and head is not None and any(
                clean_text(doc[m.start:m.end].text) == head for m in in_text):
            alias = Mention(head, normalize_name(head), "named", -1, -1)  # "Johnnycake"
    elif subject is not None:
        name, key, label = subject.name, subject.key, subject.label
    else:
        return None
    if alias is None and subject is not None and subject.key == key:
        alias = _known_as(doc, mentions, subject) or _written_otherwise(doc, subject)
    own = [m for m in mentions if m.key == key or m is alias]
    person = (label == "PERSON" or any(_life_dates(doc, m) for m in own) or (
        subject in own and (_called_he_or_she(doc, mentions, own, first) or bool(_copula_types(
            doc, {i for m in own for i in range(m.start, m.end)}, rules) & _PERSON_NOUNS))))
    aliases = short_names(name, person)
    if alias is not None:
        aliases |= {alias.key} | short_names(alias.name, person)
    mention = Mention(name, key, "title", -1, -1, "PERSON" if person else label)
    naming = {i for m in mentions if m.key == key or m.key in aliases
              for i in range(m.start, m.end)}
    nouns = {w.casefold() for w in re.findall(r"[A-Za-z]+", name)}
    nouns |= set(disambiguation.split()) | _copula_types(doc, naming, rules, compounds=True)
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
    before a child ("Their son, Peter Stone, ...") is the person's, with a spouse's, and so is
    "they" that has children ("They had three children, including ...")."""
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
            elif (word in ("their", "they") and topic is not None and topic.person
                  and _of_their_children(token)):
                target = topic.mention
            if target is not None:
                resolved.append(target.over(position, position + 1))
        position += 1
    return resolved


def _of_their_children(pronoun: Token) -> bool:
    """"Their son ..." ("their" owns a child), "They had three children" ("they" has them):
    on a person's page the couple is the person, with a spouse."""
    if pronoun.lower_ == "their":
        return pronoun.head.lower_ in _KIN
    return pronoun.dep_ in SUBJECT_DEPS and any(
        c.dep_ == "dobj" and c.lower_ in _KIN for c in pronoun.head.children)


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


