"""A server that goes away mid-query and comes back: a clear error within the client
timeout, then queries succeed again with no action on the index.

The restart is a TCP proxy in front of the session server (tests/proxy.py): it closes every
connection and its port, as a stopped server process does, and listens again when "back".
The real thing (the embedded server stopped and started under load) is
``python -m benchmarks.restart``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
from pymilvus import MilvusClient

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.errors import MilvusUnavailableError
from tests.conftest import FAMILY
from tests.fakes import HashEmbedding
from tests.proxy import TcpProxy

SERVER_ONLY = pytest.mark.parametrize("milvus_uri", ["server"], indirect=True)
QUESTION = "What did the son of Euler's teacher contribute?"
DANIEL = FAMILY[1][0]
TIMEOUT = 3.0


@pytest.fixture
def proxy(milvus_uri: str) -> Iterator[TcpProxy]:
    port = urlparse(milvus_uri).port
    assert port is not None
    proxy = TcpProxy(port)
    proxy.start()
    yield proxy
    proxy.stop()


@SERVER_ONLY
@pytest.mark.parametrize(("mode", "graph"), [("sync", "memory"), ("async", "memory"),
                                             ("sync", "milvus"), ("async", "milvus")])
def test_a_query_during_a_restart_fails_clearly_and_the_next_one_succeeds(
        family_index: GraphRAGIndex, proxy: TcpProxy, mode: str, graph: str) -> None:
    """With the graph in memory the query in flight is the read of its passages; with the
    graph served by Milvus it is its first search."""
    index = GraphRAGIndex(uri=proxy.uri, embed_model=HashEmbedding(dim=64),
                          milvus_client_kwargs={"timeout": TIMEOUT}, graph=graph)
    retriever = index.as_retriever()

    def run() -> list[str]:
        hits = (retriever.retrieve(QUESTION) if mode == "sync"
                else asyncio.run(retriever.aretrieve(QUESTION)))
        return [h.node.get_content() for h in hits]

    assert DANIEL in run()  # warm: graph, entity and passage tables in memory
    outcome: dict[str, object] = {}

    def in_flight() -> None:
        started = time.monotonic()
        try:
            outcome["hits"] = run()
        except Exception as exc:  # the point: what the caller gets
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    proxy.hold()
    worker = threading.Thread(target=in_flight)
    worker.start()
    assert proxy.caught.wait(TIMEOUT), "the query never reached the proxy"
    proxy.stop()  # the server goes away with the query in flight
    worker.join(timeout=6 * TIMEOUT)
    assert not worker.is_alive(), "the query hangs past the client timeout"
    error = outcome.get("error")
    assert isinstance(error, MilvusUnavailableError), outcome  # a MilvusStoreError to retry
    assert f"Milvus failed to {'read' if graph == 'memory' else 'search'}" in str(error)
    assert outcome["seconds"] < 3 * TIMEOUT  # bounded by the client timeout (plus retries)

    proxy.start()  # the server is back
    assert DANIEL in run()
    index.close()


@SERVER_ONLY
def test_a_collection_the_server_has_not_loaded_again_is_unavailable(
        family_index: GraphRAGIndex, milvus_uri: str) -> None:
    """A restarted server loads its collections again by itself; until then a read fails
    with "collection not loaded" (code 101), which a retry cures."""
    retriever = family_index.as_retriever()
    assert DANIEL in [h.node.get_content() for h in retriever.retrieve(QUESTION)]
    admin = MilvusClient(uri=milvus_uri)
    admin.release_collection(family_index.store.passage_collection)
    try:
        with pytest.raises(MilvusUnavailableError,
                           match=r"Milvus failed to read graphrag_passages: .*collection not "
                                 r"loaded.* may succeed if retried"):
            retriever.retrieve(QUESTION)
    finally:
        admin.load_collection(family_index.store.passage_collection)
        admin.close()
    assert DANIEL in [h.node.get_content() for h in retriever.retrieve(QUESTION)]
