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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from llama_index.core.utils import get_tqdm_iterable

from llama_index_graphrag_milvus.records import CandidateRelation

logger = logging.getLogger(__name__)

_EMPTY = np.zeros(0, dtype=np.int64)


def _unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def _top(indices: np.ndarray, scores: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``limit`` best-scoring ``indices`` (ties broken by index), best first."""
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
    """

    hops: int = 1
    per_hop_max_relations: int = 1000
    max_candidate_relations: int = 100

    def __post_init__(self) -> None:
        if self.hops < 0:
            raise ValueError(f"hops must be 0 or more, got {self.hops}")
        if self.per_hop_max_relations < 1 or self.max_candidate_relations < 1:
            raise ValueError(
                "per_hop_max_relations and max_candidate_relations must be at least 1, got "
                f"{self.per_hop_max_relations} and {self.max_candidate_relations}"
            )


class IdTable:
    """Sorted, unique ids; an id's row is its position.

    The package's ids (32 hex digits) are kept as 16 raw bytes each, with no per-id Python
    object and no dict: a lookup is a binary search. Other ids (hand-built graphs) are kept
    as a numpy unicode array with the same interface.
    """

    def __init__(self, sorted_keys: np.ndarray) -> None:
        self.keys = sorted_keys

    @staticmethod
    def encode(ids: Sequence[str]) -> np.ndarray:
        """Ids as a numpy array of keys (16-byte ``V16`` when they are 32 hex digits)."""
        if ids and all(len(i) == 32 for i in ids):
            try:
                return np.frombuffer(bytes.fromhex("".join(ids)), dtype="V16")
            except ValueError:
                pass
        return np.asarray(list(ids), dtype=str)

    @classmethod
    def build(cls, ids: Sequence[str]) -> tuple[IdTable, np.ndarray]:
        """The table of the distinct ``ids`` and the row of each input id."""
        keys, rows = np.unique(cls.encode(ids), return_inverse=True)
        return cls(keys), rows.astype(np.int32).ravel()

    def lookup(self, ids: Iterable[str]) -> np.ndarray:
        """Rows of the known ``ids`` (sorted, unique); unknown ids are left out."""
        wanted = list(ids)
        if not wanted or self.keys.size == 0:
            return _EMPTY
        queries = self.encode(wanted)
        if queries.dtype != self.keys.dtype and (queries.dtype.kind == "V"
                                                 or self.keys.dtype.kind == "V"):
            return _EMPTY
        rows = np.searchsorted(self.keys, queries)
        rows = np.minimum(rows, self.keys.size - 1)
        return np.unique(rows[self.keys[rows] == queries]).astype(np.int64)

    def __getitem__(self, row: int) -> str:
        key = self.keys[row]
        return key.tobytes().hex() if self.keys.dtype.kind == "V" else str(key)

    def __len__(self) -> int:
        return int(self.keys.size)

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes)


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
    ) -> None:
        self.relation_ids = relation_ids
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

    @classmethod
    def from_rows(cls, batches: Iterable[Sequence[dict[str, Any]]], dim: int,
                  show_progress: bool = False) -> EntityRelationGraph:
        """Build the graph from batches of relation rows (``id``, ``subject_id``,
        ``object_id``, ``passage_ids``, ``embedding``), in any order."""
        relation_ids: list[str] = []
        endpoint_ids: tuple[list[str], list[str]] = ([], [])
        passage_counts: list[int] = []
        passage_flat: list[str] = []
        vector_chunks: list[np.ndarray] = []
        progress = get_tqdm_iterable(batches, show_progress, "Loading graph from Milvus")
        for batch in progress:
            for row in batch:
                relation_ids.append(row["id"])
                endpoint_ids[0].append(row["subject_id"])
                endpoint_ids[1].append(row["object_id"])
                passage_counts.append(len(row["passage_ids"]))
                passage_flat.extend(row["passage_ids"])
            if batch:
                vector_chunks.append(np.asarray([r["embedding"] for r in batch], np.float32))
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
        vectors = (np.concatenate(vector_chunks)[order] if vector_chunks
                   else np.zeros((0, dim), np.float32))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1.0)
        return cls(IdTable(relation_keys[order]), endpoints, entities, relation_passages,
                   passages, vectors)

    @property
    def num_relations(self) -> int:
        return len(self.relation_ids)

    @property
    def num_entities(self) -> int:
        return len(self.entity_ids)

    def memory(self) -> dict[str, int]:
        """Bytes held: ``structure`` (CSR matrices, endpoints, id tables) and ``vectors``."""
        structure = (self.relation_ids.nbytes + self.entity_ids.nbytes
                     + self.passage_ids.nbytes + int(self.endpoints.nbytes)
                     + _csr_nbytes(self.incidence) + _csr_nbytes(self.relation_passages))
        return {"structure": structure, "vectors": int(self.vectors.nbytes)}

    def relations_of_entities(self, entity_rows: np.ndarray) -> np.ndarray:
        """Relations touching any of ``entity_rows``: the sparse frontier times the matrix."""
        if entity_rows.size == 0:
            return _EMPTY
        return np.unique(self.incidence[entity_rows].indices).astype(np.int64)

    def passages_of(self, relation: int) -> tuple[str, ...]:
        """The passage ids a relation (by row) was extracted from."""
        start, end = self.relation_passages.indptr[relation:relation + 2]
        return tuple(self.passage_ids[j] for j in self.relation_passages.indices[start:end])

    def expand(
        self,
        query_vector: Sequence[float] | np.ndarray,
        seed_entity_ids: Iterable[str],
        seed_relation_ids: Iterable[str],
        config: ExpansionConfig,
    ) -> list[CandidateRelation]:
        """The candidate pool for one query, best first (relation texts are left empty).

        Hop 0 holds the relations that touch a seed entity plus the seed relations. Each
        further hop takes the entities of the previous hop's surviving relations that were
        not expanded yet, and the relations they touch that were not seen yet. Every hop is
        cut to ``config.per_hop_max_relations`` by cosine similarity to the query before the
        next one starts; the union is cut to ``config.max_candidate_relations``.
        """
        query = _unit(query_vector)
        seed_entities = self.entity_ids.lookup(seed_entity_ids)
        frontier = np.union1d(self.relations_of_entities(seed_entities),
                              self.relation_ids.lookup(seed_relation_ids))
        seen = frontier
        expanded = seed_entities
        kept_indices: list[np.ndarray] = []
        kept_scores: list[np.ndarray] = []
        kept_hops: list[np.ndarray] = []
        for hop in range(config.hops + 1):
            if hop > 0:
                entities = np.setdiff1d(np.unique(self.endpoints[frontier]), expanded)
                expanded = np.union1d(expanded, entities)
                touched = self.relations_of_entities(entities)
                frontier = np.setdiff1d(touched, seen, assume_unique=True)
                seen = np.union1d(seen, frontier)
            if frontier.size == 0:
                break
            frontier, scores = _top(frontier, self.vectors[frontier] @ query,
                                    config.per_hop_max_relations)
            kept_indices.append(frontier)
            kept_scores.append(scores)
            kept_hops.append(np.full(frontier.size, hop))
        if not kept_indices:
            return []
        indices, scores = _top(np.concatenate(kept_indices), np.concatenate(kept_scores),
                               config.max_candidate_relations)
        hop_of = dict(zip(np.concatenate(kept_indices).tolist(),
                          np.concatenate(kept_hops).tolist(), strict=True))
        return [
            CandidateRelation(id=self.relation_ids[i], score=float(s), hop=int(hop_of[i]),
                              passage_ids=self.passages_of(i))
            for i, s in zip(indices.tolist(), scores.tolist(), strict=True)
        ]
