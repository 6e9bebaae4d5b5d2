"""Milvus Lite's in-process servers: one per file, shared by the stores of a process.

Milvus Lite 3.x serves each .db path from one in-process gRPC server
(``milvus_lite.server_manager``), started by the path's first pymilvus client and shared by
the later ones. The server holds an flock on ``{path}/LOCK`` until it is stopped. Closing
pymilvus clients does not stop it: only ``server_manager_instance.release_server(path)`` or
the end of the process does. Meanwhile another process that opens the path gets pymilvus'
bare "Open local milvus failed"; the cause is only in milvus_lite's log.
:func:`lite_connection` and :func:`release_lite` keep count of the stores of each path, so
that closing the last one releases the file, and turn the other process's lock into a clear
error.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pymilvus import MilvusException

from llama_index_graphrag_milvus.errors import InvalidInputError, MilvusStoreError
from llama_index_graphrag_milvus.validation import is_utf8

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

logger = logging.getLogger(__name__)


class _DropLiteNoise(logging.Filter):
    """Drops one known-benign log message of Milvus Lite (see :func:`quiet_lite`)."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle = needle

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += repr(record.exc_info[1])
        return self.needle not in text


@contextmanager
def quiet_lite(logger_name: str, needle: str) -> Iterator[None]:
    """Milvus Lite's in-process server lacks the AllocTimestamp RPC: pymilvus' index wait
    falls back correctly, but grpc logs a traceback each time. Drop just those records while
    the call runs."""
    target = logging.getLogger(logger_name)
    quiet = _DropLiteNoise(needle)
    target.addFilter(quiet)
    try:
        yield
    finally:
        target.removeFilter(quiet)


def lite_path(uri: str) -> str:
    """The path a store connects to for the Milvus Lite ``uri``: absolute, without a
    trailing slash (shell completion of the folder writes one, and pymilvus wants the name
    to end in ``.db``), and resolved through symlinks when the folder they lead to is named
    ``*.db`` (Lite keys its in-process servers by path: one folder opened under two
    spellings in a process would start a second server, which its lock refuses).

    >>> lite_path("/tmp/x.db/")
    '/tmp/x.db'

    Raises:
        InvalidInputError: ``uri`` holds a NUL or characters UTF-8 cannot encode.
    """
    if "\0" in uri or not is_utf8(uri):
        raise InvalidInputError(
            f"uri {uri!r} holds a NUL character or characters UTF-8 cannot encode: give a "
            "plain path to a folder ending in .db, or a server URL.")
    path = os.path.abspath(uri.rstrip("/" + os.sep) or uri)
    resolved = os.path.realpath(path)
    return resolved if resolved.endswith(".db") else path


def make_lite_folder(path: str, uri: str) -> None:
    """Create the folder of a new Milvus Lite index (Lite would create it, but a failure
    there is a traceback in its log and a bare "Open local milvus failed")."""
    if os.path.lexists(path) or not path.endswith(".db"):  # pymilvus refuses other names
        return
    try:
        os.mkdir(path)
    except FileExistsError:  # another index of this process made it meanwhile
        return
    except OSError as exc:
        raise InvalidInputError(
            f"uri {uri!r}: cannot create the Milvus Lite folder {path!r} "
            f"({exc.strerror or type(exc).__name__}); give a path in an existing folder "
            "you can write to, or a server URL (uri='http://localhost:19530')."
        ) from exc


NO_KEEPALIVE = 2**31 - 1
"""gRPC's "never" for ``grpc.keepalive_time_ms`` (INT_MAX turns keepalive pings off)."""


def lite_client_kwargs(client_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The pymilvus client arguments for a Milvus Lite path: keepalive pings off, unless the
    caller set ``grpc_options`` of its own.

    pymilvus pings its server every 10 s, also when idle
    (``grpc.keepalive_permit_without_calls``); Lite's in-process gRPC server keeps gRPC's
    defaults, which allow one ping per 5 minutes without calls, and after two early pings
    answers GOAWAY "too_many_pings", which grpc logs to stderr (an idle explorer printed it
    every few minutes). A loopback connection to a server in the same process needs no
    keepalive: its end is seen when the server stops.

    >>> lite_client_kwargs({"timeout": 5})["grpc_options"]
    {'grpc.keepalive_time_ms': 2147483647}
    >>> lite_client_kwargs({"grpc_options": {"grpc.keepalive_time_ms": 60000}})
    {'grpc_options': {'grpc.keepalive_time_ms': 60000}}
    """
    options = dict(client_kwargs.get("grpc_options") or {})
    options.setdefault("grpc.keepalive_time_ms", NO_KEEPALIVE)
    return {**client_kwargs, "grpc_options": options}


_LITE_LOCK = threading.Lock()
"""Held while a store connects to a Lite path or stops its server: no store connects to a
server that is being stopped."""
_LITE_STORES: dict[str, weakref.WeakSet[MilvusGraphStore]] = {}
"""The open stores of each Lite path (absolute, as milvus_lite keys its servers)."""


class _LiteLockedByOther(logging.Filter):
    """Catches milvus_lite's log record of a server that could not start for ``path``
    because another process holds the file's lock, and drops it: the error raised instead
    says what happened."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.cause: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if (type(exc).__name__ == "DataDirLockedError" and isinstance(record.args, tuple)
                and self.path in record.args):
            self.cause = exc
            return False
        return True


@contextmanager
def lite_connection(store: MilvusGraphStore) -> Iterator[None]:
    """Around the connect of a Lite store: registers the store as a user of its path, and
    turns the failure to open a file that another process holds into a clear error."""
    path = store.connect_uri
    watch = _LiteLockedByOther(path)
    target = logging.getLogger("milvus_lite.server_manager")
    target.addFilter(watch)
    try:
        with _LITE_LOCK:
            yield
            _LITE_STORES.setdefault(path, weakref.WeakSet()).add(store)
    except MilvusException as exc:
        if watch.cause is None:
            raise
        raise MilvusStoreError(
            f"the Milvus Lite file {path!r} is held by another process ({watch.cause}). "
            "Milvus Lite allows one process per file: close the index in the other process "
            "(index.close(), or end that process) and open it again, give each process its "
            "own Lite file, or run a Milvus server and pass its uri "
            "(uri=\"http://localhost:19530\") to share one index between processes."
        ) from exc
    finally:
        target.removeFilter(watch)


def release_lite(store: MilvusGraphStore) -> None:
    """Stop the in-process Lite server of ``store``'s path unless another open store of this
    process uses it: this releases the file's lock, so another process can open it."""
    path = store.connect_uri
    with _LITE_LOCK:
        users = _LITE_STORES.get(path)
        if users is not None:
            users.discard(store)
            if users:
                logger.debug("Milvus Lite file %s stays open: %d other store(s) use it",
                             path, len(users))
                return
            del _LITE_STORES[path]
        try:
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:  # no milvus-lite: nothing was started
            return
        server_manager_instance.release_server(path)
