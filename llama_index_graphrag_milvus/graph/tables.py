"""The in-memory tables: ids (:class:`IdTable`), packed strings (:class:`TextTable`), exact
nearest-row search (:func:`nearest_rows`), and the entity and passage tables that the seed
and passage searches read when they run in memory.

Pure numpy. The graph keeps its ids in :class:`IdTable` s, its relation texts in a
:class:`TextTable` and searches its relation vectors with :func:`nearest_rows`, as the
entity table (:class:`EntityTable`) does for entities and the passage table
(:class:`PassageTable`) for passages. All are exact searches (a matrix product over all
rows), so they return what a Milvus FLAT search returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.records import EntityColumns, EntityHit, PassageColumns
from llama_index_graphrag_milvus.words import name_key


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (2-d, ``float32``) with every non-zero row scaled to unit length, in place.

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms > 0, norms, 1.0)
    return vectors


class TextTable:
    """Strings by row, packed into one UTF-8 buffer and an offset per row: the bytes of the
    text plus 8 bytes per row, with no Python object per string.

    >>> table = TextTable.build(["Euler", "Daniel Bernoulli"])
    >>> table[1], table.get(np.array([1, 0])), len(table)
    ('Daniel Bernoulli', ['Daniel Bernoulli', 'Euler'], 2)
    """

    def __init__(self, buffer: bytes, offsets: np.ndarray) -> None:
        self.buffer = buffer
        self.offsets = offsets

    @classmethod
    def build(cls, texts: Iterable[str]) -> TextTable:
        encoded = [text.encode("utf-8") for text in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def __getitem__(self, row: int) -> str:
        return self.buffer[self.offsets[row]:self.offsets[row + 1]].decode("utf-8")

    def get(self, rows: np.ndarray) -> list[str]:
        """The texts at ``rows``."""
        return [self[int(row)] for row in rows]

    def non_ascii(self) -> np.ndarray:
        """The rows whose text holds a character beyond ASCII, in order.

        >>> TextTable.build(["Euler", "Zürich", "", "ベルヌーイ"]).non_ascii().tolist()
        [1, 3]
        """
        high = np.flatnonzero(np.frombuffer(self.buffer, np.uint8) >= 0x80)  # byte offsets
        return np.unique(np.searchsorted(self.offsets, high, side="right") - 1)

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def nbytes(self) -> int:
        return len(self.buffer) + int(self.offsets.nbytes)


_BLOCK = 256
"""Scores per block in :func:`largest`'s first pass."""


def largest(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of ``k`` largest ``scores`` (1-d, ``1 <= k <= scores.size``), in no order;
    among equal scores at the k-th place any may be chosen.

    On long rows the block maxima come first: the k-th largest of them is a value that at
    least k scores reach, so only the scores at or above it are partitioned. On 100,000
    scores that takes 0.05 ms where partitioning all of them takes 0.75 ms.

    >>> sorted(largest(np.array([0.1, 0.9, 0.3, 0.7], np.float32), 2).tolist())
    [1, 3]
    """
    size = scores.size
    candidates = None
    if size >= 16 * _BLOCK and k * _BLOCK <= size:
        full = size - size % _BLOCK
        maxima = scores[:full].reshape(-1, _BLOCK).max(axis=1)
        if full < size:
            maxima = np.append(maxima, scores[full:].max())
        floor = np.partition(maxima, maxima.size - k)[maxima.size - k]
        candidates = np.flatnonzero(scores >= floor)
        if candidates.size == k:
            return candidates
        scores = scores[candidates]
    found = np.argpartition(scores, scores.size - k)[scores.size - k:]
    return found if candidates is None else candidates[found]


def top_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest ``scores`` (1-d), best first; among equal scores, at
    the cut too, the lower position.

    >>> top_rows(np.array([0.5, 0.9, 0.5, 0.5]), 3).tolist()
    [1, 0, 2]
    """
    k = min(k, scores.size)
    if k < 1:
        return np.zeros(0, dtype=np.int64)
    best = largest(scores, k)
    floor = scores[best].min()  # every position of the tie at the cut, so that the lower win
    best = np.concatenate([best[scores[best] > floor], np.flatnonzero(scores == floor)])
    return best[np.lexsort((best, -scores[best]))][:k]


def nearest_rows(vectors: np.ndarray, queries: Sequence[Sequence[float]] | np.ndarray,
                 top_k: int, threshold: float | None = None, mask: np.ndarray | None = None
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query (one vector each, any length: scaled here), the rows of ``vectors`` (unit
    length) with the ``top_k`` highest cosine similarities, best first (ties, at the cut too:
    the lower row), those
    below ``threshold`` left out, and their similarities. One matrix product for all queries.
    ``mask`` (one boolean per row): only its rows are candidates.

    >>> vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], np.float32)
    >>> [(rows.tolist(), [round(s, 2) for s in scores.tolist()])
    ...  for rows, scores in nearest_rows(vectors, [[0.0, 2.0]], 2)]
    [([2, 1], [1.0, 0.8])]
    >>> [rows.tolist() for rows, _ in nearest_rows(vectors, [[0.0, 2.0]], 2,
    ...                                            mask=np.array([True, False, True]))]
    [[2, 0]]
    """
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
    if mask is not None:
        top_k = min(top_k, int(np.count_nonzero(mask)))
    if vectors.shape[0] == 0 or top_k < 1:
        return [empty for _ in range(len(queries))]
    units = unit_rows(np.array(queries, np.float32).reshape(len(queries), -1))  # a copy
    # rows x queries, read as one score row per query: ``units @ vectors.T`` was up to 1.5x
    # slower for 4 queries (100,000 x 64, OpenBLAS) and no faster for one
    scores = (vectors @ units.T).T
    if mask is not None:
        scores[:, ~mask] = -np.inf  # never among the top_k (at most as many as the mask's)
    found = []
    for row in scores:
        best = top_rows(row, top_k)
        if threshold is not None:
            best = best[row[best] >= threshold]
        found.append((best.astype(np.int64), row[best]))
    return found


def nearest_among(ids: IdTable, vectors: np.ndarray,
                  queries: Sequence[Sequence[float]] | np.ndarray, top_k: int,
                  threshold: float | None = None, among: Sequence[str] | None = None
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`nearest_rows` of a table (``ids`` naming the rows of ``vectors``), among the
    rows of the known ids of ``among`` when given (the rows returned are the table's).

    >>> ids = IdTable(IdTable.encode(["a", "b", "c"]))
    >>> vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], np.float32)
    >>> [ids.ids(rows) for rows, _ in nearest_among(ids, vectors, [[0.0, 1.0]], 2, among=["a", "b", "x"])]
    [['b', 'a']]
    """  # noqa: E501
    if among is None:  # the whole matrix, not a copy of it
        return nearest_rows(vectors, queries, top_k, threshold)
    rows = ids.lookup(among)
    return [(rows[found], scores)
            for found, scores in nearest_rows(vectors[rows], queries, top_k, threshold)]


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
        if ids and set(map(len, ids)) == {32}:
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
        rows = self.rows_of(list(ids))
        return np.unique(rows[rows >= 0])

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """The row of each of ``ids``, in their order; ``-1`` for an unknown id."""
        found = np.full(len(ids), -1, dtype=np.int64)
        if not ids or self.keys.size == 0:
            return found
        queries = self.encode(ids)
        if queries.dtype != self.keys.dtype and (queries.dtype.kind == "V"
                                                 or self.keys.dtype.kind == "V"):
            return found
        rows = np.minimum(np.searchsorted(self.keys, queries), self.keys.size - 1)
        hit = self.keys[rows] == queries
        found[hit] = rows[hit]
        return found

    def ids(self, rows: np.ndarray) -> list[str]:
        """The ids at ``rows``, converted in one pass."""
        if self.keys.dtype.kind != "V":
            return [str(k) for k in self.keys[rows]]
        text = self.keys[rows].tobytes().hex()
        return [text[i:i + 32] for i in range(0, len(text), 32)]

    def __getitem__(self, row: int) -> str:
        key = self.keys[row]
        return key.tobytes().hex() if self.keys.dtype.kind == "V" else str(key)

    def __len__(self) -> int:
        return int(self.keys.size)

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes)


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
        self._by_key: dict[str, list[int]] | None = None  # built on the first name seeds

    def rows_named(self, keys: Iterable[str]) -> list[int]:
        """The rows of the entities whose :func:`~llama_index_graphrag_milvus.words.name_key`
        is one of ``keys``: an ASCII name's key is its normalized name, so those are found
        by id (an entity's id is :func:`~llama_index_graphrag_milvus.ids.entity_id` of its
        name); the names beyond ASCII are folded on the first call (about 1 s per 100,000
        of them here).

        >>> names = ["Zürich", "Zurich"]
        >>> table = EntityTable.from_columns([EntityColumns(
        ...     [entity_id(n) for n in names], names, np.eye(2, dtype=np.float32))], dim=2)
        >>> sorted(table.names[row] for row in table.rows_named(["zurich", "bern"]))
        ['Zurich', 'Zürich']
        """
        by_key = self._by_key
        if by_key is None:
            by_key = {}
            for row in self.names.non_ascii().tolist():
                by_key.setdefault(name_key(self.names[row]), []).append(row)
            self._by_key = by_key
        wanted = list(dict.fromkeys(keys))
        rows = dict.fromkeys(self.ids.lookup(map(entity_id, wanted)).tolist())
        rows.update(dict.fromkeys(row for key in wanted for row in by_key.get(key, ())))
        return list(rows)

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
               threshold: float | None = None, among: Sequence[str] | None = None,
               keys: Sequence[str] | None = None) -> list[list[EntityHit]]:
        """What :meth:`MilvusGraphStore.search_entities` returns, from memory: per
        searched name (one vector each), the ``top_k`` most similar entities (among the
        known ids of ``among``, or the entities of the name keys ``keys``
        (:meth:`rows_named`), when given)."""
        if not len(vectors):
            return []
        if keys is not None:
            among = self.ids.ids(np.asarray(self.rows_named(keys), np.int64))
        return [[EntityHit(id=eid, name=self.names[int(row)], score=float(score),
                           searched=name)
                 for eid, row, score in zip(self.ids.ids(rows), rows.tolist(), scores.tolist(),
                                            strict=True)]
                for name, (rows, scores) in zip(
                    searched, nearest_among(self.ids, self.vectors, vectors, top_k, threshold,
                                            among), strict=True)]


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
               among: Sequence[str] | None = None, mask: np.ndarray | None = None
               ) -> list[list[tuple[str, float]]]:
        """Per vector, the ``limit`` most similar passages (among the known ids of
        ``among`` when given, else among the rows of ``mask``) as ``(id, cosine
        similarity)``, best first."""
        found = (nearest_rows(self.vectors, vectors, limit, mask=mask)
                 if among is None and mask is not None else
                 nearest_among(self.ids, self.vectors, vectors, limit, among=among))
        return [[(pid, float(score)) for pid, score in zip(
                    self.ids.ids(rows), scores.tolist(), strict=True)] for rows, scores in found]

    def mask(self, ids: Iterable[str]) -> np.ndarray:
        """One boolean per row: whether its passage is among ``ids`` (unknown ids ignored).

        >>> table = PassageTable.from_columns([PassageColumns(
        ...     ["p1", "p2"], np.array([[1, 0], [0, 1]], np.float32))], dim=2)
        >>> table.mask(["p2", "p9"]).tolist()
        [False, True]
        """
        mask = np.zeros(len(self), dtype=bool)
        mask[self.ids.lookup(ids)] = True
        return mask


@dataclass(frozen=True)
class PassageScope:
    """The passages a filter keeps, as a mask over the passage table's rows (read with one
    query of ids), as of the write gate's ``generation``: every write of the graph in this
    process, through any index object, moves the gate on and so retires the mask."""

    table: PassageTable
    mask: np.ndarray
    generation: int = 0

    def split(self, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Those of ``ids`` the filter keeps, and those the table does not hold (written
        since it was read, by another process: to be asked to Milvus).

        >>> table = PassageTable.from_columns([PassageColumns(
        ...     ["p1", "p2"], np.array([[1, 0], [0, 1]], np.float32))], dim=2)
        >>> PassageScope(table, table.mask(["p2"])).split(["p1", "p2", "p3"])
        (['p2'], ['p3'])
        """
        rows = self.table.ids.rows_of(ids).tolist()
        kept = [i for i, row in zip(ids, rows, strict=True) if row >= 0 and self.mask[row]]
        return kept, [i for i, row in zip(ids, rows, strict=True) if row < 0]
