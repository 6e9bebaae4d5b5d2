"""BM25 without accents or case: a new index folds the words its BM25 reads (passages and
queries alike), in Milvus's search and in memory; an index created before keeps matching
words as written. On Milvus Lite: the embedded test server (2.3) has no BM25; a server
runs the same code (the texts are folded before pymilvus sends them)."""

from __future__ import annotations

import asyncio

import pytest

import llama_index_graphrag_milvus.milvus.opening as opening
from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.milvus.fulltext import FOLD_ACCENTS, FOLD_PROPERTY
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding
from tests.support.markers import LITE_ONLY

pytestmark = pytest.mark.milvus
XDIST_GROUP = "full_text"

OPERETTA = ("Aschenbrödel is an unfinished ballet by Johann Strauss II, completed by Josef Bayer.",
            [("Aschenbrödel", "written by", "Johann Strauss II")])
PASSAGES = [*FAMILY, OPERETTA]


def words_found(index: GraphRAGIndex, text: str) -> dict[str, list[str]]:
    """The passages each BM25 path finds for ``text``, first 2: Milvus's search through the
    naive retrievers (sync and async) and the batched search the bridge sends to Milvus,
    and the in-memory table (what the bridge searches instead on Lite)."""
    def contents(hits: list) -> list[str]:
        return [hit.node.get_content() for hit in hits]
    bm25 = index.as_naive_retriever(similarity_top_k=2, search="bm25")
    found = {
        "bm25": contents(bm25.retrieve(text)),
        "abm25": contents(asyncio.run(bm25.aretrieve(text))),
        "hybrid": contents(index.as_naive_retriever(similarity_top_k=2,
                                                    search="hybrid").retrieve(text)),
        "batched": [node.get_content() for node, _ in
                    index.store.match_passage_words([text], 2)[0]],
    }
    table = index.cache.word_table()
    assert table is not None  # Milvus Lite: BM25 in memory whatever the budget
    texts = {node.node.node_id: node.node.get_content()
             for node in index.as_naive_retriever(similarity_top_k=len(PASSAGES)).retrieve(
                 "passages")}
    found["memory"] = [texts[pid] for pid, _ in table.search([text], 2)[0]]
    return found


@LITE_ONLY  # the embedded test server (2.3) has no BM25
def test_a_new_index_matches_names_written_without_their_accents(
        milvus_uri: str, embed_model: HashEmbedding) -> None:
    GraphRAGIndex.from_triplets(PASSAGES, uri=milvus_uri, embed_model=embed_model).close()
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:  # read back
        assert index.store.properties[FOLD_PROPERTY] == FOLD_ACCENTS
        assert index.store.folds_words
        for written in ("Aschenbrodel", "ASCHENBRÖDEL", "Aschenbrödel"):
            found = words_found(index, f"{written} staging")
            assert all(hits[:1] == [OPERETTA[0]] for name, hits in found.items()
                       if name != "hybrid"), (written, found)
            assert OPERETTA[0] in found["hybrid"], found  # fused: tied with dense's first
        # the passage keeps its text: only what BM25 reads is folded
        hits = index.as_naive_retriever(similarity_top_k=1, search="bm25").retrieve(
            "aschenbrodel")
        assert hits[0].node.get_content() == OPERETTA[0]


@LITE_ONLY
def test_an_index_created_before_matches_words_as_written(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:  # created as before: no fold recorded
        patched.setattr(opening, "NEW_INDEX_FOLD", "none")
        GraphRAGIndex.from_triplets(PASSAGES, uri=milvus_uri, embed_model=embed_model).close()
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
        assert not index.store.folds_words
        found = words_found(index, "Aschenbrödel staging")
        assert all(hits[:1] == [OPERETTA[0]] for name, hits in found.items()
                   if name != "hybrid"), found
        assert OPERETTA[0] in found["hybrid"], found
        found = words_found(index, "Aschenbrodel staging")
        assert all(hits == [] for name, hits in found.items() if name != "hybrid"), found
        # written to again, it stays as it was: new passages are not folded either
        premiere = "Die Fledermaus wurde 1874 in Wien uraufgeführt."
        index.insert_triplets([(premiere, [("Die Fledermaus", "premiered in", "Wien")])])
        assert not index.store.folds_words
        assert [node.get_content() for node, _ in
                index.store.match_passage_words(["uraufgeführt"], 2)[0]] == [premiere]
        assert index.store.match_passage_words(["uraufgefuhrt"], 2) == [[]]
        assert FOLD_PROPERTY not in index.store.properties or (
            index.store.properties[FOLD_PROPERTY] != FOLD_ACCENTS)
