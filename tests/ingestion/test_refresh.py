"""``refresh_ref_docs``: new documents inserted, changed ones updated, unchanged ones left
without an LLM call; an interrupted or failed extraction is done again. Milvus Lite only:
the decisions are reads by id, the writes are ``insert_documents`` / ``update_ref_doc``
(tested on both backends in test_documents.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.ingestion.write import PreparedWrite
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from tests.ingestion.test_documents import (
    DANIEL,
    EULER,
    SPLITTER,
    all_texts,
    counts,
    doc,
    extractor,
    signature,
)
from tests.support.fakes import HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus

BASEL = doc("basel", "Euler was born in Basel.")
OPTIONS: dict[str, Any] = {"transformations": [SPLITTER]}


def passages_asked(llm: ScriptedLLM) -> list[str]:
    return [p.rsplit("Passage:", 1)[1].strip().split("\n")[0] for p in llm.prompts]


@pytest.fixture
def index(tmp_path: Path) -> GraphRAGIndex:
    return GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=HashEmbedding())


@pytest.mark.parametrize("use_async", [False, True])
async def test_new_changed_and_unchanged_documents(index: GraphRAGIndex, tmp_path: Path,
                                                   use_async: bool) -> None:
    async def refresh(documents: list[Any], llm: ScriptedLLM, **kwargs: Any) -> list[bool]:
        if use_async:
            return await index.arefresh_ref_docs(documents, llm=llm, **OPTIONS, **kwargs)
        return index.refresh_ref_docs(documents, llm=llm, **OPTIONS, **kwargs)

    first = extractor()
    assert await refresh([EULER, DANIEL], first) == [True, True]
    assert len(first.prompts) == 4  # two passages each
    again = extractor()
    assert await refresh([EULER, DANIEL], again) == [False, False]
    assert again.prompts == []  # unchanged: no LLM call
    new_daniel = doc("daniel", "Daniel Bernoulli studied fluid dynamics.")
    changed = extractor()
    assert await refresh([EULER, new_daniel, BASEL], changed) == [False, True, True]
    assert sorted(passages_asked(changed)) == ["Daniel Bernoulli studied fluid dynamics.",
                                               "Euler was born in Basel."]
    texts = all_texts(index, "Daniel Bernoulli")
    assert "Daniel Bernoulli studied fluid dynamics." in texts
    assert "Daniel Bernoulli was the son of Johann Bernoulli." not in texts  # replaced
    # the same index as one built from the final documents
    clean = GraphRAGIndex.from_documents([EULER, new_daniel, BASEL], llm=extractor(),
                                         uri=str(tmp_path / "clean.db"),
                                         embed_model=HashEmbedding(), **OPTIONS)
    assert signature(index) == signature(clean) and counts(index) == counts(clean)


def test_a_failed_extraction_or_an_interrupted_write_is_done_again(
        index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    blank_for_euler = ScriptedLLM(
        lambda prompt: "" if "Euler was born" in prompt.rsplit("Passage:", 1)[1]
        else extractor()._script(prompt))
    assert index.refresh_ref_docs([EULER, DANIEL], llm=blank_for_euler, **OPTIONS) == [
        True, True]
    # a write stopped before its relations (passages are written first)
    upsert = MilvusGraphStore.upsert_rows

    def stopped(self: MilvusGraphStore, collection: str, rows: Any) -> None:
        if collection == self.relation_collection:
            raise KeyboardInterrupt
        upsert(self, collection, rows)

    monkeypatch.setattr(MilvusGraphStore, "upsert_rows", stopped)
    with pytest.raises(KeyboardInterrupt):
        index.refresh_ref_docs([BASEL], llm=extractor(), **OPTIONS)
    monkeypatch.setattr(MilvusGraphStore, "upsert_rows", upsert)
    llm = extractor()
    assert index.refresh_ref_docs([EULER, DANIEL, BASEL], llm=llm, **OPTIONS) == [
        True, False, True]
    assert "Euler was born in Basel." in passages_asked(llm)
    assert index.refresh_ref_docs([EULER, DANIEL, BASEL], llm=llm, **OPTIONS) == [
        False, False, False]


def test_filters_compare_and_update_one_tenant_s_copy(index: GraphRAGIndex) -> None:
    def tenant(document: Any, name: str) -> Any:
        return doc(document.doc_id, *document.text.split("\n\n")).model_copy(
            update={"metadata": {"tenant": name}})

    index.insert_documents([tenant(EULER, "a"), tenant(EULER, "b")], llm=extractor(), **OPTIONS)
    only_a = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])
    new_a = tenant(doc("euler", "Euler was born in Basel."), "a")
    assert index.refresh_ref_docs([new_a], filters=only_a, llm=extractor(), **OPTIONS) == [
        True]
    stored = index.store.document_passages("euler")
    assert sorted((n.metadata["tenant"], n.get_content()) for n in stored) == [
        ("a", "Euler was born in Basel."), ("b", "Euler was a student of Johann Bernoulli."),
        ("b", "Euler was born in Basel.")]
    assert index.refresh_ref_docs([new_a], filters=only_a, llm=extractor(), **OPTIONS) == [
        False]


@pytest.mark.parametrize(("documents", "options", "match"), [
    ([EULER, EULER], OPTIONS, r"documents \['euler'\] appear twice in one refresh"),
    ("euler", OPTIONS, "documents must be a list of llama_index Documents"),
    ([EULER, "text"], OPTIONS, "documents must be llama_index Documents, got a str"),
    ([EULER], {"chunk_size": 5}, r"unexpected arguments \['chunk_size'\]"),
])
def test_bad_input_is_refused_before_anything_is_read_or_written(
        index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch, documents: Any,
        options: dict[str, Any], match: str) -> None:
    monkeypatch.setattr(PreparedWrite, "__init__", lambda *a, **k: pytest.fail("a write"))
    llm = extractor()
    with pytest.raises(InvalidInputError, match=match):
        index.refresh_ref_docs(documents, llm=llm, **options)
    assert llm.prompts == []


def test_documents_are_read_a_chunk_at_a_time(index: GraphRAGIndex,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_index_graphrag_milvus.milvus.writes as writes

    monkeypatch.setattr(writes, "DOCUMENTS_PER_READ", 1)
    assert index.refresh_ref_docs([EULER, DANIEL, BASEL], llm=extractor(), **OPTIONS) == [
        True, True, True]
    assert index.store.document_passage_ids(["euler", "daniel", "basel", "none"]) == {
        "euler": {n.node_id for n in index.store.document_passages("euler")},
        "daniel": {n.node_id for n in index.store.document_passages("daniel")},
        "basel": {n.node_id for n in index.store.document_passages("basel")},
        "none": set()}
    assert index.refresh_ref_docs([EULER, DANIEL, BASEL], llm=extractor(), **OPTIONS) == [
        False, False, False]


def test_unchanged_documents_need_no_llm_at_all(index: GraphRAGIndex,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_index.core import Settings

    index.refresh_ref_docs([EULER], llm=extractor(), **OPTIONS)
    monkeypatch.setattr(Settings, "_llm", None)  # unresolved: OpenAI's, which fails here
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert index.refresh_ref_docs([EULER], **OPTIONS) == [False]


def test_metadata_of_dates_bytes_and_sets_is_unchanged_when_it_is(
        index: GraphRAGIndex) -> None:
    """Dates, bytes and sets are stored in their JSON form: the comparison with the stored
    passage took their Python text (a date with a space, not a T) and found every such
    document changed, at an LLM extraction each time."""
    import datetime

    metadata = {"modified": datetime.datetime(2020, 1, 1, 12, 30), "raw": b"ab",
                "tags": {"poetry", "math", "engines"}, "day": datetime.date(2020, 1, 2)}
    whole = {"transformations": [SentenceSplitter(chunk_size=200, chunk_overlap=0)]}
    documents = [EULER.model_copy(update={"metadata": dict(metadata)})]
    assert index.refresh_ref_docs(documents, llm=extractor(), **whole) == [True]
    again = extractor()
    assert index.refresh_ref_docs(documents, llm=again, **whole) == [False]
    assert again.prompts == []
    moved = [EULER.model_copy(update={"metadata": {**metadata, "raw": b"ac"}})]
    assert index.refresh_ref_docs(moved, llm=extractor(), **whole) == [True]


def test_a_set_in_metadata_gives_the_same_passage_id_in_every_process() -> None:
    """A set's order depends on the process's string hashing: its passage id did too, so a
    re-run stored the passage again. One other process (another hash seed than this one's,
    almost surely) and a frozenset of the same strings give the same id."""
    import os
    import subprocess
    import sys

    from llama_index.core.schema import TextNode

    from llama_index_graphrag_milvus.ingestion.plan import plan_ingestion

    tags = ["math", "poetry", "engines", "notes", "a", "b"]
    code = ("from llama_index.core.schema import TextNode\n"
            "from llama_index_graphrag_milvus.ingestion.plan import plan_ingestion\n"
            f"node = TextNode(text='Ada wrote notes.', metadata={{'tags': set({tags!r})}})\n"
            "print(plan_ingestion([(node, [])], '*').passages[0].node_id)")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": "1"}
                           ).stdout.strip()
    here = [plan_ingestion([(TextNode(text="Ada wrote notes.", metadata={"tags": kind(tags)}),
                             [])], "*").passages[0] for kind in (set, frozenset)]
    assert {other, here[0].node_id, here[1].node_id} == {here[0].node_id}
    assert here[0].metadata["tags"] == sorted(tags)


@pytest.mark.parametrize("use_async", [False, True])
async def test_emptied_documents_metadata_changes_and_a_failing_document(
        tmp_path: Path, use_async: bool) -> None:
    """A document now without text is deleted; a metadata change outside the identity keys
    is an update; a changed document the LLM cannot extract is left as it was (False)
    while the others are refreshed, extracted together."""
    index = GraphRAGIndex(uri=str(tmp_path / "g.db"), embed_model=HashEmbedding(),
                          passage_identity_keys=["tenant"])

    def dated(document: Any, year: int) -> Any:
        return document.model_copy(update={"metadata": {"tenant": "a", "year": year}})

    whole = {"transformations": [SentenceSplitter(chunk_size=200, chunk_overlap=0)]}

    async def refresh(documents: list[Any], llm: ScriptedLLM) -> list[bool]:
        if use_async:
            return await index.arefresh_ref_docs(documents, llm=llm, **whole)
        return index.refresh_ref_docs(documents, llm=llm, **whole)

    start = [dated(EULER, 2020), dated(DANIEL, 2020), dated(BASEL, 2020)]
    assert await refresh(start, extractor()) == [True, True, True]
    emptied = doc("basel").model_copy(update={"text": " "})
    fails_on_daniel = ScriptedLLM(
        lambda prompt: "" if "Daniel" in prompt.rsplit("Passage:", 1)[1]
        else extractor()._script(prompt))
    new_daniel = dated(doc("daniel", "Daniel Bernoulli studied fluid dynamics."), 2024)
    assert await refresh([dated(EULER, 2024), new_daniel, emptied], fails_on_daniel) == [
        True, False, True]
    assert index.store.document_passage_ids(["basel"]) == {"basel": set()}
    years = {d: {n.metadata["year"] for n in index.store.document_passages(d)}
             for d in ("euler", "daniel")}
    assert years == {"euler": {2024}, "daniel": {2020}}  # daniel left as it was
    llm = extractor()
    assert await refresh([dated(EULER, 2024), new_daniel, emptied], llm) == [
        False, True, False]
    assert len(llm.prompts) == 1  # only daniel, asked again
    assert "Daniel Bernoulli studied fluid dynamics." in llm.prompts[0]


def test_a_document_outside_the_filters_is_refused_before_any_write(
        index: GraphRAGIndex) -> None:
    def tenant(document: Any, name: str) -> Any:
        return document.model_copy(update={"metadata": {"tenant": name}})

    only_a = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])
    llm = extractor()
    with pytest.raises(InvalidInputError, match="'daniel' is outside the filters"):
        index.refresh_ref_docs([tenant(EULER, "a"), tenant(DANIEL, "b")], filters=only_a,
                               llm=llm, **OPTIONS)
    assert llm.prompts == [] and index.store.dim is None  # nothing extracted or written


def test_changed_documents_are_extracted_together(index: GraphRAGIndex) -> None:
    index.refresh_ref_docs([EULER, DANIEL], llm=extractor(), **OPTIONS)
    batches: list[int] = []
    from llama_index_graphrag_milvus.extraction import TripletExtractor

    class Counting(TripletExtractor):
        def __call__(self, nodes: Any, **kwargs: Any) -> Any:
            batches.append(len(nodes))
            return super().__call__(nodes, **kwargs)

    changed = [doc("euler", "Euler was born in Basel."),
               doc("daniel", "Daniel Bernoulli studied fluid dynamics.")]
    assert index.refresh_ref_docs(changed, kg_extractor=Counting(llm=extractor()),
                                  **OPTIONS) == [True, True]
    assert batches == [2]  # one extraction of both documents' passages


def test_a_metadata_key_removed_stops_matching_filters(milvus_uri: str) -> None:
    """Milvus Lite's upsert merges a row's dynamic fields into the stored ones: a key the
    new version no longer has stayed in the row and went on matching filters (and a failed
    extraction's mark stayed beside the triplets that replaced it). On both backends."""
    index = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(),
                          passage_identity_keys=["tenant"])
    whole = {"transformations": [SentenceSplitter(chunk_size=200, chunk_overlap=0)]}
    memo = doc("memo", "Euler was born in Basel.")
    draft = memo.model_copy(update={"metadata": {"tenant": "a", "status": "draft"}})
    blank = ScriptedLLM(lambda prompt: "")
    assert index.refresh_ref_docs([draft], llm=blank, **whole) == [True]  # marked failed
    final = memo.model_copy(update={"metadata": {"tenant": "a"}})
    assert index.refresh_ref_docs([final], llm=extractor(), **whole) == [True]
    store = index.store
    rows = store.client.query(store.passage_collection, filter='doc_id == "memo"',
                              output_fields=["$meta"])
    assert len(rows) == 1
    assert "status" not in rows[0] and "graphrag_extraction_error" not in rows[0]
    drafts = MetadataFilters(filters=[MetadataFilter(key="status", value="draft")])
    assert index.as_naive_retriever(filters=drafts).retrieve("Basel") == []
    assert index.refresh_ref_docs([final], llm=extractor(), **whole) == [False]
