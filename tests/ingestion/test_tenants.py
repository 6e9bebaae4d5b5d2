"""Metadata filters (tenants) on retrieval, hostile filter values, and idempotent writes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError, MilvusStoreError
from llama_index_graphrag_milvus.milvus.filters import to_milvus_expression
from tests.support.markers import LITE_ONLY

# Lite only: the refused filters (checked before any query) and the simulated crash (the real
# kills on a server are in tests/milvus/test_kills.py).

HOSTILE = 'acme" or tenant_id != "'
TENANTS = ["acme", "globex", HOSTILE, "back\\slash\\", "o'brien"]


def passage(tenant: str, text: str) -> TextNode:
    return TextNode(text=text, metadata={"tenant_id": tenant})


def tenant_data() -> list[tuple[TextNode, list[tuple[str, str, str]]]]:
    data = []
    for tenant in TENANTS:
        # the same facts for every tenant (shared relations and entities), own passages
        data.append((passage(tenant, f"[{tenant}] Euler was a student of Johann Bernoulli."),
                     [("Leonhard Euler", "was a student of", "Johann Bernoulli")]))
        data.append((passage(tenant, f"[{tenant}] Daniel Bernoulli was the son of Johann."),
                     [("Daniel Bernoulli", "was the son of", "Johann Bernoulli")]))
    return data


def only(tenant: str) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key="tenant_id", value=tenant)])


@pytest.fixture
def tenant_index(make_index: Callable[..., GraphRAGIndex]) -> GraphRAGIndex:
    return make_index(tenant_data())


QUESTION = "Who was the son of Euler's teacher?"


def test_graph_and_naive_retrieval_never_leak_other_tenants(
        tenant_index: GraphRAGIndex) -> None:
    # one index for every case: building it on the server is the slow part
    for tenant in TENANTS:
        for scoring in ("passage", "relation"):
            retriever = tenant_index.as_retriever(filters=only(tenant),
                                                  passage_scoring=scoring,
                                                  similarity_top_k=50)
            for hits in (retriever.retrieve(QUESTION),
                         asyncio.run(retriever.aretrieve(QUESTION))):
                assert len(hits) == 2, (tenant, scoring)
                assert {h.node.metadata["tenant_id"] for h in hits} == {tenant}
        naive = tenant_index.as_naive_retriever(similarity_top_k=50, filters=only(tenant))
        hits = naive.retrieve(QUESTION)
        assert len(hits) == 2, tenant
        assert {h.node.metadata["tenant_id"] for h in hits} == {tenant}


def test_a_hostile_value_of_an_unknown_tenant_matches_nothing(
        tenant_index: GraphRAGIndex) -> None:
    for value in ['nobody" or "1" == "1', "x' or '1' == '1", "\\", '"']:
        assert tenant_index.as_retriever(filters=only(value)).retrieve(QUESTION) == []
        assert tenant_index.as_naive_retriever(filters=only(value)).retrieve(QUESTION) == []


def test_filter_operators_and_conditions(tenant_index: GraphRAGIndex) -> None:
    filters = MetadataFilters(filters=[
        MetadataFilter(key="tenant_id", value=["acme", "globex"], operator=FilterOperator.IN)])
    hits = tenant_index.as_retriever(filters=filters, similarity_top_k=50).retrieve(QUESTION)
    assert {h.node.metadata["tenant_id"] for h in hits} == {"acme", "globex"}
    nin = MetadataFilters(filters=[
        MetadataFilter(key="tenant_id", value=TENANTS[1:], operator=FilterOperator.NIN)])
    hits = tenant_index.as_retriever(filters=nin, similarity_top_k=50).retrieve(QUESTION)
    assert {h.node.metadata["tenant_id"] for h in hits} == {"acme"}


BAD_FILTERS = [
    (MetadataFilters(filters=[MetadataFilter(key="tenant id", value="x")]),
     "not a plain identifier"),
    (MetadataFilters(filters=[MetadataFilter(key="t) or (1", value="x")]),
     "not a plain identifier"),
    (MetadataFilters(filters=[MetadataFilter(key="tags", value="x",
                                             operator=FilterOperator.TEXT_MATCH)]),
     "not supported"),
]


@LITE_ONLY
def test_bad_filters_are_refused_before_any_query(tenant_index: GraphRAGIndex) -> None:
    for filters, match in BAD_FILTERS:
        with pytest.raises(InvalidInputError, match=match):
            tenant_index.as_retriever(filters=filters)
        with pytest.raises(InvalidInputError, match=match):
            tenant_index.as_naive_retriever(filters=filters)


def test_expression_quotes_every_string() -> None:
    expression = to_milvus_expression(only(HOSTILE))
    assert expression == '(tenant_id == "acme\\" or tenant_id != \\"")'


def snapshot(index: GraphRAGIndex) -> dict[str, list[tuple]]:
    store = index.store
    result = {}
    for collection in (store.entity_collection, store.relation_collection,
                       store.passage_collection):
        fields = {store.entity_collection: ["name"],
                  store.relation_collection: ["text", "subject_id", "object_id",
                                              "passage_ids"],
                  store.passage_collection: ["text"]}[collection]
        rows = store.client.query(collection, filter="", limit=10_000,
                                  output_fields=["id", *fields])
        result[collection.split("_")[-1]] = sorted(
            tuple(str(row[f]) if f == "passage_ids" else row[f] for f in ["id", *fields])
            for row in rows)
    return result


@LITE_ONLY
def test_a_write_killed_midway_and_run_again_equals_a_clean_run(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    clean = make_index(tenant_data(), collection_prefix="clean")
    crashed = GraphRAGIndex(uri=clean.store.uri, collection_prefix="crashed",
                            embed_model=clean.embed_model)
    store = crashed.store
    original = store.upsert_rows

    def crash_before_relations(collection: str, rows: list) -> None:
        if collection.endswith("_relations"):
            raise MilvusStoreError("simulated kill after passages and entities were written")
        original(collection, rows)

    monkeypatch.setattr(store, "upsert_rows", crash_before_relations)
    with pytest.raises(MilvusStoreError, match="simulated kill"):
        crashed.insert_triplets(tenant_data())
    monkeypatch.setattr(store, "upsert_rows", original)
    crashed.insert_triplets(tenant_data())
    assert snapshot(crashed) == snapshot(clean)
    assert crashed.graph.num_relations == clean.graph.num_relations == 2
