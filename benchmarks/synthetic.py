"""Synthetic knowledge graphs for scale benchmarks.

Relations connect entities drawn from a power-law (Zipf) distribution, so a few hub entities
hold tens of thousands of relations at a million relations, as "United States" or "English"
do in real corpora. Passages hold ``relations_per_passage`` consecutive relations each.
Vectors are random unit vectors. Ids follow the package's own scheme (a relation's id is the
id of its triplet, an entity's the id of its name), and every passage lists its triplets in
its metadata, as ingestion writes them, so that retrieval on a synthetic graph does exactly
the Milvus calls it does on a real one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from llama_index_graphrag_milvus.extraction.kinds import infer_kind
from llama_index_graphrag_milvus.ids import entity_id as _entity_id
from llama_index_graphrag_milvus.ids import stable_id
from llama_index_graphrag_milvus.records import Triplet


@dataclass(frozen=True)
class SyntheticGraph:
    """A generated graph: relation endpoints (entity numbers), passage of each relation."""

    num_relations: int
    num_entities: int
    subjects: np.ndarray
    objects: np.ndarray
    passages: np.ndarray
    dim: int
    seed: int

    @property
    def num_passages(self) -> int:
        return int(self.passages.max()) + 1 if self.num_relations else 0

    def entity_degrees(self) -> np.ndarray:
        """Relations per entity number."""
        return np.bincount(np.concatenate([self.subjects, self.objects]),
                           minlength=self.num_entities)

    def hubs(self, count: int) -> list[int]:
        """The ``count`` entity numbers with the most relations, largest first."""
        return np.argsort(-self.entity_degrees(), kind="stable")[:count].tolist()

    def entity_passages(self) -> tuple[np.ndarray, np.ndarray]:
        """Each entity number's distinct passages, ascending (the order ingestion links
        them): ``passages[offsets[e]:offsets[e + 1]]``."""
        num_passages = max(self.num_passages, 1)
        pairs = np.unique(np.concatenate([self.subjects, self.objects]).astype(np.int64)
                          * num_passages + np.tile(self.passages, 2))
        offsets = np.searchsorted(pairs // num_passages, np.arange(self.num_entities + 1))
        return offsets, pairs % num_passages

    def triplet(self, number: int) -> Triplet:
        """Relation ``number`` as a triplet."""
        return Triplet(entity_name(int(self.subjects[number])), f"relation {number} to",
                       entity_name(int(self.objects[number])))

    def relation_id(self, number: int) -> str:
        return self.triplet(number).id

    def passage_triplets(self, number: int) -> list[list[str]]:
        """The ``graphrag_triplets`` metadata of passage ``number``."""
        first, last = np.searchsorted(self.passages, [number, number + 1])
        return [[t.subject, t.predicate, t.object]
                for t in map(self.triplet, range(int(first), int(last)))]

    def relation_batches(self, batch_size: int = 10_000, spreads: np.ndarray | None = None
                         ) -> Iterator[list[dict[str, Any]]]:
        """Rows in the relation collection's format, with random unit vectors; ``spreads``
        (by entity number): where the ends lead, recorded on the rows as ingestion does."""
        rng = np.random.default_rng(self.seed + 1)
        for start in range(0, self.num_relations, batch_size):
            end = min(start + batch_size, self.num_relations)
            vectors = unit_vectors(rng, end - start, self.dim)
            triplets = [self.triplet(i) for i in range(start, end)]
            yield [
                {
                    "id": triplet.id,
                    "text": triplet.text,
                    "subject_id": triplet.subject_id,
                    "object_id": triplet.object_id,
                    "passage_ids": [passage_id(p)],
                    # the kinds the bridge infers from the names anyway, written: a
                    # segment whose kind column holds only "" fails to load memory-mapped
                    # on Milvus 2.3.5 ("failed to create file-backed map")
                    "subject_kind": infer_kind(triplet.subject),
                    "object_kind": infer_kind(triplet.object),
                    "embedding": vector,
                    **({} if spreads is None else {
                        "subject_passages": int(spreads[self.subjects[number]]),
                        "object_passages": int(spreads[self.objects[number]])}),
                }
                for number, triplet, p, vector in zip(
                    range(start, end), triplets, self.passages[start:end].tolist(), vectors,
                    strict=True)
            ]


def unit_vectors(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def entity_name(number: int) -> str:
    return f"entity {number}"


def entity_number(number: int) -> str:
    """The word of an entity's name that only it has ("12" of "entity 12"): a question that
    names entities by it leaves the others unnamed (with the word "entity" it would name
    every entity by half, and their relations would offer the bridge method no bridge)."""
    return entity_name(number).split()[-1]


def entity_id(number: int) -> str:
    return _entity_id(entity_name(number))


def passage_id(number: int) -> str:
    return stable_id("synthetic-passage", str(number))


def generate(num_relations: int, dim: int = 64, relations_per_passage: int = 10,
             entities_per_relation: float = 0.25, zipf_exponent: float = 1.0,
             seed: int = 0) -> SyntheticGraph:
    """A power-law graph of ``num_relations`` relations.

    Entity ``k`` (0-based) is drawn as an endpoint with probability proportional to
    ``1 / (k + 1) ** zipf_exponent``; there are ``entities_per_relation * num_relations``
    entities. With the defaults the largest hub holds about 7% of all relations (about
    70,000 at a million relations).

    >>> graph = generate(1000, seed=1)
    >>> graph.num_relations, graph.num_passages
    (1000, 100)
    >>> int(graph.entity_degrees()[graph.hubs(1)[0]]) > 50
    True
    """
    if num_relations < 1:
        raise ValueError(f"num_relations must be at least 1, got {num_relations}")
    rng = np.random.default_rng(seed)
    num_entities = max(2, int(num_relations * entities_per_relation))
    weights = 1.0 / np.arange(1, num_entities + 1, dtype=np.float64) ** zipf_exponent
    weights /= weights.sum()
    # a random permutation so that hub numbers are not simply 0, 1, 2...
    permutation = rng.permutation(num_entities)
    subjects = permutation[rng.choice(num_entities, num_relations, p=weights)]
    objects = permutation[rng.choice(num_entities, num_relations, p=weights)]
    passages = np.arange(num_relations) // relations_per_passage
    return SyntheticGraph(num_relations, num_entities, subjects.astype(np.int64),
                          objects.astype(np.int64), passages.astype(np.int64), dim, seed)
