"""A passage node's own ``embedding`` (an ingestion pipeline's embedding step made it) is used
as its passage vector, as core's ``VectorStoreIndex`` uses it: the model embeds only the
passages without one, and the entity and relation texts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus import (
    EmbeddingDimensionError,
    EmbeddingModelError,
    GraphRAGIndex,
    InvalidInputError,
)
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
from tests.support.fakes import HashEmbedding
from tests.support.markers import LITE_ONLY

FACTS = [("Daniel Bernoulli was the son of Johann Bernoulli.",
          ["Daniel Bernoulli", "was the son of", "Johann Bernoulli"]),
         ("Johann Bernoulli taught Leonhard Euler.",
          ["Johann Bernoulli", "taught", "Leonhard Euler"])]


class CountingEmbedding(HashEmbedding):
    """HashEmbedding that records every text it embeds."""

    seen: list[str] = Field(default_factory=list)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return [self._vector(text) for text in texts]


def node(text: str, triplet: list[str], embedding: Any = None) -> TextNode:
    return TextNode(text=text, metadata={TRIPLETS_KEY: [triplet]}, embedding=embedding)


def stored_vectors(index: GraphRAGIndex) -> dict[str, list[float]]:
    rows = index.store.client.query(index.store.passage_collection, filter='id != ""',
                                    output_fields=["text", "embedding"],
                                    consistency_level="Strong")
    return {row["text"]: list(row["embedding"]) for row in rows}


@LITE_ONLY
def test_a_nodes_own_embedding_is_its_passage_vector(milvus_uri: str) -> None:
    model = CountingEmbedding()
    own = HashEmbedding()._vector("a pipeline's vector of another text")
    index = GraphRAGIndex(uri=milvus_uri, embed_model=model)
    index.insert_nodes([node(*FACTS[0], embedding=own), node(*FACTS[1])])
    vectors = stored_vectors(index)
    assert np.allclose(vectors[FACTS[0][0]], own, atol=1e-6)
    assert np.allclose(vectors[FACTS[1][0]], model._vector(FACTS[1][0]), atol=1e-6)
    # the model embedded the passage without a vector, never the one with it
    assert not any(FACTS[0][0] in text for text in model.seen)
    assert any(FACTS[1][0] in text for text in model.seen)
    # every passage's vector is searched: the own vector finds its passage first
    hits = index.as_naive_retriever(similarity_top_k=1).retrieve(
        "a pipeline's vector of another text")
    assert hits[0].node.get_content() == FACTS[0][0]

    async def ainsert() -> None:  # the async twin uses it too
        await index.ainsert_nodes([node("Euler was born in Basel.",
                                        ["Leonhard Euler", "born in", "Basel"], embedding=own)])

    asyncio.run(ainsert())
    assert np.allclose(stored_vectors(index)["Euler was born in Basel."], own, atol=1e-6)


@LITE_ONLY
@pytest.mark.parametrize("embedding, error, match", [
    ([float("nan")] * 64, InvalidInputError, "NaN or infinite"),
    ([1e39] * 64, InvalidInputError, "NaN or infinite"),
    ([], InvalidInputError, "lengths"),
    ([0.1] * 8, EmbeddingDimensionError, r"node.embedding .* gives 8-dimensional vectors"),
])
def test_a_bad_own_embedding_is_refused_and_nothing_is_stored(
        make_index: Callable[..., GraphRAGIndex], embedding: list[Any],
        error: type[Exception], match: str) -> None:
    index = make_index([(FACTS[0][0], [FACTS[0][1]])])
    before = stored_vectors(index)
    bad = node("Euler was born in Basel.", ["Leonhard Euler", "born in", "Basel"])
    bad.embedding = embedding  # pydantic checks the type (numbers), not the values
    with pytest.raises(error, match=match):
        index.insert_nodes([node(*FACTS[1]), bad])
    assert stored_vectors(index) == before


@LITE_ONLY
def test_own_embeddings_of_another_dimension_than_the_index_are_refused(
        milvus_uri: str) -> None:
    # every passage brings one: the model is asked for entities and relations only
    index = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding())
    with pytest.raises(EmbeddingModelError, match="passages' own embeddings"):
        index.insert_nodes([node(*FACTS[0], embedding=[0.5] * 16)])
    with pytest.raises(EmbeddingDimensionError,
                       match="has 16 dimensions, and the embedding model gives 64"):
        index.insert_nodes([node(*FACTS[0], embedding=[0.5] * 16), node(*FACTS[1])])
    assert index.store.dim is None  # nothing created
    index.insert_nodes([node(*FACTS[0])])
    with pytest.raises(EmbeddingDimensionError, match=r"node\.embedding"):
        index.insert_nodes([node(*FACTS[1], embedding=[0.5] * 16)])


@LITE_ONLY
def test_chunks_do_not_take_their_documents_embedding(milvus_uri: str) -> None:
    # core's node parsers copy a document's embedding to each chunk: not the chunk's vector
    from llama_index.core.node_parser import SentenceSplitter

    from tests.support.fakes import ScriptedLLM

    model = CountingEmbedding()
    whole = HashEmbedding()._vector("the whole handbook")
    text = " ".join(f"Ada met Boris on day {i}." for i in range(60))
    index = GraphRAGIndex(uri=milvus_uri, embed_model=model)
    llm = ScriptedLLM(lambda prompt: '{"triplets": [["Ada", "met", "Boris"]]}')
    index.insert(Document(text=text, doc_id="handbook", embedding=whole), llm=llm,
                 transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)])
    vectors = stored_vectors(index)
    assert len(vectors) > 3
    for chunk, vector in vectors.items():
        assert np.allclose(vector, model._vector(chunk), atol=1e-6)
    # a document kept whole keeps its own vector
    index.insert(Document(text="Ada met Carl.", doc_id="short", embedding=whole), llm=llm)
    assert np.allclose(stored_vectors(index)["Ada met Carl."], whole, atol=1e-6)
