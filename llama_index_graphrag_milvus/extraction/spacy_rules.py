"""The rules of the LLM-free extractor: entities, the passage's main entity, coreference and
triplets, read off one spaCy parse.

Pure functions over a parsed ``Doc`` (no I/O, no LlamaIndex), so each rule is tested on
sentences alone. The component that runs the pipeline is
:class:`~llama_index_graphrag_milvus.extraction.spacy_extractor.SpacyTripletExtractor`.

What an LLM extractor gets right and a naive parse does not, and the rule here for it:

- **The subject of a copular sentence.** "Night Harbour is a 1952 British crime film directed
  by Ada Kovar and starring Tom Reyes." The participles modify "film", whose copula's subject
  is Night Harbour: (Night Harbour, directed by, Ada Kovar), (Night Harbour, starring, Tom
  Reyes), and the type (Night Harbour, is a, 1952 British crime film).
- **A biography's clauses.** "Born in Brno, he studied ...": the fronted participle has the
  clause's subject; "X is a footballer who played for Y": the relative clause of the
  attribute is X's; "His father was Jan Dvorsky": (X, father was, Jan Dvorsky); "married
  to the politician Jules Ferrand": the name after the noun is the object too.
- **Pronouns and definite descriptions.** "He", "she" resolve to the passage's main entity
  when it is a person, else to the last person named before them; "it", "its" to a main
  entity that is not a person; "the film", "the song", "the journal" to the main entity when
  its type or its name has that noun. The main entity is the passage's title (a metadata key)
  or the first sentence's subject.
- **Names kept whole.** Quoted titles ("``West of the River''"), proper names with "of"
  (University of Copenhagen, West of the River) are one entity.
- **Entities that can be bridges.** Named entities, proper-noun chunks and titles are
  *specific*; common-noun chunks ("1952 British crime film", "son") and dates are kept only as
  objects of the relations that describe a specific entity, never linked by co-occurrence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llama_index_graphrag_milvus.extraction.spacy_coordination import (
    PREPOSITION_DEPS,
    and_named,
    credit_before,
    in_brackets,
    late_names,
    misread_to,
    named,
    noun_tagged_adjective,
    passive_with_agent,
    read_as_modifier,
    second_attribute,
    splits_a_name,
    stray_of_objects,
    with_conjuncts,
    with_name_conjuncts,
)
from llama_index_graphrag_milvus.extraction.spacy_mentions import (
    EntityKind,
    Mention,
    Rules,
    find_mentions,
    lemma,
    split_title,
)
from llama_index_graphrag_milvus.extraction.spacy_names import (
    ARTICLES,
    PLACE_LABELS,
    SUBJECT_DEPS,
    title_cased,
)
from llama_index_graphrag_milvus.extraction.spacy_topic import (
    KIN_NOUNS,
    find_topic,
    resolve_references,
)
from llama_index_graphrag_milvus.ids import clean_text, normalize_name
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES
from llama_index_graphrag_milvus.records import Triplet

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

_OBJECT_DEPS = frozenset({"dobj", "attr", "oprd"})
_RELATIVE_PRONOUN_TAGS = frozenset({"WDT", "WP"})
_MAX_BARE_SUBJECT = 12
_WHERE_LABELS = PLACE_LABELS | {"ORG"}
"""What a "where" clause's antecedent is named as when it is a place ("Brighton, where",
"Yale, where"): not "a situation where", "the team, where"."""


@dataclass(frozen=True)
class Extraction:
    """The triplets of one passage and the kind of each entity they name (by name)."""

    triplets: list[Triplet]
    kinds: dict[str, EntityKind]


# ---------------------------------------------------------------------------- the parse


def _copula_subjects(noun: Token, rules: Rules) -> list[Token]:
    """The subjects of the copula a noun is the attribute of ("X is a film ..."), the name an
    apposition describes ("X, a film ..."), else the noun itself."""
    if noun.dep_ == "attr" and lemma(noun.head, rules) == "be":
        found = _clause_subjects(noun.head) or _bare_subject(noun.head)
        if found:
            return found
    if noun.dep_ == "appos":
        return [noun.head]
    return [noun]


def _subjects(verb: Token, rules: Rules) -> list[Token]:
    """The subject tokens of a verb. A verb coordinated with another ("was born in Basel and
    studied ...") shares its subject; a relative clause's "who"/"which" is the noun the
    clause describes; a participle that modifies a noun ("a film directed by", "a film
    starring") has that noun as subject, or the copula's subject when the noun is what the
    subject is ("X is a film directed by Y": X)."""
    misread = read_as_modifier(verb)
    if misread is not None:  # "Khan married actress Begum Noor": Khan
        subject = misread[1]
        return _subjects(subject, rules) if subject.pos_ in ("VERB", "AUX") else [subject]
    head = verb
    while True:
        found = _clause_subjects(head)
        if found or head.dep_ != "conj":
            break
        head = head.head
    if head.dep_ == "relcl":  # "X is a footballer who played for Y": X played for Y
        antecedent = head.head
        meant = (_copula_subjects(antecedent, rules) if antecedent.dep_ == "attr"
                 else [antecedent])
        found = [t for s in found
                 for t in (meant if s.tag_ in _RELATIVE_PRONOUN_TAGS else [s])]
    if not found and head.tag_ in ("VBN", "VBG"):
        credit = credit_before(head)
        if credit is not None:
            found = _subjects(credit, rules)
        elif head.dep_ == "acl":
            found = _copula_subjects(head.head, rules)
        elif head.dep_ == "advcl" and head.head.pos_ in ("VERB", "AUX"):
            # "Born in Brno, he studied ...": the participle's subject is the clause's
            found = _clause_subjects(head.head)
        elif head.dep_ == "pcomp" and head.head.head.pos_ in ("VERB", "AUX"):
            # "She was known for playing Irma Bunt", "After leaving X, he joined Y"
            found = _subjects(head.head.head, rules)
    if not found and lemma(head, rules) == "be":
        found = _bare_subject(head)
    return found


def _clause_subjects(verb: Token) -> list[Token]:
    """The subject tokens of a verb's own clause, with their conjuncts. "Ma Huan (born 1962)
    is a Chinese politician": the parse makes "born" the clause's subject and the name a
    modifier of "born"; the name before the brackets is the subject."""
    found = [s for c in verb.children if c.dep_ in SUBJECT_DEPS for s in with_conjuncts(c)]
    if not found:
        for clause in verb.children:
            if clause.dep_ == "csubj" and in_brackets(clause):
                found = [c for c in clause.children if c.pos_ == "PROPN" and c.i < clause.i
                         and not in_brackets(c)][-1:]
    return found


def _bare_subject(copula: Token) -> list[Token]:
    """The subject the parse missed before a copula: the last word before it when the
    sentence starts with a few words, quoted or not, and nothing else ("\"Hello Again\" is
    a song", which the parser reads as an interjection); not after a parenthesis or a comma
    ("Pliers (born ..., Kingston, Jamaica), is ...": Kingston is not the subject). A title
    of two or more capitalized words may hold any word ("Kiss Me Again is a 1931 film",
    which the parser reads as a verb and its object), and, opening the text, short
    lowercase words between them (see
    :func:`~llama_index_graphrag_milvus.extraction.spacy_names.title_cased`); not "There
    are ..."."""
    before = [t for t in copula.doc[copula.sent.start:copula.i] if not t.is_quote]
    if not before or len(before) > _MAX_BARE_SUBJECT or any(t.is_punct for t in before):
        return []
    if any(t.pos_ in ("VERB", "AUX", "PRON", "ADP") for t in before) and (
            len(before) < 2 or any(t.dep_ == "expl" for t in before)
            or not title_cased(before, opening=copula.sent.start == 0)):
        return []
    return [before[-1]]


def _copula_word(verb: Token) -> str:
    return verb.lower_ if verb.pos_ == "AUX" and verb.tag_ != "VB" else "is"


def _verb_phrase(verb: Token, rules: Rules) -> str:
    """The predicate words of a verb. Active verbs are lemmatized ("study",
    "give up"), copulas kept as written ("is", "was"); passives keep their auxiliary and
    participle as written ("was born"); negation is kept ("not study")."""
    children = list(verb.children)
    auxpass = [c.lower_ for c in children if c.dep_ == "auxpass"]
    negated = ["not"] if any(c.dep_ == "neg" for c in children) else []
    if auxpass or (verb.dep_ in ("acl", "advcl", "conj") and verb.tag_ == "VBN"):
        words = [*auxpass, *negated, verb.lower_]
    elif verb.dep_ in ("acl", "advcl", "conj") and verb.tag_ == "VBG":
        words = [*negated, verb.lower_]
    elif lemma(verb, rules) == "be":
        words = [_copula_word(verb), *negated]
    else:
        words = [*negated, lemma(verb, rules)]
    words += [c.lower_ for c in children if c.dep_ == "prt"]
    return " ".join(words)


def _attribute_words(noun: Token) -> str:
    """A noun phrase as a predicate part: its determiner, modifiers and head, as written
    ("a civil township", "the son")."""
    words = [t for t in noun.subtree if t.i <= noun.i and not t.is_punct]
    return " ".join(t.lower_ if t.pos_ != "PROPN" else t.text for t in words) + _hyphened(noun)


def _hyphened(word: Token) -> str:
    """The rest of a word written with hyphens that the tokenizer split ("-in-law" of
    "father-in-law", "-in-chief"), lowercased; "" for a word without."""
    doc, end = word.doc, word.i
    while end + 1 < len(doc) and not doc[end].whitespace_ and (
            doc[end].tag_ == "HYPH" or doc[end + 1].tag_ == "HYPH"):
        end += 1
    return doc[word.i + 1:end + 1].text.lower() if end > word.i else ""


def _in_a_word(token: Token) -> bool:
    """Whether a token is inside a word written with hyphens ("in" of "father-in-law")."""
    before = token.doc[token.i - 1] if token.i else None
    return before is not None and before.tag_ == "HYPH" and not before.whitespace_


def _prepositional_objects(head: Token, nested: bool = True) -> Iterator[tuple[str, Token]]:
    """(preposition, object) of each preposition of ``head`` ("in" Basel, "by" X); for a
    common-noun object with an "of", the objects of that "of" instead ("in the city of"
    Italica); a participle the parse reads as a preposition, with its own ("based on" a
    play), as one; a preposition coordinated with one of them as well ("first to A and
    then to B")."""
    for prep in [p for first in head.children
                 if first.dep_ in PREPOSITION_DEPS and not _in_a_word(first)
                 for p in (first, *(c for c in first.conjuncts if c.pos_ == "ADP"))]:
        if prep.tag_ == "VBN" and not any(c.dep_ == "pobj" for c in prep.children):
            for word, obj in _prepositional_objects(prep, nested):
                yield f"{prep.lower_} {word}", obj
        for pobj in prep.children:
            if pobj.dep_ == "pobj":
                for obj in and_named([*with_conjuncts(pobj), *late_names(head, pobj)]):
                    inner = list(_prepositional_objects(obj, False)) if (
                        nested and obj.pos_ == "NOUN") else []
                    if not any(word == "of" for word, _ in inner):
                        yield prep.lower_, obj
                    for word, target in inner:  # "in the city of", "as a defender for"
                        yield f"{prep.lower_} {_attribute_words(obj)} {word}", target


def _objects(verb: Token, rules: Rules) -> Iterator[tuple[str, Token]]:
    """(predicate, object token) of a verb: direct objects and attributes ("discover"
    polonium, "is a" film), objects of its prepositions ("study under" Johann Bernoulli,
    "was born in" Basel), objects of the prepositions of a noun object or attribute ("is a
    student of" Johann Bernoulli) and of an adjective complement ("was married to" Y)."""
    base = _verb_phrase(verb, rules)
    misread = read_as_modifier(verb)
    if misread is not None:  # "Khan married actress Begum Noor": Begum Noor
        yield from ((base, obj) for obj in with_conjuncts(misread[0]))
        return
    copula = lemma(verb, rules) == "be"
    found = False
    for predicate, obj in _own_objects(verb, base, copula, rules):
        found = True
        yield predicate, obj
    if not found:  # "was born and raised in Basel", "written, produced and directed by"
        for conj in verb.conjuncts:
            shared = list(_prepositional_objects(conj)) if (
                conj.i > verb.i and conj.pos_ == "VERB") else []
            for prep, obj in shared:
                yield f"{base} {prep}", obj
            if shared:
                break


def _own_objects(verb: Token, base: str, copula: bool, rules: Rules
                 ) -> Iterator[tuple[str, Token]]:
    """(predicate, object token) of a verb's own children (see :func:`_objects`). An agent
    the parse hangs on the verb beside its object is the object's: "had musical score by"
    Ilaiyaraaja, not "have by". A "where" clause is in the place it describes ("died in
    Brighton, where she is buried": "is buried in" Brighton)."""
    object_noun = ""
    for child in verb.children:
        if child.dep_ in _OBJECT_DEPS or (copula and second_attribute(child)):
            strays = stray_of_objects(child, verb) if copula else []
            for obj in with_conjuncts(child):
                if obj in strays:
                    continue
                yield (f"{base} {_determiner(obj)}".strip() if copula else base), obj
                name = named(obj)
                if name is not obj:  # "was the violinist Jan Dvorsky"
                    yield f"{base} {_attribute_words(obj)}", name
                if obj.pos_ != "NOUN" and not noun_tagged_adjective(obj):
                    continue
                # "the son of A and the grandson of B": each noun's own "of"
                noun = _attribute_words(obj) if copula else lemma(obj, rules) + _hyphened(obj)
                object_noun = object_noun or f" {_attribute_words(obj)}"
                for prep, target in _prepositional_objects(obj):
                    yield f"{base} {noun} {prep}", target
                if obj is child:
                    for stray in and_named(strays):
                        yield f"{base} {noun} of", stray
        elif child.dep_ == "acomp":
            for prep, obj in _prepositional_objects(child):
                yield f"{base} {child.lower_} {prep}", obj
            for name in misread_to(child):
                yield f"{base} {child.lower_} to", name
    for prep, obj in _prepositional_objects(verb):
        yield f"{base}{object_noun if prep == 'by' else ''} {prep}", obj
    if (verb.dep_ == "relcl" and verb.head.ent_type_ in _WHERE_LABELS
            and any(c.lower_ == "where" for c in verb.children)):
        yield f"{base} in", verb.head  # "She died in Brighton, where she is buried"


def _fronted(noun: Token) -> bool:
    """Whether a noun phrase opens its sentence and a comma ends it before the clause goes
    on ("The daughter of a poet, she ...")."""
    after = noun.right_edge.i + 1
    return (noun.dep_ in ("dep", "npadvmod") and noun.left_edge.i == noun.sent.start
            and noun.head.pos_ in ("VERB", "AUX") and after < len(noun.doc)
            and noun.doc[after].text == "," and noun.head.i > after)


def _determiner(noun: Token) -> str:
    article = next((c.lower_ for c in noun.children if c.dep_ == "det"), "")
    return article if article in ARTICLES else ""


def _kin_after_a_place(noun: Token, rules: Rules) -> bool:
    """"He was born in Linz, the son of a railway worker": an apposition that says whose
    child someone is, after the place "born" names, is the subject's."""
    pobj = noun.head
    return (lemma(noun, rules) in KIN_NOUNS and pobj.dep_ == "pobj" and pobj.pos_ == "PROPN"
            and pobj.head.head.lower_ == "born")


def _appositions(doc: Doc, rules: Rules) -> Iterator[tuple[Token, str, Token]]:
    """(name, predicate, object) of "X, the son of Y," appositions; one to a common noun that
    is a copula's attribute is the copula's subject's ("X was a Welsh prince, son of Y": X,
    but "His brother is Kim Jong-un, now the leader of ...": Kim Jong-un); a noun phrase
    that opens a sentence before a comma is the clause's subject's ("The daughter of A and
    B, she is ..."); one that says whose child someone is after a place is the verb's
    subject's (see :func:`_kin_after_a_place`). A noun with the same preposition that the
    parse hangs on the apposition's object is the same name's too ("the wife of the painter
    A and mother of the actress B": "mother" hung on A)."""
    for token in doc:
        if token.pos_ != "NOUN":
            continue
        if token.dep_ == "appos" and _kin_after_a_place(token, rules):
            described = _subjects(token.head.head.head, rules)
        elif token.dep_ == "appos":
            described = (_copula_subjects(token.head, rules) if token.head.dep_ == "attr"
                         and token.head.pos_ == "NOUN" else [token.head])
        elif _fronted(token):
            described = _clause_subjects(token.head)
        else:
            continue
        # "the wife of the painter A and mother of the actress B": "mother" too, which the
        # parse hangs on A (not the apposition's own conjuncts: "gold in A, B and C")
        conjuncts = {c.i for c in token.conjuncts}
        for noun in (n for n in with_conjuncts(token)
                     if n.i == token.i or (n.pos_ == "NOUN" and n.i not in conjuncts)):
            words = _attribute_words(noun)
            for prep, obj in _prepositional_objects(noun):
                for subject in described:
                    yield subject, f"{words} {prep}", obj


# ---------------------------------------------------------------------------- triplets


def _parse_triplets(doc: Doc, by_token: dict[int, Mention], rules: Rules,
                    facets_of: Mention | None = None) -> Iterator[tuple[Mention, str, Mention]]:
    """Subject-predicate-object triplets of the parse whose two ends are mentions; the parts
    of ``facets_of`` (the topic, when not a person) where a passive names their author (see
    :func:`_facet`)."""
    for verb in doc:
        if verb.pos_ not in ("VERB", "AUX") or not any(c.isalpha() for c in verb.text):
            continue
        owner = facets_of if passive_with_agent(verb) else None
        subjects = [found for found in (_subject_mention(s, by_token, owner) for s in
                                        with_name_conjuncts(_subjects(verb, rules), by_token))
                    if found is not None]
        if not subjects:
            continue
        for predicate, obj in _objects(verb, rules):
            if obj.tag_ in _RELATIVE_PRONOUN_TAGS and verb.dep_ == "relcl":
                # "the architect Max Berg, whom she married": Max Berg; "the soprano Maria
                # Held, with whom he had two sons": Maria Held
                obj = named(verb.head)
            if splits_a_name(obj, by_token):
                continue
            for target, suffix in _object_mentions(obj, by_token):
                yield from ((source, f"{prefix}{predicate}{suffix}", target)
                            for source, prefix in subjects)
    yield from _named_relatives(doc, by_token)
    for subject, predicate, obj in _appositions(doc, rules):
        described_one = by_token.get(subject.i)
        if described_one is not None:
            for described, suffix in _object_mentions(obj, by_token):
                yield described_one, f"{predicate}{suffix}", described


def _mentions_of(tokens: list[Token], by_token: dict[int, Mention]) -> Iterator[Mention]:
    return (by_token[t.i] for t in tokens if t.i in by_token)


def _subject_mention(subject: Token, by_token: dict[int, Mention],
                     facets_of: Mention | None = None) -> tuple[Mention, str] | None:
    """The mention a subject token stands for, and the words its predicates start with: a
    common noun that a specific entity owns is that entity's ("His father was Jan Dvorsky":
    Karel Dvorsky, "father was"; "Euler's teacher was ..."); a part of ``facets_of`` is its
    (see :func:`_facet`)."""
    mention = by_token.get(subject.i)
    owned = _owner(subject, mention, by_token, pronouns=True)
    if owned is not None:
        name = _name_of(subject, by_token)  # "His son Paul Stone is a painter": Paul Stone is
        return (name, "") if name is not None else (owned[0], owned[1] + " ")
    if facets_of is not None and _facet(subject, mention):
        return facets_of, _noun_words(subject, subject.left_edge.i - 1) + " "
    return None if mention is None else (mention, "")


def _name_of(noun: Token, by_token: dict[int, Mention]) -> Mention | None:
    """The name an apposition gives a common noun, with commas or without ("His son Paul
    Stone", "Their son, Peter Stone,"); read only on a noun something owns ("Apink (Korean:
    ...)" is not named "Korean")."""
    if noun.pos_ != "NOUN":
        return None
    for child in noun.children:
        named = by_token.get(child.i) if child.dep_ == "appos" and child.pos_ == "PROPN" else None
        if named is not None and named.specific:
            return named
    return None


def _named_relatives(doc: Doc, by_token: dict[int, Mention]
                     ) -> Iterator[tuple[Mention, str, Mention]]:
    """(owner, noun, name) of a subject that names what its owner's noun is: "His son Paul
    Stone is a painter" gives (the page's person, "son", Paul Stone), "He and his wife, Carla
    Dias, live in Rio" (the person, "wife", Carla Dias); elsewhere in a sentence, a relative
    of the page's person ("films directed by her husband, Aldo Fermi")."""
    for token in doc:
        subject = token.dep_ in SUBJECT_DEPS or (
            token.dep_ == "conj" and token.head.dep_ in SUBJECT_DEPS)
        name = _name_of(token, by_token) if subject or token.lower_ in KIN_NOUNS else None
        owned = None if name is None else _owner(token, by_token.get(token.i), by_token,
                                                 pronouns=True)
        if name is not None and owned is not None and (
                subject or (owned[0].kind == "title" and not _named_before(token, by_token))):
            yield owned[0], owned[1], name


def _named_before(noun: Token, by_token: dict[int, Mention]) -> bool:
    """Whether the sentence names someone or something other than its topic before a noun
    ("the son of the merchant Thomas Halden and his wife Anne Cole": his, Halden's)."""
    return any(m is not None and m.specific and m.kind != "title"
               for m in (by_token.get(i) for i in range(noun.sent.start, noun.i)))


def _facet(subject: Token, mention: Mention | None) -> bool:
    """Whether a subject names a part of the passage's topic rather than an entity: a common
    noun, definite or bare, that nothing owns and no specific mention holds ("The music was
    composed by", "Music was composed by", "The screenplay was written by" in a film's
    passage); not "a song", "this house", "his music"."""
    determiners = [c.lower_ for c in subject.children if c.dep_ in ("det", "poss")]
    return (subject.pos_ == "NOUN" and (mention is None or not mention.specific)
            and determiners in ([], ["the"]))


def _object_mentions(obj: Token, by_token: dict[int, Mention]
                     ) -> list[tuple[Mention, str]]:
    """The mentions an object token stands for, with the words its predicate ends with: its
    own and those of the names coordinated inside it (see
    :func:`~llama_index_graphrag_milvus.extraction.spacy_coordination.with_name_conjuncts`); a
    common noun that a specific entity written as a name or a description owns is the
    owner's ("acted as the film's technical advisor": "act as technical advisor of" the
    film). Not one a pronoun owns: "his", "its", "their" in an object are too often
    another's than the subject's."""
    owned = _owner(obj, by_token.get(obj.i), by_token, pronouns=False)
    if owned is not None:
        return [(owned[0], f" {owned[1]} of")]
    return [(m, "") for m in _mentions_of(with_name_conjuncts([obj], by_token), by_token)]


def _owner(noun: Token, mention: Mention | None, by_token: dict[int, Mention],
           pronouns: bool) -> tuple[Mention, str] | None:
    """The specific entity that owns a common noun without a specific mention of its own
    ("his father" when ``pronouns``, "the film's music"), and the noun's words ("father",
    "music")."""
    if noun.pos_ != "NOUN" or (mention is not None and mention.specific):
        return None
    for child in noun.children:
        owner = (by_token.get(child.i) if child.dep_ == "poss"
                 and (pronouns or child.pos_ != "PRON") else None)
        if owner is not None and owner.specific:
            return owner, _noun_words(noun, child.i)
    return None


def _noun_words(noun: Token, after: int) -> str:
    """A noun phrase's words after token ``after`` up to the noun, lowercased, without
    punctuation, determiners or possessive endings."""
    return " ".join(t.lower_ for t in noun.subtree
                    if after < t.i <= noun.i and not t.is_punct
                    and t.dep_ not in ("det", "case")) + _hyphened(noun)


def _sentence_groups(doc: Doc, mentions: list[Mention]) -> Iterator[list[Mention]]:
    """The mentions of each sentence (by their first token); the whole doc is one sentence
    when the pipeline sets no sentence boundaries."""
    if not doc.has_annotation("SENT_START"):
        yield mentions
        return
    position = 0
    for sentence in doc.sents:
        group = []
        while position < len(mentions) and mentions[position].start < sentence.end:
            group.append(mentions[position])
            position += 1
        yield group


def _cooccurrences(group: list[Mention], linked: set[frozenset[str]], limit: int
                   ) -> Iterator[tuple[Mention, Mention]]:
    """Up to ``limit`` pairs of distinct specific entities of one sentence that no other
    triplet links, nearest pairs first (neighbours, then one apart...). Marks them linked."""
    distinct: dict[str, Mention] = {}
    for mention in group:
        if mention.specific:
            distinct.setdefault(mention.key, mention)
    ordered = list(distinct.values())
    found = 0
    for gap in range(1, len(ordered)):
        for i in range(len(ordered) - gap):
            if found >= limit:
                return
            first, second = ordered[i], ordered[i + gap]
            pair = frozenset((first.key, second.key))
            if pair in linked:
                continue
            linked.add(pair)
            found += 1
            yield first, second


def extract(doc: Doc, rules: Rules, limit: int, title: str | None = None) -> Extraction:
    """At most ``limit`` triplets of a parsed doc and the kinds of their entities: triplets of
    the parse first (subject resolved through the topic, pronouns and descriptions), then
    co-occurrences of specific entities no triplet links (per sentence, bounded). Triplets
    never link an entity to itself, nor two concepts or dates; duplicates are dropped
    case-insensitively."""
    mentions = find_mentions(doc, rules, split_title(title)[0] if title else None)
    topic = find_topic(doc, mentions, title, rules)
    if rules.resolve_references:
        mentions = resolve_references(doc, mentions, topic)
    by_token = {i: m for m in mentions for i in range(m.start, m.end)}
    kinds: dict[str, EntityKind] = {}
    triplets: dict[tuple[str, str, str], Triplet] = {}
    linked: set[frozenset[str]] = set()

    def add(source: Mention, predicate: str, target: Mention) -> None:
        if source.key == target.key or not (source.specific or target.specific):
            return
        predicate = clean_text(predicate)
        if not predicate or len(predicate.encode()) > ENTITY_NAME_MAX_BYTES:
            return
        triplets.setdefault((source.key, predicate.casefold(), target.key),
                            Triplet(source.name, predicate, target.name))
        linked.add(frozenset((source.key, target.key)))
        for mention in (source, target):
            kinds.setdefault(mention.name, mention.kind)

    if topic is not None and topic.alias_name is not None:
        add(topic.mention, "also known as",
            Mention(topic.alias_name, normalize_name(topic.alias_name), "named", -1, -1))
    facets_of = topic.mention if topic is not None and not topic.person else None
    for source, predicate, target in _parse_triplets(doc, by_token, rules, facets_of):
        add(source, predicate, target)
    if rules.max_cooccurrences_per_sentence:
        for group in _sentence_groups(doc, mentions):
            if len(triplets) >= limit:
                break
            for first, second in _cooccurrences(group, linked,
                                                rules.max_cooccurrences_per_sentence):
                add(first, rules.cooccurrence_predicate, second)
    kept = list(triplets.values())[:limit]
    names = {name for t in kept for name in (t.subject, t.object)}
    return Extraction(kept, {name: kind for name, kind in kinds.items() if name in names})
