"""Prize-collecting Steiner tree subgraph retrieval (G-Retriever), ``passage_scoring="pcst"``.

The same seeds and bounded k-hop expansion as the k-hop method give the neighbourhood (the
candidate pool, ``max_candidate_relations`` relations at most: the solver never sees more).
On it (:mod:`llama_index_graphrag_milvus.graph.steiner_tree`):

- prizes: the ``pcst_entity_prizes`` best entity-search hits (NER names with an LLM, else the
  query vector) get ``k .. 1`` by similarity, the ``pcst_relation_prizes`` relations of the
  pool most similar to the query get ``k .. 1``, everything else 0;
- every relation costs ``pcst_edge_cost``; a relation whose prize exceeds it becomes a virtual
  node, as G-Retriever does;
- the solver returns one connected tree per component that holds a prize.

The passages of the chosen relations are returned ranked by their own similarity to the query
(one filtered Milvus search, which is also the fetch), each with the chosen relations that
reached it in ``metadata["graphrag_relations"]`` and the whole subgraph in
``metadata["graphrag_subgraph"]``: entity names, relation texts, and G-Retriever's textual
form (a CSV of nodes, then of edges), limited to relations whose passages pass the filters.
With ``pcst_subgraph_node=True`` that text also comes first as a node of its own, for the
LLM.

Edges: seeds that reach nothing give the passages' own similarity (as every method); no prize
in the neighbourhood, a subgraph without a relation, or a solver error
(:class:`~llama_index_graphrag_milvus.errors.SolverError`) give the k-hop pool's passages
(``passage_scoring="passage"``), a warning and a note in the explanation.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_graphrag_milvus.errors import SolverError
from llama_index_graphrag_milvus.graph import ExpansionConfig
from llama_index_graphrag_milvus.graph.steiner_tree import (
    DEFAULT_RELATION_PRIZES,
    PCSTConfig,
    Solver,
    load_solver,
    rank_prizes,
    solve,
    textualize,
)
from llama_index_graphrag_milvus.metadata import (
    FOUND_BY_KEY,
    RETRIEVAL_KEYS,
    SUBGRAPH_KEY,
    TIMINGS_KEY,
    hide_from_models,
)
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION
from llama_index_graphrag_milvus.records import CandidateRelation
from llama_index_graphrag_milvus.retrieval.khop import pool_results
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.neighbourhood import (
    expand_pool,
    expansion_of,
    expansion_settings,
)
from llama_index_graphrag_milvus.retrieval.passages import (
    by_own_similarity,
    read_relation_texts,
    search_passages,
)
from llama_index_graphrag_milvus.retrieval.requests import Plan, first
from llama_index_graphrag_milvus.retrieval.seeds import Seeds, find_seeds
from llama_index_graphrag_milvus.retrieval.steps import (
    ScoredPassages,
    as_result,
    attached_relations,
    own_triplets,
    select_passages,
)
from llama_index_graphrag_milvus.validation import check_instance

logger = logging.getLogger(__name__)

SUBGRAPH_NODE_PREFIX = "graphrag-subgraph-"
"""Node id prefix of the optional subgraph node (``pcst_subgraph_node=True``)."""


@dataclass(frozen=True)
class ChosenSubgraph:
    """What the solver chose in one query's neighbourhood."""

    relations: list[CandidateRelation]
    """The chosen relations, in the pool's order (most similar to the query first)."""
    endpoints: dict[str, tuple[str, str]]
    """Subject and object entity ids of each chosen relation."""
    entities: list[str]
    """Ids of the chosen entities (endpoints of the chosen relations, and prized entities
    the solver kept on their own)."""
    trees: int
    """Connected components the solver was asked for."""
    seconds: float
    """Time of the prizes and the solve."""


def choose_subgraph(seeds: Seeds, candidates: Sequence[CandidateRelation],
                    config: PCSTConfig, solver: Solver | None = None) -> ChosenSubgraph:
    """The PCST subgraph of the candidate pool (pure: the records and the solver).

    ``candidates`` come best first, with their similarity and ends (relations without ends
    are left out). Entity prizes go to the best entity-search hits, relation prizes to the
    pool's relations most similar to the query. The entities are numbered by id (the order
    of the in-memory graph's rows), so the solver sees the same problem whichever source
    read the pool.
    """
    started = time.perf_counter()
    kept = [c for c in candidates if c.subject_id and c.object_id]
    ends = np.array([(c.subject_id, c.object_id) for c in kept], dtype=object).reshape(-1, 2)
    nodes, local = np.unique(ends.astype(str), return_inverse=True)
    local = local.reshape(-1, 2)
    position = {key: i for i, key in enumerate(nodes.tolist())}
    best: dict[int, float] = {}  # entity position in the problem -> best hit similarity
    for hit in seeds.entities:
        if hit.id in position:
            best[position[hit.id]] = max(best.get(position[hit.id], -np.inf), hit.score)
    node_prizes = np.zeros(nodes.size)
    if best:
        node_prizes[list(best)] = rank_prizes(list(best.values()), config.entity_prizes)
    edge_prizes = rank_prizes([c.score for c in kept], config.relation_prizes)
    subgraph = solve(local, node_prizes, edge_prizes, config.edge_cost, solver)
    chosen = [kept[i] for i in subgraph.edges.tolist()]
    endpoints = {c.id: (c.subject_id, c.object_id) for c in chosen}
    return ChosenSubgraph(chosen, endpoints, [str(e) for e in nodes[subgraph.nodes].tolist()],
                          subgraph.trees, time.perf_counter() - started)


def describe_subgraph(chosen: ChosenSubgraph, hits: ScoredPassages, seeds: Seeds,
                      texts: dict[str, str]) -> dict[str, Any]:
    """``metadata["graphrag_subgraph"]``: the chosen relations that have a passage among
    ``hits`` (the filters' view), their entities, and G-Retriever's text of them.

    Entity names and predicates come from the passages' own triplets; a relation without one
    (a passage written by other tools) is an edge labelled with its whole text between
    entities named by their ids when no other triplet or seed names them.
    """
    visible = {node.node_id for node, _ in hits}
    relations = [c for c in chosen.relations if visible.intersection(c.passage_ids)]
    triplets = {t.id: t for node, _ in hits for t in own_triplets(node)}
    names = {hit.id: hit.name for hit in seeds.entities}
    for triplet in triplets.values():
        names.setdefault(triplet.subject_id, triplet.subject)
        names.setdefault(triplet.object_id, triplet.object)
    order: dict[str, int] = {}
    edges: list[tuple[int, str, int]] = []
    for relation in relations:
        subject, obj = chosen.endpoints[relation.id]
        known = triplets.get(relation.id)
        predicate = known.predicate if known else texts.get(relation.id, relation.id)
        source = order.setdefault(subject, len(order))
        target = order.setdefault(obj, len(order))
        edges.append((source, predicate, target))
    entities = [names.get(eid, eid) for eid in order]
    return {"entities": entities,
            "relations": [texts.get(c.id, c.text) for c in relations],
            "passages": len(visible),
            "trees": chosen.trees,
            "text": textualize(entities, edges)}


def subgraph_node(subgraph: dict[str, Any], score: float | None) -> NodeWithScore:
    """The subgraph's text as a node of its own, for the LLM (its id is a hash of the text)."""
    text = subgraph["text"]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    node = TextNode(id_=SUBGRAPH_NODE_PREFIX + digest,
                    text="Knowledge graph (nodes, then edges):\n" + text,
                    metadata={SUBGRAPH_KEY: subgraph, FOUND_BY_KEY: {"query": "pcst subgraph"}})
    hide_from_models(node, *RETRIEVAL_KEYS)
    return NodeWithScore(node=node, score=score)


class PCSTRetrieval(RetrievalMethod):
    """Passages of the prize-collecting Steiner tree chosen in the query's neighbourhood
    (G-Retriever; see the module docstring). Needs the ``[pcst]`` extra.

    Args:
        hops: expansion steps of the pool around the seeds. Default 1.
        expansion: the other bounds of the pool (:class:`~llama_index_graphrag_milvus.
            graph.ExpansionConfig`).
        entity_prizes: entity-search hits that get a prize (``k .. 1`` by similarity).
            Default 3 (G-Retriever).
        relation_prizes: pool relations that get a prize (``k .. 1`` by similarity); more
            gives a larger subgraph. Default 20 (G-Retriever: 3; see
            :data:`~llama_index_graphrag_milvus.graph.steiner_tree.DEFAULT_RELATION_PRIZES`).
        edge_cost: cost of every relation; higher gives a smaller subgraph. Default 0.5.
        subgraph_node: put the subgraph's text first, as a node of its own, for the LLM.
            Default ``False``.
        solver: ``pcst_fast.pcst_fast`` (default) or a stand-in with its signature.

    Example::

        retriever = index.as_retriever(method=PCSTRetrieval(relation_prizes=10))
        print(retriever.retrieve("...")[0].node.metadata["graphrag_subgraph"]["text"])
    """

    name: ClassVar[str] = "pcst"

    def __init__(self, hops: int | None = None, expansion: ExpansionConfig | None = None,
                 entity_prizes: int = 3, relation_prizes: int = DEFAULT_RELATION_PRIZES,
                 edge_cost: float = 0.5, subgraph_node: bool = False,
                 solver: Solver | None = None) -> None:
        check_instance("pcst_subgraph_node", subgraph_node, bool, "True or False")
        self.expansion = expansion_of(hops, expansion)
        self.config = PCSTConfig(entity_prizes, relation_prizes, edge_cost)
        self.subgraph_node = subgraph_node
        self.solver = solver

    def plan(self, query: QueryContext, seeds_config: SeedConfig) -> Plan[list[NodeWithScore]]:
        solver = self.solver or load_solver()  # a missing extra is an error, not a fallback
        seeds, _ = yield from find_seeds(query, seeds_config)
        candidates = yield from expand_pool(query, seeds, self.expansion)
        if query.trace:
            query.trace.on_seeds(seeds, candidates)
        if not candidates:
            return (yield from by_own_similarity(query, "question (the seeds reach nothing)"))
        try:
            chosen = choose_subgraph(seeds, candidates, self.config, solver)
        except SolverError as exc:  # the k-hop answer beats no answer
            return (yield from self._fallback(query, seeds, candidates,
                                              f"{exc}; the k-hop pool's passages are "
                                              "returned instead"))
        if query.trace:
            query.trace.on_subgraph(chosen)
        if not chosen.relations:
            return (yield from self._fallback(
                query, seeds, candidates, "the PCST subgraph holds no relation (no prize in "
                "the neighbourhood, or only a lone entity); the k-hop pool's passages are "
                "returned instead"))
        pool = select_passages(chosen.relations,
                               len(chosen.relations) * MAX_PASSAGES_PER_RELATION)
        hits: ScoredPassages = first((yield from search_passages(
            query, (query.vector,), len(pool), tuple(pool))))
        if not hits:
            return (yield from by_own_similarity(
                query, "question (the filters exclude the subgraph's passages)"))
        texts = yield from read_relation_texts(attached_relations(hits, pool), seeds,
                                               chosen.relations)
        subgraph = describe_subgraph(chosen, hits, seeds, texts)
        results = [as_result(node, score, pool[node.node_id], texts,
                             **{FOUND_BY_KEY: {"query": "pcst", "similarity": score},
                                TIMINGS_KEY: {"pcst": chosen.seconds},
                                SUBGRAPH_KEY: copy.deepcopy(subgraph)})
                   for node, score in hits[:query.similarity_top_k]]
        if self.subgraph_node:
            results.insert(0, subgraph_node(subgraph, results[0].score))
        return results

    @staticmethod
    def _fallback(query: QueryContext, seeds: Seeds, candidates: Sequence[CandidateRelation],
                  why: str) -> Plan[list[NodeWithScore]]:
        """The k-hop pool's passages, with a warning and a note in the explanation."""
        logger.warning("%s", why)
        if query.trace:
            query.trace.on_note(why)
        return (yield from pool_results(query, seeds, candidates))

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": "pcst",
                "pcst_entity_prizes": self.config.entity_prizes,
                "pcst_relation_prizes": self.config.relation_prizes,
                "pcst_edge_cost": self.config.edge_cost,
                "pcst_subgraph_node": self.subgraph_node, **expansion_settings(self.expansion)}
