"""A server that goes away mid-query and comes back: a clear error within the client
timeout, then queries succeed again with no action on the index.

The restart is a TCP proxy in front of the session server (tests/support/proxy.py): it closes every
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

import grpc
import pytest
from pymilvus import MilvusClient

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.errors import MilvusUnavailableError
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding
from tests.support.markers import SERVER_ONLY
from tests.support.proxy import TcpProxy

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


PYMILVUS_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1),
    ("grpc.enable_retries", 1), ("grpc.keepalive_time_ms", 10000),
    ("grpc.keepalive_timeout_ms", 5000), ("grpc.keepalive_permit_without_calls", True)]
"""The options of pymilvus' channels (2.6): a channel with the same options and address
shares gRPC's connection to the address, unless a channel asks for its own."""


def channel_that_failed_to_connect(address: str, mode: str) -> grpc.Channel | grpc.aio.Channel:
    """A channel of this process that tried to connect while nothing listened: its
    connection waits before the next attempt (gRPC's reconnect backoff, 1 s at first), as a
    client's does when its reconnect fails while the server is away."""
    if mode == "sync":
        channel = grpc.insecure_channel(address, options=PYMILVUS_CHANNEL_OPTIONS)
        with pytest.raises(grpc.FutureTimeoutError):
            grpc.channel_ready_future(channel).result(timeout=0.3)
        return channel

    async def connect() -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(address, options=PYMILVUS_CHANNEL_OPTIONS)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(channel.channel_ready(), 0.3)
        return channel

    return asyncio.run(connect())


@SERVER_ONLY
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_first_query_after_a_restart_does_not_inherit_another_channels_backoff(
        family_index: GraphRAGIndex, proxy: TcpProxy, mode: str) -> None:
    """What made the restart test above fail now and then (async, graph in memory): the
    query after the restart reconnects through a new gRPC channel, which shared the failed
    connection of another channel of the process (its connect attempt while the server was
    away) and failed at once with "Fail connecting to server". The store's clients connect
    on their own (``milvus.schema.fresh_connections``)."""
    index = GraphRAGIndex(uri=proxy.uri, embed_model=HashEmbedding(dim=64),
                          milvus_client_kwargs={"timeout": TIMEOUT}, graph="memory")
    retriever = index.as_retriever()

    def run() -> list[str]:
        hits = (retriever.retrieve(QUESTION) if mode == "sync"
                else asyncio.run(retriever.aretrieve(QUESTION)))
        return [h.node.get_content() for h in hits]

    assert DANIEL in run()
    proxy.stop()
    other = channel_that_failed_to_connect(f"127.0.0.1:{proxy.port}", mode)
    proxy.start()  # the server is back while the other channel waits to reconnect
    try:
        assert DANIEL in run()
    finally:
        if isinstance(other, grpc.Channel):
            other.close()
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
