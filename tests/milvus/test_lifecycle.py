"""close(), aclose() and the context managers; releasing a Milvus Lite file for other processes.

Milvus Lite serves a .db path from an in-process server that holds an flock on
``{path}/LOCK``: these tests check the lock itself, and open the file from a second process.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError, MilvusStoreError
from llama_index_graphrag_milvus.milvus.schema import SHARED_CONNECTIONS
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus  # every test here opens a Milvus Lite file

REPO = Path(__file__).resolve().parents[2]
DATA = [("Euler was a student of Johann Bernoulli.",
         [("Euler", "was a student of", "Johann Bernoulli")])]
QUESTION = "Who taught Euler?"
CLOSED = r"is closed: close\(\) was called"

# Opens the index (argv[1]) in another process and prints the top passage; exit code 3 and
# the message when the package refuses to open it.
CHILD = """
import sys
from tests.support.fakes import HashEmbedding
from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError, MilvusStoreError
try:
    index = GraphRAGIndex(uri=sys.argv[1], embed_model=HashEmbedding(dim=64))
except MilvusStoreError as exc:
    print(exc)
    sys.exit(3)
with index:
    print(index.as_retriever().retrieve(sys.argv[2])[0].node.get_content())
"""


def build(path: Path) -> GraphRAGIndex:
    return GraphRAGIndex.from_triplets(DATA, uri=str(path), embed_model=HashEmbedding(dim=64))


def lite_file_is_locked(path: Path) -> bool:
    """True when someone holds Milvus Lite's flock on the file (this process included: an
    flock on a new open file conflicts with the server's)."""
    fd = os.open(path / "LOCK", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing the descriptor drops a lock taken here
    return False


def open_in_other_process(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(path), QUESTION], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "graph.db"


def test_another_process_is_told_why_and_opens_the_file_after_close(db: Path) -> None:
    index = build(db)
    held = open_in_other_process(db)
    assert held.returncode == 3, held.stderr
    message = held.stdout
    assert f"Milvus Lite file {str(db)!r} is held by another process" in message
    assert "one process per file" in message
    assert "index.close()" in message and "uri" in message
    # the package says it all: milvus_lite's own traceback of the failed start is dropped
    assert "Failed to start MilvusLite server" not in held.stderr

    index.close()
    assert not lite_file_is_locked(db)
    opened = open_in_other_process(db)  # while this process lives on
    assert opened.returncode == 0, opened.stdout + opened.stderr
    assert opened.stdout.strip() == "Euler was a student of Johann Bernoulli."


def test_an_index_dropped_without_close_does_not_keep_the_file_held(db: Path) -> None:
    """Nothing of an index nobody holds waits for the garbage collector (the collector is
    off here, as it may be for a while in a real program): closing the index that was kept
    releases the file for other processes."""
    more = [("Daniel Bernoulli was the son of Johann Bernoulli.",
             [("Daniel Bernoulli", "son of", "Johann Bernoulli")])]
    gc.disable()
    try:
        kept = build(db)
        GraphRAGIndex.from_triplets(more, uri=str(db), embed_model=HashEmbedding(dim=64))
        kept.close()
        assert not lite_file_is_locked(db)
        opened = open_in_other_process(db)
        assert opened.returncode == 0, opened.stdout + opened.stderr
    finally:
        gc.enable()


@pytest.mark.parametrize("build_with", ["from_triplets", "from_nodes"])
def test_a_refused_build_leaves_the_file_free(db: Path, build_with: str) -> None:
    """``from_triplets`` and its siblings give no index when the input is refused: the one
    they opened is closed, not left holding the file with no handle to close it."""
    from llama_index.core.schema import TextNode

    data: Any = ([*DATA, ("   ", [])] if build_with == "from_triplets"
                 else [TextNode(text="Euler was in Basel."), TextNode(text="   ")])
    with pytest.raises(InvalidInputError, match="empty or whitespace"):
        getattr(GraphRAGIndex, build_with)(data, uri=str(db), embed_model=HashEmbedding(dim=64))
    assert not lite_file_is_locked(db)
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        assert index.store.dim is None  # nothing of it was written


def test_close_is_idempotent_and_any_later_use_raises_the_package_error(db: Path) -> None:
    index = build(db)
    retriever = index.as_retriever()
    naive = index.as_naive_retriever()
    assert retriever.retrieve(QUESTION)
    index.close()
    index.close()
    asyncio.run(index.aclose())
    assert index.closed

    uses = {
        "graph retriever": lambda: retriever.retrieve(QUESTION),
        "async graph retriever": lambda: asyncio.run(retriever.aretrieve(QUESTION)),
        "naive retriever": lambda: naive.retrieve(QUESTION),
        "new retriever": lambda: index.as_retriever().retrieve(QUESTION),
        "new naive retriever": lambda: index.as_naive_retriever(),
        "graph": lambda: index.refresh(),
        "insert": lambda: index.insert_triplets(DATA),
        "store": lambda: index.store.client,
    }
    for name, use in uses.items():
        with pytest.raises(MilvusStoreError, match=CLOSED):
            use()
            pytest.fail(f"{name} worked after close()")
    unused = GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64))
    unused.close()
    with pytest.raises(MilvusStoreError, match=CLOSED):  # nothing loaded: not "up to date"
        unused.is_stale()


def test_context_manager_closes_and_releases_the_file(db: Path) -> None:
    build(db).close()
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        assert lite_file_is_locked(db)
        assert index.as_retriever().retrieve(QUESTION)
    assert index.closed
    assert not lite_file_is_locked(db)
    with pytest.raises(MilvusStoreError, match=CLOSED):
        index.as_retriever().retrieve(QUESTION)

    # the file opens again in this process too
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as again:
        assert again.as_retriever().retrieve(QUESTION)


def test_async_context_manager_closes_and_releases_the_file(db: Path) -> None:
    build(db).close()

    async def use() -> GraphRAGIndex:
        async with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
            assert await index.as_retriever().aretrieve(QUESTION)
            assert await index.as_naive_retriever().aretrieve(QUESTION)
        with pytest.raises(MilvusStoreError, match=CLOSED):
            await index.as_retriever().aretrieve(QUESTION)
        return index

    assert asyncio.run(use()).closed
    assert not lite_file_is_locked(db)


def test_file_stays_open_while_another_index_of_this_process_uses_it(db: Path) -> None:
    first = build(db)
    second = GraphRAGIndex(uri=str(db), collection_prefix="other",
                           embed_model=HashEmbedding(dim=64))
    second.insert_triplets(DATA)
    first.close()
    assert lite_file_is_locked(db)
    assert second.as_retriever().retrieve(QUESTION)
    second.close()
    assert not lite_file_is_locked(db)


@pytest.mark.parametrize("where", ["missing folder", "/proc"])
def test_a_folder_that_cannot_be_made_is_named_with_the_reason(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], where: str) -> None:
    """Lite would log its traceback and raise a bare "Open local milvus failed"."""
    uri = (str(tmp_path / "missing" / "graph.db") if where == "missing folder"
           else "/proc/graphrag-test.db")
    with pytest.raises(InvalidInputError, match="cannot create the Milvus Lite folder") as caught:
        GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64))
    assert "another process" not in str(caught.value)
    assert "Traceback" not in capfd.readouterr().err
    assert not (tmp_path / "missing").exists()


def test_one_folder_under_other_spellings_is_one_index_of_this_process(db: Path) -> None:
    """A trailing slash (shell completion writes one), a relative path and a symlink open
    the index the first path opened; a second server on the folder would be refused by its
    lock as "another process"."""
    first = build(db)
    link = db.with_name("link.db")
    link.symlink_to(db)
    try:
        others = [GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64)) for uri in (
            f"{db}/", os.path.relpath(db), str(link))]
        for other in others:
            assert other.store.gate is first.store.gate
            assert other.as_retriever().retrieve(QUESTION)
            other.close()
        assert lite_file_is_locked(db)  # the first index still holds it
    finally:
        first.close()
    assert not lite_file_is_locked(db)



def test_a_file_where_lite_keeps_a_folder_is_refused_quietly(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old.db").write_bytes(b"")
    with pytest.raises(InvalidInputError, match="is a file: Milvus Lite keeps an index in a "
                                                "folder"):
        GraphRAGIndex(uri=str(tmp_path / "old.db"), embed_model=HashEmbedding(dim=64))
    assert "Traceback" not in capfd.readouterr().err  # Lite's FileExistsError, logged
    assert (tmp_path / "old.db").is_file()


@pytest.mark.parametrize("name", ["g.DB", "graph", "graph.db.bak"])
def test_a_lite_path_not_ending_in_db_is_refused_before_anything_is_made(
        tmp_path: Path, name: str) -> None:
    with pytest.raises(InvalidInputError, match=r"neither a server URL nor a Milvus Lite "
                                                r"path.*ends in \.db"):
        GraphRAGIndex(uri=str(tmp_path / name), embed_model=HashEmbedding(dim=64))
    assert list(tmp_path.iterdir()) == []


async def test_lite_clients_send_no_keepalive_pings(db: Path) -> None:
    """pymilvus pings every 10 s, also idle; Lite's gRPC server answers GOAWAY
    "too_many_pings" after two, which grpc prints to stderr: every client of a Lite store
    (its own, the passage vector store's, the async one) has keepalive off."""
    off = {"grpc.keepalive_time_ms": 2**31 - 1}
    with build(db) as index:
        store = index.store
        clients = [store.client, store.passages.client, store.aclient()]
        for client in clients[:2]:
            assert client._get_connection()._grpc_options.items() >= off.items()
        assert (await clients[2]._get_connection())._grpc_options.items() >= off.items()
    # a Lite file of its own: pymilvus shares one connection per address in a process, so
    # a client still alive for the first file (the list above) could lend it its options
    kept = {"grpc.keepalive_time_ms": 60_000}
    with GraphRAGIndex(uri=str(db.with_name("kept.db")), embed_model=HashEmbedding(dim=64),
                       milvus_client_kwargs={"grpc_options": kept}) as index:
        assert index.store.client._get_connection()._grpc_options.items() >= kept.items()


def test_a_second_index_on_the_same_milvus_gets_its_own_connection_options(db: Path) -> None:
    """pymilvus 2.6 shares one connection per address in a process: without a connection
    of its own, an index opened beside another on the same Milvus ran on the first one's
    connection, its ``grpc_options`` ignored, and a closed index left its connection open."""
    kept = {"grpc.keepalive_time_ms": 60_000}
    with build(db) as first:
        with GraphRAGIndex(uri=str(db), collection_prefix="other",
                           embed_model=HashEmbedding(dim=64),
                           milvus_client_kwargs={"grpc_options": kept}) as second:
            handlers = [i.store.client._get_connection() for i in (first, second)]
            assert handlers[1]._grpc_options["grpc.keepalive_time_ms"] == 60_000
            assert handlers[0]._grpc_options["grpc.keepalive_time_ms"] == 2**31 - 1  # Lite's
            assert first.as_retriever().retrieve("Euler")
    if SHARED_CONNECTIONS:  # closed with their index, none kept for the address
        from pymilvus.client.connection_manager import ConnectionManager

        manager = ConnectionManager.get_instance()
        held = [m.handler for m in (*manager._dedicated.values(), *manager._registry.values())]
        assert not any(h is handler for h in held for handler in handlers)


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_asyncio_run_per_call_does_not_keep_a_connection_per_call(
        db: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``asyncio.run(retriever.aretrieve(q))`` per request: pymilvus keeps the connection of
    an ended event loop (two file descriptors) until its client closes; the store closes the
    client of an ended loop when the next loop comes, so that the process's descriptors do
    not grow by two a request toward the limit (1,024 by default)."""
    with build(db) as index:
        retriever = index.as_retriever()
        with caplog.at_level("WARNING", logger="llama_index_graphrag_milvus.milvus.store"):
            asyncio.run(retriever.aretrieve("Euler"))
            before = descriptors()
            for _ in range(20):
                assert asyncio.run(retriever.aretrieve("Euler"))
        index.store._pool.submit(lambda: None).result()  # the closes queued before it ran
        assert descriptors() <= before + 2  # this loop's client, not one per loop
        assert not [r for r in caplog.records if "event loop" in r.getMessage()]


def test_calls_at_once_on_a_fresh_loop_share_one_connection(db: Path) -> None:
    """Requests gathered on a loop's first use of its client: pymilvus connects a client
    on its first call, and calls that wait for it at once each made a connection, of which
    closing the client released one (two descriptors kept per ``asyncio.run``)."""
    with build(db) as index:
        retriever = index.as_retriever()

        async def request() -> None:
            assert all(await asyncio.gather(*(retriever.aretrieve(q) for q in
                                              ("Euler", "Johann Bernoulli", QUESTION))))

        asyncio.run(request())
        index.store._pool.submit(lambda: None).result()
        before = descriptors()
        for _ in range(10):
            asyncio.run(request())
        index.store._pool.submit(lambda: None).result()
        assert descriptors() <= before + 2


@pytest.mark.parametrize("search", ["dense", "bm25", "hybrid"])
def test_naive_search_answers_from_one_event_loop_after_another(db: Path, search: str
                                                                 ) -> None:
    """The passage vector store's own async client was bound to the first event loop that
    used it: every naive ``aretrieve`` from a later ``asyncio.run`` failed ("Event loop is
    closed"). It now takes the store's client of the running loop, as the graph does."""
    with build(db) as index:
        assert index.store.full_text
        retriever = index.as_naive_retriever(search=search, similarity_top_k=2)
        expected = [n.node.node_id for n in retriever.retrieve("Euler")]
        for _ in range(3):
            found = asyncio.run(retriever.aretrieve("Euler"))
            assert [n.node.node_id for n in found] == expected
        assert len(index.store._async) == 1  # the ended loops' clients were given up


def test_async_calls_from_two_running_event_loops_are_warned_about_once(
        db: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A loop that still runs (another thread's) keeps its client: its requests may be in
    flight. Said once; closed with the index."""
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        with build(db) as index:
            retriever = index.as_retriever()
            with caplog.at_level("WARNING", logger="llama_index_graphrag_milvus.milvus.store"):
                for _ in range(3):
                    assert asyncio.run_coroutine_threadsafe(
                        retriever.aretrieve("Euler"), other).result(timeout=60)
                    assert asyncio.run(retriever.aretrieve("Euler"))
            warned = [r for r in caplog.records if "two event loops" in r.getMessage()]
            assert len(warned) == 1 and "one event loop" in warned[0].getMessage()
            # the running loop keeps one client however often the loops alternate; each
            # asyncio.run's ended loop gave its client up when the next came
            clients = [client for _, client in index.store._async.values()]
            assert len(clients) == 2
        assert all(client._closed for client in clients)  # closed with the index
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(timeout=30)
        other.close()


def test_a_loop_left_open_but_idle_is_not_warned_about(
        db: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Core's ``asyncio_run`` (a ``QueryFusionRetriever(use_async=True)``) runs on a loop it
    leaves open; an ``asyncio.run`` after it is not two loops at once."""
    idle = asyncio.new_event_loop()
    try:
        with build(db) as index:
            retriever = index.as_retriever()
            with caplog.at_level("WARNING", logger="llama_index_graphrag_milvus.milvus.store"):
                assert idle.run_until_complete(retriever.aretrieve("Euler"))
                assert asyncio.run(retriever.aretrieve("Euler"))
                assert idle.run_until_complete(retriever.aretrieve("Euler"))  # its client
            assert not [r for r in caplog.records if "event loop" in r.getMessage()]
    finally:
        idle.close()


def test_a_lite_folder_made_meanwhile_by_another_index_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two indexes opened at once on a new path: the second's mkdir finds the folder the
    first made after its check (it failed "File exists" in 1 of 10 trials)."""
    from llama_index_graphrag_milvus.milvus import lite

    path = tmp_path / "x.db"
    path.mkdir()
    monkeypatch.setattr(lite.os.path, "lexists", lambda _: False)  # checked before it was made
    lite.make_lite_folder(str(path), str(path))
    assert path.is_dir()
