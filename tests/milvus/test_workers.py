"""Several stateless workers, one Milvus server: two worker processes with the graph served
by Milvus, one writing, both reading their own and each other's writes at the documented
consistency level (Strong), neither holding the graph."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding
from tests.support.markers import SERVER_ONLY

ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """A worker process (tests/support/worker_process.py) and its JSON line protocol."""

    def __init__(self, uri: str, prefix: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.worker_process", uri, prefix], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.read() == {"ready": True}

    def read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the worker exited with {self.process.wait()}"
        return json.loads(line)

    def ask(self, command: dict[str, Any]) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture
def workers(milvus_uri: str) -> Iterator[tuple[Worker, Worker]]:
    GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, collection_prefix="workers",
                                embed_model=HashEmbedding(dim=64)).close()
    first, second = Worker(milvus_uri, "workers"), Worker(milvus_uri, "workers")
    try:
        yield first, second
    finally:
        first.close()
        second.close()


@SERVER_ONLY
def test_two_workers_read_their_own_and_each_others_writes(
        workers: tuple[Worker, Worker]) -> None:
    writer, reader = workers
    question = "Who did Ada Lovelace work with on the Analytical Engine?"
    assert not any("Babbage" in p for p in reader.ask({"query": question})["passages"])
    passage = "Ada Lovelace worked with Charles Babbage on the Analytical Engine."
    assert writer.ask({"insert": [passage, [["Ada Lovelace", "worked with",
                                             "Charles Babbage"]]]}) == {"relations": 1}
    for worker in (writer, reader):
        answer = worker.ask({"query": question})
        assert passage in answer["passages"]  # Strong: the write is seen at once
        assert answer["held"] == []  # stateless: nothing of the graph is held
    other = "Charles Babbage designed the Difference Engine in London."
    reader.ask({"insert": [other, [["Charles Babbage", "designed", "Difference Engine"]]]})
    answer = writer.ask({"query": "What did Charles Babbage design in London?"})
    assert other in answer["passages"] and answer["held"] == []
