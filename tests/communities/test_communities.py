"""Communities on Milvus: build, store, reload, rebuild, interrupted builds, local search,
the report retriever and global search through the index (issue 14)."""

from __future__ import annotations

import asyncio
import json
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.utils import get_tokenizer

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
from llama_index_graphrag_milvus.communities.build import (
    STATE_KEY,
    communities_from_rows,
    community_rows,
)
from llama_index_graphrag_milvus.communities.local_search import (
    LocalSearchConfig,
    LocalSearchRetrieval,
)
from llama_index_graphrag_milvus.communities.report_writer import CommunityReporter
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    EmptyIndexError,
    InvalidInputError,
)
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.metadata import CONTEXT_KIND_KEY
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import Community, CommunityReport, Finding, Triplet
from tests.conftest import BACKENDS, FAMILY
from tests.support.fakes import HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus  # every test here opens a Milvus Lite file

QUESTION = "What did the son of Euler's teacher contribute?"


def groups(count: int = 3, size: int = 4, extra: str = "") -> list[tuple[str, list[Any]]]:
    """``count`` separate cliques of ``size`` scientists, one passage per relation."""
    data = []
    for g in range(count):
        names = [f"Scientist {g}-{i}" for i in range(size)]
        for a, b in combinations(names, 2):
            data.append((f"{a} worked with {b}{extra}.", [(a, "worked with", b)]))
    return data


@pytest.fixture
def uri(tmp_path: Path) -> str:
    return str(tmp_path / "communities.db")


def open_index(uri: str, data: list | None = None, **kwargs: Any) -> GraphRAGIndex:
    return GraphRAGIndex.from_triplets(FAMILY + groups() if data is None else data, uri=uri,
                                       embed_model=HashEmbedding(dim=64), **kwargs)


def stored_rows(index: GraphRAGIndex) -> dict[str, dict[str, Any]]:
    rows = index.store.read_all(index.store.community_collection,
                                ["community_id", "level", "parent", "children", "entity_ids",
                                 "title", "summary", "findings", "rating", "kind",
                                 "context_hash"])
    return {r["id"]: {k: (list(v) if k in ("children", "entity_ids") else v)
                      for k, v in r.items()} for r in rows}


def report_answer(prompt: str) -> str:
    """A realistic report answer, titled by the first entity of the context."""
    row = prompt.split("id,entity,degree\n", 1)[-1].split("\n", 1)[0].split(",")
    entity = row[1] if len(row) > 1 else "its sub-communities"
    return ("Here is the report:\n```json\n" + json.dumps({
        "title": f"Community around {entity}",
        "summary": f"{entity} and its collaborators.",
        "rating": 6.5, "rating_explanation": "A tight group.",
        "findings": [{"summary": f"{entity} is central", "explanation": "Most relations."},
                     {"summary": "Collaboration", "explanation": "They worked together."}],
    }) + "\n```")


# ---------------------------------------------------------------------- build and reload


@pytest.mark.parametrize("milvus_uri", [p for p in BACKENDS], indirect=True)
def test_build_store_and_reload(milvus_uri: str) -> None:
    index = open_index(milvus_uri)
    stats = index.build_communities()
    graph = index.graph
    assert stats.kind == "extractive" and stats.communities == sum(stats.per_level) > 1
    assert stats.reports_written == stats.communities and stats.llm_calls == 0
    for level in range(stats.levels):  # each level's reports cover every entity once
        members = [e for r in index.community_reports(level) for e in r.community.entity_ids]
        assert sorted(members) == sorted(graph.entity_ids.ids(range(graph.num_entities)))
    reports = {r.id: r for r in index.community_reports()}
    index.close()
    reopened = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64))
    assert {r.id: r for r in reopened.community_reports()} == reports
    assert reopened.communities.info["relations"] == graph.num_relations
    reopened.close()


def test_the_same_build_again_reuses_every_report(uri: str) -> None:
    index = open_index(uri)
    first = index.build_communities()
    rows = stored_rows(index)
    again = index.build_communities()
    assert (again.reports_written, again.reports_reused) == (0, first.communities)
    assert stored_rows(index) == rows


def test_rebuild_after_an_insert_rewrites_only_changed_communities(uri: str) -> None:
    index = open_index(uri, groups(count=4))
    first = index.build_communities()
    index.insert_triplets([("Scientist 0-0 met Scientist 0-1 again.",
                            [("Scientist 0-0", "met", "Scientist 0-1")])])
    second = index.build_communities()
    assert second.communities == first.communities
    assert 1 <= second.reports_written < first.communities
    assert second.reports_reused == first.communities - second.reports_written


def test_rebuild_after_a_delete_removes_stale_communities(uri: str) -> None:
    data = []
    for g in range(3):  # one source document per group
        for text, triplets in groups(count=3)[g * 6:(g + 1) * 6]:
            node = TextNode(text=text)
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc-{g}")
            data.append((node, triplets))
    index = open_index(uri, data)
    before = index.build_communities()
    index.delete("doc-1")
    after = index.build_communities()
    assert after.deleted >= 1 and after.communities < before.communities
    assert after.reports_reused == after.communities  # the other groups did not change
    members = {e for r in index.community_reports() for e in r.community.entity_ids}
    assert members == set(index.graph.entity_ids.ids(range(index.graph.num_entities)))
    rows = stored_rows(index)
    assert not any("Scientist 1-" in row["title"] for row in rows.values())


def test_interrupted_build_is_refused_then_completed_by_running_again(
        uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean = open_index(str(tmp_path / "clean.db"))
    clean.build_communities()
    expected = stored_rows(clean)
    clean.close()
    index = open_index(uri)
    original = MilvusGraphStore.upsert_rows

    def crash(self: MilvusGraphStore, collection: str, rows: list) -> None:
        if collection == self.community_collection:
            original(self, collection, rows[:2])  # half of the rows are written
            raise RuntimeError("killed mid-write")
        original(self, collection, rows)

    monkeypatch.setattr(MilvusGraphStore, "upsert_rows", crash)
    with pytest.raises(RuntimeError, match="killed"):
        index.build_communities()
    monkeypatch.undo()
    assert index.store.communities.properties()[STATE_KEY] == "building"
    with pytest.raises(CommunitiesNotBuiltError, match=r"interrupted.*build_communities"):
        index.as_local_retriever().retrieve(QUESTION)
    index.build_communities()
    assert stored_rows(index) == expected


def test_not_built_says_how_to_build(uri: str) -> None:
    index = open_index(uri)
    for call in (lambda: index.as_local_retriever().retrieve(QUESTION),
                 lambda: index.as_report_retriever().retrieve(QUESTION),
                 lambda: index.as_global_query_engine(llm=ScriptedLLM(["x"])),
                 lambda: index.community_reports()):
        with pytest.raises(CommunitiesNotBuiltError, match=r"never built.*build_communities"):
            call()


def test_graph_without_relations_and_bad_arguments(uri: str) -> None:
    empty = GraphRAGIndex.from_triplets([("A passage without triplets.", [])], uri=uri,
                                        embed_model=HashEmbedding(dim=64))
    with pytest.raises(EmptyIndexError, match="no relations"):
        empty.build_communities()
    empty.close()
    index = open_index(uri)
    with pytest.raises(InvalidInputError, match="max_cluster_size"):
        index.build_communities(max_cluster_size=0)
    with pytest.raises(InvalidInputError, match="llm or reporter"):
        index.build_communities(llm=ScriptedLLM(["x"]),
                                reporter=CommunityReporter(ScriptedLLM(["x"])))
    index.build_communities()
    levels = index.communities.num_levels
    with pytest.raises(InvalidInputError, match=f"level must be an integer from 0 .* {levels - 1}"):
        index.community_reports(levels)
    with pytest.raises(InvalidInputError, match="level must be"):
        index.as_global_query_engine(llm=ScriptedLLM(["x"]), level=levels + 3)
    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    tenant = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="a")])
    with pytest.raises(InvalidInputError, match="local search does not take filters"):
        index.as_local_retriever(filters=tenant)
    with pytest.raises(InvalidInputError, match="global search does not take filters: comm"):
        index.as_global_query_engine(llm=ScriptedLLM(["x"]), filters=tenant)
    with pytest.raises(InvalidInputError, match="report retriever does not take filters"):
        index.as_report_retriever(filters=tenant)
    with pytest.raises(InvalidInputError, match="local does not take filters: communities"):
        index.as_retriever(method=LocalSearchRetrieval(), filters=tenant)
    with pytest.raises(InvalidInputError, match="community_prop"):
        index.as_local_retriever(community_prop=0.8, text_unit_prop=0.5)


def test_staleness_is_reported_after_another_write(uri: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    index = open_index(uri)
    index.build_communities()
    index.insert_triplets([("Euler met Lagrange.", [("Euler", "met", "Lagrange")])])
    with caplog.at_level("WARNING"):
        index.community_reports()
    assert "run build_communities() again" in caplog.text


@pytest.mark.parametrize("graph", ["memory", "milvus"])
def test_staleness_is_seen_with_the_same_counts_and_on_a_served_graph(
        uri: str, graph: str, caplog: pytest.LogCaptureFixture) -> None:
    """A delete and an insert of as many relations, written through another index object:
    the counts are those of the build (what was compared), and a served graph's local
    search compared nothing."""
    from llama_index.core import Document

    data = [(Document(text=text, id_=f"d{i}"), triplets)
            for i, (text, triplets) in enumerate(groups())]
    open_index(uri, data).close()
    writer = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64))
    writer.build_communities()
    reader = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph=graph)
    try:
        with caplog.at_level("WARNING"):
            reader.as_local_retriever().retrieve("Scientist 0-1")
        assert "changed since" not in caplog.text  # nothing written since the build
        relations = writer.store.count(writer.store.relation_collection)
        writer.delete_ref_doc("d0")
        writer.insert_triplets([("Scientist 0-0 taught Scientist 2-3.",
                                 [("Scientist 0-0", "taught", "Scientist 2-3")])])
        assert writer.store.count(writer.store.relation_collection) == relations
        reader.refresh()
        with caplog.at_level("WARNING"):
            reader.as_local_retriever().retrieve("Scientist 0-1")
        assert "has changed since its communities were built" in caplog.text
    finally:
        reader.close()
        writer.close()


def test_communities_of_a_graph_deleted_whole_point_to_drop_communities(
        uri: str, caplog: pytest.LogCaptureFixture) -> None:
    from llama_index.core import Document

    index = open_index(uri, [(Document(text="Ada worked with Charles.", id_="only"),
                              [("Ada", "worked with", "Charles")])])
    index.build_communities()
    index.delete_ref_doc("only")
    with caplog.at_level("WARNING"):
        index.community_reports()
    assert "index.drop_communities() removes them" in caplog.text
    with pytest.raises(EmptyIndexError, match=r"drop_communities\(\) removes those built"):
        index.build_communities()
    index.drop_communities()
    with pytest.raises(CommunitiesNotBuiltError):
        index.community_reports()
    index.close()


# ---------------------------------------------------------------------- LLM reports


def test_llm_reports_with_a_malformed_answer_fall_back_and_are_retried_next_build(
        uri: str) -> None:
    index = open_index(uri)
    calls: list[str] = []

    def script(prompt: str) -> str:
        calls.append(prompt)
        if "Scientist 2-" in prompt.split("id,entity,degree\n", 1)[-1].split("\n", 1)[0]:
            return "Sorry, I can only answer in prose."
        return report_answer(prompt)

    stats = index.build_communities(llm=ScriptedLLM(script))
    assert stats.kind == "llm" and stats.llm_calls == len(calls) == stats.communities
    assert stats.report_failures >= 1
    kinds = {r.title.split(" around ")[-1] if r.kind == "llm" else r.title: r.kind
             for r in index.community_reports()}
    assert "extractive" in kinds.values() and "llm" in kinds.values()
    llm_report = next(r for r in index.community_reports() if r.kind == "llm")
    assert llm_report.rating == 6.5 and len(llm_report.findings) == 2
    calls.clear()
    again = index.build_communities(llm=ScriptedLLM(script))
    # only the failed communities go to the LLM again; written ones are cached in Milvus
    assert again.llm_calls == len(calls) == stats.report_failures
    assert again.reports_reused == stats.communities - stats.report_failures


def test_report_llm_failures_are_retried_with_backoff(uri: str) -> None:
    index = open_index(uri, groups(count=1))
    answers: list[Any] = [ConnectionError("reset"), TimeoutError("slow")]
    delays: list[float] = []

    def script(prompt: str) -> Any:
        return answers.pop(0) if answers else report_answer(prompt)

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    reporter = CommunityReporter(ScriptedLLM(script), num_workers=1, retry_base_delay=0.5,
                                 sleep=sleep)
    stats = index.build_communities(reporter=reporter)
    assert delays == [0.5, 1.0] and stats.report_failures == 0
    assert all(r.kind == "llm" for r in index.community_reports())


def test_community_rows_round_trip_past_the_array_capacity(uri: str) -> None:
    members = tuple(f"{i:032x}" for i in range(9000))
    children = tuple(f"{i:032x}" for i in range(5000))
    report = CommunityReport(Community("ab" * 16, 0, "", children, members, 12, 7), "Big",
                             "A big community.", (Finding("x", "y"),), 3.0, "size", "llm")
    rows = community_rows(report, [1.0] + [0.0] * 63, "hash")
    assert [r["part"] for r in rows] == [0, 1, 2]
    index = open_index(uri)
    index.store.communities.create()
    index.store.upsert_rows(index.store.community_collection, rows)
    read = index.store.read_all(index.store.community_collection,
                                [n for n in rows[0] if n != "id"])
    assert communities_from_rows(read)["ab" * 16].report == report


# ---------------------------------------------------------------------- local search


def test_local_search_returns_passages_reports_and_tables_within_the_budget(uri: str) -> None:
    index = open_index(uri)
    index.build_communities()
    graph_nodes = index.as_retriever(similarity_top_k=5).retrieve(QUESTION)
    local = index.as_local_retriever(similarity_top_k=5, max_tokens=2000)
    nodes = local.retrieve(QUESTION)
    kinds = [n.node.metadata[CONTEXT_KIND_KEY] for n in nodes]
    assert kinds[0] == "passage" and "report" in kinds and kinds[-1] == "relations"
    assert kinds == sorted(kinds, key=["passage", "report", "entities", "relations"].index)
    passages = [n.node.node_id for n in nodes if n.node.metadata[CONTEXT_KIND_KEY] == "passage"]
    assert passages == [n.node.node_id for n in graph_nodes][:len(passages)]
    tokens = get_tokenizer()
    assert sum(len(tokens(n.node.get_content())) for n in nodes) <= 2000
    reports = [n for n in nodes if n.node.metadata[CONTEXT_KIND_KEY] == "report"]
    matched = [r.node.metadata["graphrag_community"]["matched_passages"] for r in reports]
    assert matched == sorted(matched, reverse=True)
    relations = nodes[-1].node.metadata["graphrag_relations"]
    assert relations and all(r["text"] in nodes[-1].node.get_content() for r in relations)
    assert asyncio.run(local.aretrieve(QUESTION)) == nodes or [
        n.node.get_content() for n in asyncio.run(local.aretrieve(QUESTION))] == [
        n.node.get_content() for n in nodes]


def test_local_search_composes_with_rerank_and_a_query_engine(uri: str) -> None:
    index = open_index(uri)
    index.build_communities()
    llm = ScriptedLLM(lambda prompt: '{"picked": [1]}' if "[1]" in prompt
                      else "Daniel Bernoulli contributed to fluid dynamics.")
    engine = RetrieverQueryEngine.from_args(
        index.as_local_retriever(similarity_top_k=3),
        node_postprocessors=[GraphRelationRerank(llm=llm, top_n=4)], llm=llm)
    response = engine.query(QUESTION)
    assert "fluid dynamics" in str(response)
    assert len(response.source_nodes) == 4


def test_report_retriever_ranks_reports_by_similarity(uri: str) -> None:
    index = open_index(uri)
    index.build_communities()
    target = index.community_reports()[-1]
    hits = index.as_report_retriever(similarity_top_k=2).retrieve(target.embedding_text())
    assert len(hits) == 2 and hits[0].score > hits[1].score
    assert hits[0].node.get_content() == target.as_text()
    again = asyncio.run(index.as_report_retriever(similarity_top_k=2).aretrieve(
        target.embedding_text()))
    assert [h.node.node_id for h in again] == [h.node.node_id for h in hits]


# ---------------------------------------------------------------------- global search


def test_global_search_through_the_index_calls_the_llm_batches_plus_one(uri: str) -> None:
    index = open_index(uri)
    index.build_communities()
    prompts: list[str] = []

    def script(prompt: str) -> str:
        prompts.append(prompt)
        if "Analyst" in prompt:
            return "The corpus is about scientists who worked together [Data: Reports (1)]."
        return json.dumps({"points": [{"description": "Scientists collaborate.",
                                       "score": 70}]})

    engine = index.as_global_query_engine(llm=ScriptedLLM(script), level=0,
                                          batch_max_tokens=300)
    response = engine.query("What are the main themes?")
    stats = response.metadata
    assert stats["batches"] >= 2 and len(prompts) == stats["batches"] + 1
    assert "scientists" in str(response)


def test_drop_communities_then_build_from_scratch(uri: str) -> None:
    index = open_index(uri)
    first = index.build_communities()
    index.drop_communities()
    with pytest.raises(CommunitiesNotBuiltError, match="never built"):
        index.community_reports()
    again = index.build_communities()
    assert (again.reports_written, again.reports_reused) == (first.communities, 0)


# ---------------------------------------------------------------------- descriptions


def described(text: str, entities: list[list[str]], relations: list[list[Any]]
              ) -> tuple[TextNode, list[tuple[str, str, str]]]:
    """A passage as TripletExtractor(describe=True) leaves it."""
    node = TextNode(text=text, metadata={"graphrag_entity_descriptions": entities,
                                         "graphrag_relation_descriptions": relations})
    return node, [tuple(r[:3]) for r in relations]


def described_passages() -> list[tuple[TextNode, list[tuple[str, str, str]]]]:
    """Three passages of the Bernoulli family with descriptions (new nodes each call)."""
    return [
        described("Leonhard Euler was a student of Johann Bernoulli in Basel.",
                  [["Leonhard Euler", "PERSON", "A Swiss mathematician."],
                   ["Johann Bernoulli", "PERSON", "A mathematician who taught Euler."]],
                  [["Leonhard Euler", "was a student of", "Johann Bernoulli",
                    "Euler studied under Johann Bernoulli in Basel.", 8]]),
        described("Daniel Bernoulli, the son of Johann Bernoulli, worked on fluid dynamics.",
                  [["Johann Bernoulli", "PERSON", "Father of Daniel Bernoulli."],
                   ["Daniel Bernoulli", "PERSON", "A physicist of fluid dynamics."]],
                  [["Daniel Bernoulli", "was the son of", "Johann Bernoulli",
                    "Daniel was Johann's son.", 9]]),
        described("Johann Bernoulli taught Leonhard Euler mathematics.",
                  [["Johann Bernoulli", "PERSON", "A mathematician who taught Euler."]],
                  [["Leonhard Euler", "was a student of", "Johann Bernoulli",
                    "Johann gave Euler private lessons.", 6]]),
    ]


def test_descriptions_are_merged_summarized_stored_and_used(uri: str) -> None:
    index = open_index(uri, described_passages())
    calls: list[str] = []

    def script(prompt: str) -> str:
        calls.append(prompt)
        if "several descriptions" in prompt:
            return "Johann Bernoulli, a mathematician, taught Euler and fathered Daniel."
        return report_answer(prompt)

    stats = index.build_communities(llm=ScriptedLLM(script))
    assert stats.descriptions is not None
    assert (stats.descriptions.entities, stats.descriptions.relations) == (3, 2)
    # Johann (two distinct descriptions) and Euler -> Johann (two) are summarized
    assert stats.descriptions.summarized == 2
    table = index.communities.descriptions
    johann = table.entities[entity_id("Johann Bernoulli")]
    assert johann == ("PERSON", "Johann Bernoulli, a mathematician, taught Euler and "
                                "fathered Daniel.")
    student = table.relations[Triplet("Leonhard Euler", "was a student of",
                                      "Johann Bernoulli").id]
    assert student[1] == 14.0  # strengths summed over passages
    report_prompts = [p for p in calls if "id,entity,degree,description" in p]
    assert report_prompts and "A Swiss mathematician." in "".join(report_prompts)
    nodes = index.as_local_retriever(similarity_top_k=2).retrieve(QUESTION)
    tables = "".join(n.node.get_content() for n in nodes
                     if n.node.metadata[CONTEXT_KIND_KEY] in ("entities", "relations"))
    assert "PERSON: " in tables
    calls.clear()
    again = index.build_communities(llm=ScriptedLLM(script))
    assert again.descriptions is not None and again.descriptions.summarized == 0
    assert again.descriptions.reused == 5 and again.llm_calls == 0 and calls == []


def test_descriptions_without_an_llm_are_joined_and_follow_deletes(uri: str) -> None:
    data = []
    for position, (node, triplets) in enumerate(described_passages()):
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc-{position}")
        data.append((node, triplets))
    index = open_index(uri, data)
    index.build_communities()
    johann = index.communities.descriptions.entities[entity_id("Johann Bernoulli")]
    assert johann[1] == "A mathematician who taught Euler. Father of Daniel Bernoulli."
    index.delete("doc-1")  # Daniel's passage: its descriptions go at the next build
    stats = index.build_communities()
    table = index.communities.descriptions
    assert entity_id("Daniel Bernoulli") not in table.entities
    assert table.entities[entity_id("Johann Bernoulli")][1] == (
        "A mathematician who taught Euler.")
    assert stats.descriptions is not None and stats.descriptions.entities == 2


def test_plain_triplets_have_no_description_collection(uri: str) -> None:
    index = open_index(uri)
    stats = index.build_communities()
    assert stats.descriptions is None and not index.store.descriptions.exists()
    assert index.communities.descriptions.entities == {}


def test_local_search_in_a_fusion_retriever(uri: str) -> None:
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    index = open_index(uri)
    index.build_communities()
    fusion = QueryFusionRetriever(
        [index.as_naive_retriever(similarity_top_k=3),
         index.as_local_retriever(similarity_top_k=3)],
        llm=MockLLM(), num_queries=1, mode="reciprocal_rerank", similarity_top_k=8,
        use_async=False)
    nodes = fusion.retrieve(QUESTION)
    kinds = {n.node.metadata.get(CONTEXT_KIND_KEY, "passage") for n in nodes}
    assert {"passage", "report"} <= kinds
    texts = [n.node.get_content() for n in nodes]
    assert len(texts) == len(set(texts))  # a passage both found is listed once


def test_a_passage_extracted_again_differently_stays_one_passage(uri: str) -> None:
    """Package metadata (descriptions, an extraction error) is not part of the identity."""
    text = "Leonhard Euler was a student of Johann Bernoulli in Basel."
    first = described(text, [["Leonhard Euler", "PERSON", "A mathematician."]],
                      [["Leonhard Euler", "was a student of", "Johann Bernoulli", "x", 5]])
    index = open_index(uri, [first])
    failed = TextNode(text=text, metadata={"graphrag_extraction_error": "TimeoutError: slow"})
    again = described(text, [["Leonhard Euler", "PERSON", "A Swiss mathematician."]],
                      [["Leonhard Euler", "was a student of", "Johann Bernoulli", "y", 7]])
    index.insert_triplets([(failed, [])])
    index.insert_triplets([again])
    assert index.store.count(index.store.passage_collection) == 1
    index.build_communities()
    assert index.communities.descriptions.entities[entity_id("Leonhard Euler")][1] == (
        "A Swiss mathematician.")


def test_one_giant_component_larger_than_the_report_budget(uri: str) -> None:
    """60 scientists in one connected group: Leiden splits it into levels, and the
    top-level reports, whose tables exceed the budget, are written from the reports of their
    sub-communities."""
    names = [f"Scientist {i}" for i in range(60)]
    data = [(f"{a} corresponded with {b}.", [(a, "corresponded with", b)])
            for i, a in enumerate(names) for b in names[i + 1:i + 4]]
    index = open_index(uri, data)
    prompts: list[str] = []

    def script(prompt: str) -> str:
        prompts.append(prompt)
        return report_answer(prompt)

    stats = index.build_communities(reporter=CommunityReporter(
        ScriptedLLM(script), max_input_tokens=300), max_cluster_size=8)
    assert stats.levels >= 2 and stats.report_failures == 0
    tokens = get_tokenizer()
    assert all(len(tokens(p.split("Data:\n", 1)[1])) <= 310 for p in prompts)
    assert any("-----Reports-----" in p for p in prompts)  # sub-community reports used
    for level in range(stats.levels):
        members = [e for r in index.community_reports(level) for e in r.community.entity_ids]
        assert len(members) == len(set(members)) == 60


def test_local_search_from_the_served_graph(uri: str) -> None:
    """With the graph served by Milvus, local search reads its entities' relations by a
    bounded search and ranks communities by their passages: the passages of the served
    default method, the reports of the in-memory graph, a table of the selected entities'
    relations."""
    index = open_index(uri)
    index.build_communities()
    memory = index.as_local_retriever(similarity_top_k=5, max_tokens=2000).retrieve(QUESTION)
    served = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        local = served.as_local_retriever(similarity_top_k=5, max_tokens=2000)
        nodes = local.retrieve(QUESTION)

        def part(found: list[Any], kind: str) -> list[str]:
            return [n.node.get_content() for n in found
                    if n.node.metadata[CONTEXT_KIND_KEY] == kind]

        inner = served.as_retriever(similarity_top_k=5).retrieve(QUESTION)
        assert part(nodes, "passage") == [n.node.get_content() for n in inner][
            :len(part(nodes, "passage"))]
        assert part(nodes, "report") == part(memory, "report")
        # the relation table: relations of the selected entities (the same entity search)
        vector = served.embed_model.get_query_embedding(QUESTION)
        [hits] = served.store.search_entities([vector], [QUESTION],
                                              LocalSearchConfig().entity_top_k, None)
        selected = {h.id for h in hits}
        served_relations = [r["id"] for r in nodes[-1].node.metadata["graphrag_relations"]]
        ends = index.graph.endpoints[index.graph.relation_rows(served_relations)]
        assert served_relations and all(
            {index.graph.entity_ids[int(e)] for e in pair} & selected for pair in ends)
        assert served.cache.peek("graph") is None
        assert [n.node.get_content() for n in asyncio.run(local.aretrieve(QUESTION))] == [
            n.node.get_content() for n in nodes]
    finally:
        served.close()
