"""A retrieval filtered to one tenant uses and shows only what that tenant's passages support:
another tenant's secret (a passage and its triplets about a person both tenants name) shows
in no output (passages, their metadata, the explanation, the rerank's prompt, the explorer),
in either graph mode, sync or async; and the other tenant's data does not steer the ranking:
the filtered answers equal those of an index holding the first tenant alone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import (
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
from llama_index_graphrag_milvus.explore.data import ExplorerData
from llama_index_graphrag_milvus.records import Triplet
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus
XDIST_GROUP = "tenant_isolation"
"""The indexes are built once for the module (Lite): its tests run on one xdist worker (see
tests/conftest.py)."""

SECRETS = ("secretly", "Globex", "40 million", "Moreau Holdings")
"""Words only tenant B's passages hold."""
ACME = [(TextNode(text=text, metadata={"tenant_id": "acme"}), triplets)
        for text, triplets in [
            *FAMILY,
            ("Alice Moreau is the chief executive of Acme and a student of Daniel Bernoulli.",
             [("Alice Moreau", "is the chief executive of", "Acme"),
              ("Alice Moreau", "is a student of", "Daniel Bernoulli")]),
        ]]
GLOBEX = [(TextNode(text=text, metadata={"tenant_id": "globex"}), triplets)
          for text, triplets in [
              ("Alice Moreau is being acquired secretly by Globex for 40 million.",
               [("Alice Moreau", "secretly acquired by", "Globex for 40 million")]),
              ("Johann Bernoulli secretly advised Moreau Holdings, a Globex fund.",
               [("Johann Bernoulli", "secretly advised", "Moreau Holdings"),
                ("Moreau Holdings", "is a fund of", "Globex")]),
              ("Daniel Bernoulli secretly invested in Globex for 40 million.",
               [("Daniel Bernoulli", "secretly invested in", "Globex for 40 million")]),
          ]]
QUESTIONS = ("Who is acquiring Alice Moreau?",
             "What did the son of Euler's teacher contribute?",
             "Whom did Johann Bernoulli advise?")
METHODS = ("bridge", "ppr", "pcst", "passage", "relation")
ONLY_ACME = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="acme")])


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret.casefold() in text.casefold()]


def shown(nodes: list[NodeWithScore]) -> str:
    """Everything a node list shows: texts, metadata (JSON), what LLMs and embedders see."""
    return "\n".join([*(n.node.get_content(metadata_mode=MetadataMode.ALL) for n in nodes),
                      json.dumps([n.node.metadata for n in nodes], default=str)])


@pytest.fixture(scope="module", params=[None, "tenant_id"], ids=["filters", "tenant_key"])
def indexes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, GraphRAGIndex]]:
    """Both tenants (graph in memory and served), and acme alone; with filters alone, and
    with the tenant layout (``tenant_key``). On Milvus Lite, built once per module and
    layout: every test here only reads them."""
    uri = str(tmp_path_factory.mktemp("tenants") / "graph.db")
    embed_model = HashEmbedding(dim=64)
    both = GraphRAGIndex.from_triplets([*ACME, *GLOBEX], uri=uri, embed_model=embed_model,
                                       tenant_key=request.param)
    served = GraphRAGIndex(uri=uri, embed_model=embed_model, collection_prefix=both.store.prefix,
                           graph="milvus")
    # served as on a server's vector index: entity sets counted or read before a search,
    # the named entities' relations read after their rows (Lite's FLAT index searches)
    indexed = GraphRAGIndex(uri=uri, embed_model=embed_model,
                            collection_prefix=both.store.prefix, graph="milvus")
    indexed.store.index_type = "AUTOINDEX"
    alone = GraphRAGIndex.from_triplets(ACME, uri=uri, embed_model=embed_model,
                                        collection_prefix="acme_alone", tenant_key=request.param)
    try:
        yield {"memory": both, "milvus": served, "milvus, vector index": indexed,
               "alone": alone}
    finally:
        for index in (served, indexed, alone, both):
            index.close()


@pytest.mark.parametrize("method", METHODS)
def test_a_filtered_retrieval_shows_and_uses_only_its_tenants_passages(
        indexes: dict[str, GraphRAGIndex], method: str) -> None:
    for question in QUESTIONS:
        expected = [n.node.get_content() for n in indexes["alone"].as_retriever(
            method=method, similarity_top_k=5).retrieve(question)]
        for mode in ("memory", "milvus", "milvus, vector index"):
            retriever = indexes[mode].as_retriever(method=method, similarity_top_k=5,
                                                   filters=ONLY_ACME)
            for nodes in (retriever.retrieve(question),
                          asyncio.run(retriever.aretrieve(question))):
                assert leaks(shown(nodes)) == [], (mode, question)
                assert {n.node.metadata["tenant_id"] for n in nodes} == {"acme"}
                # the other tenant's relations steer nothing: acme alone answers the same
                assert [n.node.get_content() for n in nodes] == expected, (mode, question)
            explanation = retriever.explain(question)
            assert leaks(explanation.to_json()) == [], (mode, question)
            assert leaks(explanation.to_html()) == [], (mode, question)


@pytest.mark.parametrize("method", ["bridge", "ppr"])
def test_not_the_other_tenant_is_the_same_scope(indexes: dict[str, GraphRAGIndex],
                                                method: str) -> None:
    # NOT(tenant == globex) names globex, yet pins acme: no globex relation may steer it
    not_globex = MetadataFilters(condition="not", filters=[
        MetadataFilter(key="tenant_id", value="globex")])
    for question in QUESTIONS:
        for mode in ("memory", "milvus"):
            only = indexes[mode].as_retriever(method=method, filters=ONLY_ACME)
            negated = indexes[mode].as_retriever(method=method, filters=not_globex)
            assert [(n.node.get_content(), round(n.score or 0, 6))
                    for n in negated.retrieve(question)] == [
                (n.node.get_content(), round(n.score or 0, 6)) for n in only.retrieve(question)]
            # (the filter itself names globex: the explanation shows it)
            assert leaks(negated.explain(question).to_json()) in ([], ["Globex"]), (
                mode, question)
            assert "secretly" not in negated.explain(question).to_html()


def test_without_the_filter_the_secret_is_found(indexes: dict[str, GraphRAGIndex]) -> None:
    """The test's secret is reachable: unfiltered, or filtered to its own tenant, it shows."""
    question = QUESTIONS[0]
    nodes = indexes["memory"].as_retriever(similarity_top_k=5).retrieve(question)
    assert leaks(shown(nodes))
    globex = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="globex")])
    for mode in ("memory", "milvus"):
        explanation = indexes[mode].as_retriever(filters=globex).explain(question)
        assert leaks(explanation.to_json())
        assert "chief executive" not in explanation.to_json()  # acme's, now the other one's


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_the_rerank_prompt_holds_only_the_tenants_relations(
        indexes: dict[str, GraphRAGIndex], mode: str) -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return '{"useful_relationships": [1]}'

    llm = ScriptedLLM(answer)
    engine = indexes[mode].as_query_engine(llm=llm, filters=ONLY_ACME, similarity_top_k=5,
                                           node_postprocessors=[GraphRelationRerank(
                                               llm=llm, top_n=3)])
    for question in QUESTIONS:
        response = engine.query(question)
        assert leaks(shown(response.source_nodes)) == []
    rerank_prompts = [p for p in prompts if "useful_relationships" in p]
    assert rerank_prompts and all(leaks(p) == [] for p in rerank_prompts)
    assert any(Triplet("Alice Moreau", "is the chief executive of", "Acme").text in p
               for p in rerank_prompts)


def test_the_explorer_with_a_filter_shows_only_the_tenant(
        indexes: dict[str, GraphRAGIndex]) -> None:
    data = ExplorerData(indexes["memory"], filters=ONLY_ACME)
    alice = Triplet("Alice Moreau", "x", "y").subject_id
    globex = Triplet("x", "y", "Globex for 40 million").object_id
    outputs: list[Any] = [
        data.summary(), data.search_entities("alice"), data.search_entities("globex"),
        data.search_entities("moreau"), data.neighbourhood(alice), data.passages(),
        data.communities(),
        *(data.ask(question, method) for question in QUESTIONS for method in METHODS)]
    assert leaks(json.dumps(outputs, default=str)) == []
    summary = outputs[0]
    assert summary["counts"]["passages"] == len(ACME) and "local" not in summary["methods"]
    assert summary["counts"]["relations"] == sum(len(t) for _, t in ACME)
    assert [e["name"] for e in outputs[1]] == ["Alice Moreau"] and outputs[2] == []
    assert outputs[4]["total"] == 2  # acme's two relations of Alice Moreau, not globex's
    with pytest.raises(Exception, match="no entity"):
        data.neighbourhood(globex)
    secret = indexes["memory"].store.get_passages(
        [n.node_id for n in indexes["memory"].as_naive_retriever(similarity_top_k=9).retrieve(
            GLOBEX[0][0].text) if "Globex" in n.node.get_content()][:1])
    with pytest.raises(Exception, match="no passage"):
        data.passage(secret[0].node_id)
    unfiltered = ExplorerData(indexes["memory"])
    assert leaks(json.dumps(unfiltered.neighbourhood(alice), default=str))


def test_a_filter_that_keeps_every_passage_changes_no_answer(
        indexes: dict[str, GraphRAGIndex]) -> None:
    everyone = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value=["acme", "globex"],
                                                       operator="in")])
    # a filtered retrieval ranks every passage (the bridge's lists, PageRank's similar
    # passages) in memory among those it keeps when the graph is in memory, in Milvus when
    # it is served, and given passages (the pools of PCST and k-hop) among those it keeps,
    # in memory when it can: the plain retriever ranks where it does, since the hash
    # embedding ties scores that numpy and Milvus compute apart in the last float bits; and
    # without the bridge's BM25 lists, which a filtered retrieval never takes (BM25 weighs
    # words by every tenant's passages)
    for mode in ("memory", "milvus"):
        assert indexes[mode].store.full_text  # the default where Milvus has BM25
        for method in METHODS:
            plain = indexes[mode].as_retriever(
                method=method, similarity_top_k=5,
                passage_search="milvus" if method in ("bridge", "ppr") and mode == "milvus"
                else "auto",
                **({"match_words": False} if method == "bridge" else {}))
            scoped = indexes[mode].as_retriever(method=method, similarity_top_k=5,
                                                filters=everyone)
            for question in QUESTIONS:
                bundle = QueryBundle(question)
                got, expected = scoped.retrieve(bundle), plain.retrieve(bundle)
                assert [n.node.node_id for n in got] == [n.node.node_id for n in expected], (
                    mode, method, question)
                assert [n.score for n in got] == pytest.approx(
                    [n.score for n in expected], abs=1e-6), (
                    mode, method, question)


def _in_document(text: str, tenant: str, document: str) -> TextNode:
    node = TextNode(text=text, metadata={"tenant_id": tenant})
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=document)
    return node


@pytest.mark.parametrize("write", ["move", "delete"])
def test_a_write_through_another_index_object_retires_what_a_filter_kept(
        tmp_path: Path, write: str) -> None:
    # two index objects on one Lite file (one process): the reader's filtered queries
    # remembered acme's passages; the writer moves one to globex in place (identity keys
    # [] keep its id) or deletes it: the reader must not show it under acme's filter
    secret = "Alice Moreau is being acquired secretly by Globex for 40 million."
    triplets = [("Alice Moreau", "secretly acquired by", "Globex for 40 million")]
    kwargs: dict[str, Any] = {"uri": str(tmp_path / "graph.db"),
                              "embed_model": HashEmbedding(dim=64)}
    writer = GraphRAGIndex.from_triplets(
        [*((_in_document(t, "acme", f"doc{i}"), tr) for i, (t, tr) in enumerate(FAMILY)),
         (_in_document(secret, "acme", "moving"), triplets)],
        passage_identity_keys=[], **kwargs)
    reader = GraphRAGIndex(**kwargs)
    retrievers = [reader.as_retriever(method=m, filters=ONLY_ACME) for m in ("bridge", "ppr")]
    assert any(leaks(shown(r.retrieve(QUESTIONS[0]))) for r in retrievers)  # acme's, so far
    if write == "move":
        writer.insert_triplets([(_in_document(secret, "globex", "moving"), triplets)])
    else:
        writer.delete_ref_doc("moving")
    for retriever in retrievers:
        for question in QUESTIONS:
            assert leaks(shown(retriever.retrieve(question))) == [], (write, question)
            assert leaks(retriever.explain(question).to_json()) == [], (write, question)
    writer.close()
    reader.close()


def test_a_query_while_a_write_holds_the_graph_reads_the_filter_live(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the rows moved, the copies not yet dropped: a query of another thread landing there
    # (run here from inside the write) must not trust what the filter kept before
    secret = "Alice Moreau is being acquired secretly by Globex for 40 million."
    triplets = [("Alice Moreau", "secretly acquired by", "Globex for 40 million")]
    index = GraphRAGIndex.from_triplets(
        [*((_in_document(t, "acme", f"doc{i}"), tr) for i, (t, tr) in enumerate(FAMILY)),
         (_in_document(secret, "acme", "moving"), triplets)],
        uri=str(tmp_path / "graph.db"), embed_model=HashEmbedding(dim=64),
        passage_identity_keys=[])
    retrievers = [index.as_retriever(method=m, filters=ONLY_ACME) for m in ("bridge", "ppr")]
    assert any(leaks(shown(r.retrieve(QUESTIONS[0]))) for r in retrievers)
    seen: list[list[str]] = []
    mark_written = index.store.mark_written

    def during() -> None:
        seen.extend(leaks(shown(r.retrieve(QUESTIONS[0]))) for r in retrievers)
        mark_written()

    monkeypatch.setattr(index.store, "mark_written", during)
    index.insert_triplets([(_in_document(secret, "globex", "moving"), triplets)])
    assert seen == [[], []]
    index.close()
