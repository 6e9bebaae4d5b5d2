"""The built-in retrieval methods by name, and the keyword form of their settings.

The documented way to choose and configure a method is an object::

    index.as_retriever(method=BridgeRetrieval(max_bridges=5))
    index.as_retriever(method=PageRankRetrieval(hops=2, damping=0.6))

A name (:class:`PassageScoring`, or its string) gives the method with its defaults:
``index.as_retriever(method="ppr")``. The keyword form of earlier releases,
``index.as_retriever(passage_scoring="ppr", hops=2, ppr_damping=0.6)``, still works: the
settings of :data:`KEYWORD_SETTINGS` build the named method, with a ``DeprecationWarning``
that shows the object form. Settings of other methods are checked and ignored, as before.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.graph import ExpansionConfig
from llama_index_graphrag_milvus.graph.steiner_tree import DEFAULT_RELATION_PRIZES
from llama_index_graphrag_milvus.retrieval.bridge import (
    DEFAULT_HUB_PASSAGES,
    DEFAULT_MAX_BRIDGES,
    DEFAULT_NAMED_RELATIONS,
    BridgeRetrieval,
)
from llama_index_graphrag_milvus.retrieval.khop import KHopRetrieval
from llama_index_graphrag_milvus.retrieval.method import RetrievalMethod
from llama_index_graphrag_milvus.retrieval.pagerank import (
    DEFAULT_PASSAGE_WEIGHT,
    PageRankRetrieval,
)
from llama_index_graphrag_milvus.retrieval.pcst import PCSTRetrieval
from llama_index_graphrag_milvus.retrieval.settings import Choice


class PassageScoring(Choice):
    """The built-in methods by name."""

    BRIDGE = "bridge"
    """:class:`~.bridge.BridgeRetrieval`, the graph-guided second hop (the default)."""
    PPR = "ppr"
    """:class:`~.pagerank.PageRankRetrieval`, personalized PageRank (HippoRAG 2)."""
    PCST = "pcst"
    """:class:`~.pcst.PCSTRetrieval`, the prize-collecting Steiner tree (G-Retriever)."""
    PASSAGE = "passage"
    """:class:`~.khop.KHopRetrieval`, the k-hop pool's passages by their own similarity."""
    RELATION = "relation"
    """:class:`~.khop.KHopRetrieval`, the k-hop pool's passages by their best relation."""


PASSAGE_SCORINGS = tuple(name.value for name in PassageScoring)
"""The built-in methods' names."""
DEFAULT_PASSAGE_SCORING = PassageScoring.BRIDGE
"""The best LLM-free method measured (see the README's multi-hop benchmark)."""

_POOL = "pool"
KEYWORD_SETTINGS: dict[str, tuple[str, str, Any]] = {
    # keyword: (what it configures, its argument there, its default)
    "hops": (_POOL, "hops", 1),
    "max_candidate_relations": (_POOL, "max_candidate_relations", 100),
    "per_hop_max_relations": (_POOL, "per_hop_max_relations", 200),
    "per_hop_max_entities": (_POOL, "per_hop_max_entities", 50),
    "max_relations_per_passage": (_POOL, "max_relations_per_passage", None),
    "per_hop_max_hub_relations": (_POOL, "per_hop_max_hub_relations", 2000),
    "max_bridges": (PassageScoring.BRIDGE, "max_bridges", DEFAULT_MAX_BRIDGES),
    "bridge_query": (PassageScoring.BRIDGE, "bridge_query", "substitute"),
    "named_relations": (PassageScoring.BRIDGE, "named_relations", DEFAULT_NAMED_RELATIONS),
    "hub_passages": (PassageScoring.BRIDGE, "hub_passages", DEFAULT_HUB_PASSAGES),
    "match_words": (PassageScoring.BRIDGE, "match_words", True),
    "ppr_damping": (PassageScoring.PPR, "damping", 0.5),
    "ppr_passage_weight": (PassageScoring.PPR, "passage_weight", DEFAULT_PASSAGE_WEIGHT),
    "ppr_max_iterations": (PassageScoring.PPR, "max_iterations", 50),
    "ppr_tolerance": (PassageScoring.PPR, "tolerance", 1e-6),
    "ppr_match_words": (PassageScoring.PPR, "match_words", False),
    "pcst_entity_prizes": (PassageScoring.PCST, "entity_prizes", 3),
    "pcst_relation_prizes": (PassageScoring.PCST, "relation_prizes", DEFAULT_RELATION_PRIZES),
    "pcst_edge_cost": (PassageScoring.PCST, "edge_cost", 0.5),
    "pcst_subgraph_node": (PassageScoring.PCST, "subgraph_node", False),
}
"""The deprecated keyword settings of the built-in methods: what each configures (the k-hop
pool of ``"passage"``, ``"relation"``, ``"ppr"`` and ``"pcst"``, or one method), the
argument it becomes, and its default."""


def _object_form(name: PassageScoring, settings: Mapping[str, Any]) -> str:
    """The ``method=...`` that the keyword ``settings`` of method ``name`` amount to.

    >>> _object_form(PassageScoring.RELATION, {"hops": 2, "max_candidate_relations": 50})
    "method=KHopRetrieval(hops=2, expansion=ExpansionConfig(max_candidate_relations=50), \
order_by='relation')"
    """
    kind = {PassageScoring.BRIDGE: "BridgeRetrieval", PassageScoring.PPR: "PageRankRetrieval",
            PassageScoring.PCST: "PCSTRetrieval"}.get(name, "KHopRetrieval")
    parts = []
    pool = {KEYWORD_SETTINGS[k][1]: v for k, v in settings.items()
            if KEYWORD_SETTINGS[k][0] == _POOL and k != "hops"}
    if name != PassageScoring.BRIDGE:
        if "hops" in settings:
            parts.append(f"hops={settings['hops']!r}")
        if pool:
            shown = ", ".join(f"{key}={value!r}" for key, value in pool.items())
            parts.append(f"expansion=ExpansionConfig({shown})")
    parts += [f"{KEYWORD_SETTINGS[k][1]}={v!r}" for k, v in settings.items()
              if KEYWORD_SETTINGS[k][0] == name]
    if name == PassageScoring.RELATION:
        parts.append("order_by='relation'")
    return f"method={kind}({', '.join(parts)})"


def builtin_method(name: PassageScoring | str, settings: Mapping[str, Any] | None = None
                   ) -> RetrievalMethod:
    """The built-in method ``name``, configured by the keyword ``settings`` (see
    :data:`KEYWORD_SETTINGS`; a setting of another method is checked and ignored).

    >>> builtin_method("ppr", {"hops": 2, "ppr_damping": 0.6}).describe()["ppr_damping"]
    0.6
    >>> builtin_method("bridge", {"max_bridge": 2})
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: unknown retriever argument max_bridge; the method settings are: bridge_query, hops, hub_passages, match_words, max_bridges, max_candidate_relations, max_relations_per_passage, named_relations, pcst_edge_cost, pcst_entity_prizes, pcst_relation_prizes, pcst_subgraph_node, per_hop_max_entities, per_hop_max_hub_relations, per_hop_max_relations, ppr_damping, ppr_match_words, ppr_max_iterations, ppr_passage_weight, ppr_tolerance
    """  # noqa: E501
    chosen = PassageScoring.of("passage_scoring", name)
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(KEYWORD_SETTINGS))
    if unknown:
        raise InvalidInputError(
            f"unknown retriever argument {', '.join(unknown)}; the method settings are: "
            f"{', '.join(sorted(KEYWORD_SETTINGS))}")
    groups: dict[str, dict[str, Any]] = {}
    for keyword, value in settings.items():
        group, argument, _ = KEYWORD_SETTINGS[keyword]
        groups.setdefault(group, {})[argument] = value
    expansion = ExpansionConfig(**groups.pop(_POOL, {}))  # checks the pool's settings
    built: dict[str, RetrievalMethod] = {}
    for group in {*groups, chosen if chosen != PassageScoring.RELATION
                  else PassageScoring.PASSAGE}:
        arguments = groups.get(group, {})
        if group == PassageScoring.BRIDGE:
            built[group] = BridgeRetrieval(**arguments)
        elif group == PassageScoring.PPR:
            built[group] = PageRankRetrieval(expansion=expansion, **arguments)
        elif group == PassageScoring.PCST:
            built[group] = PCSTRetrieval(expansion=expansion, **arguments)
        else:
            built[group] = KHopRetrieval(expansion=expansion)
    if chosen == PassageScoring.RELATION:
        return KHopRetrieval(expansion=expansion, order_by="relation")
    return built[chosen]


def method_of(method: RetrievalMethod | PassageScoring | str | None,
              passage_scoring: PassageScoring | str | RetrievalMethod | None,
              settings: Mapping[str, Any]) -> RetrievalMethod:
    """The method a retriever runs: ``method`` (an object, or a name with its defaults), or
    the deprecated keyword form (``passage_scoring`` and the ``settings`` of
    :data:`KEYWORD_SETTINGS`), with a ``DeprecationWarning`` naming the object form."""
    if method is not None and passage_scoring is not None:
        raise InvalidInputError("give the method once: method=... (passage_scoring is its "
                                "former name)")
    chosen = method if method is not None else passage_scoring
    if isinstance(chosen, RetrievalMethod):
        if settings:
            raise InvalidInputError(
                f"{', '.join(sorted(settings))} configure the built-in methods: give them to "
                f"the method object ({type(chosen).__name__}(...)), not to the retriever")
        return chosen
    if chosen is not None and not isinstance(chosen, str):
        raise InvalidInputError(
            f"{'method' if method is not None else 'passage_scoring'} must be a "
            f"RetrievalMethod or one of {', '.join(PASSAGE_SCORINGS)}, got "
            f"{type(chosen).__name__}")
    argument = "method" if method is not None else "passage_scoring"
    name = PassageScoring.of(argument, DEFAULT_PASSAGE_SCORING if chosen is None else chosen)
    built = builtin_method(name, settings)
    if settings or passage_scoring is not None:
        warnings.warn(
            f"the keyword form of the method settings is deprecated: pass "
            f"{_object_form(name, settings)} (see llama_index_graphrag_milvus.retrieval)",
            DeprecationWarning, stacklevel=4)
    return built
