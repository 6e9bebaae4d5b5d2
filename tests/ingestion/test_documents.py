"""Insert, update and delete by source document; the graph always matches a fresh reopen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.llms import CompletionResponse
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError, MilvusStoreError
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.ingestion.deletion import delete_document
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
from tests.support.fakes import HashEmbedding, ScriptedLLM
from tests.support.markers import LITE_ONLY
from tests.support.spies import count_query_rows

# Splitting and the simulated interruption do not depend on the backend (real kills on a
# server: tests/milvus/test_kills.py).

TRIPLETS = {
    "Euler was a student of Johann Bernoulli.": [
        ["Leonhard Euler", "was a student of", "Johann Bernoulli"]],
    "Euler was born in Basel.": [["Leonhard Euler", "was born in", "Basel"]],
    "Daniel Bernoulli was the son of Johann Bernoulli.": [
        ["Daniel Bernoulli", "was the son of", "Johann Bernoulli"]],
    "Johann Bernoulli taught Leonhard Euler.": [
        ["Leonhard Euler", "was a student of", "Johann Bernoulli"]],
    "Daniel Bernoulli studied fluid dynamics.": [
        ["Daniel Bernoulli", "studied", "fluid dynamics"]],
}


def extractor() -> ScriptedLLM:
    def answer(prompt: str) -> str:
        passage = prompt.rsplit("Passage:", 1)[1]
        triplets = [t for text, ts in TRIPLETS.items() if text in passage for t in ts]
        return json.dumps({"triplets": triplets})

    return ScriptedLLM(answer)


def doc(doc_id: str, *sentences: str) -> Document:
    return Document(text="\n\n".join(sentences), doc_id=doc_id)


SPLITTER = SentenceSplitter(chunk_size=15, chunk_overlap=0, paragraph_separator="\n\n")
EULER = doc("euler", "Euler was a student of Johann Bernoulli.", "Euler was born in Basel.")
DANIEL = doc("daniel", "Daniel Bernoulli was the son of Johann Bernoulli.",
             "Johann Bernoulli taught Leonhard Euler.")


@pytest.fixture
def index(milvus_uri: str) -> GraphRAGIndex:
    return GraphRAGIndex.from_documents([EULER, DANIEL], llm=extractor(), uri=milvus_uri,
                                        embed_model=HashEmbedding(), transformations=[SPLITTER])


def signature(index: GraphRAGIndex) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """Every relation with its endpoints and passages, as the in-memory graph holds them."""
    graph = index.graph
    passages = graph.passages_of(np.arange(graph.num_relations))
    return {(graph.relation_ids[r], graph.entity_ids[int(graph.endpoints[r, 0])],
             graph.entity_ids[int(graph.endpoints[r, 1])], tuple(sorted(passages[r])))
            for r in range(graph.num_relations)}


def fresh(index: GraphRAGIndex) -> GraphRAGIndex:
    return GraphRAGIndex(uri=index.store.uri, embed_model=HashEmbedding())


def counts(index: GraphRAGIndex) -> tuple[int, int, int]:
    store = index.store
    return (store.count(store.entity_collection), store.count(store.relation_collection),
            store.count(store.passage_collection))


def all_texts(index: GraphRAGIndex, query: str) -> set[str]:
    hits = index.as_retriever(hops=2, similarity_top_k=50).retrieve(query)
    hits += index.as_naive_retriever(similarity_top_k=10).retrieve(query)
    return {h.node.get_content() for h in hits}


class AsyncOnlyLLM(ScriptedLLM):
    """The extraction LLM of the async twins: its sync API fails, so a twin that used it
    would leave its passages without triplets."""

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any
                 ) -> CompletionResponse:
        raise AssertionError("the sync LLM API was used")


def async_extractor() -> AsyncOnlyLLM:
    return AsyncOnlyLLM(extractor()._script)


@LITE_ONLY
async def test_async_twins_write_what_the_sync_methods_write(index: GraphRAGIndex,
                                                             tmp_path: Path) -> None:
    twin = GraphRAGIndex(uri=str(tmp_path / "twin.db"), embed_model=HashEmbedding())
    await twin.ainsert_documents([EULER, DANIEL], llm=async_extractor(),
                                 transformations=[SPLITTER])
    assert signature(twin) == signature(index) and counts(twin) == counts(index)
    new_daniel = doc("daniel", "Daniel Bernoulli studied fluid dynamics.")
    index.update_ref_doc(new_daniel, llm=extractor(), transformations=[SPLITTER])
    await twin.aupdate_ref_doc(new_daniel, llm=async_extractor(), transformations=[SPLITTER])
    assert signature(twin) == signature(index) and counts(twin) == counts(index)
    assert (await twin.adelete_ref_doc("euler")) == index.delete_ref_doc("euler")
    assert signature(twin) == signature(index) and counts(twin) == counts(index)
    await twin.ainsert(EULER, llm=async_extractor(), transformations=[SPLITTER])
    index.insert(EULER, llm=extractor(), transformations=[SPLITTER])
    nodes = [TextNode(text="Leibniz wrote to Johann Bernoulli.", metadata={
        TRIPLETS_KEY: [["Gottfried Leibniz", "wrote to", "Johann Bernoulli"]]})]
    assert (await twin.ainsert_nodes(nodes)).relations == index.insert_nodes(nodes).relations
    data = [("Basel is in Switzerland.", [("Basel", "is in", "Switzerland")])]
    assert (await twin.ainsert_triplets(data)).relations == index.insert_triplets(
        data).relations
    assert signature(twin) == signature(index) and counts(twin) == counts(index)
    assert signature(twin) == signature(fresh(twin))
    await twin.aclose()


def test_the_names_of_0_1_0_are_aliases_of_core_s() -> None:
    assert GraphRAGIndex.delete is GraphRAGIndex.delete_ref_doc
    assert GraphRAGIndex.update is GraphRAGIndex.update_ref_doc


@LITE_ONLY
def test_maintenance_arguments_of_other_indexes_are_refused_or_harmless(
        index: GraphRAGIndex) -> None:
    with pytest.raises(InvalidInputError, match="insert_nodes takes no other arguments"):
        index.insert_nodes([], storage_context=None)
    with pytest.raises(InvalidInputError, match=r"unexpected arguments \['chunk_size'\]"):
        index.insert(EULER, chunk_size=10)  # type: ignore[call-arg]
    # core's delete_from_docstore: there is no docstore, Milvus holds everything
    assert index.delete_ref_doc("euler", delete_from_docstore=True).passages == 2


@LITE_ONLY
def test_documents_are_split_and_linked(index: GraphRAGIndex) -> None:
    # entities: Euler, Johann, Basel, Daniel; relations: student (in 2 passages), born, son
    assert counts(index) == (4, 3, 4)
    assert signature(index) == signature(fresh(index))
    passages = {p.node_id for p in index.store.document_passages("euler")}
    assert len(passages) == 2


def test_delete_removes_what_only_the_document_supported(index: GraphRAGIndex) -> None:
    stats = index.delete_ref_doc("euler")
    assert (stats.passages, stats.relations_deleted, stats.relations_updated,
            stats.entities_deleted) == (2, 1, 1, 1)
    assert counts(index) == (3, 2, 2)  # Basel and "born in" are gone
    store = index.store
    assert store.get_rows(store.entity_collection, [entity_id("Basel")], ["id"]) == {}
    # the shared relation stays, linked to DANIEL's passage only
    student = [r for r in signature(index) if r[1] == entity_id("Leonhard Euler")]
    assert len(student) == 1 and len(student[0][3]) == 1
    texts = all_texts(index, "Where was Euler born? Who taught Euler?")
    assert "Euler was born in Basel." not in texts
    assert "Euler was a student of Johann Bernoulli." not in texts
    assert "Johann Bernoulli taught Leonhard Euler." in texts
    assert signature(index) == signature(fresh(index))


def test_update_replaces_the_document(index: GraphRAGIndex) -> None:
    before = signature(index)
    index.update_ref_doc(doc("daniel", "Daniel Bernoulli studied fluid dynamics."),
                         llm=extractor(), transformations=[SPLITTER])
    after = signature(index)
    assert after != before
    assert signature(index) == signature(fresh(index))
    # "son of" only DANIEL supported; the shared "student of" keeps EULER's passage only
    assert counts(index) == (5, 3, 3)
    texts = all_texts(index, "Daniel Bernoulli son fluid dynamics")
    assert "Daniel Bernoulli studied fluid dynamics." in texts
    assert not any("son of" in t for t in texts)


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_an_update_the_llm_cannot_extract_changes_nothing(index: GraphRAGIndex,
                                                          twin: str) -> None:
    """The LLM down (its retries spent): the update would have stored the new passages
    without triplets, deleting the document's relations, and returned as if all went well."""
    import asyncio

    from llama_index_graphrag_milvus.errors import ExtractionError
    from llama_index_graphrag_milvus.extraction import TripletExtractor

    async def no_wait(seconds: float) -> None:
        return None

    down = TripletExtractor(llm=ScriptedLLM(lambda prompt: ConnectionError("LLM API down")),
                            sleep=no_wait)
    before = (signature(index), counts(index))
    new = doc("euler", "Euler was a student of Johann Bernoulli.", "Euler lived in Berlin.")
    with pytest.raises(ExtractionError, match=r"could not extract 2 of the 2 passages .* "
                                              r"ConnectionError: LLM API down"):
        if twin == "sync":
            index.update_ref_doc(new, kg_extractor=down, transformations=[SPLITTER])
        else:
            asyncio.run(index.aupdate_ref_doc(new, kg_extractor=down,
                                              transformations=[SPLITTER]))
    assert (signature(index), counts(index)) == before


def test_delete_then_reinsert_restores_the_same_store(index: GraphRAGIndex) -> None:
    original = signature(index)
    index.delete_ref_doc("daniel")
    index.insert(DANIEL, llm=extractor(), transformations=[SPLITTER])
    assert signature(index) == original
    assert counts(index) == (4, 3, 4)


def test_unknown_and_hostile_document_ids_delete_nothing(index: GraphRAGIndex) -> None:
    before = (counts(index), signature(index))
    for hostile in ["nope", 'euler" or doc_id != "', "euler\\", '" || true || "', "*"]:
        stats = index.delete(hostile)
        assert stats.passages == 0
    assert (counts(index), signature(index)) == before


@LITE_ONLY
def test_an_interrupted_delete_can_be_run_again(index: GraphRAGIndex,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store = index.store
    original = store.delete_rows

    def fail_on_passages(collection: str, ids: list[str]) -> None:
        if collection == store.passage_collection:
            raise MilvusStoreError("simulated crash before the passages were deleted")
        original(collection, ids)

    monkeypatch.setattr(store, "delete_rows", fail_on_passages)
    with pytest.raises(MilvusStoreError, match="simulated crash"):
        delete_document(store, "euler")
    monkeypatch.setattr(store, "delete_rows", original)
    stats = index.delete("euler")
    assert stats.passages == 2
    assert counts(index) == (3, 2, 2)
    assert signature(index) == signature(fresh(index))


@pytest.mark.milvus
def test_entities_in_use_reads_a_window_per_query_whatever_a_hubs_degree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which entities a delete leaves in use is read in windows: a hub costs one window,
    the others are still found, excluded relations are left out in the filter, and the
    answer equals the whole read's."""
    from llama_index_graphrag_milvus.milvus import writes

    hub = [(f"Hub links item {i}.", [["Hub", "links", f"Item {i}"]]) for i in range(30)]
    small = [("Ada met Bob.", [["Ada", "met", "Bob"]]), ("Cy met Dee.", [["Cy", "met", "Dee"]])]
    index = GraphRAGIndex.from_triplets([*hub, *small], uri=str(tmp_path / "hub.db"),
                                        embed_model=HashEmbedding(dim=16))
    try:
        store = index.store
        asked = [entity_id(n) for n in ("Hub", "Ada", "Cy", "Item 3", "Nobody")]
        relations = {r["id"]: r for r in store.read_all(
            store.relation_collection, ["subject_id", "object_id"])}
        cy_met_dee = next(rid for rid, r in relations.items()
                          if r["subject_id"] == entity_id("Cy"))
        item_3 = next(rid for rid, r in relations.items()
                      if r["object_id"] == entity_id("Item 3"))
        excluding = {cy_met_dee, item_3}
        whole = store._entities_in_use_read_whole(asked, excluding)
        assert whole == {entity_id("Hub"), entity_id("Ada")}
        monkeypatch.setattr(writes, "IN_USE_WINDOW", 4)
        reads = count_query_rows(store.client, monkeypatch)
        assert store.entities_in_use(asked, excluding) == whole
        assert reads and max(reads) <= 4 and sum(reads) < 30  # never the hub's 30 rows
        assert store.entities_in_use(asked) == {*whole, entity_id("Cy"), entity_id("Item 3")}
        monkeypatch.setattr(writes, "MAX_EXCLUDED_IN_FILTER", 1)  # too long a filter
        assert store.entities_in_use(asked, excluding) == whole
    finally:
        index.close()


def test_documents_are_checked_before_any_llm_call(milvus_uri: str,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """An empty document made the LLM extract every passage, then refused the batch as
    "passage 1 is empty"; a lone surrogate raised UnicodeEncodeError from core's splitter;
    extraction_workers="4" was taken."""
    calls: list[str] = []

    def answer(prompt: str) -> str:
        calls.append(prompt)
        return extractor()._script(prompt)  # type: ignore[operator]

    with GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding()) as index:
        for bad, message in ((doc("x", "Euler \ud800"), "UTF-8 cannot encode"),):
            with pytest.raises(InvalidInputError, match=message):
                index.insert_documents([EULER, bad], llm=ScriptedLLM(answer))
        with pytest.raises(InvalidInputError, match="extraction_workers must be an integer"):
            index.insert_documents([EULER], llm=ScriptedLLM(answer), extraction_workers="4")
        assert calls == []
        stats = index.insert_documents([Document(text="", doc_id="blank"), EULER],
                                       llm=ScriptedLLM(answer), transformations=[SPLITTER])
        assert stats.passages == 2 and len(calls) == 2
        assert "hold no text and give no passage: 'blank'" in caplog.text
