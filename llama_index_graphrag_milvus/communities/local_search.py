"""Local search (Microsoft GraphRAG): passages, the entities and relations around the
question, and the reports of their communities, packed into a token budget.

The method wraps another one (the default ``"bridge"``), which ranks the passages; around
them it adds Microsoft GraphRAG's local context:

- **entities**: the ``entity_top_k`` entities most similar to the question (one batched
  search of the entity collection);
- **community reports** of those entities' communities at ``level``, ranked by the number of
  the entities' passages in each community, then by rating;
- **relations** of those entities: *in-network* ones (both ends selected) first, by
  combined degree, then *out-network* ones, by the number of selected entities their other
  end links to, then combined degree.

Budget (``max_tokens``, counted with LlamaIndex's tokenizer): reports take at most
``community_prop`` of it, passages at most ``text_unit_prop``, and the entity and relation
tables what is left. The result lists the passages first (as the wrapped method ranked them),
then the reports, then one node with the entity table and one with the relation table;
``metadata["graphrag_context"]`` says which is which. The relation node carries its relations
in ``metadata["graphrag_relations"]``, so :class:`GraphRelationRerank` can choose among them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.utils import get_tokenizer

from llama_index_graphrag_milvus.communities.descriptions import DescriptionTable
from llama_index_graphrag_milvus.communities.report_retriever import report_node
from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.records import (
    CONTEXT_KIND_KEY,
    RELATIONS_KEY,
    CandidateRelation,
    EntityHit,
    hide_from_models,
)
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.passages import read_relation_texts
from llama_index_graphrag_milvus.retrieval.requests import (
    EntityPassages,
    LoadCommunities,
    LoadGraph,
    Plan,
    RelationsAround,
    Together,
    first,
)
from llama_index_graphrag_milvus.retrieval.retriever import GraphRAGRetriever
from llama_index_graphrag_milvus.retrieval.seeds import entity_search
from llama_index_graphrag_milvus.validation import check_int, check_number, check_optional_int

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.communities.build import CommunitySet
    from llama_index_graphrag_milvus.index import GraphRAGIndex


@dataclass(frozen=True)
class LocalSearchConfig:
    """Local search settings (Microsoft GraphRAG's defaults where it has one).

    Args:
        level: community level of the reports (``None``: the most specific).
        entity_top_k: entities selected by similarity to the question (10).
        max_tokens: token budget of the whole context (12,000).
        community_prop: share of the budget for community reports (0.25).
        text_unit_prop: share of the budget for passages (0.5).
        max_relations: relations considered before the budget (100).
    """

    level: int | None = None
    entity_top_k: int = 10
    max_tokens: int = 12_000
    community_prop: float = 0.25
    text_unit_prop: float = 0.5
    max_relations: int = 100

    def __post_init__(self) -> None:
        for name in ("entity_top_k", "max_tokens", "max_relations"):
            check_int(name, getattr(self, name))
        check_optional_int("level", self.level, minimum=0)
        for name in ("community_prop", "text_unit_prop"):
            check_number(name, getattr(self, name), low=0, high=1)
        if self.community_prop + self.text_unit_prop > 1.0:
            raise InvalidInputError(
                f"community_prop + text_unit_prop must be at most 1 (the rest is for the "
                f"entity and relation tables), got {self.community_prop} + "
                f"{self.text_unit_prop}")


def select_relations(graph: EntityRelationGraph, entity_rows: np.ndarray, limit: int
                     ) -> np.ndarray:
    """Relation rows around the selected entities, Microsoft GraphRAG's order: in-network
    (both ends selected) by combined degree, then out-network by the number of selected
    entities the other end links to, then combined degree; at most ``limit``."""
    if entity_rows.size == 0:
        return np.zeros(0, np.int64)
    rows = np.unique(graph.incidence[entity_rows].indices).astype(np.int64)
    ends = graph.endpoints[rows]
    selected = np.isin(ends, entity_rows)
    inside = selected.all(axis=1)
    combined = graph.combined_degrees(rows)
    other = np.where(selected[:, 0], ends[:, 1], ends[:, 0])
    # links of an outside entity: how many of the relations here reach it
    values, counts = np.unique(other[~inside], return_counts=True)
    links = np.zeros(rows.size, np.int64)
    links[~inside] = counts[np.searchsorted(values, other[~inside])]
    order = np.lexsort((rows, -combined, -links, ~inside))
    return rows[order][:limit]


def rank_communities(graph: EntityRelationGraph, communities: CommunitySet,
                     entities: Sequence[tuple[str, np.ndarray]], level: int | None
                     ) -> list[tuple[str, int]]:
    """The communities of the selected entities (``(id, graph rows)`` pairs) at ``level``
    with the number of the entities' passages in each, by that number then rating."""
    passages: dict[str, set[int]] = {}
    for eid, rows in entities:
        cid = communities.community_of(eid, level)
        if cid is None:
            continue
        relations = graph.incidence[rows].indices
        linked = graph.relation_passages[relations].indices
        passages.setdefault(cid, set()).update(linked.tolist())
    return sorted(((cid, len(found)) for cid, found in passages.items()),
                  key=lambda item: (-item[1], -communities.reports[item[0]].rating, item[0]))


SERVED_RELATIONS_FACTOR = 4
"""With the served graph, the relations of the selected entities read per query: this many
times ``max_relations``, the most similar to the question."""
SERVED_PASSAGES_PER_ENTITY = 256
"""With the served graph, the relations per selected entity whose passages rank the
communities."""


def order_served_relations(relations: Sequence[CandidateRelation], selected: set[str]
                           ) -> list[CandidateRelation]:
    """Relations around the selected entities in local search's order without degrees:
    in-network (both ends selected) first, then out-network by the number of selected
    entities their other end links to (among these relations), then by similarity.

    >>> r = [CandidateRelation("r1", .9, 0, subject_id="a", object_id="x"),
    ...      CandidateRelation("r2", .5, 0, subject_id="a", object_id="b"),
    ...      CandidateRelation("r3", .8, 0, subject_id="b", object_id="y"),
    ...      CandidateRelation("r4", .7, 0, subject_id="y", object_id="a")]
    >>> [c.id for c in order_served_relations(r, {"a", "b"})]
    ['r2', 'r3', 'r4', 'r1']
    """
    def other(c: CandidateRelation) -> str:
        return c.object_id if c.subject_id in selected else c.subject_id

    outside = [c for c in relations if not {c.subject_id, c.object_id} <= selected]
    links: dict[str, int] = {}
    for c in outside:
        links[other(c)] = links.get(other(c), 0) + 1
    inside = [c for c in relations if {c.subject_id, c.object_id} <= selected]
    return [*sorted(inside, key=lambda c: -c.score),
            *sorted(outside, key=lambda c: (-links[other(c)], -c.score))]


class _Budget:
    """Token accounting with one tokenizer."""

    def __init__(self, tokens: Callable[[str], Sequence[Any]], total: int) -> None:
        self._tokens = tokens
        self.left = total

    def take(self, text: str, cap: float = math.inf) -> int | None:
        """The text's tokens when it fits in what is left (and in ``cap``), else ``None``."""
        cost = len(self._tokens(text))
        if cost > self.left or cost > cap:
            return None
        self.left -= cost
        return cost


def _table_node(kind: str, header: str, lines: Sequence[str], score: float | None,
                **metadata: Any) -> NodeWithScore:
    node = TextNode(text="\n".join([header, *lines]),
                    metadata={CONTEXT_KIND_KEY: kind, **metadata})
    hide_from_models(node, CONTEXT_KIND_KEY, *metadata)
    return NodeWithScore(node=node, score=score)


def pack_context(passages: Sequence[NodeWithScore], entities: Sequence[EntityHit],
                 relations: Sequence[CandidateRelation], reports: Sequence[Any],
                 config: LocalSearchConfig,
                 tokens: Callable[[str], Sequence[Any]],
                 descriptions: DescriptionTable | None = None) -> list[NodeWithScore]:
    """The local context under the budget (see the module docstring); ``reports`` are
    ``(report, matched passages)`` pairs, best first; ``descriptions`` (when the passages
    were extracted with them) add a description column to both tables."""
    table = descriptions or DescriptionTable({}, {})
    budget = _Budget(tokens, config.max_tokens)
    kept_passages = []
    cap = config.text_unit_prop * config.max_tokens
    spent = 0
    for hit in passages:
        cost = budget.take(hit.node.get_content(), cap - spent)
        if cost is None:
            break
        spent += cost
        hit.node.metadata[CONTEXT_KIND_KEY] = "passage"
        hide_from_models(hit.node, CONTEXT_KIND_KEY)
        kept_passages.append(hit)
    kept_reports = []
    cap, spent = config.community_prop * config.max_tokens, 0
    for report, matches in reports:
        cost = budget.take(report.as_text(), cap - spent)
        if cost is None:
            continue  # a smaller report further down may still fit
        spent += cost
        node = report_node(report, None)
        node.node.metadata[CONTEXT_KIND_KEY] = "report"
        node.node.metadata["graphrag_community"]["matched_passages"] = matches
        hide_from_models(node.node, CONTEXT_KIND_KEY)
        kept_reports.append(node)
    entity_lines: list[str] = []
    described = any(e.id in table.entities for e in entities)
    header = "-----Entities-----\nentity,similarity" + (",description" if described else "")
    budget.take(header)
    for entity in entities:
        line = f"{entity.name},{entity.score:.3f}"
        if described:
            kind, text = table.entities.get(entity.id, ("", ""))
            line += f",{kind}: {text}" if kind else f",{text}"
        if budget.take(line) is None:
            break
        entity_lines.append(line)
    relation_lines: list[str] = []
    kept_relations: list[CandidateRelation] = []
    rheader = "-----Relationships-----"
    budget.take(rheader)
    for relation in relations:
        found = table.relations.get(relation.id)
        line = f"{relation.text}: {found[0]}" if found and found[0] else relation.text
        if budget.take(line) is None:
            break
        relation_lines.append(line)
        kept_relations.append(relation)
    result = [*kept_passages, *kept_reports]
    if entity_lines:
        result.append(_table_node("entities", header, entity_lines,
                                  max(h.score for h in entities[:len(entity_lines)])))
    if relation_lines:
        result.append(_table_node("relations", rheader, relation_lines, None,
                                  **{RELATIONS_KEY: [c.as_metadata() for c in kept_relations]}))
    return result


class LocalSearchRetrieval(RetrievalMethod):
    """Local search around another method's passages (see the module docstring)."""

    name: ClassVar[str] = "local"

    def __init__(self, inner: RetrievalMethod, config: LocalSearchConfig,
                 tokenizer: Callable[[str], Sequence[Any]] | None = None) -> None:
        self.inner = inner
        self.config = config
        self._tokens = tokenizer or get_tokenizer()

    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        communities = yield from LoadCommunities()  # fails early when not built
        communities.check_level(self.config.level)
        passages = yield from self.inner.plan(query, seeds)
        search = yield from entity_search(query, (tuple(query.vector),), (query.text,),
                                          self.config.entity_top_k, None, seeds.entity_search)
        hits = first((yield from search))
        entities = list({h.id: h for h in sorted(hits, key=lambda h: -h.score)}.values())
        if query.graph_served:
            relations, ranked = yield from self._served(query, communities, entities)
        else:
            relations, ranked = yield from self._in_memory(query, communities, entities)
        reports = [(communities.reports[cid], matches) for cid, matches in ranked]
        if query.trace:
            query.trace.on_local_context(entities, relations, reports)
        return pack_context(passages, entities, relations, reports, self.config, self._tokens,
                            communities.descriptions)

    def _in_memory(self, query: QueryContext, communities: CommunitySet,
                   entities: Sequence[EntityHit]
                   ) -> Plan[tuple[list[CandidateRelation], list[tuple[str, int]]]]:
        """The relations and communities of the entities, from the in-memory graph."""
        graph = yield from LoadGraph()
        located = [(h.id, graph.entity_ids.lookup([h.id])) for h in entities]
        rows = np.concatenate([r for _, r in located] or [np.zeros(0, np.int64)])
        relation_rows = select_relations(graph, rows, self.config.max_relations)
        relation_ids = graph.relation_ids.ids(relation_rows)
        texts = (yield from read_relation_texts(query, relation_ids)) if relation_ids else {}
        scores = graph.relation_scores(relation_ids, query.vector) if relation_ids else {}
        relations = [CandidateRelation(rid, scores.get(rid, 0.0), 0, texts[rid])
                     for rid in relation_ids if rid in texts]
        return relations, rank_communities(graph, communities, located, self.config.level)

    def _served(self, query: QueryContext, communities: CommunitySet,
                entities: Sequence[EntityHit]
                ) -> Plan[tuple[list[CandidateRelation], list[tuple[str, int]]]]:
        """The relations and communities of the entities, from the served graph: their
        relations most similar to the question (a bounded search, not all of a hub's),
        in-network first, then out-network by the selected entities their other end links
        to, then by similarity (the combined degree needs the whole graph); communities by
        the passages of at most ``SERVED_PASSAGES_PER_ENTITY`` relations of each entity."""
        ids = tuple(h.id for h in entities)
        around, passages = yield from Together((
            RelationsAround(tuple(query.vector), ids, SERVED_RELATIONS_FACTOR
                            * self.config.max_relations),
            EntityPassages(ids, SERVED_PASSAGES_PER_ENTITY)))
        relations = order_served_relations(around, set(ids))[:self.config.max_relations]
        found: dict[str, set[str]] = {}
        for entity in ids:
            cid = communities.community_of(entity, self.config.level)
            if cid is not None:
                found.setdefault(cid, set()).update(passages.get(entity, ()))
        ranked = sorted(((cid, len(p)) for cid, p in found.items()),
                        key=lambda item: (-item[1], -communities.reports[item[0]].rating,
                                          item[0]))
        return relations, ranked

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "local_search": {
            "passages": self.inner.name, "level": self.config.level,
            "entity_top_k": self.config.entity_top_k, "max_tokens": self.config.max_tokens,
            "community_prop": self.config.community_prop,
            "text_unit_prop": self.config.text_unit_prop,
            "max_relations": self.config.max_relations}}


class LocalSearchRetriever(GraphRAGRetriever):
    """Microsoft GraphRAG's local search as a LlamaIndex retriever (see the module
    docstring): the passages of ``passage_scoring`` (default ``"bridge"``), then the
    reports of the question's communities, then the entity and relation tables, all
    within ``max_tokens``. Needs :meth:`GraphRAGIndex.build_communities` first.

    Args:
        index: the :class:`GraphRAGIndex`.
        level: community level of the reports (``None``: the most specific).
        context_entity_top_k: entities selected for the context (10).
        max_tokens: token budget of the whole result (12,000).
        community_prop: share of the budget for reports (0.25).
        text_unit_prop: share of the budget for passages (0.5).
        max_context_relations: relations considered for the relation table (100).
        **kwargs: the arguments of :class:`GraphRAGRetriever` (``passage_scoring``,
            ``similarity_top_k``...). ``filters`` are refused: communities and their
            reports span every tenant of an index; give each tenant its own
            ``collection_prefix`` to use community search.

    Example::

        index.build_communities()                     # extractive reports, no LLM
        retriever = index.as_local_retriever(similarity_top_k=10)
        engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
        print(engine.query("What did the son of Euler's teacher contribute?"))
    """

    def __init__(self, index: GraphRAGIndex, level: int | None = None,
                 context_entity_top_k: int = 10, max_tokens: int = 12_000,
                 community_prop: float = 0.25, text_unit_prop: float = 0.5,
                 max_context_relations: int = 100, **kwargs: Any) -> None:
        if kwargs.get("filters") is not None:
            raise InvalidInputError(
                "local search does not take filters: communities and their reports span "
                "every tenant of an index. Give each tenant its own collection_prefix "
                "(and build_communities on it), or use as_retriever(filters=...).")
        config = LocalSearchConfig(level, context_entity_top_k, max_tokens, community_prop,
                                   text_unit_prop, max_context_relations)
        super().__init__(index, **kwargs)
        self._method = LocalSearchRetrieval(self._method, config)
