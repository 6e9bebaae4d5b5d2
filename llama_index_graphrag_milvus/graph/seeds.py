"""Entity seeds and passage vectors in memory, searched exactly.

With the entity table and the graph's relation vectors and texts, a query's entity and
relation seeds are found without a Milvus call; with the passage table, its passage searches
are ranked in memory too and the chosen passages read by primary key. All are exact searches
(a matrix product over all rows), so they return what a Milvus FLAT search returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from llama_index_graphrag_milvus.graph.entity_relation import IdTable
from llama_index_graphrag_milvus.graph.tables import TextTable, nearest_rows, unit_rows
from llama_index_graphrag_milvus.records import EntityColumns, EntityHit, PassageColumns


class EntityTable:
    """Every entity's id, name and unit vector, for entity seed searches in memory.

    Memory: ``4 * dim`` bytes per entity for the vectors, 16 for the id, and the name's bytes
    plus 8 (see :attr:`nbytes`).

    >>> table = EntityTable.from_columns([EntityColumns(
    ...     ["e1", "e2"], ["Euler", "Daniel Bernoulli"], np.eye(2, dtype=np.float32))], dim=2)
    >>> [(h.name, round(h.score, 2)) for h in table.search([[0.0, 2.0]], ["Bernoulli"], 1)[0]]
    [('Daniel Bernoulli', 1.0)]
    """

    def __init__(self, ids: IdTable, names: TextTable, vectors: np.ndarray) -> None:
        self.ids = ids
        self.names = names
        self.vectors = vectors

    @classmethod
    def from_columns(cls, batches: Iterable[EntityColumns], dim: int) -> EntityTable:
        ids: list[str] = []
        names: list[str] = []
        chunks = [np.zeros((0, dim), np.float32)]
        for batch in batches:
            ids.extend(batch.ids)
            names.extend(batch.names)
            chunks.append(np.asarray(batch.embeddings, np.float32).reshape(-1, dim))
        keys = IdTable.encode(ids)
        order = np.argsort(keys, kind="stable")
        return cls(IdTable(keys[order]), TextTable.build(names[int(i)] for i in order),
                   unit_rows(np.concatenate(chunks)[order]))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.names.nbytes + int(self.vectors.nbytes)

    def search(self, vectors: Sequence[Sequence[float]], searched: Sequence[str], top_k: int,
               threshold: float | None = None) -> list[list[EntityHit]]:
        """What :meth:`MilvusGraphStore.search_entities` returns, from memory: per
        searched name (one vector each), the ``top_k`` most similar entities."""
        if not len(vectors):
            return []
        return [[EntityHit(id=eid, name=self.names[int(row)], score=float(score),
                           searched=name)
                 for eid, row, score in zip(self.ids.ids(rows), rows.tolist(), scores.tolist(),
                                            strict=True)]
                for name, (rows, scores) in zip(
                    searched, nearest_rows(self.vectors, vectors, top_k, threshold),
                    strict=True)]


class PassageTable:
    """Every passage's id and unit vector, for passage searches in memory: ``4 * dim + 16``
    bytes per passage.

    >>> table = PassageTable.from_columns([PassageColumns(
    ...     ["p1", "p2", "p3"], np.array([[1, 0], [0.6, 0.8], [0, 1]], np.float32))], dim=2)
    >>> [[(pid, round(score, 2)) for pid, score in hits]
    ...  for hits in table.search([[0.0, 1.0], [1.0, 0.0]], 2)]
    [[('p3', 1.0), ('p2', 0.8)], [('p1', 1.0), ('p2', 0.6)]]
    >>> table.search([[0.0, 1.0]], 2, among=["p1", "p9"])
    [[('p1', 0.0)]]
    """

    def __init__(self, ids: IdTable, vectors: np.ndarray) -> None:
        self.ids = ids
        self.vectors = vectors

    @classmethod
    def from_columns(cls, batches: Iterable[PassageColumns], dim: int) -> PassageTable:
        ids: list[str] = []
        chunks = [np.zeros((0, dim), np.float32)]
        for batch in batches:
            ids.extend(batch.ids)
            chunks.append(np.asarray(batch.embeddings, np.float32).reshape(-1, dim))
        keys = IdTable.encode(ids)
        order = np.argsort(keys, kind="stable")
        return cls(IdTable(keys[order]), unit_rows(np.concatenate(chunks)[order]))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + int(self.vectors.nbytes)

    def search(self, vectors: Sequence[Sequence[float]], limit: int,
               among: Sequence[str] | None = None) -> list[list[tuple[str, float]]]:
        """Per vector, the ``limit`` most similar passages (among the known ids of
        ``among`` when given) as ``(id, cosine similarity)``, best first."""
        if among is None:  # the whole matrix, not a copy of it
            rows, matrix = None, self.vectors
        else:
            rows = self.ids.lookup(among)
            matrix = self.vectors[rows]
        return [[(pid, float(score)) for pid, score in zip(
                    self.ids.ids(found if rows is None else rows[found]), scores.tolist(),
                    strict=True)]
                for found, scores in nearest_rows(matrix, vectors, limit)]
