"""32 concurrent ``aretrieve`` calls answer exactly as the same queries run one at a time
(Milvus Lite and a Milvus server)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.metadata import RELATIONS_KEY
from tests.support.fakes import HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus  # every test here opens a Milvus Lite file

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


FAMILY_WRITE = [("Gottfried Leibniz corresponded with Johann Bernoulli.",
                 [("Gottfried Leibniz", "corresponded with", "Johann Bernoulli")])]


@pytest.mark.parametrize(("reader", "collection", "size"), [
    pytest.param("read_relations", "relation_collection",
                 lambda index: index.graph.num_relations, id="graph"),
    pytest.param("read_entities", "entity_collection", lambda index: len(index.entity_table),
                 id="entity-table"),
    pytest.param("read_passage_vectors", "passage_collection",
                 lambda index: len(index.passage_table() or ()), id="passage-table"),
])
def test_a_write_that_ends_during_a_build_is_not_hidden_by_it(
        tmp_path: Any, reader: str, collection: str, size: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A query builds an in-memory copy from Milvus while a write finishes: the copy it read
    before the write must not stay cached after it (it would hide the write until the next
    write or refresh()). Events order the two threads; nothing sleeps."""
    from tests.conftest import FAMILY

    index = GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "race.db"),
                                        embed_model=HashEmbedding(dim=64))
    before = index.store.count(getattr(index.store, collection))
    read_done, write_done = threading.Event(), threading.Event()
    read = getattr(index.store, reader)

    def slow_read(*args: Any, **kwargs: Any) -> Any:
        batches = list(read(*args, **kwargs))  # what Milvus holds before the write
        read_done.set()
        assert write_done.wait(timeout=60), "the write did not finish"
        return iter(batches)

    monkeypatch.setattr(index.store, reader, slow_read)
    builder = threading.Thread(target=size, args=(index,))  # nothing cached yet: it builds
    builder.start()
    assert read_done.wait(timeout=60), "the build did not start"
    index.insert_triplets(FAMILY_WRITE)  # ends while the build holds the old rows
    write_done.set()
    builder.join(timeout=60)
    assert not builder.is_alive()
    monkeypatch.undo()
    assert size(index) == before + 1  # the write is seen: the stale copy was not kept
    index.close()


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_calls_sent_together_from_the_stores_workers_never_wait_for_the_pool(
        family_index: GraphRAGIndex) -> None:
    """A request of a ``Together`` that sends calls together itself (the served graph's
    ``RelationsAround``) runs in one of the store's worker threads. When every worker holds
    such a request, the inner calls must not wait for a free worker: they run in a second
    pool (and the worker that sent them). A barrier fills the pool first; nothing sleeps."""
    store = family_index.store
    workers = store._pool._max_workers
    filled = threading.Barrier(workers, timeout=20)
    seen: list[str] = []

    def inner(name: str) -> str:
        seen.append(threading.current_thread().name)
        return name

    def outer(number: int) -> tuple[str, ...]:
        filled.wait()  # every worker now runs an outer call
        return store.concurrently_all([lambda: inner(f"{number}a"), lambda: inner(f"{number}b")])

    answers: list[Any] = []
    caller = threading.Thread(target=lambda: answers.append(store.concurrently_all(
        [lambda n=n: outer(n) for n in range(workers)] + [lambda: ("last",)])), daemon=True)
    caller.start()
    caller.join(timeout=60)
    assert not caller.is_alive(), "the store's workers waited for each other"
    assert answers == [(*((f"{n}a", f"{n}b") for n in range(workers)), ("last",))]
    assert all(name.startswith("graphrag-milvus") for name in seen)
    assert any(name.startswith("graphrag-milvus-inner") for name in seen)
