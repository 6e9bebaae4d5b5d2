"""The tutorial's Bernoulli example with real all-MiniLM-L6-v2 embeddings.

Skipped only when the model package is not installed (CI installs it through the
``test`` extra).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
from tests.support.commands import explorer_command, get_json
from tests.support.fakes import ScriptedLLM
from tests.support.markers import NEEDS_MINILM

pytestmark = [pytest.mark.model, pytest.mark.milvus, NEEDS_MINILM]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import bernoulli  # noqa: E402

QUESTION = bernoulli.QUESTION
XDIST_GROUP = "bernoulli_minilm"
"""One xdist worker runs the module, so the model is loaded and the index built once (the
module fixture), not once per worker (tests/conftest.py)."""
TUTORIAL_CHOICE = [
    "Leonhard Euler was a student of Johann Bernoulli",
    "Daniel Bernoulli was the son of Johann Bernoulli",
    "Daniel Bernoulli made major contributions to fluid dynamics",  # when in the pool
]


def tutorial_llm(prompt: str) -> str:
    """Answers like the tutorial's LLM: NER gives Euler, rerank picks the three relations."""
    if "named_entities" in prompt:
        return '{"named_entities": ["Euler"]}'
    if "useful_relationships" in prompt:
        listing = prompt.rsplit("Relationship descriptions:", 1)[1]
        numbers = {text: int(n) for n, text in re.findall(r"^\[(\d+)\] (.+)$", listing, re.M)}
        chosen = [f"[{numbers[text]}] {text}" for text in TUTORIAL_CHOICE if text in numbers]
        assert len(chosen) >= 2, f"the chain relations are not in the rerank prompt: {listing}"
        return json.dumps({"thought_process": "Euler's teacher is Johann Bernoulli, whose son "
                           "is Daniel.", "useful_relationships": chosen})
    return "Daniel Bernoulli made major contributions to fluid dynamics and statistics."


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> GraphRAGIndex:
    uri = str(tmp_path_factory.mktemp("bernoulli") / "bernoulli.db")
    return GraphRAGIndex.from_triplets(bernoulli.DATASET, uri=uri,
                                       embed_model=bernoulli.local_embedding())


def names(hits: list) -> list[str]:
    return [bernoulli.first_line(h) for h in hits]


def test_naive_rag_misses_daniel(index: GraphRAGIndex) -> None:
    top2 = names(index.as_naive_retriever(similarity_top_k=2).retrieve(QUESTION))
    assert "Leonhard Euler" in top2
    assert "Daniel Bernoulli" not in top2


def test_graph_pipeline_finds_euler_and_daniel(index: GraphRAGIndex) -> None:
    llm = ScriptedLLM(tutorial_llm)
    hits = index.as_retriever(llm=llm).retrieve(QUESTION)
    assert "Daniel Bernoulli" in names(hits)  # the pool reaches the second hop
    top2 = GraphRelationRerank(llm=llm, top_n=2).postprocess_nodes(hits, query_str=QUESTION)
    assert names(top2) == ["Leonhard Euler", "Daniel Bernoulli"]


def test_query_engine_end_to_end(index: GraphRAGIndex) -> None:
    llm = ScriptedLLM(tutorial_llm)
    response = index.as_query_engine(llm=llm, top_n=2).query(QUESTION)
    assert "fluid dynamics" in str(response)
    assert names(response.source_nodes) == ["Leonhard Euler", "Daniel Bernoulli"]
    assert sum("named_entities" in p for p in llm.prompts) == 0  # the second hop needs no NER
    assert sum("useful_relationships" in p for p in llm.prompts) == 1


def test_quick_start_example_runs_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "bernoulli.py"), "--uri",
         str(tmp_path / "quick.db")],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "offline run" in done.stdout
    # one line per stage, with its time
    assert re.search(r"^Loading the embedding model .*\.\.\. \d+\.\d s$", done.stdout, re.M)
    assert re.search(r"^Embedding and storing 4 passages and 22 triplets at .*\.\.\. \d+\.\d s$",
                     done.stdout, re.M)
    naive, graph = done.stdout.split("Graph RAG top 2")
    assert naive.count("Leonhard Euler") == 1 and "Daniel Bernoulli" not in naive
    assert re.search(r"#1  Leonhard Euler   similarity 0\.\d{3}\n  #2  ", naive)
    top2 = graph.split("(the order interleaves")[0]
    # the offline default (the second hop) finds the answer's source: Daniel Bernoulli
    assert re.search(r"#1  Leonhard Euler   found by the question, similarity 0\.\d{3}; via:", top2)
    assert re.search(r"#2  Daniel Bernoulli   found by bridge Johann Bernoulli, similarity "
                     r"0\.\d{3} to its second query; via:", top2)
    assert "reranker" not in done.stdout  # no LLM, no reranker
    subgraph = graph.split("PCST subgraph (G-Retriever): ")[1]
    relations, pool = re.match(r"(\d+) relations and \d+ entities, against the k-hop "
                               r"pool's (\d+) relations", subgraph).groups()
    assert 1 <= int(relations) < int(pool)  # a smaller context than the k-hop pool
    assert "node_id,node_attr" in subgraph and "src,edge_attr,dst" in subgraph
    assert "was a student of" in subgraph  # the relation that joins Euler to his teacher
    page = tmp_path / "bernoulli_explanation.html"  # next to the Lite file, and said so
    assert f"Why these passages: open {page.as_uri()}" in done.stdout
    # the explorer opens the quick start's index with its default model (no flag)
    with explorer_command(tmp_path / "quick.db") as url:
        assert get_json(url + "api/summary")["counts"]["passages"] == 4
    assert "Johann Bernoulli" in page.read_text(encoding="utf-8")
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr
    assert "Loading weights" not in done.stderr  # the stage line says it instead
