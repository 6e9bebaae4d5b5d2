"""One write at a time per graph in a process.

A write reads rows it then writes back grown (a relation's passages, an entity's passages
and tenants): two writes of one graph at once would each write back what it read, and
the second would drop what the first added. Every store of the same graph in a process
(the same Milvus Lite folder, or server address, and collection prefix) shares one
:class:`WriteGate`; writes, deletes and upgrades hold it while they read and write rows.
The embeddings of a write are computed before it waits, so concurrent inserts (threads,
``asyncio.gather`` of ``ainsert``) still embed side by side. Writers in other processes
are not seen: see the deployment guide.

>>> gate = write_gate("/data/graph.db", "demo")
>>> gate is write_gate("/data/graph.db", "demo"), gate.generation
(True, 0)
>>> with gate.writing():
...     gate.changed()
>>> gate.generation
1
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager


class WriteGate:
    """The write lock of one graph in this process and the count of its changes
    (``generation``: a write that read rows before it waited reads them again when it
    moved)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.generation = 0

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the graph's write lock (not reentrant: hold it once per write)."""
        with self._lock:
            yield

    def busy(self) -> bool:
        """Whether a write holds the gate now (what it read or wrote may change)."""
        return self._lock.locked()

    def changed(self) -> None:
        """Count a change of the graph (called while holding :meth:`writing`, also when the
        change failed half-way: what was read before may be stale)."""
        self.generation += 1


_GATES: weakref.WeakValueDictionary[tuple[str, str], WriteGate] = (
    weakref.WeakValueDictionary())
_GATES_LOCK = threading.Lock()


def write_gate(location: str, prefix: str) -> WriteGate:
    """The gate of the graph at ``location`` (what the store connects to: a server URL, or
    a Lite folder's resolved path, :func:`~.lite.lite_path`) under ``prefix``, shared by
    every store of it in this process; it lives as long as one of them holds it."""
    key = (location.rstrip("/"), prefix)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = WriteGate()
            _GATES[key] = gate
        return gate
