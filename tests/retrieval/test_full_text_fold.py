"""BM25 without accents or case: a new index folds the words its BM25 reads (passages and
queries alike), in Milvus's search and in memory; an index created before keeps matching
words as written. On Milvus Lite: the embedded test server (2.3) has no BM25; a server
runs the same code (the texts are folded before pymilvus sends them)."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

import llama_index_graphrag_milvus.ingestion.upgrade as upgrade_module
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


def created_before_the_fold(uri: str, embed_model: HashEmbedding,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """An index of ``PASSAGES`` created the way an earlier version did: no fold recorded."""
    with monkeypatch.context() as patched:
        patched.setattr(opening, "NEW_INDEX_FOLD", "none")
        GraphRAGIndex.from_triplets(PASSAGES, uri=uri, embed_model=embed_model).close()


def stored_passages(index: GraphRAGIndex) -> dict[str, tuple]:
    """Every passage as the dense search returns it: text, metadata and score."""
    hits = index.as_naive_retriever(similarity_top_k=len(PASSAGES) + 1).retrieve("Bernoulli")
    return {hit.node.node_id: (hit.node.get_content(), hit.node.metadata, round(hit.score, 6))
            for hit in hits}


@LITE_ONLY
def test_upgrade_folds_the_words_of_an_index_created_before(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch) -> None:
    created_before_the_fold(milvus_uri, embed_model, monkeypatch)
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index, \
            GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as other, \
            GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as reader:
        # other processes, open before the upgrade
        assert not other.store.folds_words and not reader.store.folds_words
        assert words_found(reader, "Aschenbrödel")["memory"][:1] == [OPERETTA[0]]
        before = stored_passages(index)
        assert all(hits == [] for name, hits in words_found(index, "Aschenbrodel").items()
                   if name != "hybrid")
        assert index.store.needs_upgrade()
        assert index.upgrade() == len(PASSAGES)  # every text has capitals: all written
        assert not index.store.needs_upgrade()
        assert index.store.folds_words
        assert index.store.properties[FOLD_PROPERTY] == FOLD_ACCENTS
        assert stored_passages(index) == before  # texts, metadata and vectors as they were
        for written in ("Aschenbrodel", "ASCHENBRÖDEL", "Aschenbrödel"):
            found = words_found(index, f"{written} staging")
            assert all(hits[:1] == [OPERETTA[0]] for name, hits in found.items()
                       if name != "hybrid"), (written, found)
        assert index.upgrade() == 0  # nothing left to do
        reader.refresh()  # a reader folds its queries once it reads the layout again
        assert reader.store.folds_words
        assert all(found[:1] == [OPERETTA[0]] for found in
                   words_found(reader, "Aschenbrödel").values())
        # the other process folds what it writes from its next write on
        premiere = "Die Fledermaus wurde 1874 in Wien uraufgeführt."
        other.insert_triplets([(premiere, [("Die Fledermaus", "premiered in", "Wien")])])
        assert other.store.folds_words
        assert [node.get_content() for node, _ in
                index.store.match_passage_words(["uraufgefuhrt"], 2)[0]] == [premiere]
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:  # read back
        assert index.store.folds_words
        assert words_found(index, "Aschenbrodel")["bm25"][:1] == [OPERETTA[0]]


@LITE_ONLY
def test_an_upgrade_stopped_while_folding_goes_on_where_it_stopped(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch) -> None:
    created_before_the_fold(milvus_uri, embed_model, monkeypatch)
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
        before = stored_passages(index)
        client = index.store.client
        upsert, calls = client.upsert, []

        def fails_on_the_third(*args: object, **kwargs: object) -> object:
            calls.append(args)
            if len(calls) == 3:
                raise ConnectionError("the server went away")
            return upsert(*args, **kwargs)

        with monkeypatch.context() as patched:
            patched.setattr(upgrade_module, "WRITE_BATCH_SIZE", 1)  # a range per passage
            patched.setattr(client, "upsert", fails_on_the_third)
            with pytest.raises(ConnectionError):
                index.upgrade()
        assert not index.store.folds_words  # not recorded: queries as written
        assert FOLD_PROPERTY not in index.store.properties or (
            index.store.properties[FOLD_PROPERTY] != FOLD_ACCENTS)
        assert stored_passages(index) == before  # nothing lost, nothing duplicated
        # the rest: two ranges were written (a range may hold more than one passage)
        assert 0 < index.upgrade() <= len(PASSAGES) - 2
        assert index.store.folds_words
        assert stored_passages(index) == before
        assert words_found(index, "Aschenbrodel staging")["bm25"][:1] == [OPERETTA[0]]


@LITE_ONLY
def test_upgrade_keeps_each_folded_passage_in_its_tenant(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch) -> None:
    def staged(tenant: str) -> TextNode:
        return TextNode(text=f"[{tenant}] Aschenbrödel was staged in Wien.",
                        metadata={"tenant_id": tenant})

    data = [(staged(tenant), [("Aschenbrödel", "staged in", "Wien")])
            for tenant in ("acme", "globex")]
    with monkeypatch.context() as patched:
        patched.setattr(opening, "NEW_INDEX_FOLD", "none")
        GraphRAGIndex.from_triplets(data, uri=milvus_uri, embed_model=embed_model,
                                    tenant_key="tenant_id").close()
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
        assert index.store.tenant_key == "tenant_id"
        assert index.upgrade() == 2
        for tenant in ("acme", "globex"):
            hits = index.as_naive_retriever(
                similarity_top_k=5, search="bm25",
                filters=MetadataFilters(filters=[MetadataFilter(key="tenant_id",
                                                                value=tenant)]),
            ).retrieve("aschenbrodel")
            assert [(h.node.get_content(), h.node.metadata["tenant_id"]) for h in hits] == [
                (staged(tenant).text, tenant)]
