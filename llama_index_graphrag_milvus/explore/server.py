"""Running the explorer: :func:`serve` starts it in a background thread (uvicorn) and
returns an :class:`ExplorerServer` to stop it; the command line waits on it."""

from __future__ import annotations

import errno
import ipaddress
import socket
import threading
from typing import TYPE_CHECKING, Any

from llama_index_graphrag_milvus.errors import InvalidInputError, MissingDependencyError
from llama_index_graphrag_milvus.validation import check_instance, check_int

if TYPE_CHECKING:
    from llama_index.core.vector_stores import MetadataFilters

    from llama_index_graphrag_milvus.index import GraphRAGIndex

INSTALL = 'pip install "llama-index-graphrag-milvus[explorer]"'
"""The command that installs the explorer's web framework."""
START_TIMEOUT = 30.0
"""Seconds :func:`serve` waits for the server to start."""


def require_web() -> None:
    """:class:`MissingDependencyError` unless Starlette and uvicorn import."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"the explorer needs Starlette and uvicorn ({exc}); install them with {INSTALL}"
        ) from exc


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``port`` 0: a free one);
    :class:`InvalidInputError` when the port is taken or out of range, or the address is not
    this machine's."""
    check_instance("host", host, str, "an address such as 127.0.0.1")
    port = check_int("port", port, minimum=0, maximum=65535, hint="0 takes a free one")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InvalidInputError(
                f"port {port} on {host} is in use (another explorer, or another program): "
                "pass another --port (port=...), or 0 for a free one") from exc
        raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                                "pass --host 127.0.0.1 (host=...) or an address of this "
                                "machine") from exc
    return sock


class ExplorerServer:
    """A running explorer: its ``url``, :meth:`stop`, and :meth:`wait` (a context manager
    too: leaving the block stops it)."""

    def __init__(self, server: Any, thread: threading.Thread, url: str) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        """Where to open the explorer, e.g. ``http://127.0.0.1:8765/``."""

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the server stops (or ``timeout`` seconds)."""
        self._thread.join(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the thread to end. Idempotent."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ExplorerServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ExplorerServer({self.url!r}, running={self.running})"


def serve(index: GraphRAGIndex, host: str = "127.0.0.1", port: int = 8765,
          log_level: str = "warning", filters: MetadataFilters | None = None
          ) -> ExplorerServer:
    """Start the explorer on ``index`` at ``http://host:port/`` in a background thread and
    return at once (the index stays usable meanwhile; the explorer only reads it).
    ``filters`` (one tenant's) scope everything it shows: that tenant's passages and what
    they support, nothing of another tenant's.

    ``host`` defaults to 127.0.0.1 (this machine only). Another address serves the LAN
    with no authentication, and the ``Host`` check is then off: do it on purpose only.

    Raises:
        MissingDependencyError: Starlette or uvicorn is not installed (the ``[explorer]``
            extra).
        InvalidInputError: the port is in use, or the address cannot be listened on.
        EmptyIndexError: nothing was ever written to ``index`` (no collection yet).

    Example::

        from llama_index_graphrag_milvus.explore import serve

        server = serve(index)            # in a notebook: open server.url
        ...
        server.stop()
    """
    require_web()
    import uvicorn

    from llama_index_graphrag_milvus.explore.app import create_app

    loopback = is_loopback(host)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(create_app(index, loopback_only=loopback, filters=filters),
                            log_level=log_level,
                            access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"graphrag-explorer-{bound}", daemon=True)
    thread.start()
    shown = f"[{host}]" if ":" in host else host
    running = ExplorerServer(server, thread, f"http://{shown}:{bound}/")
    waited = 0.0
    while not server.started and thread.is_alive() and waited < START_TIMEOUT:
        thread.join(0.02)
        waited += 0.02
    if not server.started:
        running.stop()
        sock.close()
        raise InvalidInputError(f"the explorer did not start on {host}:{bound} within "
                                f"{START_TIMEOUT:.0f} s")
    return running
