"""Metadata filters (tenants) on retrieval, hostile filter values, and idempotent writes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError, MilvusStoreError
from llama_index_graphrag_milvus.milvus.filters import to_milvus_expression
from llama_index_graphrag_milvus.milvus.tenants import partition_key_works
from llama_index_graphrag_milvus.records import Triplet
from tests.support.markers import LITE_ONLY
from tests.support.spies import count_query_rows

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
                                             operator=FilterOperator.TEXT_MATCH_INSENSITIVE)]),
     "not supported"),
    (MetadataFilters(filters=[MetadataFilter(key="tags", value=["x"],
                                             operator=FilterOperator.TEXT_MATCH)]),
     "text_match takes one value"),
    (MetadataFilters(filters=[MetadataFilter(key="tags", value="x",
                                             operator=FilterOperator.ANY)]),
     "any takes a list of values"),
    (MetadataFilters(filters=[MetadataFilter(key="tags", value=[float("nan")],
                                             operator=FilterOperator.ALL)]),
     "not a finite number"),
    (MetadataFilters(filters=[MetadataFilter(key="tags", value=7,
                                             operator=FilterOperator.TEXT_MATCH)]),
     "text_match takes a string"),
]


@LITE_ONLY
def test_bad_filters_are_refused_before_any_query(tenant_index: GraphRAGIndex) -> None:
    for filters, match in BAD_FILTERS:
        with pytest.raises(InvalidInputError, match=match):
            tenant_index.as_retriever(filters=filters)
        with pytest.raises(InvalidInputError, match=match):
            tenant_index.as_naive_retriever(filters=filters)


def test_expression_quotes_every_string() -> None:
    expression = to_milvus_expression(only(HOSTILE), fields={"tenant_id"})
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


# ------------------------------------------------------------------ the tenant layout


@LITE_ONLY
def test_the_tenant_key_partitions_the_passages_and_is_recorded(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index(tenant_data(), tenant_key="tenant_id")
    store = index.store
    fields = {f["name"]: f for f in store.client.describe_collection(
        store.passage_collection)["fields"]}
    assert fields["tenant_id"].get("is_partition_key")
    assert {"tenants", "passage_tenants"} <= {
        f["name"] for f in store.client.describe_collection(store.relation_collection)["fields"]}
    shared = store.client.query(store.relation_collection, filter='id != ""', limit=100,
                                output_fields=["tenants", "passage_tenants"])
    # every tenant ingested the same two facts: one relation each, linked to all tenants
    assert len(shared) == 2 and all(sorted(r["tenants"]) == sorted(TENANTS) for r in shared)
    reopened = GraphRAGIndex(uri=store.uri, embed_model=index.embed_model)
    try:
        assert reopened.store.tenant_key == "tenant_id"
        hits = reopened.as_retriever(filters=only("acme")).retrieve(QUESTION)
        assert hits and {h.node.metadata["tenant_id"] for h in hits} == {"acme"}
    finally:
        reopened.close()


@LITE_ONLY
@pytest.mark.parametrize(("metadata", "match"), [
    ({}, r"has no metadata\['tenant_id'\]: the index's tenant_key"),
    ({"tenant_id": ""}, "a tenant is a string, not blank"),
    ({"tenant_id": " \t"}, "a tenant is a string, not blank"),
    ({"tenant_id": 7}, "a tenant is a string, not blank"),
    ({"tenant_id": "x" * 257}, "at most 256 UTF-8 bytes"),
    ({"tenant_id": "*"}, "other than '\\*'"),
])
def test_a_passage_without_a_valid_tenant_is_refused_before_any_write(
        make_index: Callable[..., GraphRAGIndex], metadata: dict, match: str) -> None:
    index = make_index(tenant_data()[:2], tenant_key="tenant_id")
    before = index.store.count(index.store.passage_collection)
    bad = TextNode(text="Jakob Bernoulli studied probability.", metadata=metadata)
    with pytest.raises(InvalidInputError, match=match):
        index.insert_triplets([(passage("acme", "Fine."), []),
                               (bad, [("Jakob Bernoulli", "studied", "probability")])])
    assert index.store.count(index.store.passage_collection) == before


@LITE_ONLY
def test_the_tenant_key_is_chosen_once(make_index: Callable[..., GraphRAGIndex]) -> None:
    with pytest.raises(InvalidInputError, match="tenant_key must be a metadata key"):
        make_index(tenant_data(), tenant_key="tenant-id")
    index = make_index(tenant_data(), tenant_key="tenant_id", collection_prefix="keyed")
    with pytest.raises(InvalidInputError, match="was created with tenant_key='tenant_id', "
                                                "not 'org'"):
        GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model,
                      collection_prefix="keyed", tenant_key="org")
    plain = make_index(tenant_data(), collection_prefix="plain")
    with pytest.raises(InvalidInputError, match="was created with tenant_key=None"):
        GraphRAGIndex(uri=plain.store.uri, embed_model=plain.embed_model,
                      collection_prefix="plain", tenant_key="tenant_id")


@LITE_ONLY
def test_a_served_query_filtered_to_a_tenant_searches_its_rows_only(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the tenant layout, the served graph's relation and entity searches and reads of
    a query filtered to one tenant filter on the rows' tenants; without a filter they
    do not."""
    index = make_index(tenant_data(), tenant_key="tenant_id")
    served = GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model, graph="milvus")
    seen: list[tuple[str, str]] = []
    client = served.store.client
    for name in ("search", "query"):
        original = getattr(client, name)

        def spy(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            seen.append((kwargs.get("collection_name", ""), kwargs.get("filter", "")))
            return _original(*args, **kwargs)

        monkeypatch.setattr(client, name, spy)
    try:
        for method in ("bridge", "passage", "ppr"):
            seen.clear()
            hits = served.as_retriever(method=method, filters=only("globex")).retrieve(
                QUESTION)
            assert hits and {h.node.metadata["tenant_id"] for h in hits} == {"globex"}
            graph_reads = [f for c, f in seen if not c.endswith("_passages")]
            assert graph_reads and all('array_contains_any(tenants, ["globex", "*"])' in f
                                       for f in graph_reads), (method, graph_reads)
        seen.clear()
        served.as_retriever(method="passage").retrieve(QUESTION)
        assert not any("tenants" in f for _, f in seen)
    finally:
        served.close()


def test_the_tenant_layout_answers_each_tenant_in_both_graph_modes(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    """On Milvus Lite and on a server: the tenant field (a partition key where Milvus keeps
    it through upserts: Lite, servers from 2.4; the test server is 2.3.5), and each tenant's
    filtered answers (graph in memory and served) hold only its passages."""
    index = make_index(tenant_data(), tenant_key="tenant_id")
    store = index.store
    key = {f["name"]: f for f in store.client.describe_collection(
        store.passage_collection)["fields"]}["tenant_id"]
    version = "" if store.is_lite else str(store.client.get_server_version())
    assert bool(key.get("is_partition_key")) == partition_key_works(version, store.is_lite)
    assert bool(key.get("is_partition_key")) == store.is_lite  # the test server is 2.3.5
    served = GraphRAGIndex(uri=store.uri, embed_model=index.embed_model, graph="milvus")
    try:
        for opened in (index, served):
            for tenant in ("acme", HOSTILE):
                hits = opened.as_retriever(method="passage", filters=only(tenant),
                                           similarity_top_k=50).retrieve(QUESTION)
                assert len(hits) == 2 and {h.node.metadata["tenant_id"] for h in hits} == {
                    tenant}
    finally:
        served.close()


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_delete_shrinks_a_hubs_tenants_in_windows(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    """Which tenants an entity keeps after a delete is read in windows (a hub costs one
    window per tenant it may lose, not its relations), and equals the tenants of the
    relations left."""
    from llama_index_graphrag_milvus.milvus import writes

    def doc(tenant: str, i: int) -> TextNode:
        node = passage(tenant, f"[{tenant}] Hub links item {i}.")
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"{tenant}-{i}")
        return node

    data = [(doc(tenant, i), [("Hub", "links", f"Item {i}")])
            for tenant, count in ((HOSTILE, 3), ("acme", 30)) for i in range(count)]
    index = make_index(data, tenant_key="tenant_id")
    store = index.store
    hub = Triplet("Hub", "x", "y").subject_id
    monkeypatch.setattr(writes, "IN_USE_WINDOW", 4)
    # (the spreads' refresh reads the hub's relations: under the cap, each records its
    # passages; tests/ingestion/test_spreads.py)
    reads = count_query_rows(store.client, monkeypatch, unless="subject_passages !=")

    def tenants(entity: str) -> list[str]:
        [row] = store.client.get(collection_name=store.entity_collection, ids=[entity],
                                 output_fields=["tenants"])
        return sorted(row["tenants"])

    assert tenants(hub) == sorted([HOSTILE, "acme"])
    index.delete_ref_doc(f"{HOSTILE}-0")  # "Hub links Item 0" narrowed to acme's passage
    assert tenants(hub) == sorted([HOSTILE, "acme"])  # Items 1 and 2 still link it
    assert tenants(Triplet("a", "b", "Item 0").object_id) == ["acme"]
    for i in (1, 2):
        index.delete_ref_doc(f"{HOSTILE}-{i}")
    assert tenants(hub) == ["acme"] and tenants(Triplet("a", "b", "Item 1").object_id) == [
        "acme"]
    assert reads and max(reads) <= 4
    index.delete_ref_doc("acme-5")  # Item 5 goes: its only relation
    assert store.client.get(collection_name=store.entity_collection,
                            ids=[Triplet("a", "b", "Item 5").object_id]) == []
    assert tenants(hub) == ["acme"]
