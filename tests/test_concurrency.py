"""32 concurrent ``aretrieve`` calls answer exactly as the same queries run one at a time
(Milvus Lite and a Milvus server)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.records import RELATIONS_KEY
from tests.fakes import HashEmbedding, ScriptedLLM

QUERIES = [
    "What did the son of Euler's teacher contribute?",
    "fluid dynamics",
    "Who studied probability?",
    "Where was Leonhard Euler born?",
    "Jakob Bernoulli brother",
    "lift of aircraft wings",
    "Johann Bernoulli",
    "Basel",
]
CONCURRENT = 32


def ner_script(prompt: str) -> str:
    """NER that depends only on the query: deterministic whatever the interleaving."""
    query = prompt.rsplit("Question:", 1)[-1].lower()
    names = [name for name in ("Euler", "Johann Bernoulli", "Daniel Bernoulli",
                               "Jakob Bernoulli", "fluid dynamics", "Basel")
             if name.lower() in query]
    return json.dumps({"named_entities": names})


def answer(hits: list) -> list[tuple[str, float, list[dict[str, Any]]]]:
    """What must not change under concurrency: node ids, scores and the relations."""
    return [(h.node.node_id, round(h.score or 0.0, 6), h.node.metadata[RELATIONS_KEY])
            for h in hits]


@pytest.mark.parametrize("retriever_kwargs", [
    pytest.param({}, id="query-vector"),
    pytest.param({"hops": 2, "llm": "ner"}, id="ner-2-hops"),
])
@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
async def test_concurrent_aretrieve_matches_sequential(
        family_index: GraphRAGIndex, milvus_uri: str, retriever_kwargs: dict[str, Any],
        cold: bool) -> None:
    kwargs = dict(retriever_kwargs)
    if kwargs.get("llm") == "ner":
        kwargs["llm"] = ScriptedLLM(ner_script)
    retriever = family_index.as_retriever(**kwargs)
    sequential_sync = {q: answer(retriever.retrieve(q)) for q in QUERIES}
    sequential_async = {q: answer(await retriever.aretrieve(q)) for q in QUERIES}
    assert sequential_async == sequential_sync
    assert all(sequential_sync.values())  # every query finds something: the test compares

    # cold: a fresh index whose graph cache is built while 32 queries race for it
    index = (GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64)) if cold
             else family_index)
    concurrent_retriever = index.as_retriever(**kwargs)
    queries = [QUERIES[i % len(QUERIES)] for i in range(CONCURRENT)]
    results = await asyncio.gather(*(concurrent_retriever.aretrieve(q) for q in queries))
    for query, hits in zip(queries, results, strict=True):
        assert answer(hits) == sequential_sync[query], query
