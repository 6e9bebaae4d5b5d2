"""Local search (Microsoft GraphRAG): passages, the entities and relations around the
question, and the reports of their communities, packed into a token budget.

The method wraps another one (the default ``"bridge"``), which ranks the passages; around
them it adds Microsoft GraphRAG's local context:

- **entities**: the ``entity_top_k`` entities most similar to the question (one batched
  search of the entity collection), then those whose whole name the question holds as
  words (the retriever's ``match_entity_names``: "Kim Jong-il" in "Who succeeded Kim
  Jong-il?", searched in the same round; :func:`~..retrieval.seeds.question_entities`);
- **community reports** of those entities' communities at ``level``, ranked by the number of
  the entities' passages in each community, then by rating;
- **relations** of those entities (the ``4 * max_relations`` most similar to the
  question, so that a hub's are never all read): *in-network* ones (both ends selected)
  first, by combined degree, then *out-network* ones, by the number of selected entities
  their other end links to, then combined degree.

The same steps whether the graph is held in memory or served by Milvus (a served index
counts the ends' relations with one filtered query, at most 16,384 rows: a hub's degree is
then a lower bound).

Budget (``max_tokens``, counted with LlamaIndex's tokenizer): reports take at most
``community_prop`` of it, passages at most ``text_unit_prop``, and the entity and relation
tables what is left. The result lists the passages first (as the wrapped method ranked them),
then the reports, then one node with the entity table and one with the relation table;
``metadata["graphrag_context"]`` says which is which. The relation node carries its relations
in ``metadata["graphrag_relations"]``, so :class:`GraphRelationRerank` can choose among them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.utils import get_tokenizer

from llama_index_graphrag_milvus.communities.around import LocalCommunities, check_level
from llama_index_graphrag_milvus.communities.descriptions import DescriptionTable
from llama_index_graphrag_milvus.communities.report_retriever import report_node
from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.metadata import CONTEXT_KIND_KEY, RELATIONS_KEY, hide_from_models
from llama_index_graphrag_milvus.records import CandidateRelation, EntityHit
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.methods import method_of
from llama_index_graphrag_milvus.retrieval.requests import (
    CommunitiesBuilt,
    CommunitiesOf,
    DescriptionsOf,
    EntityDegrees,
    EntityPassages,
    Known,
    Plan,
    RelationsAround,
    Together,
)
from llama_index_graphrag_milvus.retrieval.retriever import GraphRAGRetriever
from llama_index_graphrag_milvus.retrieval.seeds import question_entities
from llama_index_graphrag_milvus.validation import check_int, check_number, check_optional_int

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.index import GraphRAGIndex


@dataclass(frozen=True)
class LocalSearchConfig:
    """Local search settings (Microsoft GraphRAG's defaults where it has one).

    Args:
        level: community level of the reports (``None``: the most specific).
        entity_top_k: entities selected by similarity to the question (10); the entities
            the question names word for word join them (``match_entity_names``).
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


RELATIONS_READ_FACTOR = 4
"""The relations of the selected entities read per query: this many times
``max_relations``, the most similar to the question (a hub's are never all read)."""
PASSAGES_PER_ENTITY = 256
"""The relations per selected entity whose passages rank the communities."""


def order_relations(relations: Sequence[CandidateRelation], selected: set[str],
                    degrees: Mapping[str, int]) -> list[CandidateRelation]:
    """Relations around the selected entities in Microsoft GraphRAG's order: in-network
    (both ends selected) first, by combined degree (the degrees of both ends), then
    out-network by the number of selected entities their other end links to (among these
    relations), then combined degree; ties by id.

    >>> r = [CandidateRelation("r1", .9, 0, subject_id="a", object_id="x"),
    ...      CandidateRelation("r2", .5, 0, subject_id="a", object_id="b"),
    ...      CandidateRelation("r3", .8, 0, subject_id="b", object_id="y"),
    ...      CandidateRelation("r4", .7, 0, subject_id="y", object_id="a")]
    >>> degrees = {"a": 3, "b": 2, "x": 1, "y": 2}
    >>> [c.id for c in order_relations(r, {"a", "b"}, degrees)]  # y links to a and b
    ['r2', 'r4', 'r3', 'r1']
    """
    def other(c: CandidateRelation) -> str:
        return c.object_id if c.subject_id in selected else c.subject_id

    def combined(c: CandidateRelation) -> int:
        return degrees.get(c.subject_id, 0) + degrees.get(c.object_id, 0)

    outside = [c for c in relations if not {c.subject_id, c.object_id} <= selected]
    links: dict[str, int] = {}
    for c in outside:
        links[other(c)] = links.get(other(c), 0) + 1
    inside = [c for c in relations if {c.subject_id, c.object_id} <= selected]
    return [*sorted(inside, key=lambda c: (-combined(c), c.id)),
            *sorted(outside, key=lambda c: (-links[other(c)], -combined(c), c.id))]


def rank_communities(communities: LocalCommunities, entity_ids: Sequence[str],
                     passages: Mapping[str, Sequence[str]]) -> list[tuple[str, int]]:
    """The communities of the selected entities with the number of the entities'
    ``passages`` in each, by that number then rating (then id)."""
    found: dict[str, set[str]] = {}
    for entity in entity_ids:
        cid = communities.community.get(entity)
        if cid is not None:
            found.setdefault(cid, set()).update(passages.get(entity, ()))
    return sorted(((cid, len(p)) for cid, p in found.items()),
                  key=lambda item: (-item[1], -communities.reports[item[0]].rating, item[0]))


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


@dataclass(frozen=True)
class LocalContext:
    """What local search reads around its entities."""

    relations: list[CandidateRelation]
    """Their relations, in :func:`order_relations`'s order, at most ``max_relations``."""
    communities: LocalCommunities
    ranked: list[tuple[str, int]]
    """Their communities with the entities' passages in each, best first."""
    descriptions: DescriptionTable | None
    """The merged descriptions of the entities and relations (``None``: none stored)."""


class LocalSearchRetrieval(RetrievalMethod):
    """Local search around another method's passages (see the module docstring): a method
    like the others, for ``index.as_retriever(method=...)``, or the method of
    :class:`LocalSearchRetriever`. Needs :meth:`GraphRAGIndex.build_communities` first.

    Args:
        inner: the method that ranks the passages (an object or a built-in's name; default
            the bridge method).
        config: the context's budget and sizes (:class:`LocalSearchConfig`).
        tokenizer: counts tokens (default LlamaIndex's).

    Example::

        index.build_communities()
        retriever = index.as_retriever(method=LocalSearchRetrieval(
            "ppr", LocalSearchConfig(max_tokens=4000)))
    """

    name: ClassVar[str] = "local"
    unscoped: ClassVar[str] = (
        "communities and their reports span every tenant of an index. Give each tenant its "
        "own collection_prefix (and build_communities on it), or use another method.")

    def __init__(self, inner: RetrievalMethod | str | None = None,
                 config: LocalSearchConfig | None = None,
                 tokenizer: Callable[[str], Sequence[Any]] | None = None) -> None:
        self.inner = inner if isinstance(inner, RetrievalMethod) else method_of(inner, None, {})
        self.config = config or LocalSearchConfig()
        self._tokens = tokenizer or get_tokenizer()

    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        info = yield from CommunitiesBuilt()  # fails early when not built
        depth = check_level(info.levels, self.config.level)
        passages = yield from self.inner.plan(query, seeds)
        hits = yield from question_entities(query, seeds, self.config.entity_top_k)
        entities = list({h.id: h for h in sorted(hits, key=lambda h: -h.score)}.values())
        context = yield from self._context(query, entities, depth, info.described)
        reports = [(context.communities.reports[cid], matches) for cid, matches in context.ranked]
        if query.trace:
            query.trace.on_local_context(entities, context.relations, reports)
        return pack_context(passages, entities, context.relations, reports, self.config,
                            self._tokens, context.descriptions)

    def _context(self, query: QueryContext, entities: Sequence[EntityHit], depth: int,
                 described: bool) -> Plan[LocalContext]:
        """The relations and communities of the entities: their relations most similar to
        the question (a bounded read, not all of a hub's) in :func:`order_relations`'s
        order; their communities at ``depth`` (only theirs are read), ranked by the
        passages of at most :data:`PASSAGES_PER_ENTITY` relations of each entity; the
        descriptions of the entities and relations (when ``described``), read beside the
        relations' ends' degrees."""
        ids = tuple(h.id for h in entities)
        if not ids:
            return LocalContext([], LocalCommunities(), [], None)
        around, passages, communities = yield from Together((
            RelationsAround(query.vector, ids, RELATIONS_READ_FACTOR * self.config.max_relations),
            EntityPassages(ids, PASSAGES_PER_ENTITY), CommunitiesOf(ids, depth)))
        ends = tuple(dict.fromkeys(e for c in around for e in (c.subject_id, c.object_id)))
        shown = tuple(dict.fromkeys([*ids, *(c.id for c in around)]))
        degrees, descriptions = yield from Together((
            EntityDegrees(ends) if ends else Known({}),
            DescriptionsOf(shown) if described else Known(None)))
        relations = order_relations(around, set(ids), degrees)[:self.config.max_relations]
        return LocalContext(relations, communities,
                            rank_communities(communities, ids, passages), descriptions)

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
        refuse_filters("local search", kwargs)
        config = LocalSearchConfig(level, context_entity_top_k, max_tokens, community_prop,
                                   text_unit_prop, max_context_relations)
        super().__init__(index, **kwargs)
        self._method = LocalSearchRetrieval(self._method, config)


def refuse_filters(what: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse ``filters`` among the ``kwargs`` of a search over communities, which span
    every tenant (see :attr:`LocalSearchRetrieval.unscoped`)."""
    if kwargs.get("filters") is not None:
        raise InvalidInputError(f"{what} does not take filters: "
                                f"{LocalSearchRetrieval.unscoped}")
