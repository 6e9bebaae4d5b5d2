"""BM25 in memory (:class:`~llama_index_graphrag_milvus.graph.word_table.WordTable`): the
passages' words held beside the passage table, so that the second hop's BM25 lists cost no
Milvus call. Checked against Milvus Lite's own BM25 on the same passages."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import BridgeRetrieval, GraphRAGIndex
from llama_index_graphrag_milvus.graph.word_table import WordTable, analyze
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding
from tests.support.markers import LITE_ONLY

QUESTIONS = ["Which manuscript from Zwolle lists a mathematician?",
             "Who taught Leonhard Euler in Basel?",
             "Daniel Bernoulli's father and his father's student",
             "fluid dynamics hydrodynamica", "quokka, wombat: platypus"]
RARE = ("The Zwolle manuscript of 1724 lists Jakob Hermann among the Basel mathematicians.",
        [("Zwolle manuscript", "lists", "Jakob Hermann")])
MORE = [("Basel, Basel and Basel again: the city on the Rhine where Basel's university "
         "taught Euler, the Bernoullis and Hermann.", []),
        ("Hydrodynamica was published by Daniel Bernoulli in 1738 in Strasbourg.",
         [("Daniel Bernoulli", "published", "Hydrodynamica")])]


# ------------------------------------------------------------------------ the table alone

def test_scores_are_bm25_by_the_book() -> None:
    texts = ["euler basel basel", "euler bernoulli", "daniel"]
    table = WordTable.from_texts([(["c", "a", "b"], texts)], k1=1.2, b=0.75)
    k1, b, n, average = 1.2, 0.75, 3, 6 / 3

    def weight(tf: int, length: int, df: int) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))

    # "basel" twice in the question: its weight counts twice (a query's term counts)
    [hits] = table.search(["Euler, Basel, Basel?"], 5)
    expected = {"c": weight(1, 3, 2) + 2 * weight(2, 3, 1), "a": weight(1, 2, 2)}
    assert [pid for pid, _ in hits] == ["c", "a"]
    assert all(score == pytest.approx(expected[pid]) for pid, score in hits)
    assert table.search(["", "quokka", "EULER"], 0) == [[], [], []]
    assert len(table) == 3 and table.nbytes > 0


def test_equal_scores_are_ranked_by_id_at_the_cut_too() -> None:
    ids = [f"p{i:02d}" for i in range(12)]
    table = WordTable.from_texts([(ids[::-1], ["same words"] * 12)])
    assert [pid for pid, _ in table.search(["words"], 4)[0]] == ids[:4]


def test_odd_passages_and_questions_are_ranked_or_left_out_cleanly() -> None:
    texts = ["", "?!… — ---", "x" * 100_000, "naïve café\u0301 \U0001F600 Zürich",
             "\x00null\x00 bytes"]
    table = WordTable.from_texts([(["e", "p", "long", "u", "z"], texts)])
    assert table.search(["", "?!", "\U0001F600"], 3) == [[], [], []]
    cafe, null, long = table.search(["NAÏVE zürich", "null", "x" * 100_000], 99)
    assert [pid for pid, _ in cafe] == ["u"] and cafe[0][1] > 0
    assert [pid for pid, _ in null] == ["z"] and [pid for pid, _ in long] == ["long"]
    assert WordTable.from_texts([]).search(["anything"], 5) == [[]]


def test_words_are_split_as_milvus_standard_analyzer_splits_them() -> None:
    assert analyze("Kim Jong-il's 2nd film (1987)") == ["kim", "jong", "il", "s", "2nd",
                                                         "film", "1987"]
    assert analyze("Aschenbrödel ÉCOLE") == ["aschenbrödel", "école"]


# ------------------------------------------------------------------ against Milvus Lite

def passages() -> list[tuple[TextNode, list[Any]]]:
    return [(TextNode(text=text, metadata={"tenant": "a"}), triplets)
            for text, triplets in [*FAMILY, RARE, *MORE]]


@pytest.fixture
def blind(milvus_uri: str) -> Iterator[GraphRAGIndex]:
    """An index whose embedding sees nothing (every text the same vector): only BM25 tells
    the passages apart."""
    index = GraphRAGIndex.from_triplets(passages(), uri=milvus_uri,
                                        embed_model=HashEmbedding(dim=1), full_text_search=True)
    yield index
    index.close()


def counted(index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of Milvus BM25 searches the store makes (sync and async), counted."""
    calls = [0]
    store = index.store
    for name in ("match_passage_words", "amatch_passage_words"):
        real: Callable[..., Any] = getattr(store, name)

        def spy(*args: Any, _real: Callable[..., Any] = real, **kwargs: Any) -> Any:
            calls[0] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(store, name, spy)
    return calls


def lists_as_milvus_lists_them(index: GraphRAGIndex, texts: list[str], passages: int
                               ) -> list[list[tuple[str, float]]]:
    """The word table's BM25 lists of ``texts``, checked against Milvus's own: the same
    passages in the same order, the same scores."""
    table = index.cache.word_table()
    assert table is not None and len(table) == passages
    in_memory = table.search(texts, 5)
    in_milvus = index.store.match_passage_words(texts, 5)
    assert [[pid for pid, _ in hits] for hits in in_memory] == \
        [[node.node_id for node, _ in hits] for hits in in_milvus]
    np.testing.assert_allclose([s for hits in in_memory for _, s in hits],
                               [s for hits in in_milvus for _, s in hits], rtol=1e-5)
    return in_memory


@pytest.mark.milvus
@LITE_ONLY
def test_bm25_in_memory_ranks_as_milvus_lite_does(blind: GraphRAGIndex) -> None:
    in_memory = lists_as_milvus_lists_them(blind, QUESTIONS, len(FAMILY) + 3)
    assert in_memory[-1] == [] and in_memory[0] and in_memory[3]


@pytest.mark.milvus
@LITE_ONLY
def test_milvus_bm25_settles_a_tie_at_the_cut_by_id_as_the_table_does(milvus_uri: str) -> None:
    same = [(TextNode(text="the same words in every passage", metadata={"n": n},
                      excluded_embed_metadata_keys=["n"]), []) for n in range(12)]
    with GraphRAGIndex.from_triplets(same, uri=milvus_uri, embed_model=HashEmbedding(dim=8),
                                     full_text_search=True) as index:
        [every] = index.store.match_passage_words(["same words"], 12)
        ids = sorted(node.node_id for node, _ in every)  # the stored ids
        assert len(ids) == 12 and len({score for _, score in every}) == 1
        in_milvus = [[node.node_id for node, _ in hits]
                     for hits in index.store.match_passage_words(["same words"], 4)]
        assert in_milvus == [ids[:4]]  # all 12 tie: the lowest ids, not Milvus's pick
        table = index.cache.word_table()
        assert table is not None
        assert [[pid for pid, _ in hits] for hits in table.search(["same words"], 4)] == \
            in_milvus


@pytest.mark.milvus
@LITE_ONLY
def test_the_second_hop_reads_words_in_memory_without_a_milvus_call(
        blind: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counted(blind, monkeypatch)
    question = QUESTIONS[0]

    def found(place: str) -> list[tuple[str, Any]]:
        retriever = blind.as_retriever(method=BridgeRetrieval(), similarity_top_k=5,
                                       passage_search=place)
        hits = retriever.retrieve(question)
        assert [h.node.node_id for h in asyncio.run(retriever.aretrieve(question))] == \
            [h.node.node_id for h in hits]
        return [(h.node.node_id, h.node.metadata["graphrag_found_by"].get("words"))
                for h in hits]

    memory = found("memory")
    assert calls[0] == 0
    milvus = found("milvus")
    assert calls[0] == 2  # one batched BM25 search per retrieval (sync, async)
    assert [pid for pid, _ in memory] == [pid for pid, _ in milvus]
    assert [w for _, w in memory] == pytest.approx([w for _, w in milvus], rel=1e-5)
    assert any(w for _, w in memory)
    # above the passage vectors' budget, the passages are searched in Milvus, but on Milvus
    # Lite (whose BM25 is the same computation in Python, at every query) the words stay
    small = blind.as_retriever(method=BridgeRetrieval(), similarity_top_k=5,
                               memory_search_max_floats=1)
    assert [h.node.node_id for h in small.retrieve(question)] == [pid for pid, _ in milvus]
    assert calls[0] == 2
    # a filtered retrieval gets no BM25 lists at all (term statistics span the tenants)
    scoped = blind.as_retriever(method=BridgeRetrieval(), similarity_top_k=5, filters=
                                MetadataFilters(filters=[MetadataFilter(key="tenant",
                                                                        value="a")]))
    assert all("words" not in h.node.metadata["graphrag_found_by"]
               for h in scoped.retrieve(question))
    assert calls[0] == 2


@pytest.mark.milvus
@LITE_ONLY
def test_on_milvus_lite_the_words_stay_in_memory_above_the_passage_budget(
        blind: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above ``memory_search_max_floats`` the passage vectors are searched in Milvus, yet on
    Milvus Lite the words are held all the same: Lite's BM25 runs in Python at every query
    (125 ms a text on 20,000 passages)."""
    calls = counted(blind, monkeypatch)
    small = blind.as_retriever(method=BridgeRetrieval(), similarity_top_k=5,
                               memory_search_max_floats=1)
    hits = small.retrieve(QUESTIONS[0])
    assert blind.cache.peek("passages") is None and blind.cache.peek("words") is not None
    assert calls[0] == 0 and any("words" in h.node.metadata["graphrag_found_by"] for h in hits)


@pytest.mark.milvus
@LITE_ONLY
def test_a_write_drops_the_words_held_in_memory(blind: GraphRAGIndex) -> None:
    retriever = blind.as_retriever(method=BridgeRetrieval(), similarity_top_k=8)
    question = "Where does the quokka live?"
    assert retriever.retrieve(question)  # the table is built, without the quokka
    assert blind.cache.peek("words") is not None
    blind.insert_triplets([("The quokka lives on Rottnest Island.",
                            [("quokka", "lives on", "Rottnest Island")])])
    texts = [h.node.get_content() for h in retriever.retrieve(question)]
    assert "The quokka lives on Rottnest Island." in texts


CHINESE = [("欧拉在巴塞尔师从约翰·伯努利。", [("欧拉", "师从", "约翰·伯努利")]),
           ("丹尼尔·伯努利研究流体力学。", [("丹尼尔·伯努利", "研究", "流体力学")]),
           ("约翰·伯努利是丹尼尔·伯努利的父亲，也在巴塞尔大学教授数学。",
            [("约翰·伯努利", "父亲", "丹尼尔·伯努利")]),
           ("流体力学研究液体和气体的运动。", [("流体力学", "研究", "运动")])]
CHINESE_QUESTIONS = ["流体力学", "欧拉的老师的儿子研究什么？", "巴塞尔大学的数学", "柏林"]


@pytest.mark.milvus
@LITE_ONLY
def test_another_analyzer_is_read_back_and_run_in_memory_as_milvus_lite_runs_it(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch) -> None:
    """Milvus Lite runs its analyzers in Python: BM25 in memory splits the words with the
    same code (jieba's here), so its lists are Lite's, and no query asks Milvus for them."""
    GraphRAGIndex.from_triplets(CHINESE, uri=milvus_uri, embed_model=embed_model,
                                full_text_analyzer={"tokenizer": "jieba"}).close()
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
        assert index.store.full_text_analyzer == {"tokenizer": "jieba"}
        in_memory = lists_as_milvus_lists_them(index, CHINESE_QUESTIONS, len(CHINESE))
        assert len(in_memory[0]) == 2 and in_memory[-1] == []  # split: found inside runs
        calls = counted(index, monkeypatch)
        hits = index.as_retriever(method=BridgeRetrieval(), similarity_top_k=2,
                                  passage_search="memory").retrieve("流体力学")
        assert calls[0] == 0 and CHINESE[1][0] in [h.node.get_content() for h in hits]


@pytest.mark.milvus
@LITE_ONLY
def test_an_analyzer_lite_cannot_build_here_keeps_bm25_in_milvus(
        milvus_uri: str, embed_model: HashEmbedding, monkeypatch: pytest.MonkeyPatch) -> None:
    data = CHINESE[:2]
    GraphRAGIndex.from_triplets(data, uri=milvus_uri, embed_model=embed_model,
                                full_text_analyzer={"tokenizer": "jieba"}).close()
    import milvus_lite.analyzer

    def missing(params: Any) -> Any:
        raise ImportError("JiebaAnalyzer requires the 'jieba' package")
    monkeypatch.setattr(milvus_lite.analyzer, "create_analyzer", missing)
    with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model) as index:
        assert index.cache.word_table() is None
        calls = counted(index, monkeypatch)
        hits = index.as_retriever(method=BridgeRetrieval(), similarity_top_k=2,
                                  passage_search="memory").retrieve("流体力学")
        assert calls[0] == 1 and data[1][0] in [h.node.get_content() for h in hits]
