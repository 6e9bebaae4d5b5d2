"""The collector a retrieval fills in while :meth:`GraphRAGRetriever.explain` runs it.

Every retrieval method carries a few hook lines, ``if query.trace: query.trace.on_...(...)``:
``QueryContext.trace`` is ``None`` for ``retrieve`` and ``aretrieve``, so a normal retrieval
collects nothing and pays one attribute test per hook. Under ``explain`` the hooks hand the
:class:`Trace` the objects the method computed anyway (seeds, bridges, lists, pool, PageRank
masses, subgraph, local context); the trace keeps references and copies small slices, and
:mod:`~llama_index_graphrag_milvus.explain.assemble` turns them into an
:class:`~llama_index_graphrag_milvus.explain.explanation.Explanation` afterwards.

>>> from llama_index_graphrag_milvus.records import RelationHit
>>> trace = Trace()
>>> trace.on_relation_hits([RelationHit("r1", "Euler was a student of Johann Bernoulli", 0.8)])
>>> [h.id for h in trace.relation_hits]
['r1']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.records import CandidateRelation, EntityHit, RelationHit

if TYPE_CHECKING:
    import numpy as np

    from llama_index_graphrag_milvus.records import CommunityReport
    from llama_index_graphrag_milvus.retrieval.bridge import Bridge
    from llama_index_graphrag_milvus.retrieval.pcst import ChosenSubgraph
    from llama_index_graphrag_milvus.retrieval.seeds import Seeds

TOP_PAGERANK_ENTITIES = 15
"""PageRank entities an explanation keeps (the heaviest)."""
MAX_LISTED_PASSAGES = 50
"""Passages kept per candidate list of the second hop."""


def _passage_id(item: Any) -> str:
    """The id of a list entry's passage: a node, or already an id."""
    return item.node_id if isinstance(item, BaseNode) else str(item)


class Trace:
    """What one retrieval did, as its method reported it (see the module docstring).

    One trace per ``explain`` call; not shared between queries or threads.
    """

    def __init__(self) -> None:
        self.entity_hits: list[EntityHit] = []
        self.relation_hits: list[RelationHit] = []
        self.pool: list[CandidateRelation] = []
        self.bridges: list[tuple[Bridge, str]] = []
        self.lists: list[list[tuple[str, float]]] = []
        self.pagerank: list[tuple[str, float]] = []
        self.subgraph: ChosenSubgraph | None = None
        self.context_entities: list[EntityHit] = []
        self.context_relations: list[CandidateRelation] = []
        self.reports: list[tuple[CommunityReport, int]] = []
        self.notes: list[str] = []
        self.query_embedding_s = 0.0
        self.milvus_requests: int | None = None
        """The Milvus requests the method sent (``explain`` counts them)."""

    # ------------------------------------------------------------------ the hooks

    def on_query_embedding(self, seconds: float) -> None:
        """The time the question's embedding took (0 when the caller gave the vector)."""
        self.query_embedding_s = seconds

    def on_note(self, note: str) -> None:
        """Something the method did that the reader should know (a fallback, an
        approximation), shown in the explanation's notes."""
        self.notes.append(note)

    def on_relation_hits(self, hits: Sequence[RelationHit]) -> None:
        """The relations most similar to the question (the relation seeds)."""
        self.relation_hits = list(hits)

    def on_seeds(self, seeds: Seeds, candidates: Sequence[CandidateRelation] = ()) -> None:
        """The entity and relation seeds and the k-hop pool they expanded into."""
        self.entity_hits = list(seeds.entities)
        self.relation_hits = list(seeds.relations)
        self.pool = list(candidates)

    def on_bridges(self, bridges: Sequence[Bridge], queries: Sequence[str]) -> None:
        """The chosen bridges and their second queries, in list order (list ``i + 1``)."""
        self.bridges = list(zip(bridges, queries, strict=True))

    def on_lists(self, lists: Sequence[Sequence[tuple[Any, float]]]) -> None:
        """The second hop's passage lists before interleaving: the question's, then each
        bridge's, as ``(node or id, similarity)``."""
        self.lists = [[(_passage_id(item), float(score)) for item, score in hits[
            :MAX_LISTED_PASSAGES]] for hits in lists]

    def on_pagerank(self, entity_ids: Sequence[str], masses: np.ndarray, iterations: int = 0,
                    converged: bool = True) -> None:
        """The PageRank mass of the neighbourhood's entities (the heaviest are kept), and how
        the iteration ended (a note when it stopped before converging)."""
        order = sorted(range(len(entity_ids)), key=lambda i: (-float(masses[i]), i))
        self.pagerank = [(entity_ids[i], float(masses[i]))
                         for i in order[:TOP_PAGERANK_ENTITIES] if masses[i] > 0]
        if not converged:
            self.on_note(f"PageRank stopped after {iterations} iterations before converging: "
                         "the masses are approximate (raise max_iterations)")

    def on_subgraph(self, chosen: ChosenSubgraph) -> None:
        """The prize-collecting Steiner tree the solver chose."""
        self.subgraph = chosen

    def on_local_context(self, entities: Sequence[EntityHit],
                         relations: Sequence[CandidateRelation],
                         reports: Sequence[tuple[CommunityReport, int]]) -> None:
        """Local search's entities, relations and ranked community reports (with the
        number of the entities' passages in each), before the token budget."""
        self.context_entities = list(entities)
        self.context_relations = list(relations)
        self.reports = list(reports)
