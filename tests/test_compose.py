"""Composition with LlamaIndex core: reciprocal rank fusion with naive RAG and with BM25, a
router between graph and naive RAG, GraphRelationRerank after a fusion (examples/compose.py).

Offline throughout: no test may resolve ``Settings.llm`` (core's default is OpenAI, which
raises without OPENAI_API_KEY); the autouse fixture removes the key and checks afterwards
that ``Settings.llm`` was never resolved.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever, RouterRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.selectors import EmbeddingSingleSelector
from llama_index.core.tools import RetrieverTool
from llama_index.retrievers.bm25 import BM25Retriever

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
from tests.conftest import FAMILY
from tests.support.fakes import ScriptedLLM
from tests.support.markers import NEEDS_MINILM

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import compose  # noqa: E402

QUESTION = "What did the son of Euler's teacher contribute?"
LOOKUP = "Where was Leonhard Euler born?"
EULER, DANIEL, JAKOB, FLUID = (text for text, _ in FAMILY)
XDIST_GROUP = "compose"
"""The compositions read one shared Lite index (``shared_family_index``), built once on the
worker that runs this module (tests/conftest.py)."""


@pytest.fixture(autouse=True)
def no_default_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No OpenAI key, no core test mode (which would hand out a MockLLM silently), an
    unresolved Settings.llm; after the test, Settings.llm must still be unresolved."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("IS_TESTING", raising=False)
    monkeypatch.setattr(Settings, "_llm", None)
    yield
    assert Settings._llm is None, "something resolved Settings.llm"


def texts(hits: list[NodeWithScore]) -> list[str]:
    return [h.node.get_content() for h in hits]


def fusion(retrievers: list[BaseRetriever], **kwargs: object) -> QueryFusionRetriever:
    kwargs = {"mode": "reciprocal_rerank", "num_queries": 1, "llm": MockLLM(),
              "use_async": False, "similarity_top_k": 10, **kwargs}
    return QueryFusionRetriever(retrievers, **kwargs)  # type: ignore[arg-type]


def rrf(*lists: list[NodeWithScore]) -> dict[str, float]:
    """Reciprocal rank fusion (k = 60) by passage text, computed here from the inputs."""
    scores: dict[str, float] = {}
    for hits in lists:
        ranked = sorted(hits, key=lambda h: h.score or 0.0, reverse=True)
        for rank, hit in enumerate(ranked):
            key = hit.node.get_content()
            scores[key] = scores.get(key, 0.0) + 1.0 / (60 + rank)
    return scores


def bm25_over(index: GraphRAGIndex, top_k: int = 4) -> BM25Retriever:
    return BM25Retriever.from_defaults(nodes=compose.stored_passages(index),
                                       similarity_top_k=top_k)


class NoRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return []


def test_core_resolves_openai_without_an_explicit_llm() -> None:
    """Why every offline composition passes llm=: core's QueryFusionRetriever (even for
    reciprocal rank fusion of one query, which never calls it) and RouterRetriever (even
    with an embedding selector) resolve Settings.llm in their constructors."""
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        QueryFusionRetriever([NoRetriever()], mode="reciprocal_rerank", num_queries=1)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        RouterRetriever(selector=EmbeddingSingleSelector(MockEmbedding(embed_dim=8)),
                        retriever_tools=[RetrieverTool.from_defaults(NoRetriever())])
    assert fusion([NoRetriever()]).retrieve(QUESTION) == []


def test_fusion_with_naive_rag_merges_duplicates_and_keeps_relations(
        shared_family_index: GraphRAGIndex) -> None:
    graph = shared_family_index.as_retriever(similarity_top_k=3)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=3)
    expected = rrf(naive.retrieve(QUESTION), graph.retrieve(QUESTION))

    fused = fusion([naive, graph]).retrieve(QUESTION)

    assert DANIEL in texts(fused)
    assert len(texts(fused)) == len(set(texts(fused))) == len(expected)  # each passage once
    assert {h.node.get_content(): h.score for h in fused} == pytest.approx(expected)
    assert [h.score for h in fused] == sorted(expected.values(), reverse=True)
    # the graph retriever last: each fused node is the graph's, with the relations that
    # reached it (what GraphRelationRerank reads)
    daniel = next(h for h in fused if h.node.get_content() == DANIEL)
    assert "Daniel Bernoulli was the son of Johann Bernoulli" in [
        r["text"] for r in daniel.node.metadata["graphrag_relations"]]
    assert all("graphrag_relations" in h.node.metadata for h in fused)
    # core keeps the last list's node: with the graph first, naive RAG's plain node wins
    first = fusion([graph, naive]).retrieve(QUESTION)
    assert sorted(texts(first)) == sorted(texts(fused))
    assert not any("graphrag_relations" in h.node.metadata for h in first)


async def test_fusion_async_path_gives_the_same_passages(
        shared_family_index: GraphRAGIndex) -> None:
    graph = shared_family_index.as_retriever(similarity_top_k=3)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=3)
    expected = fusion([naive, graph]).retrieve(QUESTION)
    fused = await fusion([naive, graph], use_async=True).aretrieve(QUESTION)
    assert texts(fused) == texts(expected)
    assert [h.score for h in fused] == pytest.approx([h.score for h in expected])


def test_fusion_with_bm25_over_the_stored_passages(shared_family_index: GraphRAGIndex) -> None:
    graph = shared_family_index.as_retriever(similarity_top_k=3)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=3)
    bm25 = bm25_over(shared_family_index, top_k=3)
    assert texts(bm25.retrieve(QUESTION))[0] == DANIEL
    stored = {h.node.get_content(): h.node.hash for h in naive.retrieve(QUESTION)}
    for hit in bm25.retrieve(QUESTION):  # same passage, same hash: the fusion merges them
        if hit.node.get_content() in stored:
            assert hit.node.hash == stored[hit.node.get_content()]

    expected = rrf(bm25.retrieve(QUESTION), graph.retrieve(QUESTION))
    fused = fusion([bm25, graph]).retrieve(QUESTION)
    assert DANIEL in texts(fused)
    assert len(texts(fused)) == len(set(texts(fused))) == len(expected)
    assert {h.node.get_content(): h.score for h in fused} == pytest.approx(expected)

    every = fusion([naive, bm25, graph]).retrieve(QUESTION)
    union = {t for r in (naive, bm25, graph) for t in texts(r.retrieve(QUESTION))}
    assert sorted(texts(every)) == sorted(union)  # each passage once across all three
    assert texts(every)[0] == DANIEL  # first in all three lists

    # BM25 over the raw input texts instead: other nodes (other metadata, other hash), so
    # the fusion lists Daniel's passage twice. Hence compose.stored_passages.
    raw = BM25Retriever.from_defaults(nodes=[TextNode(text=t) for t, _ in FAMILY],
                                      similarity_top_k=3)
    assert texts(fusion([raw, graph]).retrieve(QUESTION)).count(DANIEL) == 2


def test_router_sends_multi_hop_to_graph_and_lookup_to_naive(
        shared_family_index: GraphRAGIndex) -> None:
    graph = shared_family_index.as_retriever(similarity_top_k=2)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=2)
    tools = [
        RetrieverTool.from_defaults(graph, name="graph", description=compose.GRAPH_DESCRIPTION),
        RetrieverTool.from_defaults(naive, name="naive", description=compose.NAIVE_DESCRIPTION),
    ]
    selector = EmbeddingSingleSelector.from_defaults(
        embed_model=shared_family_index.embed_model)
    router = RouterRetriever(selector=selector, retriever_tools=tools, llm=MockLLM())

    choices = [selector.select([t.metadata for t in tools], QueryBundle(q)).ind
               for q in (QUESTION, LOOKUP)]
    assert choices == [0, 1]

    multi_hop = router.retrieve(QUESTION)
    assert texts(multi_hop) == texts(graph.retrieve(QUESTION))
    assert all("graphrag_found_by" in h.node.metadata for h in multi_hop)
    assert compose.which(multi_hop) == "graph"
    lookup = router.retrieve(LOOKUP)
    assert texts(lookup) == texts(naive.retrieve(LOOKUP))
    assert not any("graphrag_found_by" in h.node.metadata for h in lookup)
    assert compose.which(lookup) == "naive"


CHOSEN = ["Jakob Bernoulli studied probability",
          "Daniel Bernoulli was the son of Johann Bernoulli"]
ANSWER = "Daniel Bernoulli made contributions to fluid dynamics."


def choosing_llm(prompt: str) -> str:
    """Picks CHOSEN in the rerank prompt (by their numbers there); else the answer."""
    if "useful_relationships" in prompt:
        listing = prompt.rsplit("Relationship descriptions:", 1)[1]
        numbers = {text: int(n) for n, text in re.findall(r"^\[(\d+)\] (.+)$", listing, re.M)}
        assert set(CHOSEN) <= set(numbers), listing
        return json.dumps({"thought_process": "scripted",
                           "useful_relationships": [f"[{numbers[t]}] {t}" for t in CHOSEN]})
    return ANSWER


def test_rerank_after_fusion_orders_by_the_chosen_relations(
        shared_family_index: GraphRAGIndex) -> None:
    graph = shared_family_index.as_retriever(similarity_top_k=4)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=4)
    fused = fusion([naive, bm25_over(shared_family_index), graph])
    before = texts(fused.retrieve(QUESTION))
    assert before[:3] == [DANIEL, EULER, JAKOB]

    llm = ScriptedLLM(choosing_llm)
    rerank = GraphRelationRerank(llm=llm, top_n=3)
    after = rerank.postprocess_nodes(fused.retrieve(QUESTION), query_str=QUESTION)
    # Jakob's passage carries the first chosen relation, Daniel's the second, Euler's none
    assert texts(after) == [JAKOB, DANIEL, EULER]
    assert [h.node.metadata["graphrag_rerank"]["relation_rank"] for h in after] == [0, 1, None]
    assert [h.score for h in after] == [1.0, 0.5, 0.0]

    engine = RetrieverQueryEngine.from_args(
        fused, node_postprocessors=[GraphRelationRerank(llm=llm, top_n=2)], llm=llm)
    response = engine.query(QUESTION)
    assert str(response) == ANSWER
    assert texts(response.source_nodes) == [JAKOB, DANIEL]
    assert sum("useful_relationships" in p for p in llm.prompts) == 2  # one per rerank
    assert sum("named_entities" in p for p in llm.prompts) == 0


def test_rerank_after_fusion_without_a_usable_llm_keeps_the_fused_order(
        shared_family_index: GraphRAGIndex, caplog: pytest.LogCaptureFixture) -> None:
    graph = shared_family_index.as_retriever(similarity_top_k=4)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=4)
    fused = fusion([naive, graph])
    before = texts(fused.retrieve(QUESTION))
    offline = MockLLM()  # echoes the prompt: no choice once the echo is stripped
    engine = RetrieverQueryEngine.from_args(
        fused, node_postprocessors=[GraphRelationRerank(llm=offline, top_n=2)], llm=offline)
    with caplog.at_level(logging.WARNING):
        hits = engine.retrieve(QueryBundle(QUESTION))
    assert texts(hits) == before[:2]
    assert "keeping the retriever order" in caplog.text


def test_example_rerank_step_with_an_llm(shared_family_index: GraphRAGIndex,
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's LLM branch of (d), with a scripted LLM instead of OpenAI."""
    monkeypatch.setattr(compose, "QUESTION", QUESTION)
    monkeypatch.setattr(compose, "first_line", lambda hit: hit.node.get_content()[:15])
    graph = shared_family_index.as_retriever(similarity_top_k=4)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=4)
    compose.show_rerank(compose.fuse([naive, bm25_over(shared_family_index), graph]),
                        ScriptedLLM(choosing_llm))
    out = capsys.readouterr().out
    assert f"top 2: {JAKOB[:15]}, {DANIEL[:15]}" in out
    assert f"answer: {ANSWER}" in out


@pytest.mark.model
@NEEDS_MINILM
@pytest.mark.milvus
def test_compose_example_runs_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "IS_TESTING")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "compose.py"), "--uri",
         str(tmp_path / "compose.db")],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "offline run" in out
    part = dict(re.findall(r"^\((\w)\) .*\n((?:  .*\n?)+)", out, re.M))
    assert set(part) == {"a", "b", "c", "d"}, out
    naive_line, graph_line, fused_line = part["a"].splitlines()
    assert "Daniel Bernoulli" not in naive_line and "Daniel Bernoulli" in graph_line
    assert "Daniel Bernoulli" in fused_line
    for line in (fused_line, *part["b"].splitlines()[1:]):
        names = re.findall(r"(\w+ Bernoulli|Leonhard Euler)", line)
        assert "Daniel Bernoulli" in names and len(names) == len(set(names)), line
    assert "-> graph: Leonhard Euler, Daniel Bernoulli" in part["c"]
    assert '"Where was Leonhard Euler born?" -> naive:' in part["c"]
    assert "top 2: Leonhard Euler, Daniel Bernoulli" in part["d"]
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr
