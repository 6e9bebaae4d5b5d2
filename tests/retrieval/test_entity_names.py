"""Entities the question names word for word join the entity seeds (``match_entity_names``):
found where the vector search of the question misses them (two names in one question and
``entity_top_k=1``), scored like an entity hit, in both graph modes, sync and async, in
scripts without spaces, never from another tenant's entities, and not when an LLM names
the entities."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.words import MAX_NAME_SPANS, name_spans
from tests.retrieval.test_tenant_isolation import ACME, GLOBEX
from tests.retrieval.test_unspaced_scripts import CHINESE, JAPANESE
from tests.support.fakes import BigramEmbedding, HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus

BROTHERS = "Was Jakob Bernoulli older than Johann Bernoulli?"
"""Names two entities; with one entity hit, the vector search finds one at most (by the
test embedding three Bernoullis tie: which one is the id's tie break, not asserted)."""


def seeds(index: GraphRAGIndex, question: str, **kwargs: Any) -> list[tuple[str, str]]:
    """``(name, searched)`` of the entity seeds of a k-hop retrieval with one entity hit."""
    retriever = index.as_retriever(method="passage", entity_top_k=1, similarity_top_k=3,
                                   **kwargs)
    return [(s.name, s.searched) for s in retriever.explain(question).entity_seeds]


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_the_entities_a_question_names_join_its_seeds(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str) -> None:
    index = shared_family_index if mode == "memory" else served_family_index
    vector_only = seeds(index, BROTHERS, match_entity_names=False)
    assert len(vector_only) == 1 and vector_only[0][1] == BROTHERS
    named = seeds(index, BROTHERS)
    assert named[0] == vector_only[0]  # the entity hit first, then the names, longest first
    assert named[1:] == [(name, name) for name in ("Johann Bernoulli", "Jakob Bernoulli")
                         if name != vector_only[0][0]]


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_a_named_seed_is_scored_as_the_entity_search_scores_it(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str) -> None:
    index = shared_family_index if mode == "memory" else served_family_index
    named = index.as_retriever(method="ppr", entity_top_k=1).explain(BROTHERS).entity_seeds
    every = index.as_retriever(method="ppr", entity_top_k=20, match_entity_names=False
                               ).explain(BROTHERS).entity_seeds
    by_vector = {s.name: s.score for s in every}
    assert {s.name: s.score for s in named[1:]} == pytest.approx(
        {name: by_vector[name] for name in ("Johann Bernoulli", "Jakob Bernoulli")}, abs=1e-5)


def test_the_async_twin_finds_the_same_seeds_and_passages(
        shared_family_index: GraphRAGIndex,
        served_family_index: GraphRAGIndex) -> None:
    for index in (shared_family_index, served_family_index):
        retriever = index.as_retriever(method="pcst", entity_top_k=1, similarity_top_k=3)
        assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(BROTHERS))] == \
            [n.node.node_id for n in retriever.retrieve(BROTHERS)]
        explained = asyncio.run(retriever.aexplain(BROTHERS))
        assert [s.name for s in explained.entity_seeds] == \
            [s.name for s in retriever.explain(BROTHERS).entity_seeds]


def test_a_longer_name_wins_over_the_names_inside_it(tmp_path: Path) -> None:
    index = GraphRAGIndex.from_triplets(
        [("Kim Jong-il succeeded Kim Il-sung. Kim is a common surname.",
          [("Kim Jong-il", "succeeded", "Kim Il-sung"), ("Kim", "is a", "common surname")])],
        uri=str(tmp_path / "kim.db"), embed_model=HashEmbedding(dim=64))
    try:
        question = "Did KIM JONG-IL or Kim Il-sung rule longer?"
        # every entity scores 0 for this question by the test embedding: the one entity hit
        # is the ids' tie break, so only the names (searched by their span) are asserted
        named = [pair for pair in seeds(index, question) if pair[1] != question]
        assert {"Kim Jong-il", "Kim Il-sung"} <= {name for name, _ in seeds(index, question)}
        assert all(span.casefold() != "kim" for _, span in named)  # inside a longer name
        assert set(named) <= {("Kim Jong-il", "KIM JONG-IL"), ("Kim Il-sung", "Kim Il-sung")}
    finally:
        index.close()


@pytest.mark.parametrize("data", [JAPANESE, CHINESE], ids=["japanese", "chinese"])
def test_names_in_scripts_without_spaces_are_found_in_the_question(
        data: dict[str, Any], tmp_path: Path) -> None:
    index = GraphRAGIndex.from_triplets(data["passages"], uri=str(tmp_path / "script.db"),
                                        embed_model=BigramEmbedding())
    try:
        teacher, brother = data["teacher"], data["passages"][2][1][0][0]
        question = (f"{brother}と{teacher}はどちらが年上ですか？" if data is JAPANESE
                    else f"{brother}和{teacher}谁年纪大？")
        vector_only = {name for name, _ in seeds(index, question, match_entity_names=False)}
        [missed] = {teacher, brother} - vector_only  # the vector search alone misses one
        found = dict(seeds(index, question))
        assert set(found) == vector_only | {missed} and found[missed] == missed
    finally:
        index.close()


def test_no_entity_of_another_tenant_is_named(tmp_path: Path) -> None:
    embed_model = HashEmbedding(dim=64)
    both = GraphRAGIndex.from_triplets([*ACME, *GLOBEX], uri=str(tmp_path / "t.db"),
                                       embed_model=embed_model)
    alone = GraphRAGIndex.from_triplets(ACME, uri=str(tmp_path / "t.db"),
                                        embed_model=embed_model, collection_prefix="alone")
    served = GraphRAGIndex(uri=str(tmp_path / "t.db"), embed_model=embed_model,
                           collection_prefix=both.store.prefix, graph="milvus")
    acme = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="acme")])
    question = "Did Moreau Holdings or Alice Moreau advise Johann Bernoulli?"
    try:
        assert entity_id("Moreau Holdings") in {  # globex's entity, named
            s.id for s in both.as_retriever(method="ppr").explain(question).entity_seeds}
        expected = [n.node.node_id for n in alone.as_retriever(method="ppr").retrieve(question)]
        for index in (both, served):
            retriever = index.as_retriever(method="ppr", filters=acme)
            named = {s.id for s in retriever.explain(question).entity_seeds}
            assert entity_id("Moreau Holdings") not in named
            assert {entity_id("Alice Moreau"), entity_id("Johann Bernoulli")} <= named
            assert [n.node.get_content() for n in retriever.retrieve(question)] == [
                n.get_content() for n in alone.store.get_passages(expected)]
    finally:
        for index in (served, alone, both):
            index.close()


def test_ner_names_replace_the_names_matched_as_words(shared_family_index: GraphRAGIndex
                                                       ) -> None:
    llm = ScriptedLLM(lambda _prompt: '{"named_entities": ["Jakob Bernoulli"]}')
    found = seeds(shared_family_index, BROTHERS, llm=llm)
    assert found == [("Jakob Bernoulli", "Jakob Bernoulli")]


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_match_entity_names_takes_a_bool(shared_family_index: GraphRAGIndex, value: Any
                                         ) -> None:
    with pytest.raises(InvalidInputError, match="match_entity_names"):
        shared_family_index.as_retriever(match_entity_names=value)
    assert shared_family_index.as_retriever(match_entity_names=False).describe()[
        "match_entity_names"] is False


def test_a_milvus_entity_search_takes_every_span_of_a_long_question(
        family_index: GraphRAGIndex) -> None:
    """The names are looked up by one search among up to ``MAX_NAME_SPANS`` entity ids (a
    question with a long run of an unspaced script has that many), on Lite and a server,
    with the graph served and with the entity search sent to Milvus."""
    question = BROTHERS + "".join(chr(0x4E00 + i) for i in range(200))
    assert len(name_spans(question)) == MAX_NAME_SPANS
    served = GraphRAGIndex(uri=family_index.store.uri, embed_model=family_index.embed_model,
                           collection_prefix=family_index.store.prefix, graph="milvus")
    try:
        for index, kwargs in ((served, {}), (family_index, {"entity_search": "milvus"})):
            names = {name for name, _ in seeds(index, question, **kwargs)}
            assert {"Johann Bernoulli", "Jakob Bernoulli"} <= names
    finally:
        served.close()
