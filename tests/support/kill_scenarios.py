"""Writes killed with SIGKILL at a chosen step, for tests/milvus/test_kills.py.

A scenario is a base content and one operation (ingest, delete, update) applied through the
public API. :func:`run_killed` runs the operation in a child process that kills itself just
before the chosen store call; the test then runs the operation again and compares the stored
content with a clean run.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from typing import Any

from llama_index.core import Document
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from tests.support.fakes import HashEmbedding, ScriptedLLM

TEXTS = {
    "a": "Ada met Boris at the front desk. Boris taught Chen.",
    "b": "Chen hired Dara. Dara met Ada.",
}
TRIPLETS = {
    "a": [("Ada", "met", "Boris"), ("Boris", "taught", "Chen")],
    "b": [("Chen", "hired", "Dara"), ("Dara", "met", "Ada")],
}
UPDATED = "Ada married Boris. Emil taught Chen."
UPDATED_TRIPLETS = [["Ada", "married", "Boris"], ["Emil", "taught", "Chen"]]


def base() -> list[tuple[Document, list[tuple[str, str, str]]]]:
    """Two documents in two tenants: shared relations and entities, own passages."""
    return [(Document(text=TEXTS[d], doc_id=f"{d}.md", metadata={"tenant_id": t}), TRIPLETS[d])
            for d in TEXTS for t in ("acme", "globex")]


def _ingest(index: GraphRAGIndex) -> None:
    index.insert_triplets(base())


def _delete(index: GraphRAGIndex) -> None:
    index.delete("a.md")


def _update(index: GraphRAGIndex) -> None:
    llm = ScriptedLLM(lambda prompt: json.dumps({"triplets": UPDATED_TRIPLETS}))
    index.update(Document(text=UPDATED, doc_id="a.md", metadata={"tenant_id": "acme"}),
                 llm=llm, filters=MetadataFilters(
                     filters=[MetadataFilter(key="tenant_id", value="acme")]))


OPERATIONS: dict[str, Callable[[GraphRAGIndex], None]] = {
    "ingest": _ingest, "delete": _delete, "update": _update}
"""Each operation; all but ``ingest`` start from the base content."""


def open_index(uri: str, prefix: str) -> GraphRAGIndex:
    return GraphRAGIndex(uri=uri, collection_prefix=prefix, embed_model=HashEmbedding(dim=64))


def prepare(uri: str, prefix: str, operation: str) -> None:
    """The content an operation starts from."""
    with open_index(uri, prefix) as index:
        if operation != "ingest":
            _ingest(index)


def _kill_before(method: str, collection_suffix: str | None) -> None:
    original = getattr(MilvusGraphStore, method)

    def killing(self: MilvusGraphStore, *args: Any, **kwargs: Any) -> Any:
        target = args[0] if args and isinstance(args[0], str) else None
        if collection_suffix is None or (target or "").endswith(collection_suffix):
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *args, **kwargs)

    setattr(MilvusGraphStore, method, killing)


def run_killed(uri: str, prefix: str, operation: str, method: str,
               collection_suffix: str | None) -> None:
    """Child process: run ``operation`` and die by SIGKILL just before the first call of
    ``MilvusGraphStore.<method>`` (on a collection ending with ``collection_suffix``)."""
    index = open_index(uri, prefix)
    _kill_before(method, collection_suffix)
    OPERATIONS[operation](index)


def content(index: GraphRAGIndex) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored row that carries meaning (vectors left out, passage lists sorted; where
    relations' ends lead included, so a rerun must record them as a clean run does)."""
    store = index.store
    fields = {store.entity_collection: ["name", "passage_ids"],
              store.relation_collection: ["text", "subject_id", "object_id", "passage_ids",
                                          "subject_kind", "object_kind", "subject_passages",
                                          "object_passages"],
              store.passage_collection: ["text", "doc_id", "tenant_id"]}
    result = {}
    for collection, names in fields.items():
        rows = store.client.query(collection, filter='id != ""', output_fields=["id", *names],
                                  limit=16384, consistency_level="Strong")
        result[collection.rsplit("_", 1)[1]] = sorted(
            tuple(tuple(sorted(row[n])) if n == "passage_ids" else row[n]
                  for n in ["id", *names]) for row in rows)
    return result
