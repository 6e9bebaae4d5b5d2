"""Hostile and careless input through the public API (issue 11, item 6): every case is a
package error (or the documented skip), never a raw TypeError, AttributeError,
UnicodeEncodeError, pydantic ValidationError or pymilvus error, and nothing is written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus import GraphRAGError, GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.errors import EmbeddingDimensionError
from tests.support.fakes import HashEmbedding, ScriptedLLM
from tests.support.markers import LITE_ONLY

"""Input checks happen before Milvus is called: the server adds nothing but time. The tests
that only read share one Lite index (``shared_family_index``) on one xdist worker; those that
write, or would if a check failed, have their own (``family_index``)."""
XDIST_GROUP = "hostile_input"
"""Its tests run on one xdist worker, which builds the shared index once (tests/conftest.py)."""

QUESTION = "Who taught Euler?"
SURROGATE = "bad \ud800 text"


def counts(index: GraphRAGIndex) -> tuple[int, int, int]:
    store = index.store
    return (store.count(store.entity_collection), store.count(store.relation_collection),
            store.count(store.passage_collection))


SILENT_LLM = ScriptedLLM(lambda prompt: '{"triplets": []}')
"""An extraction LLM that finds nothing (the refusals come before it is asked)."""

WRITES: dict[str, Callable[[GraphRAGIndex], Any]] = {
    "passage with a lone surrogate":
        lambda i: i.insert_triplets([(SURROGATE, [("a", "b", "c")])]),
    "None instead of a triplet list": lambda i: i.insert_triplets([("fine text", None)]),
    "a string instead of a triplet list": lambda i: i.insert_triplets([("fine", "a,b,c")]),
    "a number instead of a triplet list": lambda i: i.insert_triplets([("fine", 3)]),
    "bad passage after good ones": lambda i: i.insert_triplets(
        [("good passage one", [("a", "b", "c")]), (SURROGATE, [])]),
    "a metadata key full-text search keeps": lambda i: i.insert_triplets(
        [(TextNode(text="fine", metadata={"sparse_embedding": 1}), [("a", "b", "c")])]),
    "a metadata key Milvus keeps": lambda i: i.insert_triplets(
        [(TextNode(text="fine", metadata={"$meta": 1}), [("a", "b", "c")])]),
    "a metadata integer beyond 64 bits, after a good passage": lambda i: i.insert_triplets(
        [("good passage one", [("a", "b", "c")]),
         (TextNode(text="fine", metadata={"ids": [1, {"n": 2**63}]}), [("a", "b", "c")])]),
    "the package's triplets key holding a number": lambda i: i.insert_nodes(
        [TextNode(text="Scalar triplets.", metadata={"graphrag_triplets": 5})]),
    "a document id with a lone surrogate": lambda i: i.insert(
        Document(text="Euler was born in Basel.", doc_id="a\ud800"), llm=SILENT_LLM),
    "a document id over 64 KiB": lambda i: i.update_ref_doc(
        Document(text="Euler was born in Basel.", doc_id="d" * 65536), llm=SILENT_LLM),
    "update_ref_doc of a string": lambda i: i.update_ref_doc("Euler was born in Basel."),
    "insert_nodes of strings": lambda i: i.insert_nodes(["Euler was born in Basel."]),
    "insert_nodes of a string": lambda i: i.insert_nodes("Euler was born in Basel."),
    "delete(None)": lambda i: i.delete(None),
    "delete(123)": lambda i: i.delete(123),
    "delete('')": lambda i: i.delete(""),
}


@LITE_ONLY
@pytest.mark.parametrize("case", list(WRITES))
def test_bad_writes_are_package_errors_and_write_nothing(
        family_index: GraphRAGIndex, case: str) -> None:
    before = counts(family_index)
    with pytest.raises(InvalidInputError) as raised:
        WRITES[case](family_index)
    assert any(word in str(raised.value)
               for word in ("got", "expected", "UTF-8", "rename", "give"))
    assert counts(family_index) == before


@LITE_ONLY
def test_triplet_parts_with_lone_surrogates_are_skipped_and_counted(
        family_index: GraphRAGIndex) -> None:
    stats = family_index.insert_triplets([("Ada wrote notes.", [
        ("Ada\ud800", "wrote", "notes"), ("Ada", "wrote", "notes"), ("Ada", "born in", 1815)])])
    assert (stats.passages, stats.relations, stats.dropped_triplets) == (1, 2, 1)


@LITE_ONLY
def test_control_characters_in_names_are_dropped_not_stored(family_index: GraphRAGIndex) -> None:
    """NUL, BEL and ESC inside a name are dropped: the name is the entity written without
    them, and nothing a terminal would obey is stored."""
    store = family_index.store
    before = store.count(store.relation_collection)
    stats = family_index.insert_triplets([("Ada wrote notes.", [
        ("A\x00da\x07", "wro\x1bte", "notes"), ("Ada", "wrote", "notes"), ("\x00\x1b", "x", "y")])])
    names = {row["name"] for row in store.client.query(store.entity_collection, "id != ''",
                                                       output_fields=["name"])}
    assert {"Ada", "notes"} <= names
    assert not any(c in name for name in names for c in "\x00\x07\x1b")
    assert (stats.relations, stats.dropped_triplets) == (1, 1)  # one relation, said twice
    assert store.count(store.relation_collection) == before + 1


RETRIEVER_ARGS: list[dict[str, Any]] = [
    {"hops": "2"}, {"hops": None}, {"hops": 1.5}, {"hops": True}, {"hops": -1},
    {"max_candidate_relations": "100"}, {"max_relations_per_passage": 0.5},
    {"entity_top_k": 16_385}, {"relation_top_k": 20_000}, {"entity_top_k": 0},
    {"similarity_top_k": -1}, {"relation_search": "gpu"}, {"passage_scoring": 3}, {"method": 3.5},
]


@pytest.mark.parametrize("kwargs", RETRIEVER_ARGS, ids=str)
def test_bad_retriever_arguments_are_package_errors(shared_family_index: GraphRAGIndex,
                                                    kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        shared_family_index.as_retriever(**kwargs)


BAD_QUERIES: list[Any] = [None, 42, ["x"], b"who taught Euler", {"q": 1}, "", "   \n",
                          SURROGATE]


@pytest.mark.parametrize("query", BAD_QUERIES, ids=repr)
@pytest.mark.parametrize("kind", ["graph", "naive"])
def test_bad_queries_are_package_errors_sync_and_async(shared_family_index: GraphRAGIndex,
                                                       query: Any, kind: str) -> None:
    retriever = (shared_family_index.as_retriever() if kind == "graph"
                 else shared_family_index.as_naive_retriever())
    with pytest.raises(InvalidInputError):
        retriever.retrieve(query)
    with pytest.raises(InvalidInputError):
        asyncio.run(retriever.aretrieve(query))


@pytest.mark.parametrize("top_k", [0, -1, True, "5", 16_385])
def test_naive_similarity_top_k_is_checked(shared_family_index: GraphRAGIndex,
                                           top_k: Any) -> None:
    with pytest.raises(InvalidInputError, match="similarity_top_k"):
        shared_family_index.as_naive_retriever(similarity_top_k=top_k)


def test_naive_retriever_refuses_arguments_it_would_ignore(
        shared_family_index: GraphRAGIndex) -> None:
    with pytest.raises(InvalidInputError, match=r"unexpected arguments \['similarity_topk'\]"):
        shared_family_index.as_naive_retriever(similarity_topk=5)
    # what VectorIndexRetriever takes still goes to it
    naive = shared_family_index.as_naive_retriever(verbose=False, vector_store_kwargs={})
    assert naive.retrieve(QUESTION)


def test_unknown_modes_are_named_with_their_choices(
        shared_family_index: GraphRAGIndex) -> None:
    """Core raised a bare ValueError, the naive retriever's only when it searched."""
    with pytest.raises(InvalidInputError, match=r"vector_store_query_mode must be one of "
                                                r"default, .*hybrid.*got 'bogus'"):
        shared_family_index.as_naive_retriever(vector_store_query_mode="bogus")
    with pytest.raises(InvalidInputError, match=r"response_mode must be one of refine, "
                                                r"compact, .*got 'bogus'"):
        shared_family_index.as_query_engine(llm=ScriptedLLM([]), response_mode="bogus")
    naive = shared_family_index.as_naive_retriever(vector_store_query_mode="default")
    assert naive.retrieve(QUESTION)


def test_naive_retriever_refuses_a_model_of_another_dimension(
        shared_family_index: GraphRAGIndex) -> None:
    naive = shared_family_index.as_naive_retriever(embed_model=HashEmbedding(dim=32))
    with pytest.raises(EmbeddingDimensionError):
        naive.retrieve(QUESTION)
    with pytest.raises(EmbeddingDimensionError):
        asyncio.run(naive.aretrieve(QUESTION))
    # the right model still works
    assert shared_family_index.as_naive_retriever().retrieve(QUESTION)


@LITE_ONLY
def test_every_error_here_is_a_graphrag_error(family_index: GraphRAGIndex) -> None:
    """One sweep over all the cases above: nothing escapes as another exception type."""
    raw: list[str] = []
    calls: list[tuple[str, Callable[[], Any]]] = [
        *((f"retriever {kw}", lambda kw=kw: family_index.as_retriever(**kw))
          for kw in RETRIEVER_ARGS),
        *((f"query {q!r}", lambda q=q: family_index.as_retriever().retrieve(q))
          for q in BAD_QUERIES),
        *((f"naive query {q!r}", lambda q=q: family_index.as_naive_retriever().retrieve(q))
          for q in BAD_QUERIES),
        *((name, lambda w=w: w(family_index)) for name, w in WRITES.items()),
    ]
    for name, call in calls:
        try:
            call()
        except GraphRAGError:
            continue
        except Exception as exc:  # collected: the assert lists them all
            raw.append(f"{name}: {type(exc).__name__}: {exc}")
        else:
            raw.append(f"{name}: no error")
    assert raw == []


@pytest.mark.parametrize("scoring", ["bridge", "ppr", "pcst", "passage"])
def test_a_huge_similarity_top_k_never_reaches_milvus_as_a_limit_above_16384(
        shared_family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch,
        scoring: str) -> None:
    limits: list[int] = []
    client = shared_family_index.store.client
    original = client.search

    def search(*args: Any, **kwargs: Any) -> Any:
        limits.append(kwargs["limit"])
        return original(*args, **kwargs)

    monkeypatch.setattr(client, "search", search)
    hits = shared_family_index.as_retriever(passage_scoring=scoring, passage_search="milvus",
                                            similarity_top_k=1_000_000).retrieve(QUESTION)
    assert hits and limits and max(limits) <= 16_384
    # ranked in memory (the default here), the same passages come back
    same = shared_family_index.as_retriever(passage_scoring=scoring,
                                            similarity_top_k=1_000_000).retrieve(QUESTION)
    assert {h.node.node_id for h in same} == {h.node.node_id for h in hits}


@pytest.mark.parametrize("uri", ["http://", "https://:19530", "tcp://"])
def test_a_server_url_without_a_host_is_refused_before_connecting(uri: str) -> None:
    # pymilvus would connect it to localhost:19530, to whatever server listens there
    with pytest.raises(InvalidInputError, match=r"names no host.*localhost:19530"):
        GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=8))


@LITE_ONLY
def test_user_metadata_named_like_core_s_graph_keys_is_kept(family_index: GraphRAGIndex) -> None:
    """``nodes`` and ``relations`` are where core's KG extractors write; a user's value under
    those common words was dropped from every stored passage (a filter on it matched
    nothing), and a number there failed with a raw TypeError."""
    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

    family_index.insert_triplets([(TextNode(text="Ada Lovelace wrote notes.", metadata={
        "relations": "family", "nodes": 2}), [("Ada Lovelace", "wrote", "notes")])])
    family_index.insert_nodes([TextNode(text="Counting passage.", metadata={"nodes": 5})])
    only = MetadataFilters(filters=[MetadataFilter(key="relations", value="family")])
    hits = family_index.as_naive_retriever(filters=only, similarity_top_k=5).retrieve("Ada")
    assert [(h.node.get_content(), h.node.metadata["nodes"]) for h in hits] == [
        ("Ada Lovelace wrote notes.", 2)]
