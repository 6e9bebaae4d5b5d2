"""Milvus's BM25 full-text search on the passages (``GraphRAGIndex(full_text_search=True)``)
and naive RAG as a Milvus user builds it: ``as_naive_retriever(search="dense" | "bm25" |
"hybrid")``, through the vector store's own query modes, on Milvus Lite."""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.errors import UnsplitTextWarning
from llama_index_graphrag_milvus.retrieval import NaiveSearch
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding
from tests.support.markers import LITE_ONLY, SERVER_ONLY

pytestmark = pytest.mark.milvus
XDIST_GROUP = "full_text"
"""The words tests share one Lite index (``blind``): the Lite tests run on one xdist worker
(see tests/conftest.py)."""

RARE = ("The Zwolle manuscript of 1724 lists Jakob Hermann among the Basel mathematicians.",
        [("Zwolle manuscript", "lists", "Jakob Hermann")])
"""A passage whose one rare word ("Zwolle") only a lexical match weighs."""


def texts(hits: list) -> list[str]:
    return [hit.node.get_content() for hit in hits]


@LITE_ONLY
def test_bm25_and_hybrid_rank_by_the_questions_words(milvus_uri: str,
                                                     embed_model: HashEmbedding) -> None:
    index = GraphRAGIndex.from_triplets([*FAMILY, RARE], uri=milvus_uri,
                                        embed_model=embed_model, full_text_search=True)
    assert index.store.full_text
    question = "Which manuscript from Zwolle names a mathematician?"
    bm25 = index.as_naive_retriever(similarity_top_k=3, search="bm25").retrieve(question)
    assert texts(bm25)[0] == RARE[0]
    scores = [hit.score for hit in bm25]
    assert all(score is not None and score > 0 for score in scores)  # BM25, not negated
    assert scores == sorted(scores, reverse=True)
    hybrid = index.as_naive_retriever(similarity_top_k=3, search=NaiveSearch.HYBRID)
    fused = hybrid.retrieve(question)
    assert texts(fused)[0] == RARE[0]
    dense = texts(index.as_naive_retriever(similarity_top_k=3).retrieve(question))
    # reciprocal rank fusion: every passage of the fused list is in one of the two lists
    assert set(texts(fused)) <= set(dense) | set(texts(
        index.as_naive_retriever(similarity_top_k=3, search="bm25").retrieve(question)))
    # async twins answer the same
    assert texts(asyncio.run(hybrid.aretrieve(question))) == texts(fused)
    index.close()


@LITE_ONLY
def test_bm25_reads_the_passage_as_embedded(milvus_uri: str,
                                            embed_model: HashEmbedding) -> None:
    from llama_index.core.schema import TextNode

    titled = TextNode(text="He was born in 1700 and studied medicine.",
                      metadata={"title": "Daniel Bernoulli", "secret": "Quixotry"},
                      excluded_embed_metadata_keys=["secret"])
    index = GraphRAGIndex.from_triplets([(titled, []), *FAMILY], uri=milvus_uri,
                                        embed_model=embed_model, full_text_search=True)
    bm25 = index.as_naive_retriever(similarity_top_k=5, search="bm25")
    # the title (embedded) is matched as words; a key kept out of the embedding is not
    hits = bm25.retrieve("Daniel Bernoulli")
    assert titled.text in texts(hits)
    assert titled.text not in texts(bm25.retrieve("Quixotry"))
    found = next(hit.node for hit in hits if hit.node.get_content() == titled.text)
    assert {k: found.metadata[k] for k in ("title", "secret")} == titled.metadata
    assert not {"full_text", "sparse_embedding"} & set(found.metadata)
    index.close()


@LITE_ONLY
def test_full_text_is_read_back_on_open_and_graph_methods_still_work(
        milvus_uri: str, embed_model: HashEmbedding) -> None:
    GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model,
                                full_text_search=True).close()
    for graph in ("memory", "milvus"):
        with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, graph=graph) as index:
            assert index.store.full_text
            found = texts(index.as_retriever(similarity_top_k=2).retrieve(
                "What did the son of Euler's teacher contribute?"))
            assert any("Daniel Bernoulli" in text for text in found), (graph, found)
            assert texts(index.as_naive_retriever(search="bm25").retrieve("Daniel"))


@LITE_ONLY
@pytest.mark.parametrize("tenant_key", [None, "tenant"])
def test_filters_hold_in_bm25_and_hybrid_search(milvus_uri: str, embed_model: HashEmbedding,
                                                tenant_key: str | None) -> None:
    from llama_index.core.schema import TextNode

    data = [(TextNode(text=text, metadata={"tenant": tenant}), triplets)
            for tenant, (text, triplets) in (("a", FAMILY[0]), ("b", RARE))]
    index = GraphRAGIndex.from_triplets(data, uri=milvus_uri, embed_model=embed_model,
                                        full_text_search=True, tenant_key=tenant_key)
    only_a = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])
    for search in ("bm25", "hybrid"):
        hits = index.as_naive_retriever(similarity_top_k=5, filters=only_a,
                                        search=search).retrieve("Zwolle manuscript Euler")
        assert all(hit.node.metadata["tenant"] == "a" for hit in hits), search
        assert RARE[0] not in texts(hits)
    index.close()


@LITE_ONLY
def test_a_new_index_has_full_text_search_unless_told_not_to(
        milvus_uri: str, embed_model: HashEmbedding, tmp_path: Path) -> None:
    """Left unset, a new index gets BM25 where Milvus has it (Lite here): hybrid search and
    the second hop's word lists work with no option; ``False`` keeps dense search only, and
    reopening keeps what was chosen at creation."""
    question = "Which manuscript from Zwolle names a mathematician?"
    with GraphRAGIndex.from_triplets([*FAMILY, RARE], uri=milvus_uri,
                                     embed_model=embed_model) as index:
        assert index.store.full_text and index.store.full_text_analyzer is None
        assert texts(index.as_naive_retriever(search="hybrid").retrieve(question))[0] == RARE[0]
        found = index.as_retriever().retrieve(question)
        assert any("words" in hit.node.metadata["graphrag_found_by"] for hit in found)
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as reopened:
        assert reopened.store.full_text
    # what cannot change once the collection is made is refused, not ignored
    with pytest.raises(InvalidInputError, match="match_words=False"):
        GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, full_text_search=False)
    with pytest.raises(InvalidInputError, match=r"analyzer \{'tokenizer': 'standard'\}, not"):
        GraphRAGIndex(uri=milvus_uri, embed_model=embed_model,
                      full_text_analyzer={"tokenizer": "jieba"})
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, full_text_search=True,
                       full_text_analyzer={"tokenizer": "standard"}) as reopened:
        assert reopened.as_naive_retriever(search="bm25").retrieve("Zwolle")
    dense_only = str(tmp_path / "dense.db")
    with GraphRAGIndex.from_triplets(FAMILY, uri=dense_only, embed_model=embed_model,
                                     full_text_search=False) as index:
        assert not index.store.full_text
        found = index.as_retriever().retrieve(question)
        assert not any("words" in hit.node.metadata["graphrag_found_by"] for hit in found)
    with GraphRAGIndex(uri=dense_only, embed_model=embed_model) as reopened:
        assert not reopened.store.full_text


@LITE_ONLY
def test_bad_full_text_input_is_refused_and_stores_nothing_wrong(
        milvus_uri: str, embed_model: HashEmbedding, tmp_path: Path) -> None:
    index = GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model,
                                        full_text_search=False)
    with pytest.raises(InvalidInputError, match="full_text_search=True"):
        index.as_naive_retriever(search="hybrid")
    with pytest.raises(InvalidInputError, match="dense, bm25, hybrid"):
        index.as_naive_retriever(search="sparse")
    index.close()
    # an index created without it cannot be opened as if it had it...
    with pytest.raises(InvalidInputError, match="created without full-text search"):
        GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, full_text_search=True)
    # ...and is left as it was
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as reopened:
        assert not reopened.store.full_text
        assert reopened.store.count(reopened.store.passage_collection) == len(FAMILY)
    with pytest.raises(InvalidInputError, match="analyzer"):
        GraphRAGIndex(uri=str(tmp_path / "other.db"), embed_model=embed_model,
                      full_text_analyzer={})
    with pytest.raises(InvalidInputError, match="full_text_analyzer is given"):
        GraphRAGIndex(uri=str(tmp_path / "other.db"), embed_model=embed_model,
                      full_text_search=False, full_text_analyzer={"tokenizer": "jieba"})
    # an analyzer Milvus Lite cannot run is refused before anything is created
    with pytest.raises(InvalidInputError, match="Milvus Lite cannot run the analyzer"):
        GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "other.db"),
                                    embed_model=embed_model,
                                    full_text_analyzer={"tokenizer": "no-such-tokenizer"})
    with GraphRAGIndex(uri=str(tmp_path / "other.db"), embed_model=embed_model) as fresh:
        assert fresh.store.dim is None
        fresh.insert_triplets(FAMILY)
        assert fresh.store.count(fresh.store.passage_collection) == len(FAMILY)
    with pytest.raises(InvalidInputError, match="True, False or None"):
        GraphRAGIndex(uri=str(tmp_path / "other.db"), embed_model=embed_model,
                      full_text_search="yes")  # type: ignore[arg-type]


@LITE_ONLY
@pytest.mark.parametrize("ignored", ["asciifolding", {"type": "stemmer", "language": "english"},
                                     "alphanumonly"])
def test_a_filter_milvus_lite_would_ignore_is_refused(milvus_uri: str, ignored: object,
                                                      embed_model: HashEmbedding) -> None:
    analyzer = {"tokenizer": "standard", "filter": ["lowercase", ignored]}
    with pytest.raises(InvalidInputError, match="does not apply them") as refused:
        GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model,
                                    full_text_analyzer=analyzer)
    assert repr([ignored]) in str(refused.value)
    # nothing was created: the same file takes an index with the analyzer Lite applies
    kept = {"tokenizer": "standard",
            "filter": ["lowercase", {"type": "stop", "stop_words": ["basel"]}]}
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as fresh:
        assert fresh.store.dim is None
    passages = [("Euler studied in Basel under Johann Bernoulli.", []),
                ("Daniel Bernoulli studied fluid dynamics.", [])]
    with GraphRAGIndex.from_triplets(passages, uri=milvus_uri, embed_model=embed_model,
                                     full_text_analyzer=kept) as index:
        bm25 = index.as_naive_retriever(similarity_top_k=2, search="bm25")
        assert bm25.retrieve("BASEL") == []  # the stop word is dropped on both sides
        assert texts(bm25.retrieve("Euler")) == [passages[0][0]]


@LITE_ONLY
def test_an_analyzer_for_chinese_text(milvus_uri: str, embed_model: HashEmbedding) -> None:
    passages = [("欧拉在巴塞尔师从约翰·伯努利。", [("欧拉", "师从", "约翰·伯努利")]),
                ("丹尼尔·伯努利研究流体力学。", [("丹尼尔·伯努利", "研究", "流体力学")])]
    index = GraphRAGIndex.from_triplets(passages, uri=milvus_uri, embed_model=embed_model,
                                        full_text_analyzer={"tokenizer": "jieba"})
    assert index.store.full_text
    hits = index.as_naive_retriever(similarity_top_k=1, search="bm25").retrieve("流体力学")
    assert texts(hits) == [passages[1][0]]
    index.close()


@LITE_ONLY
@pytest.mark.parametrize(("analyzer", "jieba"), [(None, False), (None, True),
                                                 ({"tokenizer": "jieba"}, True),
                                                 ({"tokenizer": "standard"}, True)])
def test_chinese_passages_get_their_words_split_or_a_warning(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch,
        analyzer: dict[str, str] | None, jieba: bool) -> None:
    """A new index whose first passages are mostly Chinese takes Milvus's jieba analyzer
    when none is given and Milvus Lite can run it; without the jieba package the standard
    analyzer stays and a warning says what to do; an analyzer given is kept."""
    from llama_index_graphrag_milvus.milvus import fulltext

    if not jieba:
        monkeypatch.setattr(fulltext, "find_spec", lambda name: None)
    passages = [("丹尼尔·伯努利研究流体力学。", [("丹尼尔·伯努利", "研究", "流体力学")]),
                ("Basel is a city.", [("Basel", "is", "city")]),
                ("欧拉在巴塞尔师从约翰·伯努利。", [("欧拉", "师从", "约翰·伯努利")])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = GraphRAGIndex.from_triplets(passages, uri=milvus_uri, embed_model=embed_model,
                                            full_text_analyzer=analyzer)
    unsplit = [w for w in caught if issubclass(w.category, UnsplitTextWarning)]
    assert len(unsplit) == (not jieba)
    split = jieba and analyzer != {"tokenizer": "standard"}
    assert index.store.full_text_analyzer == (
        {"tokenizer": "jieba"} if split else analyzer)
    found = texts(index.as_naive_retriever(search="bm25").retrieve("流体力学"))
    if split:
        assert found[:1] == [passages[0][0]]  # found inside the run of characters
    else:
        assert not found  # the standard analyzer keeps the run whole
    if not jieba:
        assert "full_text_analyzer={'tokenizer': 'jieba'}" in str(unsplit[0].message)
        assert unsplit[0].filename == __file__  # the caller's line, not the package's
    index.close()
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as reopened:
        assert reopened.store.full_text_analyzer == index.store.full_text_analyzer


@LITE_ONLY
def test_an_analyzer_milvus_refuses_falls_back_to_the_standard_one(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The analyzer chosen for Chinese passages (not asked for) refused by Milvus: the
    index is created with the standard one instead, nothing half-created is left."""
    from llama_index_graphrag_milvus.ingestion import write

    monkeypatch.setattr(write, "JIEBA", {"tokenizer": "no-such-tokenizer"})
    passages = [("丹尼尔·伯努利研究流体力学。", [("丹尼尔·伯努利", "研究", "流体力学")])]
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = GraphRAGIndex.from_triplets(passages, uri=milvus_uri, embed_model=embed_model)
    assert "Milvus refused its jieba analyzer" in caplog.text
    assert [w for w in caught if issubclass(w.category, UnsplitTextWarning)]
    with index:
        assert index.store.full_text and index.store.full_text_analyzer is None
        assert index.store.count(index.store.passage_collection) == 1
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as reopened:
        assert reopened.store.full_text_analyzer is None
        assert texts(reopened.as_retriever().retrieve("流体力学")) == [passages[0][0]]


@LITE_ONLY
def test_english_first_passages_keep_the_standard_analyzer(
        milvus_uri: str, embed_model: HashEmbedding) -> None:
    with GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri,
                                     embed_model=embed_model) as index:
        assert index.store.full_text and index.store.full_text_analyzer is None


@SERVER_ONLY
def test_a_server_without_bm25_functions_is_refused_in_one_clear_error(
        milvus_uri: str, embed_model: HashEmbedding, caplog: pytest.LogCaptureFixture) -> None:
    from pymilvus import MilvusClient

    from llama_index_graphrag_milvus.milvus.tenants import server_version

    client = MilvusClient(uri=milvus_uri)
    version = server_version(str(client.get_server_version()))
    client.close()
    if version and version < (2, 5):
        with pytest.raises(InvalidInputError, match=r"Milvus 2\.5 or later"):
            GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, full_text_search=True)
        with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
            assert index.store.dim is None  # nothing was created
        # left unset, a new index there gets dense search only: no error, and it works
        with caplog.at_level(logging.INFO, "llama_index_graphrag_milvus"):
            index = GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model)
        assert "has no BM25 (before 2.5)" in caplog.text
        with index:
            assert not index.store.full_text
            assert "Daniel Bernoulli" in " ".join(texts(index.as_retriever().retrieve(
                "What did the son of Euler's teacher contribute?")))
    else:
        with GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model,
                                         full_text_search=True) as index:
            assert texts(index.as_naive_retriever(search="bm25").retrieve("Daniel"))


# ------------------------------------------------------------- words in the second hop

def blind_index(uri: str, full_text: bool = True) -> GraphRAGIndex:
    """An index whose embedding sees nothing (every text has the same vector): only BM25
    tells the passages apart."""
    from llama_index.core.schema import TextNode

    return GraphRAGIndex.from_triplets(
        [(TextNode(text=text, metadata={"tenant": "a"}), triplets)
         for text, triplets in [*FAMILY, RARE]],
        uri=uri, embed_model=HashEmbedding(dim=1), full_text_search=full_text)


@pytest.fixture(scope="module")
def blind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphRAGIndex]:
    """:func:`blind_index` with full-text search on Lite, once for the module: the tests that
    use it only read."""
    index = blind_index(str(tmp_path_factory.mktemp("blind") / "blind.db"))
    yield index
    index.close()


def test_the_bridge_lists_gain_passages_by_words(blind: GraphRAGIndex) -> None:
    from llama_index_graphrag_milvus import BridgeRetrieval

    index = blind
    question = "Which manuscript from Zwolle lists a mathematician?"
    with_words = index.as_retriever(method=BridgeRetrieval(), similarity_top_k=5)
    hits = with_words.retrieve(question)
    meaning_only = index.as_retriever(method=BridgeRetrieval(match_words=False),
                                      similarity_top_k=5).retrieve(question)
    # the words lists add passages after the meaning lists' heads, never before them
    assert texts(hits)[0] == texts(meaning_only)[0]
    assert texts(hits).index(RARE[0]) <= texts(meaning_only).index(RARE[0])
    found_by = hits[texts(hits).index(RARE[0])].node.metadata["graphrag_found_by"]
    assert found_by["words"] > 0  # its BM25 score for the text of the list it came from
    assert all("words" not in hit.node.metadata["graphrag_found_by"] for hit in meaning_only)
    assert texts(asyncio.run(with_words.aretrieve(question))) == texts(hits)


def test_a_passage_only_words_found_has_no_similarity(blind: GraphRAGIndex) -> None:
    """No meaning similarity was computed for it: ``None`` (not 0.0), and the explanation
    says its words found it."""
    from llama_index_graphrag_milvus import BridgeRetrieval

    # every meaning similarity ties in this index (one vector for all): which list sizes
    # leave a passage to the words alone depends on Milvus's order among ties, so several
    question = "Which manuscript from Zwolle lists a mathematician?"
    worded = []
    for top_k in range(2, 6):
        retriever = blind.as_retriever(method=BridgeRetrieval(), similarity_top_k=top_k)
        found = [hit.node.metadata["graphrag_found_by"] for hit in retriever.retrieve(question)]
        assert all(f["words"] > 0 for f in found if f["similarity"] is None)
        steps = [s for s in retriever.explain(question).passages if s.similarity is None]
        assert len(steps) == sum(f["similarity"] is None for f in found)
        worded += steps
    assert worded and all(s.words and "found by its words, BM25" in s.reason for s in worded)


@LITE_ONLY
def test_words_change_nothing_without_full_text_or_under_filters(milvus_uri: str,
                                                                 blind: GraphRAGIndex) -> None:
    from llama_index_graphrag_milvus import BridgeRetrieval

    question = "Which manuscript from Zwolle lists a mathematician?"
    plain = blind_index(milvus_uri, full_text=False)
    on, off = (texts(plain.as_retriever(method=BridgeRetrieval(match_words=flag),
                                        similarity_top_k=3).retrieve(question))
               for flag in (True, False))
    assert on == off
    plain.close()
    index = blind
    everything = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])
    scoped = [index.as_retriever(method=BridgeRetrieval(match_words=flag), similarity_top_k=3,
                                 filters=everything).retrieve(question) for flag in (True, False)]
    assert texts(scoped[0]) == texts(scoped[1]) and len(scoped[0]) == 3
    assert all("words" not in hit.node.metadata["graphrag_found_by"] for hit in scoped[0])


def test_match_words_is_checked() -> None:
    from llama_index_graphrag_milvus import BridgeRetrieval

    with pytest.raises(InvalidInputError, match="match_words must be True or False"):
        BridgeRetrieval(match_words="yes")  # type: ignore[arg-type]


def test_pagerank_is_seeded_by_the_passages_the_words_match(blind: GraphRAGIndex) -> None:
    from llama_index_graphrag_milvus import PageRankRetrieval

    index = blind
    question = "Which manuscript from Zwolle lists a mathematician?"

    def pagerank_entities(match_words: bool) -> str:
        retriever = index.as_retriever(method=PageRankRetrieval(match_words=match_words),
                                       similarity_top_k=1, entity_top_k=1, relation_top_k=1)
        return str(retriever.explain(question).to_dict())

    # the passage its words match joins the restart set, and its relations the graph
    assert "Zwolle manuscript" in pagerank_entities(True)
    assert "Zwolle manuscript" not in pagerank_entities(False)
