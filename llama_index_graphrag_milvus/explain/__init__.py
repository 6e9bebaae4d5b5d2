"""Explanations of retrievals: why each passage came back, as a record and a page.

- :mod:`.explanation`: :class:`Explanation` and the small records it holds (JSON with
  ``to_dict``/``to_json``, a self-contained HTML page with ``to_html``/``save_html``, inline
  in Jupyter);
- :mod:`.trace`: the :class:`Trace` a method fills in while ``explain`` runs it (nothing
  is collected by ``retrieve``);
- :mod:`.assemble` and :mod:`.view`: from the trace to the record and its drawn graph;
- :mod:`.run`: ``explain``/``aexplain``, one plan for both drivers;
- :mod:`.html`: the page (Cytoscape.js, vendored in ``assets/``, MIT).

>>> from llama_index_graphrag_milvus.explain import Explanation
"""

from llama_index_graphrag_milvus.explain.explanation import (
    BridgeStep,
    CandidateList,
    EntityMass,
    EntityRef,
    Explanation,
    GraphEdge,
    GraphNode,
    GraphView,
    ListedPassage,
    NaivePassage,
    PassageStep,
    RelationRef,
    ReportStep,
    SeedEntity,
)
from llama_index_graphrag_milvus.explain.trace import Trace

__all__ = [
    "BridgeStep",
    "CandidateList",
    "EntityMass",
    "EntityRef",
    "Explanation",
    "GraphEdge",
    "GraphNode",
    "GraphView",
    "ListedPassage",
    "NaivePassage",
    "PassageStep",
    "RelationRef",
    "ReportStep",
    "SeedEntity",
    "Trace",
]
