"""One filter language for the graph and the naive retriever (issue 11, item 5).

Every operator and condition over the same awkward values (quotes, backslashes, line breaks,
tabs, non-ASCII): the graph retriever (two scorings) and the naive retriever must return the
same passages, and those must be the ones Python picks from the metadata with core's
semantics (``build_metadata_filter_fn``: ``NOT`` keeps what matches none of its filters).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.milvus.filters import matches as matches_in_python
from llama_index_graphrag_milvus.milvus.filters import quote, to_milvus_expression
from tests.support.markers import LITE_ONLY, SERVER_ONLY

TENANTS = ["acme", "o'brien", 'say "hi"', "back\\slash\\", "line\nbreak", "cr\rlf\r\n",
           "tab\tx", "café", "中文", "😀", "\\n not a break", "ctrl\x07\x1b\x7f", ""]
"""One passage per tenant, each with its own ``year``."""
QUESTION = "Who was the son of Euler's teacher?"
OP = FilterOperator
BACKSLASH_AND_QUOTES = ["back\\slash\\", 'say "hi"', "o'brien"]


MISSING = object()
TAGS: list[Any] = [["red", "blue"], ["blue"], [], "red and blue", MISSING, ["50%_off", "a\\b"],
                   ['say "hi"', "中文"], ["red"], None, ["line\nbreak", "_"], "", "50% off",
                   ["RED", "blue"]]
"""A list, a string, nothing or None per passage: what contains, any, all and is_empty tell
apart."""
CODES: list[Any] = [[1990, 7], [7], [], MISSING, [8, -1]]


def metadata(position: int, tenant: str) -> dict[str, Any]:
    found = {"tenant_id": tenant, "year": 1990 + 3 * position,
             "tags": TAGS[position % len(TAGS)], "codes": CODES[position % len(CODES)]}
    return {key: value for key, value in found.items() if value is not MISSING}


def parity_data() -> list[tuple[TextNode, list[tuple[str, str, str]]]]:
    # the same facts for every passage: the graph reaches each of them
    return [(TextNode(text=f"Passage {i}: Daniel Bernoulli was the son of Johann Bernoulli.",
                      metadata=metadata(i, tenant)),
             [("Daniel Bernoulli", "was the son of", "Johann Bernoulli")])
            for i, tenant in enumerate(TENANTS)]


def where(key: str, operator: FilterOperator, value: Any) -> MetadataFilter:
    return MetadataFilter(key=key, operator=operator, value=value)


def group(condition: str, *filters: MetadataFilter | MetadataFilters) -> MetadataFilters:
    return MetadataFilters(filters=list(filters), condition=FilterCondition(condition))


def cases() -> Iterator[tuple[str, MetadataFilters]]:
    for tenant in TENANTS:
        for operator in (OP.EQ, OP.NE):
            yield f"{operator.value} {tenant!r}", group("and", where("tenant_id", operator, tenant))
        yield f"in [{tenant!r}, 'acme']", group("and", where("tenant_id", OP.IN, [tenant, "acme"]))
        yield f"nin [{tenant!r}]", group("and", where("tenant_id", OP.NIN, [tenant]))
        # the case the vector store's own translation inverted
        yield f"not == {tenant!r}", group("not", where("tenant_id", OP.EQ, tenant))
    for pivot in ("back\\slash\\", "café", "o'brien", "tab\tx", "😀", "", "中文"):
        for operator in (OP.GT, OP.GTE, OP.LT, OP.LTE):
            yield f"{operator.value} {pivot!r}", group("and", where("tenant_id", operator, pivot))
    for bound in (1990, 2001, 1999.5, 2050):
        for operator in (OP.EQ, OP.NE, OP.GT, OP.GTE, OP.LT, OP.LTE):
            yield f"year {operator.value} {bound}", group("and", where("year", operator, bound))
    yield "year in", group("and", where("year", OP.IN, [1990, 1999, 2026]))
    yield "year nin", group("and", where("year", OP.NIN, [1990, 1999, 2026]))
    yield "in backslash/quotes", group("and", where("tenant_id", OP.IN, BACKSLASH_AND_QUOTES))
    yield "nin backslash/quotes", group("and", where("tenant_id", OP.NIN, BACKSLASH_AND_QUOTES))
    yield "in []", group("and", where("tenant_id", OP.IN, []))
    yield "nin []", group("and", where("tenant_id", OP.NIN, []))
    yield "in unknown", group("and", where("tenant_id", OP.IN, ["nobody", "line", "back"]))
    yield "and", group("and", where("tenant_id", OP.NE, "acme"), where("year", OP.LT, 2005))
    yield "or", group("or", where("tenant_id", OP.EQ, "line\nbreak"),
                      where("tenant_id", OP.EQ, 'say "hi"'), where("year", OP.GTE, 2020))
    yield "not of two", group("not", where("tenant_id", OP.IN, BACKSLASH_AND_QUOTES),
                              where("year", OP.GT, 2014))
    yield "nested", group(
        "or",
        group("and", where("tenant_id", OP.GTE, "c"), where("year", OP.NE, 1999)),
        group("not", where("tenant_id", OP.NIN, ["中文", "😀", "cr\rlf\r\n"]),
              group("or", where("year", OP.LTE, 1996), where("year", OP.GT, 2020))),
    )
    yield "nested not", group("not", group("and", where("tenant_id", OP.NE, "tab\tx"),
                                           where("year", OP.LT, 2011)))
    yield from holds_cases()


def holds_cases() -> Iterator[tuple[str, MetadataFilters]]:
    """contains, any, all, text_match and is_empty over lists, strings, no value and None
    (values without LIKE's wildcards: see ``WILDCARDS``)."""
    for value in ("red", "blue", "and", 'say "hi"', "中文", "line\nbreak", "RED", "nothing",
                  "0% "):
        yield f"tags contains {value!r}", group("and", where("tags", OP.CONTAINS, value))
    for number in (7, 1990, 5, -1):
        yield f"codes contains {number}", group("and", where("codes", OP.CONTAINS, number))
    for values in (["red", "nothing"], ["中文", "line\nbreak"], ["blue", "red"], []):
        for operator in (OP.ANY, OP.ALL):
            yield (f"tags {operator.value} {values!r}",
                   group("and", where("tags", operator, values)))
    for operator, values in ((OP.ANY, [7, 8]), (OP.ALL, [1990, 7]), (OP.ANY, []),
                             (OP.ALL, [])):
        yield f"codes {operator.value} {values}", group("and", where("codes", operator, values))
    for value in ("ac", "\n", "😀", "", 'hi"', "'", "ctrl\x07", "\t", "é"):
        yield (f"tenant_id text_match {value!r}",
               group("and", where("tenant_id", OP.TEXT_MATCH, value)))
    for key in ("tags", "codes", "tenant_id", "nothing"):
        yield f"{key} is_empty", group("and", where(key, OP.IS_EMPTY, None))
    yield "not contains red", group("not", where("tags", OP.CONTAINS, "red"))
    yield "not is_empty", group("not", where("tags", OP.IS_EMPTY, None))
    yield "or of holds", group("or", where("tenant_id", OP.TEXT_MATCH, "a"),
                               where("codes", OP.CONTAINS, 7))
    yield "not any", group("not", where("tags", OP.ANY, ["blue", "off"]))
    # in / nin over a key some passages hold a list under (Milvus Lite's `in` failed there)
    for operator in (OP.IN, OP.NIN):
        for values in (["red and blue", ""], ["red", "blue"], [], ["nothing"]):
            yield (f"tags {operator.value} {values!r}",
                   group("and", where("tags", operator, values)))
        yield f"codes {operator.value} [7, 1990]", group("and", where("codes", operator, [7, 1990]))
    yield "not in over lists", group("not", where("tags", OP.IN, ["", "50% off"]))


WILDCARDS = [
    # Milvus Lite's LIKE over metadata has no escape: % _ and \ match any one character
    ("tags", OP.TEXT_MATCH, "0%_o", {"ctrl\x07\x1b\x7f"}),  # "50% off" (core: no match)
    ("tags", OP.CONTAINS, "50%_off", {"cr\rlf\r\n", "ctrl\x07\x1b\x7f"}),  # list, string
    ("tenant_id", OP.TEXT_MATCH, "back\\slash", {"back\\slash\\"}),
    ("tenant_id", OP.TEXT_MATCH, "%", set(TENANTS) - {""}),
]
"""(key, operator, value, the tenants kept): what the filters module documents."""


def matches(meta: dict[str, Any], filters: MetadataFilters | MetadataFilter) -> bool:
    """Core's semantics, nested filters included."""
    if isinstance(filters, MetadataFilter):
        try:
            return build_metadata_filter_fn(lambda _: meta,
                                            MetadataFilters(filters=[filters]))("")
        except TypeError:  # core cannot compare (a number in a string): no match
            return False
    results = [matches(meta, f) for f in filters.filters]
    if filters.condition == FilterCondition.OR:
        return any(results)
    if filters.condition == FilterCondition.NOT:
        return not any(results)
    return all(results)


def _core_has_not() -> bool:
    """Whether this llama-index-core's filter function knows NOT (0.14.0 does not)."""
    try:
        build_metadata_filter_fn(lambda _: {"k": 1}, MetadataFilters(
            filters=[MetadataFilter(key="k", value=1)], condition=FilterCondition.NOT))("")
    except ValueError:
        return False
    return True


CORE_HAS_NOT = _core_has_not()


def ids(hits: list) -> set[str]:
    return {hit.node.node_id for hit in hits}


def mismatches(name: str, filters: MetadataFilters, expected: set[str],
               got: dict[str, set[str]], stored: dict[str, dict[str, Any]]) -> list[str]:
    def tenants(node_ids: set[str]) -> list[str]:
        return sorted(stored[i]["tenant_id"] for i in node_ids)

    return [f"{name}: {retriever} kept {tenants(found)}, expected {tenants(expected)}\n"
            f"  expression: {to_milvus_expression(filters)}"
            for retriever, found in got.items() if found != expected]


def retrieved(index: GraphRAGIndex, filters: MetadataFilters) -> dict[str, set[str]]:
    """The passages each retriever keeps under ``filters``."""
    return {
        "graph passage": ids(index.as_retriever(filters=filters, similarity_top_k=50,
                                                passage_scoring="passage").retrieve(QUESTION)),
        "graph default": ids(index.as_retriever(filters=filters, similarity_top_k=50)
                             .retrieve(QUESTION)),
        "naive": ids(index.as_naive_retriever(similarity_top_k=50, filters=filters)
                     .retrieve(QUESTION)),
    }


@LITE_ONLY
def test_graph_and_naive_retrievers_keep_the_same_passages(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index(parity_data())
    everything = index.as_naive_retriever(similarity_top_k=50).retrieve(QUESTION)
    assert len(everything) == len(TENANTS)
    stored = {hit.node.node_id: hit.node.metadata for hit in everything}
    # metadata round-trips exactly, awkward strings included
    assert sorted(m["tenant_id"] for m in stored.values()) == sorted(TENANTS)
    for position, tenant in enumerate(TENANTS):
        assert metadata(position, tenant).items() <= next(
            m for m in stored.values() if m["tenant_id"] == tenant).items()

    failures, async_cases, partial = [], [], 0
    for name, filters in cases():
        expected = {node_id for node_id, meta in stored.items() if matches(meta, filters)}
        partial += 0 < len(expected) < len(stored)
        if all(isinstance(f, MetadataFilter) for f in filters.filters) and (
                CORE_HAS_NOT or filters.condition != FilterCondition.NOT):  # core agrees
            keep = build_metadata_filter_fn(stored.__getitem__, filters)
            assert expected == {node_id for node_id in stored if keep(node_id)}, name
        if name.startswith(("not", "in backslash", "nin backslash", "nested")):
            async_cases.append((name, filters, expected))
        failures += mismatches(name, filters, expected, retrieved(index, filters), stored)

    async def retrieve_async() -> None:
        # one event loop: MilvusVectorStore keeps the async client of the first one it saw
        for name, filters, expected in async_cases:
            naive = index.as_naive_retriever(similarity_top_k=50, filters=filters)
            graph = index.as_retriever(filters=filters, similarity_top_k=50)
            got = {"naive async": ids(await naive.aretrieve(QUESTION)),
                   "graph async": ids(await graph.aretrieve(QUESTION))}
            failures.extend(mismatches(name, filters, expected, got, stored))

    asyncio.run(retrieve_async())
    for key, operator, value, kept in WILDCARDS:
        filters = group("and", where(key, operator, value))
        for retriever in (index.as_retriever(filters=filters, similarity_top_k=50),
                          index.as_naive_retriever(filters=filters, similarity_top_k=50)):
            found = {hit.node.metadata["tenant_id"] for hit in retriever.retrieve(QUESTION)}
            if found != kept:
                failures.append(f"{key} {operator.value} {value!r} kept {sorted(found)}, "
                                f"expected {sorted(kept)}")
    assert len(async_cases) > len(TENANTS)
    assert partial > 80  # most cases keep some passages and drop others: nothing is vacuous
    assert not failures, "\n".join(failures)


@LITE_ONLY
def test_naive_filters_cannot_be_silently_overridden(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    data = parity_data()[:3]
    for position, (node, _) in enumerate(data):
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=['a"b.md', "acme.md", "c.md"][position])
    index = make_index(data)
    only_acme = group("and", where("tenant_id", OP.EQ, "acme"))
    with pytest.raises(InvalidInputError, match="cannot be combined"):
        index.as_naive_retriever(filters=only_acme,
                                 vector_store_kwargs={"string_expr": "year > 0"})

    def tenants(**kwargs: Any) -> list[str]:
        return sorted(hit.node.metadata["tenant_id"] for hit in index.as_naive_retriever(
            similarity_top_k=50, **kwargs).retrieve(QUESTION))

    # node_ids and doc_ids are quoted and combine with filters (the vector store pasted
    # them into its expression as they were: a crafted id reached every document)
    assert tenants(doc_ids=['a"b.md']) == [TENANTS[0]]
    assert tenants(doc_ids=['x"] or doc_id in ["acme.md', "c.md"]) == [TENANTS[2]]
    assert tenants(doc_ids=["acme.md", 'a"b.md'], filters=only_acme) == ["acme"]
    assert tenants(doc_ids=["c.md"], filters=only_acme) == []
    acme_node = next(hit.node.node_id for hit in index.as_naive_retriever(
        similarity_top_k=50).retrieve(QUESTION) if hit.node.metadata["tenant_id"] == "acme")
    assert tenants(node_ids=[acme_node, 'x" or id != "']) == ["acme"]
    for bad in ([None], "acme.md", [1]):
        with pytest.raises(InvalidInputError, match="takes a list of string ids"):
            index.as_naive_retriever(doc_ids=bad)
    # other vector store kwargs still reach the store, next to the filter
    naive = index.as_naive_retriever(similarity_top_k=50, filters=only_acme,
                                     vector_store_kwargs={"milvus_search_config": {}})
    assert [hit.node.metadata["tenant_id"] for hit in naive.retrieve(QUESTION)] == ["acme"]


@LITE_ONLY
def test_not_of_an_ordering_of_two_types_keeps_what_milvus_keeps(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    """Milvus reads ``"unknown" > 2000`` as unknown, which NOT leaves unknown: the passage
    is dropped. The Python check of a scoped update (``filters.matches``) kept it, so an
    update could write a document its own filters never found again."""
    from llama_index_graphrag_milvus.milvus.filters import matches as package_matches

    years: list[Any] = [1990, 2010, "unknown"]
    index = make_index([(TextNode(text=f"Passage {i}: Daniel Bernoulli.", metadata={
        "year": year}), [("Daniel Bernoulli", "wrote", f"note {i}")])
        for i, year in enumerate(years)])
    for filters in (group("not", where("year", OP.GT, 2000)),
                    group("not", group("or", where("year", OP.LT, 2000),
                                       where("year", OP.EQ, 2010))),
                    group("or", group("not", where("year", OP.GTE, 2000)),
                          where("year", OP.EQ, "unknown"))):
        kept = {hit.node.metadata["year"] for hit in index.as_naive_retriever(
            similarity_top_k=10, filters=filters).retrieve(QUESTION)}
        assert kept == {y for y in years if package_matches({"year": y}, filters)}, filters
    assert package_matches({"year": "unknown"}, group("or", where("year", OP.EQ, "unknown")))


def test_quote_escapes_what_milvus_reads_as_escapes() -> None:
    assert quote("a\nb\rc\td\\e\"f'g") == '"a\\nb\\rc\td\\\\e\\"f\'g"'
    assert quote("中文😀") == '"中文😀"'


@pytest.mark.parametrize("filters, match", [
    (group("and", where("tenant_id", OP.EQ, "bad \ud800")), "UTF-8 cannot encode"),
    (group("and", where("tenant_id", OP.IN, ["ok", "\udcff"])), "UTF-8 cannot encode"),
    (group("and", where("year", OP.GT, float("nan"))), "not a finite number"),
    (group("and", where("year", OP.LT, float("inf"))), "not a finite number"),
    # the fields full-text search adds compare the field, not the metadata of that name
    (group("and", where("full_text", OP.EQ, "yes")), "field of the passage collection"),
    (group("and", where("sparse_embedding", OP.EQ, "yes")), "field of the passage"),
    (group("and", where("_node_content", OP.EQ, "yes")), "field of the passage"),
    # MilvusVectorStore's own keys, over any metadata of that name (wrong passages kept)
    (group("and", where("document_id", OP.EQ, "a.md")), "filter on doc_id"),
    (group("and", where("ref_doc_id", OP.NE, "a.md")), "filter on doc_id"),
    # a string field compared with a number: a Milvus parse error at query time
    (group("and", where("doc_id", OP.EQ, 7)), "compared with strings only"),
    (group("or", where("doc_id", OP.IN, [1, 2])), "compared with strings only"),
    (group("and", where("doc_id", OP.LT, 2.5)), "compared with strings only"),
])
def test_values_milvus_cannot_match_are_refused(filters: MetadataFilters, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        to_milvus_expression(filters)


@SERVER_ONLY
def test_a_server_before_2_4_evaluates_list_filters_and_refuses_substrings(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index(parity_data()[:5])
    assert index.store.server_version[:2] == (2, 3)  # the test server

    def kept(filters: MetadataFilters) -> set[str]:
        return {hit.node.metadata["tenant_id"] for hit in
                index.as_retriever(filters=filters, similarity_top_k=50).retrieve(QUESTION)}

    assert kept(group("and", where("codes", OP.CONTAINS, 7))) == {"acme", "o'brien"}
    assert kept(group("and", where("codes", OP.ALL, [1990, 7]))) == {"acme"}
    assert kept(group("and", where("codes", OP.ANY, [8, 1990]))) == {"acme", "line\nbreak"}
    # a passage without the key: != keeps it, NOT of == keeps it (as core)
    assert kept(group("and", where("codes", OP.NE, 5))) == set(TENANTS[:5])
    assert kept(group("not", where("codes", OP.CONTAINS, 8))) == set(TENANTS[:4])
    for filters in (group("and", where("tenant_id", OP.TEXT_MATCH, "ac")),
                    group("or", where("year", OP.GT, 1), where("tags", OP.IS_EMPTY, None)),
                    group("and", where("tags", OP.CONTAINS, "red")),
                    group("and", where("tags", OP.ANY, ["blue", "nothing"]))):
        for make in (index.as_retriever, index.as_naive_retriever):
            with pytest.raises(InvalidInputError, match=r"need Milvus 2\.4 or later"):
                make(filters=filters)


@LITE_ONLY
def test_the_tenant_key_field_takes_every_operator(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    # the tenant key is a string field of the collection, doc_id one MilvusVectorStore adds
    data = [(node, triplets) for node, triplets in parity_data() if node.metadata["tenant_id"]]
    index = make_index(data, tenant_key="tenant_id")  # a tenant is never ""
    stored = {hit.node.node_id: hit.node.metadata for hit in
              index.as_naive_retriever(similarity_top_k=50).retrieve(QUESTION)}
    assert len(stored) == len(data) == len(TENANTS) - 1
    failures = []
    for name, filters in cases():
        if "tenant_id" in repr(filters) or name.startswith(("tags contains", "codes")):
            expected = {i for i, meta in stored.items() if matches(meta, filters)}
            failures += mismatches(name, filters, expected, retrieved(index, filters), stored)
    for operator, value in ((OP.CONTAINS, "ac"), (OP.CONTAINS, 7), (OP.ANY, ["hi", "中"]),
                            (OP.ALL, ["a", "c"]), (OP.ALL, [7]), (OP.ANY, []),
                            (OP.ALL, []), (OP.IS_EMPTY, None)):
        filters = group("and", where("tenant_id", operator, value))
        for outer in (filters, group("not", filters)):
            expected = {i for i, meta in stored.items() if matches(meta, outer)}
            failures += mismatches(f"{outer.condition.value} tenant_id {operator.value} "
                                   f"{value!r}", outer, expected, retrieved(index, outer),
                                   stored)
    assert not failures, "\n".join(failures)
    some = next(iter(index.as_naive_retriever(similarity_top_k=1).retrieve(QUESTION)))
    source = some.node.ref_doc_id
    for filters, count in ((group("and", where("doc_id", OP.NE, "nothing")), len(data)),
                           (group("and", where("doc_id", OP.EQ, "nothing")), 0)):
        assert len(index.as_retriever(filters=filters, similarity_top_k=50)
                   .retrieve(QUESTION)) == count
    assert source is None  # parity passages are plain texts: no document


def test_milvus_words_deep_nesting_and_one_value_in_are_handled() -> None:
    for key in ("and", "Not", "like", "exists", "True", "null", "is"):
        with pytest.raises(InvalidInputError, match="a word of Milvus's filter expressions"):
            to_milvus_expression(group("and", where(key, OP.EQ, 1)))
    deep = group("and", where("year", OP.EQ, 1))
    for _ in range(40):
        deep = group("and", deep)
    with pytest.raises(InvalidInputError, match="nest deeper than"):
        to_milvus_expression(deep)
    # in with one value is equality, in the expression and in Python alike
    assert not matches_in_python({"tenant_id": "ac"},
                                 group("and", where("tenant_id", OP.IN, "acme")))
    assert "json_contains_any(codes, [-1])" in to_milvus_expression(
        group("and", where("codes", OP.CONTAINS, -1)))
