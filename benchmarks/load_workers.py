"""The processes of a load phase (:mod:`.load`): query workers and the writer.

Each runs in a fresh ``spawn`` process with its own ``GraphRAGIndex`` and writes its records
(:mod:`.load_checks`) to a JSON file that the phase reads when they have exited. Times are
``time.monotonic()``, which every process of one machine shares (Linux ``CLOCK_MONOTONIC``).
A query's exception is recorded, never raised: a worker does not stop on errors.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from multiprocessing.queues import Queue
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import Document

from benchmarks.load_checks import QueryRecord, WriteRecord
from benchmarks.scale import HashedRandomEmbedding, resident_mb
from benchmarks.synthetic import entity_name, entity_number
from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion.plan import plan_ingestion

SIMILARITY_TOP_K = 5
"""Passages per answer, every method (as :mod:`.served`)."""
RECENT = 10
"""Targets asked about at random: among the last ``RECENT`` deleted or the next ``RECENT``."""


@dataclass(frozen=True)
class PhaseConfig:
    """What every process of one phase needs (picklable)."""

    uri: str
    prefix: str
    dim: int
    phase: str
    """Names the phase's documents (``<run tag>-<position>``)."""
    method: str
    method_kwargs: dict[str, Any] | None
    """The retriever's arguments (``None``: naive RAG)."""
    workers: int
    seconds: float | None
    queries: int | None
    target_share: float
    targets: int
    entities: int
    write_interval: float
    min_deletes: int
    timeout: float


def open_index(uri: str, prefix: str, dim: int, timeout: float | None = None,
               index_type: str | None = None, index_params: dict[str, Any] | None = None
               ) -> GraphRAGIndex:
    """An index as a worker opens it: graph served by Milvus, reads at ``Strong``; the
    vector index of collections it creates is ``index_type`` (the store's default when
    ``None``)."""
    return GraphRAGIndex(uri=uri, collection_prefix=prefix, consistency_level="Strong",
                         embed_model=HashedRandomEmbedding(dim=dim), graph="milvus",
                         milvus_client_kwargs={"timeout": timeout} if timeout else None,
                         index_type=index_type, index_params=index_params)


def target_text(phase: str, number: int) -> str:
    """A target document's passage, and the question that names it (the same text: the
    passage and its first relation get the question's own vector)."""
    return f"load keeper {phase}-{number} keeps ledger {phase}-{number}"


def target_document(phase: str, number: int, entities: int
                    ) -> tuple[Document, list[tuple[str, str, str]]]:
    """Target document ``number`` of a phase with its triplets (one names an entity of the
    synthetic graph)."""
    keeper = f"load keeper {phase}-{number}"
    other = entity_name(int(np.random.default_rng(number).integers(0, entities)))
    return (Document(text=target_text(phase, number), doc_id=f"load-target-{phase}-{number}"),
            [(keeper, "keeps ledger", f"{phase}-{number}"), (keeper, "knows", other)])


def inserted_document(phase: str, number: int, entities: int
                      ) -> tuple[Document, list[tuple[str, str, str]]]:
    """A new document the writer inserts during the phase (two entities of the graph)."""
    first, second = (entity_name(int(e)) for e in
                     np.random.default_rng(10_000 + number).integers(0, entities, 2))
    visitor = f"load visitor {phase}-{number}"
    return (Document(text=f"{visitor} met {first} and {second}",
                     doc_id=f"load-insert-{phase}-{number}"),
            [(visitor, "met", first), (visitor, "met", second)])


def make_retriever(index: GraphRAGIndex, config: PhaseConfig) -> BaseRetriever:
    if config.method_kwargs is None:
        return index.as_naive_retriever(similarity_top_k=SIMILARITY_TOP_K)
    return index.as_retriever(similarity_top_k=SIMILARITY_TOP_K, **config.method_kwargs)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:300]}"


class Questions:
    """A worker's questions: the newest deleted target right after its delete is seen, else
    a target (recently deleted or next to be) with ``target_share``, else random entities."""

    def __init__(self, config: PhaseConfig, worker: int) -> None:
        self.config = config
        self.rng = np.random.default_rng([worker, config.targets, len(config.phase)])
        self.seen = 0

    def next(self, deleted: int) -> tuple[str, int | None]:
        """The question and the target it names, given how many targets were deleted."""
        config, rng = self.config, self.rng
        if deleted > self.seen:
            self.seen = deleted
            return target_text(config.phase, deleted - 1), deleted - 1
        if rng.random() < config.target_share:
            if deleted and (deleted >= config.targets or rng.random() < 0.5):
                number = int(rng.integers(max(0, deleted - RECENT), deleted))
            else:
                number = int(rng.integers(deleted, min(config.targets, deleted + RECENT)))
            return target_text(config.phase, number), number
        first, second = (entity_number(int(e)) for e in rng.integers(0, config.entities, 2))
        return f"What did the teacher of {first} give to {second}?", None


def query_worker(config: PhaseConfig, worker: int, late: bool, path: str,
                 deleted: Synchronized, go: Event, go_time: Synchronized,
                 writer_done: Event, ready: Queue) -> None:
    """Ask questions until the phase ends; write the records to ``path``. A ``late`` worker
    opens its index only after the phase began (while the writer writes)."""
    records: list[QueryRecord] = []
    opened: dict[str, Any] = {"late": late}
    retriever = None
    if not late:
        index = open_index(config.uri, config.prefix, config.dim, config.timeout)
        retriever = make_retriever(index, config)
        ready.put(worker)
    go.wait()
    start = go_time.value
    questions = Questions(config, worker)

    def more() -> bool:
        if config.queries is not None:
            return len(records) < config.queries
        # past --seconds until this worker asked about min_deletes acknowledged deletes
        return (time.monotonic() < start + (config.seconds or 0.0)
                or (questions.seen < config.min_deletes and not writer_done.is_set()))

    while more():
        if retriever is None:  # the late worker opens now; a failed open is an error
            began = time.monotonic()
            try:
                index = open_index(config.uri, config.prefix, config.dim, config.timeout)
                retriever = make_retriever(index, config)
                opened["open_s"] = round(time.monotonic() - began, 2)
            except Exception as exc:  # counted as a failed query of this worker
                records.append(QueryRecord(worker, began, time.monotonic() - began, None,
                                           (), describe(exc)))
            continue
        question, target = questions.next(deleted.value)
        began = time.monotonic()
        try:
            nodes = retriever.retrieve(question)
            records.append(QueryRecord(worker, began, time.monotonic() - began, target,
                                       tuple(n.node.node_id for n in nodes)))
        except Exception as exc:  # the point: count every error, never stop
            records.append(QueryRecord(worker, began, time.monotonic() - began, target, (),
                                       describe(exc)))
    Path(path).write_text(json.dumps({**opened, "rss_mb": resident_mb()["VmRSS"],
                                      "queries": [asdict(r) for r in records]}))


def writer_worker(config: PhaseConfig, path: str, deleted: Synchronized, go: Event,
                  stop: Event, writer_done: Event, ready: Queue) -> None:
    """Insert a new document, then delete the next target, every ``write_interval`` seconds
    until ``stop`` or the last target; write the records to ``path``. Each target is tried
    once: a failed delete is recorded (the target stays) and the writer moves on."""
    writes: list[WriteRecord] = []
    try:
        index = open_index(config.uri, config.prefix, config.dim, config.timeout)
        ready.put("writer")
        go.wait()
        for number in range(config.targets):
            if stop.is_set():
                break
            document = inserted_document(config.phase, number, config.entities)
            began = time.monotonic()
            try:
                index.insert_triplets([document])
                writes.append(WriteRecord("insert", document[0].doc_id, began, time.monotonic(),
                                          passage_ids(index, [document])))
            except Exception as exc:
                writes.append(WriteRecord("insert", document[0].doc_id, began, None,
                                          error=describe(exc)))
            target = target_document(config.phase, number, config.entities)
            began = time.monotonic()
            try:
                index.delete_ref_doc(target[0].doc_id)
                writes.append(WriteRecord("delete", target[0].doc_id, began, time.monotonic(),
                                          passage_ids(index, [target]), target=number))
            except Exception as exc:
                writes.append(WriteRecord("delete", target[0].doc_id, began, None,
                                          target=number, error=describe(exc)))
            with deleted.get_lock():
                deleted.value = number + 1
            stop.wait(config.write_interval)  # the write rate, not a wait for a result
    finally:
        writer_done.set()
        Path(path).write_text(json.dumps({"writes": [asdict(w) for w in writes]}))


def passage_ids(index: GraphRAGIndex, documents: list[tuple[Document, Any]]
                ) -> tuple[str, ...]:
    """The passage ids ingestion gives ``documents`` (the same pure plan it writes)."""
    plan = plan_ingestion(documents, index.passage_identity_keys)
    return tuple(node.node_id for node in plan.passages)
