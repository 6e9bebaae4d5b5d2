"""What a retrieval method is, and the plan steps the methods share.

A method (k-hop, PageRank, second hop) decides only how it selects relations and how it
ranks passages. The query, its vector, the filters and the seed searches come from here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.errors import EmptyIndexError
from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.graph.seeds import EntityTable, PassageTable
from llama_index_graphrag_milvus.records import (
    FOUND_BY_KEY,
    MILVUS_MAX_TOP_K,
    CandidateRelation,
    RelationHit,
)
from llama_index_graphrag_milvus.retrieval.io import (
    EmbedTexts,
    GetPassages,
    GetRelationTexts,
    Known,
    LoadEntities,
    LoadGraph,
    LoadPassages,
    Ner,
    Plan,
    SearchEntities,
    SearchPassages,
    SearchRelations,
    Together,
    first,
)
from llama_index_graphrag_milvus.retrieval.steps import (
    Seeds,
    as_result,
    own_relations,
    own_triplets,
)
from llama_index_graphrag_milvus.validation import (
    check_choice,
    check_int,
    check_optional_number,
)

OWN_RELATIONS_PER_PASSAGE = 5
"""A passage found by its own similarity carries its best own relations, at most this many."""


@dataclass(frozen=True)
class QueryContext:
    """One query as every method sees it."""

    text: str
    vector: list[float]
    similarity_top_k: int
    where: str = ""
    passage_search: str = "auto"
    """Where passage searches are ranked (``"auto"``, ``"memory"``, ``"milvus"``; see
    :func:`search_passages`)."""
    milvus_lite: bool = False
    """The index is on Milvus Lite, whose searches scan every row: ``relation_search="auto"``
    then ranks the relations in memory whatever their number (see
    :func:`plan_relation_search`)."""


MILVUS_LIMIT = "the largest search limit Milvus accepts is 16384"
SEED_SEARCHES = ("auto", "memory", "milvus")
"""Where the entity and relation seeds and the passages are searched (``entity_search``,
``relation_search``, ``passage_search``)."""

MEMORY_SEARCH_MAX_FLOATS = 20_000_000
"""``"auto"`` searches in memory while ``rows * dim`` (relations for the relation search,
entities for the entity search, passages for the passage searches) is at most this: about
52,000 rows of 384 dimensions, 5 to 10 ms per query on one core; Milvus above it."""


@dataclass(frozen=True)
class SeedConfig:
    """The seed searches: entities (per NER name, or the query) and relations (the query).

    ``relation_search`` and ``entity_search``: ``"memory"`` ranks the relations (entities)
    by the vectors held in memory (exact, no Milvus call: the graph holds the relation
    vectors and texts, the index's entity table the entity vectors and names), ``"milvus"``
    searches the collection, ``"auto"`` (default) takes memory up to
    :data:`MEMORY_SEARCH_MAX_FLOATS`.
    """

    entity_top_k: int = 3
    relation_top_k: int = 3
    entity_threshold: float | None = None
    relation_threshold: float | None = None
    relation_search: str = "auto"
    entity_search: str = "auto"

    def __post_init__(self) -> None:
        check_int("entity_top_k", self.entity_top_k, maximum=MILVUS_MAX_TOP_K,
                  hint=MILVUS_LIMIT)
        check_int("relation_top_k", self.relation_top_k, maximum=MILVUS_MAX_TOP_K,
                  hint=MILVUS_LIMIT)
        check_optional_number("entity_similarity_threshold", self.entity_threshold,
                              hint="a cosine similarity, usually between -1 and 1")
        check_optional_number("relation_similarity_threshold", self.relation_threshold,
                              hint="a cosine similarity, usually between -1 and 1")
        check_choice("relation_search", self.relation_search, SEED_SEARCHES)
        check_choice("entity_search", self.entity_search, SEED_SEARCHES)


def in_memory(setting: str, rows: int, dim: int) -> bool:
    """Whether a seed search with this ``setting`` runs in memory for ``rows`` vectors."""
    return setting == "memory" or (setting == "auto"
                                   and rows * dim <= MEMORY_SEARCH_MAX_FLOATS)


@dataclass(frozen=True)
class RelationSearch:
    """How one query's relation seeds are found: ``hits`` found in memory (with their texts
    when the graph holds them, else still to read), or ``None`` for a Milvus search."""

    hits: tuple[RelationHit, ...] | None
    texts_known: bool = False

    def request(self, query: QueryContext, config: SeedConfig) -> Any:
        """The request: the Milvus search, the read of the in-memory hits' texts, or none."""
        if self.hits is None:
            return SearchRelations(query.vector, config.relation_top_k,
                                   config.relation_threshold)
        if self.texts_known:
            return Known(None)
        return GetRelationTexts(tuple(h.id for h in self.hits))

    def finish(self, answer: Any) -> list[RelationHit]:
        """The hits, from the request's answer (a relation whose text is gone from Milvus,
        deleted since the graph was loaded, is left out)."""
        if self.hits is None:
            return list(answer)
        if self.texts_known:
            return list(self.hits)
        return [replace(h, text=answer[h.id]) for h in self.hits if h.id in answer]


def plan_relation_search(query: QueryContext, config: SeedConfig) -> Plan[RelationSearch]:
    """Decide where the relation seeds come from; rank them now when it is memory (with
    ``"auto"``: up to :data:`MEMORY_SEARCH_MAX_FLOATS`, and always on Milvus Lite)."""
    if config.relation_search == "milvus":
        return RelationSearch(None)
    graph: EntityRelationGraph = yield LoadGraph()
    # the graph holds the relation vectors anyway: the budget only bounds the scan's time,
    # and a Milvus Lite search scans them too, slower than numpy (2.3 s against about 25 ms
    # for a million relations of 64 dimensions)
    if not (in_memory(config.relation_search, graph.num_relations, graph.vectors.shape[1])
            or (config.relation_search == "auto" and query.milvus_lite)):
        return RelationSearch(None)
    rows, scores = graph.nearest_relations(query.vector, config.relation_top_k,
                                           config.relation_threshold)
    ends = graph.endpoints[rows]
    texts = graph.texts.get(rows) if graph.texts is not None else [""] * len(rows)
    return RelationSearch(tuple(
        RelationHit(rid, text, float(score), graph.entity_ids[int(subject)],
                    graph.entity_ids[int(obj)])
        for rid, text, score, (subject, obj) in zip(
            graph.relation_ids.ids(rows), texts, scores.tolist(), ends.tolist(), strict=True)),
        texts_known=graph.texts is not None)


def search_relations(query: QueryContext, config: SeedConfig) -> Plan[list[RelationHit]]:
    """The relation seeds alone (in memory or in Milvus, see :class:`SeedConfig`)."""
    search = yield from plan_relation_search(query, config)
    return search.finish((yield search.request(query, config)))


def entity_search(vectors: Sequence[Sequence[float]], names: Sequence[str], top_k: int,
                  threshold: float | None, setting: str) -> Plan[Any]:
    """The request that answers an entity seed search (hits per searched name): the hits
    found in the index's entity table (``Known``), or the Milvus search."""
    if setting != "milvus":
        graph: EntityRelationGraph = yield LoadGraph()
        if in_memory(setting, graph.num_entities, graph.vectors.shape[1]):
            table: EntityTable = yield LoadEntities()
            return Known(table.search(vectors, names, top_k, threshold))
    return SearchEntities(vectors, tuple(names), top_k, threshold)


def rank_in_memory(query: QueryContext, vectors: Sequence[Sequence[float]], limit: int,
                  ids: Sequence[str] | None = None
                  ) -> Plan[list[list[tuple[str, float]]] | None]:
    """Per vector, the ``limit`` passages (among ``ids`` when given) most similar to it, as
    ``(id, similarity)``, ranked by the index's passage table; ``None`` when the search
    belongs to Milvus: ``query.passage_search`` is ``"milvus"``, a filter applies (filters
    are Milvus expressions), or, with ``"auto"``, the passage vectors exceed
    :data:`MEMORY_SEARCH_MAX_FLOATS` floats."""
    if query.where or query.passage_search == "milvus":
        return None
    table: PassageTable | None = yield LoadPassages(
        None if query.passage_search == "memory" else MEMORY_SEARCH_MAX_FLOATS)
    # the limit a Milvus search accepts, so that both paths return the same passages
    return None if table is None else table.search(vectors, min(limit, MILVUS_MAX_TOP_K), ids)


def fetch_passages(ids: Sequence[str]) -> Plan[dict[str, BaseNode]]:
    """The passages of ``ids`` by primary key (one Milvus read); a passage deleted by
    another writer since the passage table was read is left out."""
    wanted = tuple(dict.fromkeys(ids))
    return {n.node_id: n for n in (yield GetPassages(wanted))} if wanted else {}


def search_passages(query: QueryContext, vectors: Sequence[Sequence[float]], limit: int,
                    ids: Sequence[str] | None = None
                    ) -> Plan[list[list[tuple[BaseNode, float]]]]:
    """One batched passage search: per vector, the ``limit`` most similar passages (among
    ``ids`` when given), best first: ranked in memory and read by primary key (a read is
    cheaper than a search), or one Milvus search (see :func:`rank_in_memory`)."""
    ranked = yield from rank_in_memory(query, vectors, limit, ids)
    if ranked is None:
        return (yield SearchPassages(tuple(list(v) for v in vectors), limit,
                                     None if ids is None else tuple(ids), query.where))
    nodes = yield from fetch_passages([pid for hits in ranked for pid, _ in hits])
    return [[(nodes[pid], score) for pid, score in hits if pid in nodes] for hits in ranked]


def read_relation_texts(ids: Sequence[str], seeds: Seeds | None = None
                        ) -> Plan[dict[str, str]]:
    """Texts of relation ``ids``: those of the relation seeds, then the in-memory graph's,
    and one Milvus read for the rest (none when the graph holds every text)."""
    wanted = list(dict.fromkeys(ids))
    texts = {h.id: h.text for h in (seeds.relations if seeds else ()) if h.text}
    graph: EntityRelationGraph = yield LoadGraph()
    texts.update(graph.relation_texts(rid for rid in wanted if rid not in texts))
    missing = tuple(rid for rid in wanted if rid not in texts)
    if missing:
        texts.update((yield GetRelationTexts(missing)))
    return texts


def find_seeds(query: QueryContext, config: SeedConfig, *alongside: Any
               ) -> Plan[tuple[Seeds, tuple[Any, ...]]]:
    """NER (when an LLM is given), then the entity and relation searches at the same time,
    with any ``alongside`` requests; returns the seeds and the answers of those requests."""
    names = yield Ner(query.text)
    vectors = (yield EmbedTexts(tuple(names))) if names else [query.vector]
    relations = yield from plan_relation_search(query, config)
    entities = yield from entity_search(vectors, names or [query.text], config.entity_top_k,
                                        config.entity_threshold, config.entity_search)
    entity_hits, relation_answer, *others = yield Together((
        entities,
        relations.request(query, config),
        *alongside,
    ))
    seeds = Seeds(tuple(h for hits in entity_hits for h in hits),
                  tuple(relations.finish(relation_answer)))
    return seeds, tuple(others)


def expand(graph: EntityRelationGraph, query: QueryContext, seeds: Seeds,
           config: ExpansionConfig) -> list[CandidateRelation]:
    """The bounded k-hop candidate pool of the seeds, best first."""
    if graph.num_relations == 0:
        raise EmptyIndexError("the index holds passages but no relations; ingest triplets")
    return graph.expand(query.vector, [h.id for h in seeds.entities],
                        [h.id for h in seeds.relations], config)


def by_own_similarity(query: QueryContext, reason: str) -> Plan[list[NodeWithScore]]:
    """Passages ranked by their own similarity to the query (naive vector search, filters
    applied), each with its best own relations: the result when the graph gives nothing."""
    hits = first((yield from search_passages(query, (query.vector,), query.similarity_top_k)))
    graph: EntityRelationGraph = yield LoadGraph()
    return with_own_relations(graph, query, [
        Result(node, score, metadata={FOUND_BY_KEY: {"query": reason, "similarity": score}})
        for node, score in hits])


@dataclass(frozen=True)
class Result:
    """A passage a method returns: its score, the relations that reached it (first in its
    relation list) and the metadata it adds."""

    node: BaseNode
    score: float | None
    first_relations: Sequence[CandidateRelation] = ()
    metadata: dict[str, Any] | None = None


def with_own_relations(graph: EntityRelationGraph, query: QueryContext,
                       results: Sequence[Result]) -> list[NodeWithScore]:
    """The results, each with ``first_relations`` then its passage's own best relations
    (by similarity to the query, at most :data:`OWN_RELATIONS_PER_PASSAGE`)."""
    limit = OWN_RELATIONS_PER_PASSAGE + max((len(r.first_relations) for r in results),
                                            default=0)
    owns = own_candidates(graph, query, [r.node for r in results], limit)
    nodes = []
    for result, own in zip(results, owns, strict=True):
        taken = {c.id for c in result.first_relations}
        kept = [c for c in own if c.id not in taken][:OWN_RELATIONS_PER_PASSAGE]
        nodes.append(as_result(result.node, result.score, [*result.first_relations, *kept],
                               **(result.metadata or {})))
    return nodes


def own_candidates(graph: EntityRelationGraph, query: QueryContext, nodes: Sequence[BaseNode],
                   limit: int) -> list[list[CandidateRelation]]:
    """Each passage's own relations, best first: from the graph (its links and texts in
    memory, one matrix product for all), or, for a graph built without texts, from the
    passages' stored triplets."""
    if graph.texts is None:
        owns = []
        for node in nodes:
            triplet_ids = [t.id for t in own_triplets(node)]
            scores = graph.relation_scores(triplet_ids, query.vector) if triplet_ids else {}
            owns.append(own_relations(node, scores, 1, limit))
        return owns
    texts = graph.texts
    return [[CandidateRelation(id=rid, score=similarity, hop=1, text=text,
                               passage_ids=(node.node_id,))
             for rid, similarity, text in zip(graph.relation_ids.ids(rows),
                                              similarities.tolist(), texts.get(rows),
                                              strict=True)]
            for node, (rows, similarities) in zip(
                nodes, graph.own_relations([n.node_id for n in nodes], query.vector, limit),
                strict=True)]


class RetrievalMethod(ABC):
    """How one retrieval method selects relations and ranks passages."""

    name: ClassVar[str]

    @abstractmethod
    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        """The method's steps for one query (see :mod:`.io`)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The method's own settings, for logs and benchmark reports."""
