"""What the parse coordinates, and where the small model's parse hangs a conjunct, a name or
a verb on the wrong word or tags a word as the wrong part of speech: the repairs the rules
of :mod:`~llama_index_graphrag_milvus.extraction.spacy_rules` read the parse through.

Pure functions over spaCy tokens (and, for names, the mentions by token), tested through the
rules (``tests/extraction/test_spacy_rules.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llama_index_graphrag_milvus.extraction.spacy_mentions import Mention
from llama_index_graphrag_milvus.extraction.spacy_names import SUBJECT_DEPS

if TYPE_CHECKING:
    from spacy.tokens import Token

PREPOSITION_DEPS = frozenset({"prep", "agent", "dative"})
"""Dependencies of a preposition on its head ("in" Basel, "by" X, "to" Y)."""


def with_conjuncts(token: Token) -> list[Token]:
    """The token and the tokens coordinated with it ("Basel, Zurich and Geneva"; see
    :func:`_listed`), not those deeper in brackets than it is (see :func:`in_brackets`). A
    noun the parse coordinates with a preposition's object but that has the same preposition
    itself is coordinated with the phrase instead: in "with music by Ron Goodwin and
    cinematography by Geoffrey Faithfull" the parse hangs "cinematography" on Goodwin; it
    goes with "music"."""
    own = [token, *(c for c in token.conjuncts if not _parallel(c, token)
                    and in_brackets(c) <= in_brackets(token)), *_listed(token)]
    if token.pos_ != "NOUN":
        return own
    return own + [c for prep in token.children if prep.dep_ in PREPOSITION_DEPS
                  for pobj in prep.children if pobj.dep_ == "pobj"
                  for c in dict.fromkeys((*pobj.conjuncts, *named(pobj).conjuncts))
                  if _parallel(c, pobj)]


def _listed(name: Token) -> list[Token]:
    """Names the parse hangs on the first of a list as an apposition with its own conjuncts:
    "stars John Saxon, Molly Bee and Rod McKuen" is read as "John Saxon" with "Molly Bee and
    Rod McKuen" an apposition; names only ("born in Penshurst, Kent, eldest son of A and B"
    is not a list), not "Paris, France" (no conjunct)."""
    if name.pos_ != "PROPN":
        return []
    return [t for appos in name.children if appos.dep_ == "appos" and appos.pos_ == "PROPN"
            and appos.i > name.i and appos.left_edge.i > 0
            and appos.conjuncts and all(c.pos_ == "PROPN" for c in appos.conjuncts)
            and name.doc[appos.left_edge.i - 1].text == ","
            and in_brackets(appos) <= in_brackets(name)
            for t in (appos, *appos.conjuncts)]


def in_brackets(token: Token) -> int:
    """How many brackets of its sentence are open at a token: a conjunct inside brackets is
    not one of a name outside them ("Ali Şen (1918 in Adana, Adana Vilayet, Ottoman Empire
    – 1989) was a Turkish actor": the places are not actors)."""
    depth = 0
    for t in token.doc[token.sent.start:token.i]:
        depth += (t.text == "(") - (t.text == ")")
    return max(depth, 0)


def _parallel(conj: Token, pobj: Token) -> bool:
    """Whether ``conj``, coordinated with the object of a noun's preposition (or with the
    object's name: "the father of the painter Lisa Rieger and the grandfather of ..."), is a
    common noun with that same preposition of its own (see :func:`with_conjuncts`)."""
    if pobj.dep_ == "appos" and pobj.head.dep_ == "pobj":
        pobj = pobj.head
    return (conj.pos_ == "NOUN" and pobj.dep_ == "pobj" and pobj.head.head.pos_ == "NOUN"
            and any(c.dep_ in PREPOSITION_DEPS and c.lower_ == pobj.head.lower_
                    for c in conj.children))


def and_named(nouns: list[Token]) -> list[Token]:
    """The nouns, each followed by the name it is followed by when it has one (see
    :func:`named`), and that name's conjuncts: "married to the politician Jules Ferrand" is
    married to both; "born to Irish immigrants Patrick Harlan and Mary Doyle" to all
    three."""
    return list(dict.fromkeys(t for noun in nouns for t in (noun, *_names_after(noun))))


def _names_after(noun: Token) -> list[Token]:
    name = named(noun)
    return [] if name is noun else with_conjuncts(name)


def named(noun: Token) -> Token:
    """The name that directly follows a common noun ("the politician Jules Ferrand": Jules
    Ferrand), else the noun; after a comma only when something owns the noun ("for her
    second album, Night Moves"): "Ratnagiri district, Konkan, Maharashtra state, India" is a
    list of places, not the district's name. The parse sometimes makes the name the noun's
    object ("and actress Anne Cole")."""
    if noun.pos_ == "NOUN":
        start = noun.i + 1
        if (start < len(noun.doc) and noun.doc[start].text == ","
                and any(c.dep_ == "poss" for c in noun.children)):
            start += 1
        for child in noun.children:
            if (child.dep_ in ("appos", "dobj") and child.pos_ == "PROPN"
                    and child.left_edge.i == start):
                return child
    return noun


def late_names(noun: Token, pobj: Token) -> list[Token]:
    """Names the parse hangs on a common noun right after its preposition's object, no comma
    between: "The daughter of poet Kaifi Azmi and stage actress Shaukat Azmi" is read as
    "daughter of poet" with "Kaifi Azmi" and "Shaukat Azmi" on "daughter": they are the
    poet's name and a second object. Not after a comma ("the capital of France, Paris")."""
    if noun.pos_ != "NOUN":
        return []
    return [t for child in noun.children if child.dep_ == "appos" and child.pos_ == "PROPN"
            and child.left_edge.i == pobj.right_edge.i + 1 for t in with_conjuncts(child)]


def stray_of_objects(attribute: Token, copula: Token) -> list[Token]:
    """Names the parse coordinates with a copula's attribute, or with the copula, that are
    a second object of the attribute's "of": "He was the son of the merchant Thomas Halden
    and his wife Anne Cole" is read as "was the son of ..." and "was his wife Anne Cole";
    "the daughter of Thomas Halden, a merchant, and Anne Cole" as "was ... and Anne Cole".
    A name (or a noun a name follows) with no preposition of its own, after an attribute
    that has an "of": she is the daughter of both, not either of them."""
    if attribute.pos_ != "NOUN" or not any(
            c.dep_ == "prep" and c.lower_ == "of" for c in attribute.children):
        return []
    coordinated = [c for c in (*attribute.conjuncts, *copula.children)
                   if c.dep_ == "conj" and c.i > attribute.i]
    return [c for c in coordinated
            if not any(g.dep_ in PREPOSITION_DEPS or g.dep_ in SUBJECT_DEPS
                       for g in c.children)
            and (c.pos_ == "PROPN" or (c.pos_ == "NOUN" and named(c) is not c))]


def with_name_conjuncts(tokens: list[Token], by_token: dict[int, Mention]) -> list[Token]:
    """The tokens, each followed by the nouns coordinated with a word inside its mention.
    The parse hangs "and Ferdinand II of Aragon" on "Castile" in "the daughter of Isabella
    I of Castile and Ferdinand II of Aragon", where "Isabella I of Castile" is one name:
    both are her parents. The other way round too: in "educated at Eton College and Trinity
    College" the parse makes "Eton College" a modifier of the second "College", with
    "Trinity" its conjunct: Eton College is coordinated with the name "Trinity" starts."""
    found: list[Token] = []
    for token in tokens:
        found.append(token)
        mention = by_token.get(token.i)
        if mention is None or mention.start < 0:
            continue
        for inner in token.doc[mention.start:mention.end]:
            if inner.i != token.i:  # the token's own conjuncts are in the list already
                found.extend(t for child in inner.children if child.dep_ == "conj"
                             and not mention.start <= child.i < mention.end
                             for t in and_named(with_conjuncts(child)))
            head = inner.head
            if (inner.dep_ == "conj" and token.left_edge.i <= head.i < mention.start
                    and head.i in by_token):
                found.append(head)
    return list(dict.fromkeys(found))


def splits_a_name(obj: Token, by_token: dict[int, Mention]) -> bool:
    """Whether an object token is the end of a name whose first words the parse put in
    another phrase: "the eldest son of John Ashby, 1st Baron Ashby" is read as "son of John
    Ashby" and a second attribute "1st Baron Ashby", which is not what the subject is; nor
    is what the parse coordinates with it ("and his wife Lady Mary Grey")."""
    while True:
        mention = by_token.get(obj.i)
        if (mention is not None and 0 <= mention.start < obj.left_edge.i
                and not obj.doc[mention.start].is_ancestor(obj)):  # not "between 1991 and"
            return True
        if obj.dep_ != "conj":
            return False
        obj = obj.head


_FINITE_TAGS = frozenset({"VBD", "VBZ"})
_MODIFIER_DEPS = frozenset({"amod", "compound", "nmod", "poss"})


def _phrase_head(token: Token) -> Token:
    """The head of the noun phrase a modifier is in ("Begum Noor" for "actress")."""
    while token.dep_ in _MODIFIER_DEPS and token.head.i != token.i:
        token = token.head
    return token


def read_as_modifier(verb: Token) -> tuple[Token, Token] | None:
    """A finite verb the parse hangs on the noun phrase after it as a modifier: the head of
    that phrase (the verb's object) and the verb's subject, or ``None``. "Khan married
    actress Begum Noor in 1958" is read as one phrase ("married" modifying "actress"), "It
    was directed by X and stars A and B" as "directed by X and A" with "stars" modifying A.
    The tagger still tags such a verb as one in the past or the present ("married",
    "stars"), which a modifier is not. The subject is a name or a pronoun right before a
    verb in the past, in the same phrase or hung on the verb; or, after "and", the verb the
    phrase is coordinated with, whose subjects are the verb's. Not "the Hindi films Amar
    Deep and Rakhi" (a plural read as a verb in the present)."""
    if verb.tag_ not in _FINITE_TAGS or verb.dep_ not in _MODIFIER_DEPS or verb.i == 0:
        return None
    head = _phrase_head(verb)
    if head.i <= verb.i or head.pos_ not in ("NOUN", "PROPN"):
        return None
    before = verb.doc[verb.i - 1]
    if (verb.tag_ == "VBD" and before.pos_ in ("PROPN", "PRON")
            and (before.head.i == verb.i or _phrase_head(before).i == head.i)):
        return head, before
    if (before.dep_ == "cc" and head.dep_ == "conj" and head.head.pos_ in ("VERB", "AUX")
            and head.head.i < verb.i):
        return head, head.head
    return None


_TO_ADJECTIVES = frozenset({"married", "engaged", "betrothed", "wed"})
"""Adjectives whose "to" names a person (see :func:`misread_to`)."""


def passive_with_agent(verb: Token, passive: bool = True) -> bool:
    """"was composed by", "were designed by": a passive that names who did it (without its
    auxiliary when not ``passive``: "produced by")."""
    children = [c.dep_ for c in verb.children]
    return (not passive or "auxpass" in children) and "agent" in children


def credit_before(participle: Token) -> Token | None:
    """The participle of a list of credits that the parse hangs the next one on: in "a film
    directed by Harold Byrne, produced by Sam Wirth and written by Ellen Cray", "produced"
    modifies Byrne; the film was produced by Sam Wirth. A participle with its own "by" after
    a comma that follows another's "by" and its object."""
    pobj = participle.head
    if (participle.dep_ == "acl" and passive_with_agent(participle, passive=False)
            and pobj.dep_ == "pobj" and pobj.head.dep_ == "agent"
            and participle.i > 0 and participle.doc[participle.i - 1].text == ","):
        return pobj.head.head
    return None


def noun_tagged_adjective(attribute: Token) -> bool:
    """An attribute the tagger takes for an adjective but that a determiner and a
    preposition show is a noun: "is the debut single by Kid Orion"."""
    return (attribute.pos_ == "ADJ" and attribute.dep_ == "attr"
            and any(c.dep_ == "det" for c in attribute.children)
            and any(c.dep_ == "prep" for c in attribute.children))


def second_attribute(noun: Token) -> bool:
    """A copula's second attribute that the parse coordinates with the copula rather than
    with its first: "She was the daughter of A and B, and the wife of C" ("wife" a conjunct
    of "was"). A determined noun with an "of" and no subject of its own."""
    return (noun.dep_ == "conj" and noun.pos_ == "NOUN" and noun.i > noun.head.i
            and any(c.dep_ == "det" for c in noun.children)
            and any(c.dep_ == "prep" and c.lower_ == "of" for c in noun.children)
            and not any(c.dep_ in SUBJECT_DEPS for c in noun.children))


def misread_to(adjective: Token) -> list[Token]:
    """Names after "married to" a noun the parse reads as an infinitive: "He is married to
    actress Carla Dias" is parsed as "to actress" (a verb) with the name its object."""
    if adjective.lower_ not in _TO_ADJECTIVES:
        return []
    return [t for verb in adjective.children if verb.dep_ == "xcomp" and verb.tag_ == "VB"
            and any(c.dep_ == "aux" and c.lower_ == "to" for c in verb.children)
            for obj in verb.children if obj.dep_ == "dobj" and obj.pos_ == "PROPN"
            and obj.left_edge.i == verb.i + 1 for t in with_conjuncts(obj)]
