"""Writes that overlap in one process (threads, ``asyncio.gather``, two index objects of one
graph) keep every link they write, and an update whose new content cannot be embedded
deletes nothing."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HashEmbedding, ScriptedLLM
from tests.support.markers import LITE_ONLY

# the write lock is the process's, whatever the backend: Milvus Lite only
pytestmark = [pytest.mark.milvus, LITE_ONLY]

WRITERS = 8
SHARED = ("Ada Lovelace", "knew", "Charles Babbage")


def note(i: int) -> tuple[TextNode, list[tuple[str, str, str]]]:
    """A passage of its own document (``note-i``) stating the shared relation and one of
    its own."""
    node = TextNode(text=f"Note {i}. Ada Lovelace knew Charles Babbage. Ada Lovelace read "
                         f"paper {i}.")
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"note-{i}")
    return node, [SHARED, ("Ada Lovelace", "read", f"paper {i}")]


def shared_links(index: GraphRAGIndex) -> tuple[int, int]:
    """How many passages the shared relation and its subject list."""
    store = index.store
    relation = Triplet(*SHARED).id
    rows = store.get_rows(store.relation_collection, [relation], ["passage_ids"])
    ada = store.get_rows(store.entity_collection, [entity_id("Ada Lovelace")],
                         ["passage_ids"])
    return (len(rows[relation]["passage_ids"]),
            len(ada[entity_id("Ada Lovelace")]["passage_ids"]))


def run_threads(target: Any, count: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # collected and asserted on
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_writes_from_threads_keep_every_link(milvus_uri: str) -> None:
    with GraphRAGIndex.from_triplets([("Basel is in Switzerland.",
                                       [("Basel", "is in", "Switzerland")])],
                                     uri=milvus_uri, embed_model=HashEmbedding()) as index:
        errors = run_threads(lambda i: index.insert_triplets([note(i)]), WRITERS)
        assert errors == []
        assert shared_links(index) == (WRITERS, WRITERS)
        assert index.store.count(index.store.passage_collection) == WRITERS + 1


async def test_gathered_async_writes_and_deletes_keep_every_link(milvus_uri: str) -> None:
    index = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding())
    try:
        await asyncio.gather(*(index.ainsert_triplets([note(i)]) for i in range(WRITERS)))
        assert shared_links(index) == (WRITERS, WRITERS)
        # half deleted while the other half is written again: the survivors stay linked
        await asyncio.gather(*(index.adelete_ref_doc(f"note-{i}") if i % 2
                               else index.ainsert_triplets([note(i)])
                               for i in range(WRITERS)))
        assert shared_links(index) == (WRITERS // 2, WRITERS // 2)
    finally:
        index.close()


def test_a_reader_that_sees_the_collections_being_made_waits_for_them(
        milvus_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of the process that sees the relation collection while a write creates
    the collections (``open_if_created``, which every write's preparation calls) waits for
    the creation instead of opening them beside it: when the relation collection was made
    before the passage collection, it made the second too, and the creation failed with
    "collection 'graphrag_passages' already exists" (a gathered first ingestion, in CI)."""
    index = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64))
    store = index.store
    opening, go_on, opened = threading.Event(), threading.Event(), []
    create, open_ = type(store)._create, type(store)._open_passages

    def paused_create(self: Any, name: str, *args: Any, **kwargs: Any) -> None:
        create(self, name, *args, **kwargs)
        if name == self.relation_collection:  # held before the creation returns
            opening.set()
            go_on.wait(timeout=30)

    def recorded_open(self: Any, dim: int) -> None:
        opened.append(threading.current_thread().name)
        open_(self, dim)

    monkeypatch.setattr(type(store), "_create", paused_create)
    monkeypatch.setattr(type(store), "_open_passages", recorded_open)
    errors: list[BaseException] = []

    def guarded(call: Any) -> Any:
        def run() -> None:
            try:
                call()
            except BaseException as exc:  # collected and asserted on
                errors.append(exc)
        return run

    creator = threading.Thread(target=guarded(lambda: store.create(64)), name="creator")
    creator.start()
    assert opening.wait(timeout=30)
    reader = threading.Thread(target=guarded(store.open_if_created), name="reader")
    reader.start()
    reader.join(timeout=0.5)  # it waits for the creation (without the lock it opened here)
    go_on.set()
    creator.join()
    reader.join()
    try:
        assert errors == [] and opened == ["creator"]
        assert store.dim == 64 and store.passage_collection in store.client.list_collections()
    finally:
        index.close()


def test_two_index_objects_of_one_graph_write_in_turn(milvus_uri: str) -> None:
    first = GraphRAGIndex.from_triplets([note(0)], uri=milvus_uri,
                                        embed_model=HashEmbedding())
    second = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding())
    try:
        assert first.store.gate is second.store.gate
        errors = run_threads(lambda i: (first if i % 2 else second).insert_triplets(
            [note(i + 1)]), WRITERS)
        assert errors == []
        assert shared_links(first) == (WRITERS + 1, WRITERS + 1)
    finally:
        second.close()
        first.close()


class FlakyEmbedding(HashEmbedding):
    """Fails while ``failing`` is set, as a rate-limited embedding service does."""

    failing: bool = False

    def _get_text_embedding(self, text: str) -> list[float]:
        if self.failing:
            raise ConnectionError("429 Too Many Requests")
        return super()._get_text_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._get_text_embedding(text) for text in texts]


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_an_update_whose_embedding_fails_keeps_the_old_version(milvus_uri: str,
                                                               twin: str) -> None:
    embed_model = FlakyEmbedding()
    llm = ScriptedLLM(lambda prompt: json.dumps({"triplets": [["Acme", "builds", "boats"]]}))
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
        index.insert(Document(text="Acme builds rockets.", doc_id="acme.md"), llm=llm)
        before = index.store.document_passages("acme.md")
        embed_model.failing = True
        new = Document(text="Acme builds boats now.", doc_id="acme.md")
        with pytest.raises(ConnectionError):
            if twin == "sync":
                index.update_ref_doc(new, llm=llm)
            else:
                asyncio.run(index.aupdate_ref_doc(new, llm=llm))
        embed_model.failing = False
        assert index.store.document_passages("acme.md") == before
        hits = index.as_naive_retriever(similarity_top_k=1).retrieve("Acme rockets")
        assert [h.node.get_content() for h in hits] == ["Acme builds rockets."]
        index.update_ref_doc(new, llm=llm)  # the same update, the service back
        assert [p.get_content() for p in index.store.document_passages("acme.md")] == [
            "Acme builds boats now."]


ROCKETS = "Acme builds rockets in a large factory near the old harbour of the city."
CARS = "Acme builds cars in a small workshop behind the railway station of the town."
BOATS = "Acme builds boats in a wooden shed on the shore of the northern lake."


def test_an_update_overwrites_the_passages_it_keeps_in_place(
        milvus_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A passage the new version has again is never deleted (a reader would find the
    document missing meanwhile); the one it dropped goes, with what only it supported."""
    llm = ScriptedLLM(lambda prompt: json.dumps({"triplets": [
        ["Acme", "builds", "boats" if "boats" in prompt else "rockets" if "rockets" in prompt
         else "cars"]]}))
    with GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding()) as index:
        document = f"{ROCKETS}\n\n{CARS}"
        index.insert(Document(text=document, doc_id="acme.md"), llm=llm,
                     transformations=[SentenceSplitter(chunk_size=24, chunk_overlap=0,
                                                       paragraph_separator="\n\n")])
        before = {p.get_content(): p.node_id for p in index.store.document_passages("acme.md")}
        assert len(before) == 2
        deleted: list[str] = []
        store = index.store
        original = store.delete_rows

        def spy(collection: str, ids: list[str]) -> None:
            if collection == store.passage_collection:
                deleted.extend(ids)
            original(collection, ids)

        monkeypatch.setattr(store, "delete_rows", spy)
        index.update_ref_doc(Document(text=f"{ROCKETS}\n\n{BOATS}",
                                      doc_id="acme.md"), llm=llm,
                             transformations=[SentenceSplitter(
                                 chunk_size=24, chunk_overlap=0, paragraph_separator="\n\n")])
        assert deleted == [before[CARS]]
        after = {p.get_content() for p in store.document_passages("acme.md")}
        assert after == {ROCKETS, BOATS}
        assert {r["text"] for r in store.read_all(store.relation_collection, ["text"])} == {
            "Acme builds rockets", "Acme builds boats"}
