"""Shared fixtures: Milvus stores on two backends, a small hand-built graph.

The Milvus-backed fixtures (``milvus_uri``, ``make_index``, ``family_index``) are parametrized
over two backends, so every test that uses them runs twice:

- ``lite``: a Milvus Lite path under ``tmp_path``;
- ``server``: a real Milvus standalone server (the ``milvus`` package, an embedded 2.3.5
  server) on 127.0.0.1, started once per session with its data in a temporary directory and
  stopped at the end. Each test starts from a server with no collections. These tests carry
  the ``server`` mark: ``-m server`` selects them, ``-m "not server"`` deselects them (and the
  server is then never started). If the server cannot start, they fail with the reason.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from tests.support.fakes import HashEmbedding

# A small family graph: Euler's teacher is Johann Bernoulli, whose son is Daniel.
FAMILY = [
    ("Leonhard Euler was a student of Johann Bernoulli in Basel.",
     [("Leonhard Euler", "was a student of", "Johann Bernoulli"),
      ("Leonhard Euler", "was born in", "Basel")]),
    ("Daniel Bernoulli, the son of Johann Bernoulli, made contributions to fluid dynamics.",
     [("Daniel Bernoulli", "was the son of", "Johann Bernoulli"),
      ("Daniel Bernoulli", "made contributions to", "fluid dynamics")]),
    ("Jakob Bernoulli was the older brother of Johann Bernoulli and studied probability.",
     [("Jakob Bernoulli", "was the older brother of", "Johann Bernoulli"),
      ("Jakob Bernoulli", "studied", "probability")]),
    ("Fluid dynamics explains the lift of aircraft wings.",
     [("fluid dynamics", "explains", "the lift of aircraft wings")]),
]

BACKENDS = [
    pytest.param("lite", id="lite"),
    pytest.param("server", id="server", marks=pytest.mark.server),
]

SERVER_START_TIMEOUT = 120.0
"""Seconds to wait for the server's health check (it usually answers within 10-15 s)."""
ETCD_PEER_PORT = 2380
"""The embedded etcd of milvus 2.3.5 always listens on this peer port: one server at a time."""
PID_FILE = Path("/run/milvus/standalone.pid")
SERVER_TUNING = {
    # A test server answers in tens of milliseconds instead of seconds. Measured on 2 cores
    # (per from_triplets: 3 collection loads, 3 flushes; per Strong read):
    # - proxy.timeTickInterval 200 -> 20 ms: a Strong-consistency read waits for the next time
    #   tick, 200-400 ms per search/get with the default, 20-40 ms with 20.
    # - dataCoord.segment.assignmentExpiration 2000 -> 200 ms: a flush waits until the
    #   segment's row assignments expire; the first flush after an upsert took 2.5 s.
    # - queryCoord.checkChannelInterval/checkSegmentInterval 1000 -> 100 ms and
    #   distPullInterval 500 -> 50 ms: a load waits for these checkers.
    # What remains (about 2 s per load) is the 1 s tick of the collection observer, fixed in
    # 2.3.5, and pymilvus' 0.5 s polling in flush and load.
    "proxy.timeTickInterval": 20,
    "dataCoord.segment.assignmentExpiration": 200,
    "queryCoord.distPullInterval": 50,
    "queryCoord.checkChannelInterval": 100,
    "queryCoord.checkSegmentInterval": 100,
}
"""Settings for the test server's milvus.yaml (section.key: value)."""


def _uses_the_server(item: pytest.Item) -> bool:
    """Whether a collected test talks to the session's Milvus server."""
    callspec = getattr(item, "callspec", None)
    return (item.get_closest_marker("server") is not None
            or "milvus_server" in getattr(item, "fixturenames", ())
            or (callspec is not None and callspec.params.get("milvus_uri") == "server"))


MILVUS_FIXTURES = frozenset({"milvus_uri", "milvus_server", "make_index", "family_index",
                             "shared_family_index"})
"""Fixtures that give a test a Milvus (Lite under tmp_path, or the session's server)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses Milvus is marked ``milvus`` (through a Milvus fixture here; a
    test that opens a Lite file of its own carries the mark in its module), so that
    ``-m "not milvus"`` runs the pure tests alone, in seconds.

    Every test of the server is marked ``server`` and, under pytest-xdist (``-n 3
    --dist loadgroup`` in pyproject.toml), goes to one worker: the embedded server is one per
    machine (its etcd peer port is fixed) and the fixture that starts it is per process. The
    other workers run Milvus Lite tests meanwhile: the server tests mostly wait on the
    server (loads, flushes, time ticks), so that on 2 cores a third worker gains time. Runs
    before xdist reads the groups.

    A module that shares Lite indexes between its tests (module-scoped fixtures) names its
    own group in ``XDIST_GROUP``: its tests then run on one worker, which builds each index
    once. Its server tests stay in the server's group (pytest-xdist would join every group a
    test carries into one new group name, so a module-wide ``xdist_group`` mark would take
    them out of it).

    The server's tests that take ``family_index`` run last, one after the other: a test that
    leaves the FAMILY graph as it found it hands it to the next one (see ``milvus_uri``),
    which then skips building it (about 7 s on the server). The order is otherwise kept."""
    for item in items:
        if MILVUS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.milvus)
        if _uses_the_server(item):
            item.add_marker(pytest.mark.milvus)
            item.add_marker(pytest.mark.server)
            item.add_marker(pytest.mark.xdist_group("milvus_server"))
        elif (group := getattr(getattr(item, "module", None), "XDIST_GROUP", None)) is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=_hands_the_family_on)  # stable: the other tests keep their order


def _hands_the_family_on(item: pytest.Item) -> bool:
    """Whether a server test takes ``family_index`` (those run together, last)."""
    return (item.get_closest_marker("server") is not None
            and "family_index" in getattr(item, "fixturenames", ()))


def _refuse_milvus(who: str) -> Callable[..., None]:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(
            f"{who} opened a Milvus client but is not marked milvus: add pytestmark = "
            "pytest.mark.milvus to its module (or use a Milvus fixture), or keep it pure.")

    return refuse


@pytest.fixture(autouse=True)
def _pure_tests_open_no_milvus(request: pytest.FixtureRequest,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A test without the ``milvus`` mark that opens a Milvus client fails, and says how to
    fix it: the split between pure and Milvus tests stays true."""
    if request.node.get_closest_marker("milvus") is None:
        from pymilvus import MilvusClient

        monkeypatch.setattr(MilvusClient, "__init__", _refuse_milvus(request.node.nodeid))


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with no ``milvus`` test (``-m "not milvus"``) refuses Milvus for the whole
    session: a module- or session-scoped fixture of an unmarked test cannot open it either
    (the guard above starts with each test, after those fixtures)."""
    if session.items and not any(item.get_closest_marker("milvus") for item in session.items):
        from pymilvus import MilvusClient

        MilvusClient.__init__ = _refuse_milvus("a fixture of this run")  # type: ignore[method-assign]


@pytest.fixture
def embed_model() -> HashEmbedding:
    return HashEmbedding(dim=64)


# ---------------------------------------------------------------------- the Milvus server


@dataclass
class MilvusServerHandle:
    """The session's Milvus server: its URI and an admin client (to drop collections)."""

    uri: str
    client: Any  # pymilvus.MilvusClient
    base_dir: Path
    family_snapshot: object | None = None
    """The server's content right after ``family_index`` built FAMILY on an empty server."""

    def drop_all_collections(self) -> None:
        for name in self.client.list_collections():
            self.client.drop_collection(name)
        self.family_snapshot = None

    def snapshot(self) -> object:
        """Every collection and every row (vectors included), read with Strong consistency.
        ``None`` when a collection cannot be read (e.g. released): treated as changed."""
        content: dict[str, list[dict[str, Any]]] = {}
        try:
            for name in sorted(self.client.list_collections()):
                rows = self.client.query(name, filter='id != ""', output_fields=["*"],
                                         limit=16384, consistency_level="Strong")
                content[name] = sorted((_plain(row) for row in rows), key=lambda r: str(r["id"]))
        except Exception:
            return None
        return content

    def holds_only_the_family_graph(self) -> bool:
        return self.family_snapshot is not None and self.snapshot() == self.family_snapshot


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A query row with numpy/protobuf values turned into lists, so rows compare by value."""
    return {key: [float(x) if isinstance(x, float) else x for x in value]
            if not isinstance(value, str | int | float | bool | dict | None) else value
            for key, value in row.items()}


def _server_failed(reason: str) -> NoReturn:
    pytest.fail(f"Milvus server could not start: {reason}", pytrace=False)


def _port_is_listening(port: int) -> bool:
    """True when something listens on 127.0.0.1:``port`` (TIME_WAIT leftovers do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _free_port(start: int, avoid: set[int]) -> int:
    """The first port from ``start`` that binds without SO_REUSEADDR (as the ``milvus``
    package checks its ports), skipping ``avoid``."""
    for port in range(start, start + 1000):
        if port in avoid:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    _server_failed(f"no free port in {start}..{start + 999} for the embedded etcd")


def _other_server() -> str:
    """What the pid file says about another Milvus standalone (for the failure message)."""
    try:
        pid = int(PID_FILE.read_text().strip())
    except (OSError, ValueError):
        return f"{PID_FILE} names no process"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"{PID_FILE} names pid {pid}, which is not running"
    return f"{PID_FILE} names pid {pid}: {command.strip()}"


def _log_excerpt(base_dir: Path, lines: int = 6) -> str:
    """The error lines of the server's logs, for the failure message."""
    found: list[str] = []
    for name in ("milvus-stdout.log", "milvus-stderr.log"):
        path = base_dir / "logs" / name
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        found += [f"  {name}: {line[:400]}" for line in text
                  if "[ERROR]" in line or "[FATAL]" in line or line.startswith(("panic:", "fatal"))]
    if not found:
        return f"no error lines in {base_dir / 'logs'}"
    return "\n".join(found[-lines:]) + f"\n(full logs in {base_dir / 'logs'})"


def _wait_until_healthy(server: Any, base_dir: Path) -> None:
    """Poll the server's health endpoint until it answers OK; fail if the process exits first
    or the deadline passes. Between probes, wait on the process itself (returns at once if it
    exits), so a crash is reported immediately."""
    process: subprocess.Popen[bytes] = server.server_proc
    url = f"http://127.0.0.1:{server.webservice_port}/healthz"
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                body = response.read().decode(errors="replace")
            if "OK" in body:
                return
            last_error = f"health check answered {body[:200]!r}"
        except (OSError, urllib.error.URLError) as exc:
            last_error = f"health check: {exc}"
        try:
            code = process.wait(timeout=0.25)
        except subprocess.TimeoutExpired:
            continue
        _server_failed(f"the milvus process exited with code {code} before it was ready\n"
                       f"{_log_excerpt(base_dir)}")
    _server_failed(f"not healthy after {SERVER_START_TIMEOUT:.0f} s ({last_error}) at {url}\n"
                   f"{_log_excerpt(base_dir)}")


def _tuned(template: str) -> str:
    """The milvus package's config template with :data:`SERVER_TUNING` applied: a key that is
    in the template is replaced, a missing one is added at the top of its section."""
    lines = template.splitlines()
    for dotted, value in SERVER_TUNING.items():
        *sections, key = dotted.split(".")
        start, indent = 0, ""
        for section in sections:  # find the nested section header
            header = f"{indent}{section}:"
            start = next(i for i in range(start, len(lines)) if lines[i].rstrip() == header) + 1
            indent += "  "
        end = next((i for i in range(start, len(lines))
                    if lines[i].strip() and not lines[i].startswith(indent)), len(lines))
        existing = [i for i in range(start, end) if lines[i].startswith(f"{indent}{key}:")]
        if existing:
            lines[existing[0]] = f"{indent}{key}: {value}"
        else:
            lines.insert(start, f"{indent}{key}: {value}")
    return "\n".join(lines) + "\n"


PYMILVUS_POLL_S = 0.05
"""pymilvus waits for a flush, a collection load or an index build by sleeping 0.2-0.5 s
between checks (in its gRPC handler, for Milvus Lite and the server alike); the tests' polls
are this short: what pymilvus waits for is unchanged, only how soon it sees it."""


class _QuickPolls:
    """The ``time`` module as pymilvus' gRPC handler sees it: its polling sleeps (0.5 s or
    less) cut to :data:`PYMILVUS_POLL_S`; longer ones (a reconnection's wait) as they are."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, PYMILVUS_POLL_S) if seconds <= 0.5 else seconds)


@pytest.fixture(autouse=True, scope="session")
def _quick_pymilvus_polls() -> Iterator[None]:
    """Every test's flushes and loads seen within :data:`PYMILVUS_POLL_S` of their end
    (fresh processes a test starts poll as pymilvus does)."""
    from pymilvus.client import grpc_handler

    original = grpc_handler.time
    grpc_handler.time = _QuickPolls()  # type: ignore[assignment]
    yield
    grpc_handler.time = original


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServerHandle]:
    """A Milvus standalone server on 127.0.0.1, for the whole session (started on first use).

    Fails, never skips, when the server cannot start: the ``server`` tests are part of CI.
    """
    try:
        from milvus import MilvusServer, MilvusServerConfig
        from pymilvus import MilvusClient
    except ImportError as exc:
        _server_failed(f"{exc}; install the test extra: pip install -e '.[test]'")

    if _port_is_listening(ETCD_PEER_PORT):
        _server_failed(
            f"port {ETCD_PEER_PORT} on 127.0.0.1 (the embedded etcd's fixed peer port) is in "
            "use, most likely by a Milvus server left over from an earlier run "
            f"({_other_server()}). Stop that process, or deselect these tests with "
            "-m 'not server'."
        )
    base_dir = tmp_path_factory.mktemp("milvus_server")
    # The milvus package checks ports without SO_REUSEADDR: after a recent run, 2379 sits in
    # TIME_WAIT and it would move the etcd client port onto the peer port 2380. Pin it.
    etcd_port = _free_port(2379, avoid={ETCD_PEER_PORT})
    config = MilvusServerConfig(etcd_port=etcd_port)
    config.template_text = _tuned(config.template_text)
    server = MilvusServer(config, wait_for_started=False)
    server.set_base_dir(str(base_dir))
    client = None
    cwd = os.getcwd()
    try:
        try:
            server.start()
        except Exception as exc:  # the reason goes into the failure message
            _server_failed(f"{type(exc).__name__}: {exc}\n{_log_excerpt(base_dir)}")
        finally:
            os.chdir(cwd)  # start() changes directory and does not restore it on error
        _wait_until_healthy(server, base_dir)
        uri = f"http://127.0.0.1:{server.listen_port}"
        try:
            client = MilvusClient(uri=uri, timeout=30)
            client.list_collections()
        except Exception as exc:
            _server_failed(f"the health check passed but {uri} does not answer: "
                           f"{type(exc).__name__}: {exc}\n{_log_excerpt(base_dir)}")
        yield MilvusServerHandle(uri=uri, client=client, base_dir=base_dir)
    finally:
        if client is not None:
            client.close()
        _stop(server)


SERVER_EXIT_TIMEOUT = 120.0
"""Seconds a killed server may take to exit: in uninterruptible disk I/O on a busy machine,
SIGKILL waits for the I/O (the milvus package waits 1 s, then 3 s, and raises)."""


def _stop(server: Any) -> None:
    """Stop the embedded server, waiting for it however long its exit takes."""
    try:
        server.stop()
    except subprocess.TimeoutExpired:  # stop() killed it; it has not exited yet
        if server.server_proc is not None:
            server.server_proc.wait(timeout=SERVER_EXIT_TIMEOUT)
        server.stop()  # it has exited: stop() closes its log files


# ---------------------------------------------------------------------- per-test stores


@pytest.fixture(params=BACKENDS)
def milvus_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a test's graph lives: a Lite path under tmp_path, or the session server.

    On the server each test starts from an empty server (all collections dropped before and
    after it), with one exception that keeps the server variant fast: a test that uses
    ``family_index`` may start from a server that holds exactly the FAMILY graph and nothing
    else, as ``family_index`` would build it (ids are deterministic). That is checked row by
    row after every such test; any change (a write, a new collection) drops everything.
    """
    if request.param == "lite":
        yield str(tmp_path / "graph.db")
        return
    server: MilvusServerHandle = request.getfixturevalue("milvus_server")
    reuse_family = "family_index" in request.fixturenames
    if not (reuse_family and server.family_snapshot is not None):
        server.drop_all_collections()
    yield server.uri
    if not (reuse_family and server.holds_only_the_family_graph()):
        server.drop_all_collections()


@pytest.fixture
def make_index(milvus_uri: str, embed_model: HashEmbedding) -> Callable[..., GraphRAGIndex]:
    def make(data: list | None = None, **kwargs: object) -> GraphRAGIndex:
        kwargs.setdefault("uri", milvus_uri)
        kwargs.setdefault("embed_model", embed_model)
        return GraphRAGIndex.from_triplets(FAMILY if data is None else data, **kwargs)

    return make


@pytest.fixture
def family_index(request: pytest.FixtureRequest, milvus_uri: str, embed_model: HashEmbedding,
                 make_index: Callable[..., GraphRAGIndex]) -> GraphRAGIndex:
    """FAMILY ingested with the default prefix. On the server, when the previous test left
    exactly this graph (see ``milvus_uri``), it is reopened in a fresh object instead."""
    if not milvus_uri.startswith("http"):
        return make_index()
    server: MilvusServerHandle = request.getfixturevalue("milvus_server")
    if server.family_snapshot is not None:
        return GraphRAGIndex(uri=milvus_uri, embed_model=embed_model)
    index = make_index()
    server.family_snapshot = server.snapshot()
    return index


@pytest.fixture(scope="module")
def shared_family_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphRAGIndex]:
    """FAMILY on Milvus Lite as ``family_index`` builds it, but once per module: for tests
    that only read the index (argument checks, retrievals). A test that writes, or may write
    when it fails, takes ``family_index`` (its own index) instead."""
    index = GraphRAGIndex.from_triplets(
        FAMILY, uri=str(tmp_path_factory.mktemp("family") / "graph.db"),
        embed_model=HashEmbedding(dim=64))
    yield index
    index.close()


@pytest.fixture(scope="module")
def served_family_index(shared_family_index: GraphRAGIndex) -> Iterator[GraphRAGIndex]:
    """``shared_family_index``'s file opened again with the graph served by Milvus
    (``graph="milvus"``): the same index, read by bounded queries."""
    index = GraphRAGIndex(uri=shared_family_index.store.uri,
                          embed_model=shared_family_index.embed_model,
                          collection_prefix=shared_family_index.store.prefix, graph="milvus")
    yield index
    index.close()
