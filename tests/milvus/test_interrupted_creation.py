"""A new index whose creation stopped (a killed process, Ctrl-C) between its collections:
running the same ingestion again finishes it, with another embedding model too, and a
collection with rows that is not the index's is never dropped.

The state a killed process leaves is made directly: the collections a creation makes
before the relation collection, which it makes last (see ``milvus/leftovers.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pymilvus import MilvusClient

from llama_index_graphrag_milvus import GraphRAGIndex, MilvusStoreError
from llama_index_graphrag_milvus.milvus import opening
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus

QUESTION = "What did the son of Euler's teacher contribute?"
PREFIX = "graphrag"


def stopped_creation(uri: str, dim: int, **options: Any) -> None:
    """The collections of a creation with ``dim`` (and ``options``) that stopped before
    its relation collection."""
    with GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=dim), **options) as index:
        index.store.create(dim)
        index.store.client.drop_collection(index.store.relation_collection)


def collections(uri: str) -> list[str]:
    client = MilvusClient(uri)
    try:
        return sorted(client.list_collections())
    finally:
        client.close()


def top(index: GraphRAGIndex) -> list[str]:
    return [n.node.node_id for n in index.as_retriever().retrieve(QUESTION)]


@pytest.fixture(scope="module")
def clean_top(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    uri = str(tmp_path_factory.mktemp("clean") / "clean.db")
    with GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding()) as index:
        return top(index)


@pytest.mark.parametrize("earlier", [{"dim": 64}, {"dim": 32}, {"dim": 64, "tenant_key": "org"},
                                     {"dim": 64, "full_text_search": False}],
                         ids=["same", "other model", "tenant key", "no full text"])
def test_the_ingestion_run_again_finishes_a_stopped_creation(
        tmp_path: Path, earlier: dict[str, Any], clean_top: list[str]) -> None:
    uri = str(tmp_path / "graph.db")
    stopped_creation(uri, **earlier)
    with GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding()) as index:
        assert index.store.dim == 64 and index.store.full_text  # BM25 as in a clean index
        assert index.store.tenant_key is None
        assert top(index) == clean_top
    with GraphRAGIndex(uri=uri, embed_model=HashEmbedding()) as index:
        assert top(index) == clean_top


def test_a_collection_with_rows_is_not_dropped_and_nothing_is_left_made(
        tmp_path: Path) -> None:
    uri = str(tmp_path / "graph.db")
    with GraphRAGIndex.from_triplets(FAMILY, uri=uri,
                                     embed_model=HashEmbedding(dim=32)) as index:
        index.store.client.drop_collection(index.store.relation_collection)
        passages = index.store.count(index.store.passage_collection)
    before = collections(uri)
    with pytest.raises(MilvusStoreError, match=r"exists with \d+ rows.*collection_prefix"), \
            GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding()):
        pass
    assert collections(uri) == before
    with GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=32)) as index:  # untouched
        assert index.store.client.get_collection_stats(
            f"{PREFIX}_passages")["row_count"] == passages


@pytest.mark.parametrize("full_text", [True, False])
def test_a_collection_of_the_user_s_under_the_name_is_never_taken_over(
        tmp_path: Path, full_text: bool) -> None:
    """A ``MilvusVectorStore`` of the user's named like the passage collection, with rows:
    an error, whatever its schema (one with BM25 over ``text`` fitted before)."""
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.milvus import MilvusVectorStore
    from llama_index.vector_stores.milvus.utils import BM25BuiltInFunction

    uri = str(tmp_path / "graph.db")
    sparse: dict[str, Any] = ({"enable_sparse": True,
                               "sparse_embedding_function": BM25BuiltInFunction()}
                              if full_text else {})
    mine = MilvusVectorStore(uri=uri, collection_name=f"{PREFIX}_passages", dim=64,
                             overwrite=True, **sparse)
    mine.add([TextNode(text=f"note {i}", embedding=[0.1] * 64) for i in range(3)])
    mine.client.close()
    with pytest.raises(MilvusStoreError, match=r"exists with 3 rows"):
        GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding(),
                                    full_text_search=full_text)
    assert collections(uri) == [f"{PREFIX}_passages"]


def test_ctrl_c_during_the_creation_leaves_no_collection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "graph.db")
    real = opening.create_collection

    def interrupted(client, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.endswith("_relations"):
            raise KeyboardInterrupt
        return real(client, name, *args, **kwargs)

    monkeypatch.setattr(opening, "create_collection", interrupted)
    with pytest.raises(KeyboardInterrupt):
        GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding(dim=32))
    monkeypatch.undo()
    assert collections(uri) == []
    with GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding()) as index:
        assert index.store.dim == 64
