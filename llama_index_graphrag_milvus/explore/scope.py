"""What a filtered explorer shows of the graph: the passages that match the filter, the
relations they support and the entities of those relations, as masks over the in-memory
graph's rows.

The explorer of one tenant (``filters``) shows nothing that only another tenant's passages
support: no relation, no entity, no passage, no count or degree of theirs. The passages that
match are read once (their ids only, in primary-key ranges); a relation is visible when one
of its passages is, an entity when one of its relations is, and its degree counts its
visible relations.

>>> import numpy as np
>>> from llama_index_graphrag_milvus.graph import EntityRelationGraph
>>> rows = [{"id": "r1", "subject_id": "a", "object_id": "b", "passage_ids": ["p1"],
...          "embedding": [1.0, 0.0]},
...         {"id": "r2", "subject_id": "b", "object_id": "c", "passage_ids": ["p2"],
...          "embedding": [0.0, 1.0]}]
>>> graph = EntityRelationGraph.from_rows([rows], dim=2)
>>> view = Visible.of(graph, {"p1"})
>>> view.relations.tolist(), view.entities.tolist(), view.degrees.tolist()
([True, False], [True, True, False], [1, 1, 0])
>>> view.passage_list(["p2", "p1"])
['p1']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from llama_index_graphrag_milvus.graph import EntityRelationGraph


@dataclass(frozen=True)
class Visible:
    """The visible part of a graph: ``passages`` (ids; ``None``: every passage), and per
    relation row, per entity row, whether it is visible, with each entity's visible degree."""

    passages: frozenset[str] | None
    relations: np.ndarray
    entities: np.ndarray
    degrees: np.ndarray

    @classmethod
    def everything(cls, graph: EntityRelationGraph) -> Visible:
        """No filter: the whole graph."""
        return cls(None, np.ones(graph.num_relations, bool), np.ones(graph.num_entities, bool),
                   graph.entity_degrees.astype(np.int64))

    @classmethod
    def of(cls, graph: EntityRelationGraph, passages: Iterable[str]) -> Visible:
        """What the passages ``passages`` (ids) support."""
        shown = frozenset(passages)
        rows = graph.passage_ids.lookup(shown)
        column = np.zeros(graph.num_passages, bool)
        column[rows] = True
        supported = graph.relation_passages.astype(np.int64) @ column.astype(np.int64)
        relations = np.asarray(supported).ravel() > 0
        degrees = np.asarray(graph.incidence @ relations.astype(np.int64)).ravel()
        return cls(shown, relations, degrees > 0, degrees.astype(np.int64))

    @property
    def filtered(self) -> bool:
        return self.passages is not None

    def passage_list(self, ids: Iterable[str]) -> list[str]:
        """Those of ``ids`` that are visible, in order."""
        return [p for p in ids if self.passages is None or p in self.passages]
