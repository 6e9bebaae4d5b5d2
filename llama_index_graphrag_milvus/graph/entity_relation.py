"""The in-memory entity-relation graph and its k-hop expansion.

The graph is a cache of the relation collection (Milvus is the truth): a scipy CSR incidence
matrix (entities x relations), the two endpoints of every relation, the passages of every
relation (another CSR) and the relation vectors used to prune candidates by similarity.

Expansion is per query and touches only the edges it walks: the frontier's entities select
their rows of the incidence matrix (a sparse frontier vector times the matrix), new relations
are scored against the query and capped *before* the next hop, so that one hub entity with
tens of thousands of relations cannot flood the pool. ``A^T A`` or its powers are never built.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import scipy.sparse as sp
from llama_index.core.utils import get_tqdm_iterable

from llama_index_graphrag_milvus.extraction.kinds import KIND_CODES
from llama_index_graphrag_milvus.graph.hubs import HubIndex
from llama_index_graphrag_milvus.graph.tables import IdTable, TextTable, nearest_rows, unit_rows
from llama_index_graphrag_milvus.records import CandidateRelation, RelationColumns
from llama_index_graphrag_milvus.validation import check_int, check_optional_int

logger = logging.getLogger(__name__)

_EMPTY = np.zeros(0, dtype=np.int64)

_KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}
DEFAULT_HUB_DEGREE = 500
"""Entities with more relations than this are hubs: expansion probes their closest clusters."""


def _unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based: faster than numpy's hash path on int arrays)."""
    if values.size == 0:
        return values.astype(np.int64)
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))].astype(np.int64)


def _top(indices: np.ndarray, scores: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``limit`` best-scoring ``indices`` (ties broken by index), best first."""
    if indices.size > 2 * limit:
        # keep everything that scores at least the limit-th best, ties included
        threshold = np.partition(scores, indices.size - limit)[indices.size - limit]
        keep = scores >= threshold
        indices, scores = indices[keep], scores[keep]
    order = np.lexsort((indices, -scores))[:limit]
    return indices[order], scores[order]


@dataclass(frozen=True)
class ExpansionConfig:
    """How far and how wide one expansion goes.

    Args:
        hops: expansion steps after hop 0 (relations touching a seed entity, plus the
            relation-search hits). ``hops=1`` adds the relations that share an entity with a
            hop-0 relation, as the tutorial's first-degree expansion does.
        per_hop_max_relations: at most this many new relations survive each hop (by
            similarity to the query) and seed the next one.
        max_candidate_relations: size of the final pool, by similarity to the query.
        per_hop_max_entities: at most this many entities are expanded per hop, those
            reached by the most similar relations first.
        max_relations_per_passage: when set, a relation enters the final pool only while
            one of its passages has fewer than this many relations in the pool, so that the
            many near-duplicate relations of one passage cannot fill it (``None``: no cap).
        per_hop_max_hub_relations: relations probed per hop across all the hub entities of
            that hop, shared equally among them (each hub gets at least its closest cluster,
            and never more than ``hub_degree``). On a large power-law graph most of a hop's
            entities are hubs; this keeps the relations a hop touches about constant.
    """

    hops: int = 1
    per_hop_max_relations: int = 200
    max_candidate_relations: int = 100
    per_hop_max_entities: int = 50
    max_relations_per_passage: int | None = None
    per_hop_max_hub_relations: int = 2000

    def __post_init__(self) -> None:
        check_int("hops", self.hops, minimum=0)
        for name in ("per_hop_max_relations", "max_candidate_relations",
                     "per_hop_max_entities", "per_hop_max_hub_relations"):
            check_int(name, getattr(self, name))
        check_optional_int("max_relations_per_passage", self.max_relations_per_passage)


def _csr_row(matrix: sp.csr_matrix, row: int) -> np.ndarray:
    """The column indices of one CSR row (a view, no copy)."""
    return matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]]


def _csr_nbytes(matrix: sp.csr_matrix) -> int:
    return int(matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes)


class EntityRelationGraph:
    """Entities, relations and their passages as sparse matrices, plus relation vectors.

    Build it with :meth:`from_rows` (rows of the relation collection); the index does that
    from Milvus on first use and after its own writes. Memory: about 40 to 60 bytes per
    relation for the structure (see :meth:`memory`), plus ``4 * dim`` bytes per relation for
    the vectors used to prune candidates by similarity.

    Example:
        >>> rows = [
        ...     {"id": "r1", "subject_id": "a", "object_id": "b", "passage_ids": ["p1"],
        ...      "embedding": [1.0, 0.0]},
        ...     {"id": "r2", "subject_id": "b", "object_id": "c", "passage_ids": ["p2"],
        ...      "embedding": [0.0, 1.0]},
        ... ]
        >>> graph = EntityRelationGraph.from_rows([rows], dim=2)
        >>> [c.id for c in graph.expand([1.0, 0.0], ["a"], [], ExpansionConfig(hops=1))]
        ['r1', 'r2']
    """

    def __init__(
        self,
        relation_ids: IdTable,
        endpoints: np.ndarray,
        entity_ids: IdTable,
        relation_passages: sp.csr_matrix,
        passage_ids: IdTable,
        vectors: np.ndarray,
        hub_degree: int = DEFAULT_HUB_DEGREE,
        texts: TextTable | None = None,
        kinds: np.ndarray | None = None,
    ) -> None:
        self.relation_ids = relation_ids
        self.texts = texts
        self.kinds = kinds
        """Per relation row, the recorded kind codes of its subject and object
        (:data:`~llama_index_graphrag_milvus.extraction.kinds.KIND_CODES`), or ``None`` when the
        collection records none."""
        self.entity_ids = entity_ids
        self.passage_ids = passage_ids
        self.endpoints = endpoints
        self.vectors = vectors
        self.relation_passages = relation_passages
        num_relations = len(relation_ids)
        rows = endpoints.T.ravel()
        cols = np.tile(np.arange(num_relations, dtype=np.int32), 2)
        incidence = sp.csr_matrix(
            (np.ones(rows.size, dtype=np.bool_), (rows, cols)),
            shape=(len(entity_ids), num_relations),
        )
        incidence.sum_duplicates()
        self.incidence = incidence
        self.hubs = HubIndex.build(incidence, vectors, hub_degree)
        self._passage_relations: sp.csr_matrix | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_rows(cls, batches: Iterable[Sequence[dict[str, Any]]], dim: int,
                  show_progress: bool = False, hub_degree: int = DEFAULT_HUB_DEGREE
                  ) -> EntityRelationGraph:
        """Build the graph from batches of relation rows (``id``, ``subject_id``,
        ``object_id``, ``passage_ids``, ``embedding``), in any order."""
        return cls.from_columns((RelationColumns.from_rows(batch, dim) for batch in batches),
                                dim, show_progress, hub_degree)

    @classmethod
    def from_columns(cls, batches: Iterable[RelationColumns], dim: int,
                     show_progress: bool = False, hub_degree: int = DEFAULT_HUB_DEGREE
                     ) -> EntityRelationGraph:
        """Build the graph from batches of relation columns, in any order (what
        :meth:`MilvusGraphStore.read_relations` yields)."""
        relation_ids: list[str] = []
        endpoint_ids: tuple[list[str], list[str]] = ([], [])
        passage_counts: list[int] = []
        passage_flat: list[str] = []
        vector_chunks: list[np.ndarray] = [np.zeros((0, dim), np.float32)]
        texts: list[str] | None = []
        kinds: list[tuple[str, str]] | None = []
        for batch in get_tqdm_iterable(batches, show_progress, "Building the graph"):
            relation_ids.extend(batch.ids)
            endpoint_ids[0].extend(batch.subject_ids)
            endpoint_ids[1].extend(batch.object_ids)
            passage_counts.extend(map(len, batch.passage_ids))
            passage_flat.extend(chain.from_iterable(batch.passage_ids))
            vector_chunks.append(np.asarray(batch.embeddings, np.float32).reshape(-1, dim))
            if texts is not None and batch.texts is not None:
                texts.extend(batch.texts)
            elif len(batch):
                texts = None  # a batch without texts: the texts are read from Milvus
            if kinds is not None and batch.kinds is not None:
                kinds.extend(batch.kinds)
            elif len(batch):
                kinds = None  # a collection written before kinds were recorded
        relation_keys = IdTable.encode(relation_ids)
        order = np.argsort(relation_keys, kind="stable")
        entities, endpoint_rows = IdTable.build(endpoint_ids[0] + endpoint_ids[1])
        endpoints = np.ascontiguousarray(endpoint_rows.reshape(2, -1).T[order])
        passages, passage_rows = IdTable.build(passage_flat)
        indptr = np.concatenate([[0], np.cumsum(passage_counts, dtype=np.int64)])
        relation_passages = sp.csr_matrix(
            (np.ones(passage_rows.size, dtype=np.bool_), passage_rows, indptr),
            shape=(len(relation_ids), len(passages)),
        )[order]
        vectors = unit_rows(np.concatenate(vector_chunks)[order])
        kind_codes = None if not kinds else np.array(
            [(KIND_CODES.get(s, 0), KIND_CODES.get(o, 0)) for s, o in kinds],
            np.uint8).reshape(-1, 2)[order]
        return cls(IdTable(relation_keys[order]), endpoints, entities, relation_passages,
                   passages, vectors, hub_degree,
                   None if texts is None else TextTable.build(texts[int(i)] for i in order),
                   kind_codes)

    @property
    def num_relations(self) -> int:
        return len(self.relation_ids)

    @property
    def num_entities(self) -> int:
        return len(self.entity_ids)

    @property
    def num_passages(self) -> int:
        return len(self.passage_ids)

    @property
    def entity_degrees(self) -> np.ndarray:
        """Relations per entity row (its degree)."""
        return np.diff(self.incidence.indptr)

    def combined_degrees(self, relations: np.ndarray) -> np.ndarray:
        """Per relation row, the degrees of its subject and object added (Microsoft
        GraphRAG's rank of a relation)."""
        degrees = self.entity_degrees
        ends = self.endpoints[relations]
        return degrees[ends[:, 0]] + degrees[ends[:, 1]]

    @property
    def passage_relations(self) -> sp.csr_matrix:
        """Passages x relations (the transpose of ``relation_passages``): which relations
        each passage's triplets hold. With ``endpoints`` it is the entity-passage incidence
        that PageRank walks. Built on first use (about 4 bytes per relation-passage link),
        so that methods which never need it never pay for it."""
        with self._lock:
            if self._passage_relations is None:
                self._passage_relations = self.relation_passages.T.tocsr()
            return self._passage_relations

    def leads_elsewhere(self, entity: str, relation: str, probe: int = 64) -> bool:
        """Whether ``entity``'s relations reach a passage that ``relation`` does not come
        from (entities with more than ``probe`` relations are taken to). An entity named in
        one passage only leads nowhere new from it. Reads the CSR arrays directly: a few
        microseconds, no sparse-matrix slicing."""
        rows = self.entity_ids.lookup([entity])
        if rows.size == 0:
            return False
        relations = _csr_row(self.incidence, int(rows[0]))
        if relations.size > probe:
            return True
        links = self.relation_passages
        source = set()
        for row in self.relation_rows([relation]).tolist():
            source.update(_csr_row(links, row).tolist())
        return any(passage not in source
                   for row in relations.tolist() for passage in _csr_row(links, row).tolist())

    def entity_passages(self, entity: str, cap: int = 256) -> list[str]:
        """The distinct passages ``entity``'s relations come from, at most ``cap`` (in the
        order of its relations; empty for an entity the graph does not know), as the
        entity's row lists them on a served index: its relations are read until ``cap``
        passages are found or none is left, so a hub whose first relations share a few
        passages is still counted as one.

        >>> rows = [{"id": f"r{i:02d}", "subject_id": "hub", "object_id": f"e{i}",
        ...          "passage_ids": [f"p{i // 4}"], "embedding": [1.0, 0.0]} for i in range(12)]
        >>> EntityRelationGraph.from_rows([rows], dim=2).entity_passages("hub", 2)
        ['p0', 'p1']
        """
        rows = self.entity_ids.lookup([entity])
        if rows.size == 0:
            return []
        links = self.relation_passages
        passages: dict[int, None] = {}
        for row in _csr_row(self.incidence, int(rows[0])):
            passages.update(dict.fromkeys(_csr_row(links, int(row)).tolist()))
            if len(passages) >= cap:
                break
        return self.passage_ids.ids(np.fromiter(list(passages)[:cap], np.int64))

    def own_relations(self, passage_ids: Sequence[str], query_vector: Sequence[float]
                      | np.ndarray, limit: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per passage, the rows of the relations it supports (its triplets, as the relation
        collection links them), most similar to the query first (ties: the lower row), at
        most ``limit``, with their similarities; empty for a passage unknown to the graph.
        One matrix product for all the passages."""
        links = self.passage_relations
        rows = self.passage_ids.rows_of(passage_ids)
        segments = [_csr_row(links, int(row)) if row >= 0 else _EMPTY
                    for row in rows.tolist()]
        flat = np.concatenate([_EMPTY, *segments]).astype(np.int64)
        scores = self.vectors[flat] @ _unit(query_vector) if flat.size else np.zeros(0)
        ranked = []
        start = 0
        for segment in segments:
            relations, similarities = flat[start:start + segment.size], scores[
                start:start + segment.size]
            start += segment.size
            order = np.lexsort((relations, -similarities))[:max(limit, 0)]
            ranked.append((relations[order], similarities[order]))
        return ranked

    def relation_rows(self, ids: Iterable[str]) -> np.ndarray:
        """Rows of the known relation ``ids`` (sorted; unknown ids left out)."""
        return self.relation_ids.lookup(ids)

    def relation_scores(self, ids: Sequence[str], query_vector: Sequence[float] | np.ndarray
                        ) -> dict[str, float]:
        """Cosine similarity to the query of each known relation id (from the in-memory
        relation vectors: no Milvus call)."""
        rows = self.relation_rows(ids)
        scores = self.vectors[rows] @ _unit(query_vector) if rows.size else np.zeros(0)
        return dict(zip(self.relation_ids.ids(rows), scores.tolist(), strict=True))

    def relation_scores_of(self, rows: np.ndarray, query_vector: Sequence[float] | np.ndarray
                           ) -> np.ndarray:
        """Cosine similarity to the query of the relations at ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        return self.vectors[rows] @ _unit(query_vector) if rows.size else np.zeros(0)

    def nearest_relations(self, query_vector: Sequence[float] | np.ndarray, top_k: int,
                          threshold: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosine similarities of the ``top_k`` relations most similar to the query,
        best first (ties: the lower row), those below ``threshold`` left out: an exact search
        of the in-memory relation vectors, no Milvus call. It reads ``num_relations * dim``
        floats per query.

        >>> rows = [{"id": f"r{i}", "subject_id": "a", "object_id": f"e{i}",
        ...          "passage_ids": ["p"], "embedding": v}
        ...         for i, v in enumerate([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])]
        >>> graph = EntityRelationGraph.from_rows([rows], dim=2)
        >>> found, scores = graph.nearest_relations([1.0, 0.1], 2)
        >>> graph.relation_ids.ids(found), [round(s, 2) for s in scores.tolist()]
        (['r0', 'r1'], [1.0, 0.68])
        """
        return nearest_rows(self.vectors, np.asarray(query_vector)[None, :], top_k, threshold)[0]

    def endpoint_kinds(self, rows: np.ndarray) -> list[tuple[str, str]]:
        """The recorded kinds of the subject and object of relation ``rows`` (``""``: not
        recorded)."""
        if self.kinds is None:
            return [("", "")] * len(rows)
        return [(_KIND_NAMES[s], _KIND_NAMES[o]) for s, o in self.kinds[rows].tolist()]

    def relation_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """Texts of the known relation ``ids`` held in memory (none when the graph was built
        without texts)."""
        if self.texts is None:
            return {}
        rows = self.relation_rows(ids)
        return dict(zip(self.relation_ids.ids(rows), self.texts.get(rows), strict=True))

    def memory(self) -> dict[str, int]:
        """Bytes held: ``structure`` (CSR matrices, endpoints, id tables, hub clusters, and
        the passage-relation incidence once built), ``vectors`` (relation vectors and hub
        centroids) and ``texts`` (the relation texts, packed)."""
        structure = (self.relation_ids.nbytes + self.entity_ids.nbytes + self.hubs.nbytes
                     + self.passage_ids.nbytes + int(self.endpoints.nbytes)
                     + (0 if self.kinds is None else int(self.kinds.nbytes))
                     + _csr_nbytes(self.incidence) + _csr_nbytes(self.relation_passages)
                     + (0 if self._passage_relations is None
                        else _csr_nbytes(self._passage_relations)))
        return {"structure": structure,
                "vectors": int(self.vectors.nbytes + self.hubs.centroids.nbytes),
                "texts": 0 if self.texts is None else self.texts.nbytes}

    def relations_of_entities(self, entity_rows: np.ndarray, query: np.ndarray,
                              hub_budget: int | None = None) -> np.ndarray:
        """Relations touching any of ``entity_rows``: the sparse frontier times the matrix
        for ordinary entities, the clusters closest to ``query`` for hubs (about
        ``hub_budget`` relations across all of them when given, else ``hub_degree`` each)."""
        if entity_rows.size == 0:
            return _EMPTY
        ordinary, hubs = self.hubs.split(entity_rows)
        parts = [self.incidence[ordinary].indices] if ordinary.size else []
        per_hub = None if hub_budget is None or hubs.size == 0 else hub_budget // hubs.size
        parts.extend(self.hubs.probe(h, query, per_hub) for h in hubs.tolist())
        return _unique(np.concatenate(parts)) if parts else _EMPTY

    def passages_of(self, relations: np.ndarray) -> list[tuple[str, ...]]:
        """The passage ids each relation (by row) was extracted from."""
        links = self.relation_passages[relations]
        ids = self.passage_ids.ids(links.indices)
        return [tuple(ids[links.indptr[i]:links.indptr[i + 1]]) for i in range(relations.size)]

    def _next_entities(self, relations: np.ndarray, expanded: np.ndarray, limit: int
                       ) -> np.ndarray:
        """Endpoints of ``relations`` (best first) not expanded yet, at most ``limit``, in the
        order of the best relation that reaches them."""
        candidates = self.endpoints[relations].ravel().astype(np.int64)
        order = np.argsort(candidates, kind="stable")
        ordered = candidates[order]
        first_seen = np.sort(order[np.concatenate(([True], ordered[1:] != ordered[:-1]))])
        entities = candidates[first_seen]
        return entities[~np.isin(entities, expanded, kind="sort")][:limit]

    def _cap_per_passage(self, indices: np.ndarray, scores: np.ndarray, cap: int,
                         limit: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``limit`` relations (best first) that bring a passage still under
        ``cap`` relations in the pool."""
        used: dict[int, int] = {}
        keep: list[int] = []
        indptr, columns = self.relation_passages.indptr, self.relation_passages.indices
        for position, relation in enumerate(indices.tolist()):
            passages = columns[indptr[relation]:indptr[relation + 1]].tolist()
            if any(used.get(p, 0) < cap for p in passages):
                keep.append(position)
                for p in passages:
                    used[p] = used.get(p, 0) + 1
                if len(keep) == limit:
                    break
        return indices[keep], scores[keep]

    def expand(
        self,
        query_vector: Sequence[float] | np.ndarray,
        seed_entity_ids: Iterable[str],
        seed_relation_ids: Iterable[str],
        config: ExpansionConfig,
    ) -> list[CandidateRelation]:
        """The candidate pool for one query, best first, as :meth:`relation_records`.

        Hop 0 holds the relations that touch a seed entity plus the seed relations. Each
        further hop takes the entities of the previous hop's surviving relations that were
        not expanded yet (at most ``config.per_hop_max_entities``, those reached by the best
        relations first), and the relations they touch that were not seen yet (for a hub, its
        clusters closest to the query, about ``config.per_hop_max_hub_relations`` across the
        hop's hubs). Every hop is cut to ``config.per_hop_max_relations``
        by cosine similarity to the query before the next one starts; the union is cut to
        ``config.max_candidate_relations``. The work per hop is bounded by the caps, not by
        the size of the graph.
        """
        query = _unit(query_vector)
        seed_entities = self.entity_ids.lookup(seed_entity_ids)
        hub_budget = config.per_hop_max_hub_relations
        frontier = _unique(np.concatenate([
            self.relations_of_entities(seed_entities, query, hub_budget),
            self.relation_ids.lookup(seed_relation_ids)]))
        seen = frontier
        expanded = seed_entities
        kept_indices: list[np.ndarray] = []
        kept_scores: list[np.ndarray] = []
        kept_hops: list[np.ndarray] = []
        for hop in range(config.hops + 1):
            if hop > 0:
                entities = self._next_entities(frontier, expanded, config.per_hop_max_entities)
                expanded = _unique(np.concatenate([expanded, entities]))
                touched = self.relations_of_entities(entities, query, hub_budget)
                frontier = touched[~np.isin(touched, seen, assume_unique=True, kind="sort")]
                seen = _unique(np.concatenate([seen, frontier]))
            if frontier.size == 0:
                break
            frontier, scores = _top(frontier, self.vectors[frontier] @ query,
                                    config.per_hop_max_relations)
            kept_indices.append(frontier)
            kept_scores.append(scores)
            kept_hops.append(np.full(frontier.size, hop))
        if not kept_indices:
            return []
        cap = config.max_relations_per_passage
        indices, scores = _top(np.concatenate(kept_indices), np.concatenate(kept_scores),
                               config.max_candidate_relations if cap is None
                               else sum(k.size for k in kept_indices))
        if cap is not None:
            indices, scores = self._cap_per_passage(indices, scores, cap,
                                                    config.max_candidate_relations)
        hop_of = dict(zip(np.concatenate(kept_indices).tolist(),
                          np.concatenate(kept_hops).tolist(), strict=True))
        return self.relation_records(indices, scores.tolist(),
                                     [hop_of[i] for i in indices.tolist()])

    def relation_records(self, rows: np.ndarray, scores: Sequence[float],
                         hops: Sequence[int] | int = 0) -> list[CandidateRelation]:
        """The relations at ``rows`` as records: id, the given score and hop, text (``""``
        when the graph holds no texts), passages, ends' ids and kinds.

        >>> rows = [{"id": "r1", "subject_id": "a", "object_id": "b", "passage_ids": ["p1"],
        ...          "embedding": [1.0, 0.0]}]
        >>> graph = EntityRelationGraph.from_rows([rows], dim=2)
        >>> graph.relation_records(np.array([0]), [0.5])[0]
        CandidateRelation(id='r1', score=0.5, hop=0, text='', passage_ids=('p1',), \
subject_id='a', object_id='b', subject_kind='', object_kind='')
        """
        rows = np.asarray(rows, dtype=np.int64)
        ends = self.entity_ids.ids(self.endpoints[rows].ravel())
        texts = self.texts.get(rows) if self.texts is not None else [""] * rows.size
        hop_list = [hops] * rows.size if isinstance(hops, int) else list(hops)
        return [CandidateRelation(id=rid, score=float(score), hop=int(hop), text=text,
                                  passage_ids=passages, subject_id=ends[2 * i],
                                  object_id=ends[2 * i + 1], subject_kind=kinds[0],
                                  object_kind=kinds[1])
                for i, (rid, score, hop, text, passages, kinds) in enumerate(zip(
                    self.relation_ids.ids(rows), scores, hop_list, texts,
                    self.passages_of(rows), self.endpoint_kinds(rows), strict=True))]
