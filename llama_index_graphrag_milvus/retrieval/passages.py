"""The passage steps the methods share: passage rankings and reads, the texts of relations,
and the results with the relations that reached each passage
(``metadata["graphrag_relations"]``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY
from llama_index_graphrag_milvus.records import CandidateRelation, PassageHit
from llama_index_graphrag_milvus.retrieval.method import QueryContext
from llama_index_graphrag_milvus.retrieval.requests import (
    GetPassages,
    OwnRelations,
    Plan,
    RankPassages,
    RelationTexts,
    first,
)
from llama_index_graphrag_milvus.retrieval.seeds import Seeds
from llama_index_graphrag_milvus.retrieval.steps import as_result


def rank_passages(query: QueryContext, vectors: Sequence[Sequence[float]], limit: int,
                  ids: Sequence[str] | None = None) -> RankPassages:
    """The request of one batched passage ranking with the query's filters: per vector, the
    ``limit`` most similar passages (among ``ids`` when given)."""
    return RankPassages(tuple(vectors), limit, None if ids is None else tuple(ids),
                        query.where)


def fetch_passages(ids: Sequence[str], where: str = "") -> Plan[dict[str, BaseNode]]:
    """The passages of ``ids`` by primary key (one Milvus read, none for no id); a passage
    deleted since it was ranked, or not matching ``where``, is left out."""
    wanted = tuple(dict.fromkeys(ids))
    return {n.node_id: n for n in (yield from GetPassages(wanted, where))} if wanted else {}


def with_nodes(lists: Sequence[Sequence[PassageHit]], where: str = ""
               ) -> Plan[list[list[tuple[BaseNode, float]]]]:
    """Ranked passages as ``(node, similarity)`` lists: the nodes the ranking read, the others
    read by primary key in one request (a passage deleted since is left out)."""
    nodes = {h.id: h.node for hits in lists for h in hits if h.node is not None}
    nodes.update((yield from fetch_passages(
        [h.id for hits in lists for h in hits if h.id not in nodes], where)))
    return [[(nodes[h.id], h.score) for h in hits if h.id in nodes] for hits in lists]


def search_passages(query: QueryContext, vectors: Sequence[Sequence[float]], limit: int,
                    ids: Sequence[str] | None = None
                    ) -> Plan[list[list[tuple[BaseNode, float]]]]:
    """One batched passage search: per vector, the ``limit`` most similar passages (among
    ``ids`` when given), best first, as ``(node, similarity)``: ranked where the graph
    source ranks them, then read (see :func:`rank_passages` and :func:`with_nodes`)."""
    return (yield from with_nodes((yield from rank_passages(query, vectors, limit, ids)),
                                  query.where))


def read_relation_texts(ids: Sequence[str], seeds: Seeds | None = None,
                        known: Iterable[CandidateRelation] = ()) -> Plan[dict[str, str]]:
    """Texts of relation ``ids``: those of the relation seeds and of the ``known`` records
    that carry one (a graph served by Milvus reads them with the rows), then one graph
    request for the rest (answered from memory when the graph is held there)."""
    wanted = list(dict.fromkeys(ids))
    texts = {h.id: h.text for h in (seeds.relations if seeds else ()) if h.text}
    texts.update((c.id, c.text) for c in known if c.text and c.id not in texts)
    missing = tuple(rid for rid in wanted if rid not in texts)
    if missing:
        texts.update((yield from RelationTexts(missing)))
    return texts


def by_own_similarity(query: QueryContext, reason: str) -> Plan[list[NodeWithScore]]:
    """Passages ranked by their own similarity to the query (naive vector search, filters
    applied), each with its best own relations: the result when the graph gives nothing."""
    hits = first((yield from search_passages(query, (query.vector,), query.similarity_top_k)))
    return (yield from with_own_relations(query, [
        Result(node, score, metadata={FOUND_BY_KEY: {"query": reason, "similarity": score}})
        for node, score in hits]))


@dataclass(frozen=True)
class Result:
    """A passage a method returns: its score, the relations that reached it (first in its
    relation list) and the metadata it adds."""

    node: BaseNode
    score: float | None
    first_relations: Sequence[CandidateRelation] = ()
    metadata: dict[str, Any] | None = None


def with_own_relations(query: QueryContext, results: Sequence[Result],
                       known: Mapping[str, Sequence[CandidateRelation]] | None = None
                       ) -> Plan[list[NodeWithScore]]:
    """The results, each with ``first_relations`` then its passage's own best relations
    (by similarity to the query, at most ``query.own_relations``, by default
    :data:`~.method.OWN_RELATIONS_PER_PASSAGE`; see :class:`~.requests.OwnRelations`).
    With ``query.own_relations == 0`` nothing is read: each result keeps its
    ``first_relations``. ``known``: passages' own relations the plan has already read (all
    of them, most similar first, by passage id): those passages are not read again."""
    wanted = query.own_relations
    limit = wanted + max((len(r.first_relations) for r in results), default=0)
    known = known or {}
    unread = [r.node for r in results if r.node.node_id not in known]
    read = ((yield from OwnRelations(tuple(unread), query.vector, limit, ends=False))
            if unread and wanted else [[] for _ in unread])
    found = {**{node.node_id: own for node, own in zip(unread, read, strict=True)}, **known}
    owns = [found[r.node.node_id][:limit] if wanted else [] for r in results]
    nodes = []
    for result, own in zip(results, owns, strict=True):
        taken = {c.id for c in result.first_relations}
        kept = [c for c in own if c.id not in taken][:wanted]
        nodes.append(as_result(result.node, result.score, [*result.first_relations, *kept],
                               **(result.metadata or {})))
    return nodes
