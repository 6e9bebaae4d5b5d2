"""Hub entities' relations grouped into clusters, so that a hub costs the same per query
whatever its size (the graph in memory; see :class:`HubIndex`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

_EMPTY = np.zeros(0, dtype=np.int64)


class HubIndex:
    """The relations of hub entities, grouped into clusters of similar vectors.

    An entity with more than ``hub_degree`` relations is a hub. Expansion does not walk all
    of a hub's relations: it scores the hub's cluster centroids against the query and takes
    the relations of the best clusters until about ``hub_degree`` relations are reached, so
    one hub costs about ``hub_degree`` relations per query whatever its size. Clusters come
    from centroids sampled among the hub's relation vectors (seeded), one assignment pass,
    then the centroids are moved to their members' mean direction.
    """

    def __init__(self, hub_rows: np.ndarray, centroid_ptr: np.ndarray, centroids: np.ndarray,
                 cluster_ptr: np.ndarray, members: np.ndarray, hub_degree: int) -> None:
        self.hub_rows = hub_rows
        self.centroid_ptr = centroid_ptr
        self.centroids = centroids
        self.cluster_ptr = cluster_ptr
        self.members = members
        self.hub_degree = hub_degree

    @classmethod
    def build(cls, incidence: sp.csr_matrix, vectors: np.ndarray, hub_degree: int,
              cluster_size: int = 64, seed: int = 0) -> HubIndex:
        degrees = np.diff(incidence.indptr)
        hub_rows = np.flatnonzero(degrees > hub_degree).astype(np.int64)
        rng = np.random.default_rng(seed)
        centroid_ptr = [0]
        cluster_ptr = [0]
        centroid_chunks: list[np.ndarray] = []
        member_chunks: list[np.ndarray] = []
        for hub in hub_rows.tolist():
            relations = incidence.indices[incidence.indptr[hub]:incidence.indptr[hub + 1]]
            count = -(-relations.size // cluster_size)
            seeds = vectors[rng.choice(relations, count, replace=False)]
            labels = np.concatenate([
                np.argmax(vectors[relations[i:i + 16384]] @ seeds.T, axis=1)
                for i in range(0, relations.size, 16384)
            ])
            order = np.argsort(labels, kind="stable")
            sizes = np.bincount(labels, minlength=count)
            keep = sizes > 0
            starts = np.concatenate([[0], np.cumsum(sizes[keep])[:-1]])
            means = np.add.reduceat(vectors[relations[order]], starts, axis=0)
            centroid_chunks.append(means / np.linalg.norm(means, axis=1, keepdims=True))
            member_chunks.append(relations[order].astype(np.int32))
            cluster_ptr.extend((cluster_ptr[-1] + np.cumsum(sizes[keep])).tolist())
            centroid_ptr.append(centroid_ptr[-1] + int(keep.sum()))
        dim = vectors.shape[1] if vectors.ndim == 2 else 0
        return cls(
            hub_rows,
            np.asarray(centroid_ptr, np.int64),
            np.concatenate(centroid_chunks) if centroid_chunks else np.zeros((0, dim),
                                                                             np.float32),
            np.asarray(cluster_ptr, np.int64),
            np.concatenate(member_chunks) if member_chunks else np.zeros(0, np.int32),
            hub_degree,
        )

    def split(self, entity_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ordinary rows, positions of the hub rows in this index)``."""
        if self.hub_rows.size == 0 or entity_rows.size == 0:
            return entity_rows, _EMPTY
        positions = np.minimum(np.searchsorted(self.hub_rows, entity_rows),
                               self.hub_rows.size - 1)
        is_hub = self.hub_rows[positions] == entity_rows
        return entity_rows[~is_hub], positions[is_hub]

    def probe(self, hub: int, query: np.ndarray, limit: int | None = None) -> np.ndarray:
        """About ``limit`` (default ``hub_degree``) relations of hub ``hub`` (a position), its
        clusters closest to ``query`` first; at least one cluster."""
        first, last = int(self.centroid_ptr[hub]), int(self.centroid_ptr[hub + 1])
        scores = self.centroids[first:last] @ query
        wanted = self.hub_degree if limit is None else min(limit, self.hub_degree)
        # usually a few clusters suffice: rank only the best few (twice the expected count)
        # and fall back to ranking them all when those do not reach ``wanted``
        expected = 2 * -(-wanted * (last - first) // int(self.cluster_ptr[last]
                                                           - self.cluster_ptr[first])) + 1
        candidates = (np.argpartition(-scores, expected)[:expected] if expected < scores.size
                      else np.arange(scores.size))
        order = first + candidates[np.lexsort((candidates, -scores[candidates]))]
        sizes = self.cluster_ptr[order + 1] - self.cluster_ptr[order]
        if int(sizes.sum()) < wanted and order.size < scores.size:
            order = first + np.argsort(-scores, kind="stable")
            sizes = self.cluster_ptr[order + 1] - self.cluster_ptr[order]
        taken = int(np.searchsorted(np.cumsum(sizes), wanted)) + 1
        return np.concatenate([self.members[self.cluster_ptr[c]:self.cluster_ptr[c + 1]]
                               for c in order[:taken].tolist()])

    @property
    def nbytes(self) -> int:
        return int(self.hub_rows.nbytes + self.centroid_ptr.nbytes + self.cluster_ptr.nbytes
                   + self.members.nbytes)
