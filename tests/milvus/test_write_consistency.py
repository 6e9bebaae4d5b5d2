"""Writes on a server: no flush at ``Strong`` (the next query finds the write all the same),
and a write's own reads at ``Strong`` whatever the index's level, so that back-to-back writes
sharing an entity keep every link even at ``Bounded``, where nothing waits for a write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pymilvus import MilvusClient

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.milvus.writes import StoreWrites
from tests.support.fakes import HashEmbedding
from tests.support.markers import SERVER_ONLY

pytestmark = [pytest.mark.milvus, SERVER_ONLY]


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The collections every client of this process flushes (the calls still run)."""
    seen: list[str] = []
    real = MilvusClient.flush

    def counting(self: MilvusClient, collection_name: str, **kwargs: Any) -> None:
        seen.append(collection_name)
        real(self, collection_name, **kwargs)

    monkeypatch.setattr(MilvusClient, "flush", counting)
    yield seen


def hub_rows(index: GraphRAGIndex, hub: str) -> dict[str, list[str]]:
    """The passage lists of the relations around ``hub`` and of its entity row, read at
    ``Strong`` (the test's own view, whatever the index's level)."""
    store = index.store
    entity = store.client.query(store.entity_collection, filter=f'name == "{hub}"',
                                output_fields=["id", "passage_ids"], consistency_level="Strong")
    assert len(entity) == 1, entity
    relations = store.client.query(
        store.relation_collection, filter=f'subject_id == "{entity[0]["id"]}"',
        output_fields=["id", "passage_ids"], consistency_level="Strong")
    return {"entity": sorted(entity[0]["passage_ids"]),
            "relations": sorted(p for row in relations for p in row["passage_ids"])}


def test_strong_writes_are_not_flushed_and_read_at_once(
        milvus_uri: str, embed_model: HashEmbedding, flushes: list[str]) -> None:
    index = GraphRAGIndex.from_triplets(
        [("Euler studied under Bernoulli.", [("Euler", "studied under", "Bernoulli")])],
        uri=milvus_uri, embed_model=embed_model, graph="milvus")
    flushes.clear()
    index.insert_triplets([("Daniel Bernoulli was the son of Johann.",
                            [("Daniel Bernoulli", "son of", "Johann")])])
    assert flushes == []
    found = index.as_retriever(similarity_top_k=2).retrieve("Who was the son of Johann?")
    assert "Daniel Bernoulli was the son of Johann." in [n.node.get_content() for n in found]
    assert index.store.count(index.store.passage_collection) == 2


def test_back_to_back_writes_keep_every_link_at_bounded(
        milvus_uri: str, embed_model: HashEmbedding, flushes: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    GraphRAGIndex.from_triplets([("Seed.", [("Seed", "is", "seed")])], uri=milvus_uri,
                                embed_model=embed_model).close()
    index = GraphRAGIndex(uri=milvus_uri, embed_model=embed_model,
                          consistency_level="Bounded")
    index.insert_triplets([("Hub met A.", [("Hub", "met", "A")])])
    assert flushes, "a write at Bounded ends with a flush"
    # without it, the next write's reads must still see this one: nothing waits here
    monkeypatch.setattr(StoreWrites, "flush", lambda self: None)
    passages = ["Hub met A."]
    for name in "BCDE":
        text = f"Hub met {name}."
        index.insert_triplets([(text, [("Hub", "met", name)])])
        passages.append(text)
    ids = {n.get_content(): n.node_id for n in index.store.all_passages()}
    expected = sorted(ids[text] for text in passages)
    assert hub_rows(index, "Hub") == {"entity": expected, "relations": expected}
