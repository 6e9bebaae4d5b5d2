"""The records of a load run and the checks made on them (pure: no Milvus, no processes).

A query worker records one :class:`QueryRecord` per query, the writer one
:class:`WriteRecord` per insert or delete. :func:`violations` finds every answer that holds a
passage whose delete was acknowledged before the query started (the target: none), and
:func:`summarize_method` turns one phase's records into the reported numbers.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class QueryRecord:
    """One query of a worker: when it started (``time.monotonic()``, shared by the processes
    of one machine), how long it took, what it asked and what came back."""

    worker: int
    started: float
    seconds: float
    target: int | None
    """The target document the question names (``None``: a background question)."""
    passages: tuple[str, ...] = ()
    """The ids of the returned passages (none when the query failed)."""
    error: str | None = None
    """``"module.Type: message"`` of the exception, when the query failed."""

    @classmethod
    def of(cls, row: dict[str, Any]) -> QueryRecord:
        return cls(**{**row, "passages": tuple(row.get("passages") or ())})


@dataclass(frozen=True)
class WriteRecord:
    """One write of the writer: ``"insert"`` or ``"delete"`` of one document, when it started
    and when Milvus acknowledged it (the call returned), the passages it wrote or deleted."""

    kind: str
    document: str
    started: float
    acknowledged: float | None
    """``None`` when the write failed."""
    passages: tuple[str, ...] = ()
    target: int | None = None
    error: str | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> WriteRecord:
        return cls(**{**row, "passages": tuple(row.get("passages") or ())})


@dataclass(frozen=True)
class Violation:
    """A passage returned by a query that started after the passage's delete was
    acknowledged."""

    worker: int
    query_started: float
    passage: str
    document: str
    acknowledged: float

    @property
    def late_by_s(self) -> float:
        """How long after the acknowledgement the query started."""
        return round(self.query_started - self.acknowledged, 3)


def acknowledged_deletes(writes: Iterable[WriteRecord]) -> dict[str, WriteRecord]:
    """The first acknowledged delete of each deleted passage, by passage id."""
    deleted: dict[str, WriteRecord] = {}
    for write in writes:
        if write.kind == "delete" and write.acknowledged is not None:
            for passage in write.passages:
                earlier = deleted.get(passage)
                if earlier is None or (earlier.acknowledged or 0.0) > write.acknowledged:
                    deleted[passage] = write
    return deleted


def violations(queries: Iterable[QueryRecord], writes: Iterable[WriteRecord]
               ) -> list[Violation]:
    """Every returned passage whose delete was acknowledged before the query started.

    A passage inserted again after its delete would be allowed back; the writer never does
    that (each document is inserted once and deleted once).

    >>> delete = WriteRecord("delete", "doc-1", 9.0, 10.0, ("p1",))
    >>> [v.passage for v in violations([QueryRecord(0, 10.5, 0.1, 1, ("p0", "p1"))], [delete])]
    ['p1']
    >>> violations([QueryRecord(0, 9.5, 0.1, 1, ("p1",))], [delete])  # started before the ack
    []
    """
    deleted = acknowledged_deletes(writes)
    found: list[Violation] = []
    for query in queries:
        for passage in query.passages:
            write = deleted.get(passage)
            if write is not None and write.acknowledged is not None \
                    and query.started > write.acknowledged:
                found.append(Violation(query.worker, query.started, passage, write.document,
                                       write.acknowledged))
    return found


def delete_coverage(queries: Sequence[QueryRecord], writes: Sequence[WriteRecord],
                    target_passages: Mapping[int, Collection[str]]) -> dict[str, int]:
    """How well the run could catch a violation.

    ``checked``: queries that named a target document whose delete was acknowledged before
    they started (their answers must not hold its passages); ``deleted_checked``: the deleted
    documents asked about that way; ``alive_asked`` / ``alive_returned``: queries that named
    a target document whose delete had not begun when they ended, and those whose answer
    held its passage (the question reaches the passage: without the delete, a checked query
    would have returned it). ``target_passages``: the passage ids of each target document.

    >>> delete = WriteRecord("delete", "doc-1", 9.0, 10.0, ("p1",), target=1)
    >>> asked = [QueryRecord(0, 8.0, 0.1, 1, ("p1",)), QueryRecord(0, 10.5, 0.1, 1, ())]
    >>> delete_coverage(asked, [delete], {1: {"p1"}})
    {'checked': 1, 'deleted_checked': 1, 'alive_asked': 1, 'alive_returned': 1}
    """
    deletes = {w.target: w for w in writes
               if w.kind == "delete" and w.acknowledged is not None and w.target is not None}
    checked, alive_asked, alive_returned = 0, 0, 0
    deleted_checked: set[int] = set()
    for query in queries:
        if query.target is None or query.error is not None:
            continue
        write = deletes.get(query.target)
        if write is not None and write.acknowledged is not None \
                and query.started > write.acknowledged:
            checked += 1
            deleted_checked.add(query.target)
        elif write is None or query.started + query.seconds < write.started:
            alive_asked += 1
            wanted = set(target_passages.get(query.target, ()))
            alive_returned += bool(wanted & set(query.passages))
    return {"checked": checked, "deleted_checked": len(deleted_checked),
            "alive_asked": alive_asked, "alive_returned": alive_returned}


@dataclass(frozen=True)
class Outage:
    """A server restart during the phase: stopped at ``down``, answering again at ``back``."""

    down: float
    back: float


def error_kinds(errors: Iterable[str]) -> dict[str, int]:
    """Errors counted by ``"module.Type: message"`` with numbers masked."""
    kinds: dict[str, int] = {}
    for error in errors:
        key = re.sub(r"\d+", "N", error)[:300]
        kinds[key] = kinds.get(key, 0) + 1
    return dict(sorted(kinds.items(), key=lambda item: -item[1]))


def latency_ms(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50 / p95 / p99 in milliseconds (``None`` without values)."""
    if not seconds:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None}
    values = np.asarray(seconds) * 1000
    return {f"p{q}_ms": round(float(np.percentile(values, q)), 1) for q in (50, 95, 99)}


@dataclass
class RestartReport:
    """What the queries of a phase saw around a server restart."""

    down_s: float
    errors_during_outage: int
    error_kinds: dict[str, int]
    package_errors_only: bool
    """Whether every error in the outage was the package's ``MilvusStoreError`` (or its
    subclass ``MilvusUnavailableError``)."""
    first_success_after_back_s: dict[str, float | None] = field(default_factory=dict)
    """Per worker: seconds from the server answering again to its first successful query
    that started after that."""
    failed_after_first_success: int = 0
    """Queries that failed after their worker's first success after the restart."""


PACKAGE_ERRORS = ("llama_index_graphrag_milvus.errors.MilvusStoreError",
                  "llama_index_graphrag_milvus.errors.MilvusUnavailableError")


def restart_report(queries: Sequence[QueryRecord], outage: Outage) -> RestartReport:
    """Errors of the queries that overlapped the outage or came before their worker's first
    success after it, and how soon each worker succeeded again."""
    firsts: dict[str, float | None] = {}
    outage_errors: list[str] = []
    late_failures = 0
    for worker in sorted({q.worker for q in queries}):
        mine = sorted((q for q in queries if q.worker == worker), key=lambda q: q.started)
        first_ok = next((q for q in mine if q.error is None and q.started >= outage.back),
                        None)
        firsts[str(worker)] = (None if first_ok is None
                               else round(first_ok.started + first_ok.seconds - outage.back, 2))
        for query in mine:
            if query.error is None or query.started + query.seconds < outage.down:
                continue
            if first_ok is None or query.started < first_ok.started:
                outage_errors.append(query.error)
            else:
                late_failures += 1
    return RestartReport(
        down_s=round(outage.back - outage.down, 1), errors_during_outage=len(outage_errors),
        error_kinds=error_kinds(outage_errors),
        package_errors_only=all(e.split(":", 1)[0] in PACKAGE_ERRORS for e in outage_errors),
        first_success_after_back_s=firsts, failed_after_first_success=late_failures)


def summarize_method(queries: Sequence[QueryRecord], writes: Sequence[WriteRecord],
                     seconds: float, target_passages: Mapping[int, Collection[str]],
                     outage: Outage | None = None) -> dict[str, Any]:
    """One phase's numbers: queries, QPS, latency of the successful queries, errors (those
    of a restart apart: see :func:`restart_report`), violations and what the check covered.
    """
    first_ok: dict[int, float] = {}
    if outage is not None:
        for query in sorted(queries, key=lambda q: q.started):
            if query.error is None and query.started >= outage.back:
                first_ok.setdefault(query.worker, query.started)

    def restart_error(query: QueryRecord) -> bool:
        return (outage is not None and query.started + query.seconds >= outage.down
                and query.started < first_ok.get(query.worker, float("inf")))

    errors = [q.error for q in queries if q.error is not None and not restart_error(q)]
    found = violations(queries, writes)
    summary: dict[str, Any] = {
        "queries": len(queries), "seconds": round(seconds, 1),
        "qps": round(len(queries) / seconds, 2) if seconds > 0 else None,
        **latency_ms([q.seconds for q in queries if q.error is None]),
        "errors": len(errors), "error_kinds": error_kinds(errors),
        "violations": len(found),
        "violation_examples": [{**asdict(v), "late_by_s": v.late_by_s} for v in found[:5]],
        **delete_coverage(queries, writes, target_passages)}
    if outage is not None:
        summary["restart"] = asdict(restart_report(queries, outage))
    return summary
