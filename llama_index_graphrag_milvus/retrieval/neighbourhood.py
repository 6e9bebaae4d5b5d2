"""The graph steps the methods share: the k-hop pool of the seeds (:func:`expand_pool`), the
relations of some entities (:func:`relations_of`), where candidate bridges lead
(:func:`bridge_spreads`). Each is a graph request (or two) that the query's graph source
answers, in memory or served by Milvus (:mod:`.sources`): a method written with them works
in both."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.graph import ExpansionConfig
from llama_index_graphrag_milvus.records import CandidateRelation, RelationHit, Spread
from llama_index_graphrag_milvus.retrieval.method import QueryContext
from llama_index_graphrag_milvus.retrieval.requests import (
    BridgeSpreads,
    ExpandPool,
    Plan,
    RelationsAround,
)
from llama_index_graphrag_milvus.retrieval.seeds import Seeds
from llama_index_graphrag_milvus.retrieval.sources.shared import as_hits


def expand_pool(query: QueryContext, seeds: Seeds, config: ExpansionConfig
                ) -> Plan[list[CandidateRelation]]:
    """The bounded k-hop candidate pool of the seeds, best first, each relation with its
    ends and passages (an index without relations gives an empty pool)."""
    return (yield from ExpandPool(query.vector, tuple(h.id for h in seeds.entities),
                                  tuple(h.id for h in seeds.relations), config,
                                  seeds.relations))


def relations_of(query: QueryContext, entity_ids: Sequence[str], limit: int,
                 exclude: Iterable[str] = (), read_first: bool = False
                 ) -> Plan[list[RelationHit]]:
    """The ``limit`` relations of ``entity_ids`` most similar to the query, other than
    ``exclude``, best first, as relation hits (with their texts, ends, kinds and
    passages); ``read_first``: see :class:`~..requests.RelationsAround`."""
    if not entity_ids or limit < 1:
        return []
    known = set(exclude)
    found = yield from RelationsAround(query.vector, tuple(entity_ids), limit + len(known),
                                       read_first)
    return as_hits([c for c in found if c.id not in known][:limit])


def bridge_spreads(query: QueryContext, reached: Sequence[tuple[str, RelationHit]], cap: int
                   ) -> Plan[dict[str, Spread]]:
    """For each ``(entity id, the relation that reached it)``: its
    :class:`~llama_index_graphrag_milvus.records.Spread` (at most ``cap`` passages), as the
    query's graph source tells (:class:`~..requests.BridgeSpreads`)."""
    if not reached:
        return {}
    return (yield from BridgeSpreads(tuple(reached), cap))


def expansion_of(hops: int | None, expansion: ExpansionConfig | None) -> ExpansionConfig:
    """The expansion a pool method is given: ``expansion`` (default
    :class:`~llama_index_graphrag_milvus.graph.ExpansionConfig`'s), with ``hops`` when given
    (a shortcut for the setting changed most often).

    >>> expansion_of(2, None).hops, expansion_of(None, ExpansionConfig(hops=3)).hops
    (2, 3)
    >>> expansion_of(2, ExpansionConfig(hops=3))
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: hops=2 and expansion=ExpansionConfig(hops=3, ...) disagree: give the hops in one of them
    """  # noqa: E501
    if expansion is None:
        return ExpansionConfig() if hops is None else ExpansionConfig(hops=hops)
    if not isinstance(expansion, ExpansionConfig):
        raise InvalidInputError(f"expansion must be an ExpansionConfig, got "
                                f"{type(expansion).__name__}")
    if hops is not None and hops != expansion.hops:
        raise InvalidInputError(f"hops={hops} and expansion=ExpansionConfig(hops="
                                f"{expansion.hops}, ...) disagree: give the hops in one of them")
    return expansion


def expansion_settings(expansion: ExpansionConfig) -> dict[str, Any]:
    """The pool's bounds, for :meth:`RetrievalMethod.describe`."""
    return {"hops": expansion.hops,
            "max_candidate_relations": expansion.max_candidate_relations,
            "max_relations_per_passage": expansion.max_relations_per_passage,
            "per_hop_max_relations": expansion.per_hop_max_relations,
            "per_hop_max_entities": expansion.per_hop_max_entities,
            "per_hop_max_hub_relations": expansion.per_hop_max_hub_relations}
