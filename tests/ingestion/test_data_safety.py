"""Data safety (issue 11): passages of two tenants never overwrite each other, deletes can be
scoped to a tenant, no relation or entity outlives its passages, and a reopened index refuses
an embedding model other than the one it was built with."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import FilterCondition, MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import (
    EmbeddingModelError,
    GraphRAGIndex,
    InvalidInputError,
)
from llama_index_graphrag_milvus.extraction.kinds import KIND_CODES
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
from llama_index_graphrag_milvus.milvus.served import ServedGraph
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HashEmbedding, ScriptedLLM
from tests.support.markers import LITE_ONLY

HANDBOOK = "Employees of the company must wear badges. Ada met Boris at the front desk."
MET = [("Ada", "met", "Boris")]


def tenant(name: str, **extra: Any) -> dict[str, Any]:
    return {"tenant_id": name, **extra}


def only(name: str) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key="tenant_id", value=name)])


def handbook(name: str, text: str = HANDBOOK, **extra: Any) -> Document:
    return Document(text=text, doc_id="handbook.md", metadata=tenant(name, **extra))


def rows(index: GraphRAGIndex, collection: str, fields: list[str]) -> list[dict[str, Any]]:
    store = index.store
    return store.client.query(collection, filter='id != ""', output_fields=["id", *fields],
                              limit=16384, consistency_level="Strong")


def check_invariants(index: GraphRAGIndex) -> dict[str, int]:
    """No relation points to a missing passage or entity, no entity is left without a
    relation, each passage's stored triplets are exactly the relations linking to it, and
    each entity lists exactly the passages of its relations."""
    store = index.store
    if store.dim is None:
        return {"passages": 0, "entities": 0, "relations": 0}
    passages = {r["id"]: r for r in rows(index, store.passage_collection, ["_node_content"])}
    listed = {r["id"]: r["passage_ids"]
              for r in rows(index, store.entity_collection, ["passage_ids"])}
    entities = set(listed)
    relations = rows(index, store.relation_collection,
                     ["subject_id", "object_id", "passage_ids"])
    linked: dict[str, set[str]] = {p: set() for p in passages}
    for relation in relations:
        assert relation["passage_ids"], f"relation {relation['id']} has no passage"
        for passage in relation["passage_ids"]:
            assert passage in passages, f"relation {relation['id']} links a deleted passage"
            linked[passage].add(relation["id"])
        assert {relation["subject_id"], relation["object_id"]} <= entities
    used = {e for r in relations for e in (r["subject_id"], r["object_id"])}
    assert entities == used, f"entities without a relation: {sorted(entities - used)}"
    expected: dict[str, set[str]] = {}
    for relation in relations:
        for end in (relation["subject_id"], relation["object_id"]):
            expected.setdefault(end, set()).update(relation["passage_ids"])
    for entity, passages_listed in listed.items():
        assert len(passages_listed) == len(set(passages_listed)), entity
        assert set(passages_listed) == expected[entity], entity
    for passage in store.get_passages(list(passages)):
        stored = {Triplet(*t).id for t in passage.metadata.get(TRIPLETS_KEY, [])}
        assert stored == linked[passage.node_id], passage.get_content()
    if store.tenant_key:
        check_tenants(index, {pid: row["_node_content"] for pid, row in passages.items()})
    return {"passages": len(passages), "entities": len(entities), "relations": len(relations)}


def check_tenants(index: GraphRAGIndex, passages: dict[str, str]) -> None:
    """With a tenant key: each relation records the tenant of each of its passages (in the
    passages' order) and those tenants once; each entity the tenants of its relations; each
    passage row its tenant in the partition key field."""
    store = index.store
    key = store.tenant_key
    assert key is not None
    tenant = {row["id"]: row[key] for row in rows(index, store.passage_collection, [key])}
    assert set(tenant) == set(passages)
    for node in store.get_passages(list(passages)):
        assert node.metadata[key] == tenant[node.node_id]
    relations = rows(index, store.relation_collection,
                     ["subject_id", "object_id", "passage_ids", "passage_tenants", "tenants"])
    expected: dict[str, set[str]] = {}
    for relation in relations:
        aligned = [tenant[p] for p in relation["passage_ids"]]
        assert list(relation["passage_tenants"]) == aligned, relation
        assert list(relation["tenants"]) == list(dict.fromkeys(aligned)), relation
        for end in (relation["subject_id"], relation["object_id"]):
            expected.setdefault(end, set()).update(aligned)
    for entity in rows(index, store.entity_collection, ["tenants"]):
        assert list(entity["tenants"]) == sorted(expected[entity["id"]]), entity


# ------------------------------------------------------------------ identity of passages


@LITE_ONLY
def test_identical_text_in_two_tenants_keeps_two_passages(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index([(TextNode(text=HANDBOOK, metadata=tenant(t)), MET)
                        for t in ("acme", "globex")])
    assert check_invariants(index) == {"passages": 2, "entities": 2, "relations": 1}
    for name in ("acme", "globex"):
        for retriever in (index.as_retriever(filters=only(name)),
                          index.as_naive_retriever(filters=only(name))):
            hits = retriever.retrieve("Who did Ada meet?")
            assert [h.node.metadata["tenant_id"] for h in hits] == [name]


@LITE_ONLY
def test_declared_identity_keys_update_other_metadata_in_place(
        make_index: Callable[..., GraphRAGIndex], milvus_uri: str,
        embed_model: HashEmbedding) -> None:
    index = make_index([(TextNode(text=HANDBOOK, metadata=tenant(t, version=1)), MET)
                        for t in ("acme", "globex")], passage_identity_keys=["tenant_id"])
    index.insert_triplets([(TextNode(text=HANDBOOK, metadata=tenant("acme", version=2)), MET)])
    versions = sorted((p["tenant_id"], p["version"]) for p in rows(
        index, index.store.passage_collection, ["tenant_id", "version"]))
    assert versions == [("acme", 2), ("globex", 1)]
    # with every key in the identity (the default), a new version is a new passage
    everything = make_index([(TextNode(text=HANDBOOK, metadata=tenant("acme", version=v)), MET)
                             for v in (1, 2)], collection_prefix="all_keys")
    assert check_invariants(everything)["passages"] == 2
    # the rule is recorded: reopening uses it, and another rule is refused
    assert GraphRAGIndex(uri=milvus_uri, embed_model=embed_model).passage_identity_keys == (
        "tenant_id",)
    with pytest.raises(InvalidInputError, match=r"identifies passages by.*tenant_id"):
        GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, passage_identity_keys="*")
    with pytest.raises(InvalidInputError, match="list of metadata key names"):
        GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, passage_identity_keys="tenant")


# ------------------------------------------------------------------ scoped delete and update


@LITE_ONLY
def test_delete_and_update_can_be_scoped_to_a_tenant(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index([(Document(text=HANDBOOK, doc_id="handbook.md", metadata=tenant(t)),
                         MET) for t in ("acme", "globex", "initech")])
    assert check_invariants(index)["passages"] == 3
    stats = index.delete("handbook.md", filters=only("acme"))
    assert stats.passages == 1 and stats.relations_deleted == 0
    left = {p["tenant_id"] for p in rows(index, index.store.passage_collection, ["tenant_id"])}
    assert left == {"globex", "initech"}
    assert check_invariants(index)["relations"] == 1
    with pytest.raises(InvalidInputError, match="MetadataFilters"):
        index.delete("handbook.md", filters={"tenant_id": "globex"})  # type: ignore[arg-type]
    # an unscoped delete names the document in every tenant
    assert index.delete("handbook.md").passages == 2
    assert check_invariants(index) == {"passages": 0, "entities": 0, "relations": 0}


@LITE_ONLY
def test_scoped_update_replaces_one_tenants_document(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    from tests.support.fakes import ScriptedLLM

    index = make_index([(Document(text=HANDBOOK, doc_id="handbook.md", metadata=tenant(t)),
                         MET) for t in ("acme", "globex")])
    llm = ScriptedLLM(lambda prompt: '{"triplets": [["Ada", "married", "Boris"]]}')
    index.update(handbook("acme", "Ada married Boris in the spring."), llm=llm,
                 filters=only("acme"))
    texts = {(p["tenant_id"], p["text"]) for p in rows(
        index, index.store.passage_collection, ["tenant_id", "text"])}
    assert texts == {("globex", HANDBOOK), ("acme", "Ada married Boris in the spring.")}
    assert check_invariants(index)["relations"] == 2
    # a document of another scope under acme's filters would replace acme's copy by a
    # globex one: refused, sync and async, before anything is deleted
    before = check_invariants(index)
    with pytest.raises(InvalidInputError, match="outside the filters of its update"):
        index.update(handbook("globex", "Globex text."), llm=llm, filters=only("acme"))
    with pytest.raises(InvalidInputError, match="outside the filters of its update"):
        asyncio.run(index.aupdate_ref_doc(handbook("globex", "Globex text."), llm=llm,
                                          filters=only("acme")))
    assert check_invariants(index) == before
    # a nested scope is checked the same way (core's filter function refuses nesting)
    nested = MetadataFilters(filters=[only("acme")], condition=FilterCondition.OR)
    with pytest.raises(InvalidInputError, match="outside the filters of its update"):
        index.update(handbook("globex", "Globex text."), llm=llm, filters=nested)
    assert check_invariants(index) == before
    index.update(handbook("acme", "Ada married Boris in the summer."), llm=llm, filters=nested)
    assert {(p["tenant_id"], p["text"]) for p in rows(
        index, index.store.passage_collection, ["tenant_id", "text"])} == {
        ("globex", HANDBOOK), ("acme", "Ada married Boris in the summer.")}


# ------------------------------------------------------------------ no orphans


@LITE_ONLY
def test_relations_of_an_earlier_ingestion_do_not_outlive_the_passage(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    document = Document(text=HANDBOOK, doc_id="doc")
    index = make_index([(document, MET)])
    index.insert_triplets([(document, [("Ada", "married", "Boris")])])
    # the passage now supports only the second relation
    assert [r["id"] for r in rows(index, index.store.relation_collection, [])] == [
        Triplet("Ada", "married", "Boris").id]
    check_invariants(index)
    index.delete("doc")
    assert check_invariants(index) == {"passages": 0, "entities": 0, "relations": 0}


@LITE_ONLY
def test_a_passage_twice_in_one_call_keeps_both_triplet_lists(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    document = Document(text=HANDBOOK, doc_id="doc")
    index = make_index([(document, MET), (document, [("Ada", "married", "Boris")])])
    assert check_invariants(index) == {"passages": 1, "entities": 2, "relations": 2}
    index.delete("doc")
    assert check_invariants(index) == {"passages": 0, "entities": 0, "relations": 0}


PEOPLE = ["Ada", "Boris", "Chen", "Dara", "Emil"]
VERBS = ["met", "married", "taught", "hired"]
DOCS = ["a.md", "b.md", "c.md"]
TEXTS = ["Notes from the front desk.", "Minutes of the board.", "The staff newsletter."]


def triplets_json(triplets: list[tuple[str, str, str]]) -> str:
    """What an extraction LLM answers (the extractor's JSON)."""
    return json.dumps({"triplets": [list(t) for t in triplets]})


def random_operation(rng: random.Random, index: GraphRAGIndex) -> str:
    """Insert (possibly a passage again, possibly twice in one call), delete (possibly
    scoped) or update through the public API."""

    def passage() -> tuple[Document, list[tuple[str, str, str]]]:
        triplets = [(rng.choice(PEOPLE), rng.choice(VERBS), rng.choice(PEOPLE))
                    for _ in range(rng.randint(0, 3))]
        return (Document(text=rng.choice(TEXTS), doc_id=rng.choice(DOCS),
                         metadata=tenant(rng.choice(["acme", "globex"]))), triplets)

    kind = rng.choice(["insert", "insert", "insert", "delete", "scoped delete", "update",
                       "scoped update"])
    if kind == "insert":
        batch = [passage() for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            batch.append((batch[0][0], [(rng.choice(PEOPLE), "knew", rng.choice(PEOPLE))]))
        index.insert_triplets(batch)
    elif kind == "delete":
        index.delete(rng.choice(DOCS))
    elif kind == "scoped delete":
        index.delete(rng.choice(DOCS), filters=only(rng.choice(["acme", "globex"])))
    else:  # the document's passages replaced by one of another text (and maybe tenant)
        document, triplets = passage()
        scoped = kind == "scoped update"
        index.update_ref_doc(document, llm=ScriptedLLM(lambda _prompt: triplets_json(
            triplets)), filters=only(document.metadata["tenant_id"]) if scoped else None)
    return kind


@LITE_ONLY
@pytest.mark.parametrize("tenant_key", [None, "tenant_id"], ids=["filters", "tenant_key"])
@pytest.mark.parametrize("seed", range(4))
def test_no_relation_or_entity_outlives_its_passages_property(
        make_index: Callable[..., GraphRAGIndex], seed: int, tenant_key: str | None) -> None:
    """Property: after any sequence of inserts, re-inserts, (scoped) deletes and (scoped)
    updates, every relation links only existing passages, every entity has a relation, and
    every passage's stored triplets are exactly the relations that link to it; with a tenant
    key, every relation and entity records exactly the tenants of its passages. Seeded
    sequences of 20 operations, checked after each."""
    rng = random.Random(seed)
    index = make_index([], collection_prefix=f"seq{seed}", tenant_key=tenant_key)
    # a second object on the same collections with the graph served by Milvus (opened once
    # they exist): after every write it reads what the writer's in-memory graph holds
    served: GraphRAGIndex | None = None
    done, linked = [], 0
    for _ in range(20):
        done.append(random_operation(rng, index))
        check_invariants(index)
        check_kinds(index)
        if index.store.dim is not None:
            served = served or GraphRAGIndex(uri=index.store.uri, collection_prefix=f"seq{seed}",
                                             embed_model=index.embed_model, graph="milvus")
            assert index.graph_mode == "memory" and served.graph_mode == "milvus"
            neighbourhoods = served_neighbourhoods(served)
            assert neighbourhoods == memory_neighbourhoods(index), done
            linked += sum(bool(relations) for relations, _ in neighbourhoods.values())
    assert served is not None and linked > 0
    served.close()
    assert "insert" in done and any("delete" in kind for kind in done)


def served_neighbourhoods(index: GraphRAGIndex) -> dict[str, tuple[Any, ...]]:
    """Per person: its relations with their passages, and the passages it leads to, as the
    served graph's requests read them."""
    graph = ServedGraph(index.store)
    vector = index.embed_model.get_query_embedding("who met whom")
    result = {}
    for name in PEOPLE:
        entity = entity_id(name)
        relations = graph.relations_around(vector, [entity], 1000)
        result[name] = (sorted((r.id, tuple(sorted(r.passage_ids))) for r in relations),
                        sorted(graph.entity_passages([entity], 256)[entity]))
    return result


def memory_neighbourhoods(index: GraphRAGIndex) -> dict[str, tuple[Any, ...]]:
    """The same from the index's in-memory graph."""
    graph = index.graph
    vector = np.asarray(index.embed_model.get_query_embedding("who met whom"), np.float32)
    result = {}
    for name in PEOPLE:
        entity = entity_id(name)
        rows = graph.relations_of_entities(graph.entity_ids.lookup([entity]), vector)
        result[name] = (sorted(zip(graph.relation_ids.ids(rows),
                                   (tuple(sorted(p)) for p in graph.passages_of(rows)),
                                   strict=True)),
                        sorted(graph.entity_passages(entity)))
    return result


def check_kinds(index: GraphRAGIndex) -> None:
    """Every relation row has the kinds of its two ends, known values (empty for triplets
    given without kinds: the bridge choice infers those from the names, in both modes)."""
    if index.store.dim is None:
        return
    for relation in rows(index, index.store.relation_collection,
                         ["subject_kind", "object_kind"]):
        assert {relation["subject_kind"], relation["object_kind"]} <= set(KIND_CODES), relation


# ------------------------------------------------------------------ the embedding model


class SaltedHashEmbedding(HashEmbedding):
    """Another model of the same dimension: the same words land in other buckets."""

    def _vector(self, text: str) -> list[float]:
        return super()._vector(" ".join(f"salt{w}" for w in text.split()))


@LITE_ONLY
def test_another_model_of_the_same_dimension_is_refused_on_reopen(
        family_index: GraphRAGIndex, milvus_uri: str, caplog: pytest.LogCaptureFixture
        ) -> None:
    with pytest.raises(EmbeddingModelError, match=r"built with HashEmbedding.*"
                       r"SaltedHashEmbedding.*allow_embed_model_change=True"):
        GraphRAGIndex(uri=milvus_uri, embed_model=SaltedHashEmbedding(dim=64))
    # the same vectors under another name (a model loaded from another path) are accepted
    renamed = HashEmbedding(dim=64, model_name="/models/elsewhere/hash")
    assert GraphRAGIndex(uri=milvus_uri, embed_model=renamed).as_retriever().retrieve("Euler")
    # a deliberate switch is recorded: the next reopen with the new model needs no flag
    with caplog.at_level(logging.WARNING, logger="llama_index_graphrag_milvus.ingestion.identity"):
        GraphRAGIndex(uri=milvus_uri, embed_model=SaltedHashEmbedding(dim=64),
                      allow_embed_model_change=True)
    assert "recording SaltedHashEmbedding" in caplog.text
    GraphRAGIndex(uri=milvus_uri, embed_model=SaltedHashEmbedding(dim=64))
    with pytest.raises(EmbeddingModelError, match="built with SaltedHashEmbedding"):
        GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64))
