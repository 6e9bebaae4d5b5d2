"""Which documents an index holds whole, and which of a batch to insert, update or leave:
what ``refresh_ref_docs`` and the folder command decide before any LLM call.

A document is *held whole* when every passage it splits into is in the passage collection,
none of them is marked as failed by its LLM extraction, and every relation of those
passages is in the relation collection and links back to the passage. Passages are
written first and relations last (:mod:`~llama_index_graphrag_milvus.ingestion.write`),
so a write stopped halfway leaves its documents not held whole: they are written again.
Passage ids come from the text and the identity metadata, so splitting a document again
gives the ids it was stored under.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode, Document, TransformComponent

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction.extraction_report import EXTRACTION_ERROR_KEY
from llama_index_graphrag_milvus.extraction.triplets import triplets_from_node
from llama_index_graphrag_milvus.ingestion.documents import with_text
from llama_index_graphrag_milvus.ingestion.plan import plan_from_nodes
from llama_index_graphrag_milvus.metadata import stored_form
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore


def passage_ids(passages: Sequence[BaseNode], identity_keys: Sequence[str] | str
                ) -> tuple[str, ...]:
    """The ids of ``passages`` in an index whose ``passage_identity_keys`` are
    ``identity_keys``."""
    return tuple(p.node_id for p in plan_from_nodes(passages, identity_keys).passages)


def whole_documents(store: MilvusGraphStore, documents: Mapping[str, Sequence[str]]
                    ) -> set[str]:
    """The ids of ``documents`` (document id -> the ids of its passages) the index holds
    whole (see the module docstring): two reads by primary key per thousand passages."""
    if store.dim is None:
        return set()
    wanted = [pid for ids in documents.values() for pid in ids]
    held = store.get_passages(wanted, for_write=True)
    return _whole(store, documents, {n.node_id: n for n in held})


def _whole(store: MilvusGraphStore, documents: Mapping[str, Sequence[str]],
           passages: Mapping[str, BaseNode]) -> set[str]:
    links: dict[str, set[str]] = {}
    for node in passages.values():
        for triplet in triplets_from_node(node)[0]:
            links.setdefault(triplet.id, set()).add(node.node_id)
    relations = store.get_rows(store.relation_collection, list(links), ["id", "passage_ids"],
                               for_write=True)
    linked_back: set[str] = set()
    for relation_id, passage_ids_ in links.items():
        row = relations.get(relation_id)
        linked = set(row["passage_ids"]) if row is not None else set()
        if row is not None and (passage_ids_ <= linked
                                or len(linked) >= MAX_PASSAGES_PER_RELATION):
            linked_back.add(relation_id)
    whole = set()
    for doc_id, ids in documents.items():
        nodes = [passages.get(pid) for pid in ids]
        if all(node is not None and EXTRACTION_ERROR_KEY not in node.metadata
               and all(t.id in linked_back for t in triplets_from_node(node)[0])
               for node in nodes):
            whole.add(doc_id)
    return whole


def _own_metadata(node: BaseNode) -> str:
    """A node's metadata without what the package adds (``graphrag_*``), as comparable
    text: metadata outside the identity keys changes a document without changing its
    passage ids."""
    return stored_form({k: v for k, v in node.metadata.items()
                        if not k.startswith("graphrag_")})


@dataclass
class RefreshPlan:
    """What a refresh does with each document: ``new`` ones are inserted, ``changed`` ones
    updated, the stored passages of ``emptied`` ones (no text now) deleted; ``nodes`` are
    each new or changed document's passages (split, not extracted), ``where`` the scope
    they were compared in; ``refreshed`` says, in the input order (``ids``), which
    documents are any of these."""

    new: list[Document] = field(default_factory=list)
    changed: list[Document] = field(default_factory=list)
    emptied: list[str] = field(default_factory=list)
    nodes: dict[str, list[BaseNode]] = field(default_factory=dict)
    where: str = ""
    ids: list[str] = field(default_factory=list)
    refreshed: list[bool] = field(default_factory=list)


def refresh_plan(store: MilvusGraphStore, documents: Sequence[Document],
                 transformations: Sequence[TransformComponent],
                 identity_keys: Sequence[str] | str, where: str = "") -> RefreshPlan:
    """Split ``documents`` (the node parsers only: no LLM) and compare each with what the
    index stores under its id (and matching ``where``): not stored, new; stored as the
    same passages with the same metadata and held whole, left as it is; stored and now
    without text, emptied; otherwise changed.

    Raises:
        InvalidInputError: ``documents`` is not a list of ``Document``, or two of them
            share an id.
    """
    if isinstance(documents, str | bytes | Document) or not isinstance(documents, Sequence):
        raise InvalidInputError(
            f"documents must be a list of llama_index Documents, got a "
            f"{type(documents).__name__}.")
    kept = with_text(documents)  # refuses what is not a Document
    twice = sorted(i for i, n in Counter(d.node_id for d in documents).items() if n > 1)
    if twice:
        raise InvalidInputError(
            f"documents {twice[:5]} appear twice in one refresh: give each document one "
            "doc_id of its own, or refresh one version of it.")
    plan = RefreshPlan(nodes={d.node_id: list(run_transformations([d], list(transformations)))
                              for d in kept}, where=where)
    planned = {doc_id: plan_from_nodes(nodes, identity_keys).passages
               for doc_id, nodes in plan.nodes.items()}  # with the ids they are stored under
    split = {doc_id: [p.node_id for p in passages] for doc_id, passages in planned.items()}
    fresh = {p.node_id: _own_metadata(p) for passages in planned.values() for p in passages}
    stored = store.document_passage_ids([d.node_id for d in documents], where)
    same = {doc_id: ids for doc_id, ids in split.items()
            if stored[doc_id] and stored[doc_id] == set(ids)}
    held = {n.node_id: n for n in store.get_passages([p for ids in same.values() for p in ids],
                                                  for_write=True)}
    unchanged = {doc_id for doc_id in _whole(store, same, held)
                 if all(_own_metadata(held[p]) == fresh[p] for p in same[doc_id])}
    for document in documents:
        doc_id = document.node_id
        plan.ids.append(doc_id)
        if doc_id not in split:  # no text now: what was stored goes
            if stored[doc_id]:
                plan.emptied.append(doc_id)
            plan.refreshed.append(bool(stored[doc_id]))
        elif not stored[doc_id]:
            plan.new.append(document)
            plan.refreshed.append(True)
        elif doc_id in unchanged:
            plan.refreshed.append(False)
        else:
            plan.changed.append(document)
            plan.refreshed.append(True)
    return plan
