"""A generated hostile-input matrix (issue 11): bad values x public entry points, Milvus Lite.

Every case either succeeds with a sane result or raises a
:class:`~llama_index_graphrag_milvus.GraphRAGError` (never a raw TypeError, AttributeError,
UnicodeEncodeError, pydantic or pymilvus error). A write that fails leaves the three
collections as they were and the retriever still answers. Hand-written cases (and the
messages) are in tests/test_hostile_input.py; filter semantics in
tests/retrieval/test_filter_parity.py.

One exception, asserted as such: values that pydantic refuses when LlamaIndex's own classes
are built (``MetadataFilter``, ``MetadataFilters``, ``TextNode``: a non-string filter key, a
``bytes`` or ``object()`` filter value, an unknown operator or condition) raise that class's
``ValidationError`` at construction, before the package sees them.

Two indexes are built once for the module, in one Lite file: ``index`` is only read,
``scratch`` takes the writes and deletes.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from llama_index.core.bridge.pydantic import ValidationError
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn
from pydantic_core import to_jsonable_python

from llama_index_graphrag_milvus import (
    GraphRAGError,
    GraphRAGIndex,
    GraphRelationRerank,
)
from llama_index_graphrag_milvus.retrieval.pcst import SUBGRAPH_NODE_PREFIX
from llama_index_graphrag_milvus.validation import is_utf8
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus  # every case runs against a Milvus Lite index

QUESTION = "Who was the son of Euler's teacher?"
TENANT = "acme"
TEXTS = {text for text, _ in FAMILY}

BAD: dict[str, Any] = {
    "None": None,
    "zero": 0,
    "minus_one": -1,
    "1.5": 1.5,
    "nan": float("nan"),
    "inf": float("inf"),
    "True": True,
    "10**12": 10**12,
    "empty": "",
    "blank": "   ",
    "surrogate": "\ud800",
    "nul": "x\x00y",
    "bytes": b"bytes",
    "empty_list": [],
    "list": ["x"],
    "empty_dict": {},
    "object": object(),
    "100kB": "x" * 100_000,
}
"""The hostile values, by a stable test id."""


def family() -> list[tuple[TextNode, list[tuple[str, str, str]]]]:
    """FAMILY, each passage with tenant metadata, so that filters have something to keep."""
    return [(TextNode(text=text, metadata={"tenant_id": TENANT, "year": 1990 + i}), triplets)
            for i, (text, triplets) in enumerate(FAMILY)]


DOC_ID = "handbook.md"


def doc_passage() -> tuple[TextNode, list[tuple[str, str, str]]]:
    """A passage of the document ``DOC_ID``, with the metadata of FAMILY's first passage."""
    node = TextNode(text="Johann Bernoulli taught mathematics at Basel.",
                    metadata={"tenant_id": TENANT, "year": 1990})
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=DOC_ID)
    return node, [("Johann Bernoulli", "taught mathematics at", "Basel")]


XDIST_GROUP = "hostile_generated"
"""Every case reads or writes the module's two indexes: one xdist worker builds them once
(tests/conftest.py)."""


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("hostile") / "g.db")


@pytest.fixture(scope="module")
def index(db: str) -> Iterator[GraphRAGIndex]:
    """Read only: every case here must leave it as built."""
    built = GraphRAGIndex.from_triplets(family(), uri=db, embed_model=HashEmbedding(dim=64))
    yield built
    built.close()


@pytest.fixture(scope="module")
def scratch(db: str, index: GraphRAGIndex) -> Iterator[GraphRAGIndex]:
    """Takes the writes and deletes (same file, its own collections): FAMILY and one passage
    of the document ``DOC_ID``."""
    built = GraphRAGIndex.from_triplets([*family(), doc_passage()], uri=db,
                                        collection_prefix="scratch",
                                        embed_model=HashEmbedding(dim=64))
    yield built
    built.close()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async call: the passages' MilvusVectorStore keeps the async
    client of the first loop it saw (see tests/retrieval/test_filter_parity.py)."""
    running = asyncio.new_event_loop()
    yield running
    running.close()


# ---------------------------------------------------------------------- checks


def attempt(call: Callable[[], Any], pydantic_ok: bool = False) -> tuple[bool, Any]:
    """``(True, result)``, or ``(False, error)`` for a package error (or, with
    ``pydantic_ok``, a ValidationError of a LlamaIndex class); anything else fails."""
    try:
        return True, call()
    except GraphRAGError as exc:
        assert str(exc), "a package error without a message"
        return False, exc
    except ValidationError as exc:
        if not pydantic_ok:
            pytest.fail(f"raw pydantic ValidationError: {exc}")
        return False, exc
    except Exception as exc:
        pytest.fail(f"crash outside the package errors: {type(exc).__name__}: {exc!r}"[:2000])


def counts(target: GraphRAGIndex) -> tuple[int, int, int]:
    store = target.store
    return (store.count(store.entity_collection), store.count(store.relation_collection),
            store.count(store.passage_collection))


def assert_sane(nodes: Any, top_k: int, texts: set[str] | None = None) -> None:
    """A retrieval result: a list of at most ``top_k`` distinct known passages (plus the
    optional PCST subgraph node)."""
    assert isinstance(nodes, list)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    passages = [n for n in nodes if not n.node.node_id.startswith(SUBGRAPH_NODE_PREFIX)]
    assert len(passages) <= top_k
    ids = [n.node.node_id for n in passages]
    assert len(ids) == len(set(ids))
    assert {n.node.get_content() for n in passages} <= (TEXTS if texts is None else texts)
    for node in passages:
        assert node.score is None or not math.isnan(node.score)


def assert_answers(target: GraphRAGIndex) -> None:
    nodes = target.as_retriever(similarity_top_k=2).retrieve(QUESTION)
    assert 1 <= len(nodes) <= 2
    assert_sane(nodes, 2)


def cases(*names: str) -> list[Any]:
    return [pytest.param(name, BAD[name], id=name) for name in (names or BAD)]


# ---------------------------------------------------------------------- GraphRAGIndex(...)

CONSTRUCTOR_ARGS = ["collection_prefix", "passage_identity_keys", "hub_degree",
                    "consistency_level", "uri"]


CONSTRUCTOR_EXTRAS: list[tuple[str, Any]] = [
    ("collection_prefix", "graphrag\n"), ("collection_prefix", "graphrag "),
    ("collection_prefix", "1graphrag"), ("collection_prefix", "graph-rag"),
    ("consistency_level", "strong"), ("consistency_level", "Customized"),
    ("consistency_level", 2), ("passage_identity_keys", ["tenant_id", 1]),
    ("passage_identity_keys", ("",)), ("passage_identity_keys", "*"),
    ("passage_identity_keys", {"tenant_id"}), ("hub_degree", 1), ("hub_degree", 2.0),
    ("uri", "http://"), ("uri", "g.txt"), ("uri", "/no/such/dir/g.db"),
    ("index_type", "hnsw"), ("index_type", "FLAT "), ("index_type", ""), ("index_type", 0),
    ("index_params", {"M": 8}), ("index_params", {1: 2}),
]
"""Values close to legal ones (a trailing newline, a lower-case level...)."""


def check_constructor(index: GraphRAGIndex, db: str, argument: str, value: Any) -> None:
    """Reopen ``index`` with one hostile argument: refused, or a working index."""
    kwargs: dict[str, Any] = {"uri": db, "embed_model": HashEmbedding(dim=64), argument: value}
    ok, opened = attempt(lambda: GraphRAGIndex(**kwargs))
    if not ok:
        return
    try:  # a hostile value that opens must still give a working index
        ok, nodes = attempt(lambda: opened.as_retriever(
            similarity_top_k=3, passage_scoring="passage").retrieve(QUESTION))
        if ok:
            assert_sane(nodes, 3)
    finally:
        opened.close()
    assert_answers(index)


@pytest.mark.parametrize("argument", CONSTRUCTOR_ARGS)
@pytest.mark.parametrize(("name", "value"), cases())
def test_constructor(index: GraphRAGIndex, db: str, argument: str, name: str,
                     value: Any) -> None:
    check_constructor(index, db, argument, value)


@pytest.mark.parametrize(("argument", "value"), CONSTRUCTOR_EXTRAS, ids=repr)
def test_constructor_near_misses(index: GraphRAGIndex, db: str, argument: str,
                                 value: Any) -> None:
    check_constructor(index, db, argument, value)


# ---------------------------------------------------------------------- writes


def fine_node(**metadata: Any) -> TextNode:
    return TextNode(text="Ada Lovelace wrote notes on the Analytical Engine.", metadata=metadata)


FINE_TRIPLET = ("Ada Lovelace", "wrote notes on", "the Analytical Engine")

WRITES: dict[str, Callable[[Any], Any]] = {
    "data": lambda bad: bad,
    "passage": lambda bad: [(bad, [FINE_TRIPLET])],
    "triplet_list": lambda bad: [("Ada wrote notes.", bad)],
    "triplet": lambda bad: [("Ada wrote notes.", [bad, FINE_TRIPLET])],
    "subject": lambda bad: [("Ada wrote notes.", [(bad, "wrote", "notes")])],
    "object": lambda bad: [("Ada wrote notes.", [("Ada", "wrote", bad)])],
    "predicate": lambda bad: [("Ada wrote notes.", [("Ada", bad, "notes")])],
    "tenant_id": lambda bad: [(fine_node(tenant_id=bad), [FINE_TRIPLET])],
    "nested_metadata": lambda bad: [(fine_node(extra={"inner": [bad]}), [FINE_TRIPLET])],
}
"""Where the bad value goes in ``insert_triplets(data)``."""


def legal_part(value: Any) -> bool:
    """Whether the README says ``value`` makes a triplet part (else the triplet is skipped)."""
    if isinstance(value, str):
        return bool(value.strip()) and is_utf8(value) and len(value.encode()) <= 2048
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value))


def stored(target: GraphRAGIndex, text: str) -> list[Any]:
    """The stored passages with this text (nodes, metadata included)."""
    hits = target.as_naive_retriever(similarity_top_k=1000).retrieve("Ada notes")
    return [h.node for h in hits if h.node.get_content() == text]


@pytest.mark.parametrize("where", list(WRITES))
@pytest.mark.parametrize(("name", "value"), cases())
def test_insert_triplets(scratch: GraphRAGIndex, where: str, name: str, value: Any) -> None:
    before = counts(scratch)
    ok, stats = attempt(lambda: scratch.insert_triplets(WRITES[where](value)))
    after = counts(scratch)
    if not ok:
        assert after == before, "a refused write changed the stored content"
        assert_answers(scratch)
        return
    # at most the case's passage and triplet (an upsert may also drop stale links)
    assert stats.passages <= 1 and stats.relations <= 1, stats
    assert before[2] <= after[2] <= before[2] + stats.passages, (before, after, stats)
    assert after[1] <= before[1] + stats.relations, (before, after, stats)
    assert after[0] <= before[0] + stats.new_entities, (before, after, stats)
    if where in ("subject", "predicate", "object"):  # kept or skipped as the README says
        kept = legal_part(value)
        assert (stats.relations, stats.dropped_triplets) == (int(kept), int(not kept))
    if where == "passage":  # stored as given
        assert len(stored(scratch, value)) == 1
    if where in ("tenant_id", "nested_metadata"):  # metadata comes back in its JSON form
        want = to_jsonable_python(value)
        got = [node.metadata.get("tenant_id") if where == "tenant_id"
               else node.metadata.get("extra") for node in stored(scratch, fine_node().text)]
        assert (want if where == "tenant_id" else {"inner": [want]}) in got
    assert_answers(scratch)


METADATA_KEYS = ["", "   ", "\ud800", "x\x00y", "k" * 100_000, "id", "embedding", "text",
                 "_node_content", "doc_id", "$meta", "a b", "a.b", "a\"b"]
"""Metadata keys that are awkward for Milvus (empty, reserved field names, odd characters)."""


@pytest.mark.parametrize("key", METADATA_KEYS, ids=lambda k: ascii(k)[:20])
def test_insert_metadata_keys(scratch: GraphRAGIndex, key: str) -> None:
    before = counts(scratch)
    node = TextNode(text=f"Metadata key {ascii(key)[:20]} on a passage of its own.",
                    metadata={key: "value"})
    ok, stats = attempt(lambda: scratch.insert_triplets([(node, [FINE_TRIPLET])]))
    if not ok:
        assert counts(scratch) == before
        assert_answers(scratch)
        return
    # written: the passage comes back with its text and that metadata, not mixed up with
    # the store's own fields
    assert stats.passages == 1
    hits = scratch.as_naive_retriever(similarity_top_k=1000).retrieve(node.text)
    mine = [h for h in hits if h.node.get_content() == node.text]
    assert len(mine) == 1
    assert mine[0].node.metadata.get(key) == "value"
    assert_answers(scratch)


# ---------------------------------------------------------------------- delete


@pytest.mark.parametrize("argument", ["ref_doc_id", "filters"])
@pytest.mark.parametrize(("name", "value"), cases())
def test_delete(scratch: GraphRAGIndex, argument: str, name: str, value: Any) -> None:
    before = counts(scratch)
    kwargs = {"ref_doc_id": "no-such-document", argument: value}
    ok, stats = attempt(lambda: scratch.delete(**kwargs))
    if ok:  # no passage has that source document: nothing goes
        assert (stats.passages, stats.relations_deleted, stats.entities_deleted) == (0, 0, 0)
    assert counts(scratch) == before
    assert_answers(scratch)


# ---------------------------------------------------------------------- as_retriever(...)

RETRIEVER_ARGS: dict[str, str | None] = {
    "hops": "passage",
    "entity_top_k": "passage",
    "relation_top_k": "bridge",
    "entity_similarity_threshold": "passage",
    "match_entity_names": "passage",
    "own_relations": "bridge",
    "relation_similarity_threshold": "bridge",
    "max_candidate_relations": "relation",
    "per_hop_max_relations": "passage",
    "per_hop_max_entities": "passage",
    "max_relations_per_passage": "passage",
    "per_hop_max_hub_relations": "passage",
    "passage_scoring": None,
    "max_bridges": "bridge",
    "bridge_query": "bridge",
    "ppr_damping": "ppr",
    "ppr_passage_weight": "ppr",
    "ppr_max_iterations": "ppr",
    "ppr_tolerance": "ppr",
    "pcst_entity_prizes": "pcst",
    "pcst_relation_prizes": "pcst",
    "pcst_edge_cost": "pcst",
    "pcst_subgraph_node": "pcst",
    "relation_search": "bridge",
    "blas_threads": "bridge",
    "similarity_top_k": "bridge",
    "filters": "bridge",
    "ner_prompt": "passage",
    "llm": "passage",
    "callback_manager": None,
    "verbose": None,
}
"""Each retriever argument and the method that reads it (a successful hostile value is then
used by the retrieve that follows)."""


def ner_llm() -> ScriptedLLM:
    return ScriptedLLM(lambda _prompt: '{"named_entities": ["Euler"]}')


@pytest.mark.parametrize("argument", list(RETRIEVER_ARGS))
@pytest.mark.parametrize(("name", "value"), cases())
def test_as_retriever(index: GraphRAGIndex, argument: str, name: str, value: Any) -> None:
    kwargs: dict[str, Any] = {argument: value}
    if RETRIEVER_ARGS[argument] is not None:
        kwargs["passage_scoring"] = RETRIEVER_ARGS[argument]
    if argument == "ner_prompt":
        kwargs["llm"] = ner_llm()  # the prompt is only read with an LLM
    ok, retriever = attempt(lambda: index.as_retriever(**kwargs))
    if not ok:
        return
    top_k = value if argument == "similarity_top_k" else 20
    ok, nodes = attempt(lambda: retriever.retrieve(QUESTION))
    if ok:
        assert_sane(nodes, top_k)


# ---------------------------------------------------------------------- queries

QUERY_EXTRAS: dict[str, Any] = {
    "tabs_and_breaks": "\t\n\r ",
    "bundle_empty": QueryBundle(query_str=""),
    "bundle_nan_vector": QueryBundle(query_str=QUESTION, embedding=[float("nan")] * 64),
    "bundle_zero_vector": QueryBundle(query_str=QUESTION, embedding=[0.0] * 64),
    "bundle_text_vector": QueryBundle(query_str=QUESTION, embedding=["x"] * 64),
    "bundle_short_vector": QueryBundle(query_str=QUESTION, embedding=[0.1] * 63),
    "bundle_none_query": QueryBundle(query_str=None),  # type: ignore[arg-type]
    "bundle_numpy_vector": QueryBundle(query_str=QUESTION,
                                       embedding=np.full(64, 0.125)),  # type: ignore[arg-type]
    "bundle_nested_vector": QueryBundle(query_str=QUESTION, embedding=[[0.1] * 64]),
    "bundle_huge_int_vector": QueryBundle(query_str=QUESTION, embedding=[10**400] * 64),
}
QUERIES = {**BAD, **QUERY_EXTRAS}


def make_retriever(target: GraphRAGIndex, kind: str) -> Any:
    if kind == "naive":
        return target.as_naive_retriever(similarity_top_k=3)
    return target.as_retriever(similarity_top_k=3, passage_scoring=kind)


@pytest.mark.parametrize("kind", ["bridge", "ppr", "naive"])
@pytest.mark.parametrize("query", list(QUERIES))
def test_queries_sync_and_async(index: GraphRAGIndex, loop: asyncio.AbstractEventLoop,
                                kind: str, query: str) -> None:
    retriever = make_retriever(index, kind)
    value = QUERIES[query]
    ok, nodes = attempt(lambda: retriever.retrieve(value))
    ok_async, nodes_async = attempt(lambda: loop.run_until_complete(retriever.aretrieve(value)))
    assert ok == ok_async, "sync and async disagree"
    assert type(nodes) is type(nodes_async)
    if ok:
        assert_sane(nodes, 3)
        assert [n.node.node_id for n in nodes] == [n.node.node_id for n in nodes_async]


# ---------------------------------------------------------------------- as_naive_retriever(...)


@pytest.mark.parametrize("argument", ["similarity_top_k", "filters"])
@pytest.mark.parametrize(("name", "value"), cases())
def test_as_naive_retriever(index: GraphRAGIndex, argument: str, name: str,
                            value: Any) -> None:
    ok, naive = attempt(lambda: index.as_naive_retriever(**{argument: value}))
    if not ok:
        return
    ok, nodes = attempt(lambda: naive.retrieve(QUESTION))
    if ok:
        assert_sane(nodes, value if argument == "similarity_top_k" else 2)


# ---------------------------------------------------------------------- metadata filters


def stored_metadata() -> dict[str, dict[str, Any]]:
    return {text: {"tenant_id": TENANT, "year": 1990 + i}
            for i, (text, _) in enumerate(FAMILY)}


def expected_texts(filters: Any) -> set[str] | None:
    """The passages core's own filter function keeps (``None`` when it cannot judge).

    One difference, on purpose: ``IN``/``NIN`` with a single string means ``[string]`` here,
    where core's function tests for a substring of it."""
    meta = stored_metadata()
    if isinstance(filters, MetadataFilters):
        filters = filters.model_copy(update={"filters": [
            f.model_copy(update={"value": [f.value]})
            if isinstance(f, MetadataFilter) and isinstance(f.value, str)
            and f.operator in (FilterOperator.IN, FilterOperator.NIN) else f
            for f in filters.filters]})
    try:
        keep = build_metadata_filter_fn(meta.__getitem__, filters)
        return {text for text in meta if keep(text)}
    except Exception:
        return None


def check_filters(index: GraphRAGIndex, scratch: GraphRAGIndex,
                  build: Callable[[], Any]) -> None:
    """Build the filters (pydantic may refuse), then use them in both retrievers and in a
    delete of a document whose passage has the metadata of FAMILY's first one: each keeps
    or deletes what core's semantics say, or all three refuse the filters."""
    ok, filters = attempt(build, pydantic_ok=True)
    if not ok:
        return
    expected = expected_texts(filters)
    naive_ok, naive_nodes = attempt(
        lambda: index.as_naive_retriever(similarity_top_k=10, filters=filters)
        .retrieve(QUESTION))
    graph_ok, graph_nodes = attempt(
        lambda: index.as_retriever(similarity_top_k=10, filters=filters).retrieve(QUESTION))
    before = counts(scratch)
    delete_ok, deleted = attempt(lambda: scratch.delete(DOC_ID, filters=filters))
    if delete_ok and deleted.passages:
        scratch.insert_triplets([doc_passage()])  # put it back for the next case
    else:
        assert counts(scratch) == before
    assert naive_ok == graph_ok == delete_ok, "the filters are refused by some calls only"
    if not naive_ok:
        return
    assert_sane(naive_nodes, 10)
    assert_sane(graph_nodes, 10)
    naive_texts = {n.node.get_content() for n in naive_nodes}
    graph_texts = {n.node.get_content() for n in graph_nodes}
    assert graph_texts <= naive_texts
    if expected is not None:
        assert naive_texts == expected, f"filters {filters} kept {naive_texts}"
        assert deleted.passages == (FAMILY[0][0] in expected), "delete disagrees with search"


def one(key: Any = "tenant_id", value: Any = TENANT,
        operator: Any = FilterOperator.EQ) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key=key, value=value, operator=operator)])


FILTER_VALUES = {**BAD, "2**63": 2**63, "-2**63-1": -(2**63) - 1, "2**63-1": 2**63 - 1,
                 "10**30": 10**30, "1e308": 1e308, "quote": 'acme" or "1"=="1',
                 "newline": "acme\n", "acme": TENANT}
FILTER_KEYS = {**BAD, "newline": "tenant_id\n", "space": "tenant_id ", "dotted": "a.b",
               "json_path": 'tenant_id["x"]', "expression": "tenant_id or 1", "digit": "1abc",
               "reserved_id": "id", "reserved_embedding": "embedding", "text": "text"}


@pytest.mark.parametrize("key", list(FILTER_KEYS))
def test_filter_key(index: GraphRAGIndex, scratch: GraphRAGIndex, key: str) -> None:
    check_filters(index, scratch, lambda: one(key=FILTER_KEYS[key]))


@pytest.mark.parametrize("operator", [FilterOperator.EQ, FilterOperator.NE, FilterOperator.IN,
                                      FilterOperator.NIN, FilterOperator.GT])
@pytest.mark.parametrize("value", list(FILTER_VALUES))
def test_filter_value(index: GraphRAGIndex, scratch: GraphRAGIndex, operator: FilterOperator,
                      value: str) -> None:
    key = "year" if isinstance(FILTER_VALUES[value], int) else "tenant_id"
    check_filters(index, scratch, lambda: one(key=key, value=FILTER_VALUES[value],
                                              operator=operator))


@pytest.mark.parametrize("operator", list(FilterOperator))
@pytest.mark.parametrize("value", [TENANT, [TENANT], 1993, None], ids=repr)
def test_filter_operator(index: GraphRAGIndex, scratch: GraphRAGIndex,
                         operator: FilterOperator, value: Any) -> None:
    key = "year" if value == 1993 else "tenant_id"
    check_filters(index, scratch, lambda: one(key=key, value=value, operator=operator))


@pytest.mark.parametrize(("name", "value"), cases("None", "zero", "empty", "blank", "bytes",
                                                  "object", "list"))
def test_filter_condition(index: GraphRAGIndex, scratch: GraphRAGIndex, name: str,
                          value: Any) -> None:
    check_filters(index, scratch, lambda: MetadataFilters(
        filters=[MetadataFilter(key="tenant_id", value=TENANT)], condition=value))


def _deep(depth: int) -> MetadataFilters:
    filters = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value=TENANT)])
    for _ in range(depth):
        filters = MetadataFilters(filters=[filters])
    return filters


NESTED: dict[str, Callable[[], Any]] = {
    "empty": lambda: MetadataFilters(filters=[]),
    "empty_inside_and": lambda: MetadataFilters(filters=[
        MetadataFilters(filters=[]), MetadataFilter(key="tenant_id", value=TENANT)]),
    "empty_inside_or": lambda: MetadataFilters(condition=FilterCondition.OR, filters=[
        MetadataFilters(filters=[]), MetadataFilter(key="tenant_id", value="nobody")]),
    "empty_inside_not": lambda: MetadataFilters(condition=FilterCondition.NOT, filters=[
        MetadataFilters(filters=[])]),
    "deep": lambda: _deep(60),
    "string_member": lambda: MetadataFilters(filters=["tenant_id == 'acme'"]),
    "filter_not_wrapped": lambda: MetadataFilter(key="tenant_id", value=TENANT),
    "list_of_filters": lambda: [MetadataFilter(key="tenant_id", value=TENANT)],
    "dict": lambda: {"tenant_id": TENANT},
}
"""Shapes: empty groups, deep nesting, and the filter-like things that are not filters."""


@pytest.mark.parametrize("shape", list(NESTED))
def test_filter_shape(index: GraphRAGIndex, scratch: GraphRAGIndex, shape: str) -> None:
    check_filters(index, scratch, NESTED[shape])


# ---------------------------------------------------------------------- GraphRelationRerank


@pytest.mark.parametrize("argument", ["top_n", "max_selected_relations", "max_prompt_relations",
                                      "timeout"])
@pytest.mark.parametrize(("name", "value"), cases())
def test_rerank(index: GraphRAGIndex, argument: str, name: str, value: Any) -> None:
    llm = ScriptedLLM(lambda _prompt: '{"useful_relationships": ["[1] x", "[2] y"]}')
    ok, rerank = attempt(lambda: GraphRelationRerank(llm=llm, **{argument: value}))
    if not ok:
        return
    nodes = index.as_retriever(similarity_top_k=4).retrieve(QUESTION)
    ok, ranked = attempt(lambda: rerank.postprocess_nodes(nodes, query_str=QUESTION))
    if ok:
        assert_sane(ranked, rerank.top_n)
        assert llm.prompts, "the LLM was never asked: the rerank silently kept the order"
