"""Naive RAG's passages beside the graph retriever's, as text for a terminal.

Each row is one rank: naive RAG's passage on the left, the graph method's on the right, each
with its similarity (to the question; for a passage found by a bridge, to the bridge's
second query) and its file; under the graph's passage, how it was found. A ``+`` marks a
passage the other list does not hold.

>>> from llama_index.core.schema import NodeWithScore, TextNode
>>> euler = NodeWithScore(node=TextNode(id_="p1", text="Euler studied in Basel.",
...                                     metadata={"file_name": "euler.txt"}), score=0.61)
>>> daniel = NodeWithScore(node=TextNode(id_="p2", text="Daniel is Johann's son.", metadata={
...     "file_name": "daniel.txt", "graphrag_found_by": {"query": "bridge",
...     "bridge": "Johann", "similarity": 0.62}}), score=1.0)
>>> print(side_by_side([euler], [euler, daniel], "bridge", width=80))
   naive RAG                             │ graph RAG (bridge)
#1 0.610 euler.txt: Euler studied in Ba… │ 0.610 euler.txt: Euler studied in Ba…
#2                                       │ 0.620 daniel.txt: Daniel is Johann… +
                                         │   bridge Johann
   + not in the other list
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_graphrag_milvus.cli.common import pad, shorten
from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY, RELATIONS_KEY

SEPARATOR = " │ "


def similarity(hit: NodeWithScore) -> float | None:
    """The passage's similarity to the query that found it: the graph methods record it in
    ``metadata["graphrag_found_by"]``; naive RAG's score is that similarity."""
    found = hit.node.metadata.get(FOUND_BY_KEY) or {}
    value = found.get("similarity", hit.score)
    return float(value) if isinstance(value, (int, float)) else None


def source(hit: NodeWithScore) -> str:
    """The file a passage comes from (its name), else its document id."""
    return str(hit.node.metadata.get("file_name") or hit.node.ref_doc_id or hit.node.node_id)


def how_found(hit: NodeWithScore) -> str:
    """How a graph method found a passage, in words (empty for naive RAG's).

    >>> from llama_index.core.schema import TextNode
    >>> node = TextNode(text="x", metadata={"graphrag_found_by": {"query": "bridge",
    ...     "bridge": "Johann Bernoulli"}, "graphrag_relations": [{"text": "Euler was a "
    ...     "student of Johann Bernoulli"}]})
    >>> how_found(NodeWithScore(node=node, score=1.0))
    "bridge Johann Bernoulli, via 'Euler was a student of Johann Bernoulli'"
    """
    found = hit.node.metadata.get(FOUND_BY_KEY) or {}
    relations = hit.node.metadata.get(RELATIONS_KEY) or []
    via = f", via {relations[0].get('text', '')!r}" if relations else ""
    if found.get("bridge"):
        return f"bridge {found['bridge']}{via}"
    query = str(found.get("query", ""))
    if query == "ppr":
        return f"PageRank mass {float(found.get('mass', 0.0)):.4f}{via}"
    words = {"question": "the question", "pcst": "the Steiner tree"}.get(query, query)
    if not words:
        return "the k-hop pool" + via if relations else ""
    return words + via


def _cell(hit: NodeWithScore | None, width: int, other: set[str]) -> str:
    if hit is None:
        return ""
    value = similarity(hit)
    shown = f"{value:.3f}" if value is not None else "  –  "
    mark = "+" if hit.node.node_id not in other else ""
    text = hit.node.get_content(metadata_mode=MetadataMode.NONE)
    head = f"{shown} {source(hit)}: "
    return shorten(head + text, width - len(mark) - 1 if mark else width) + (
        f" {mark}" if mark else "")


def side_by_side(naive: Sequence[NodeWithScore], graph: Sequence[NodeWithScore],
                 method: str, width: int = 100, baseline: str = "naive RAG") -> str:
    """The two lists as rows of ``width`` characters (see the module docstring); the left
    one is headed ``baseline``."""
    column = max(24, (width - 3 - len(SEPARATOR)) // 2)
    naive_ids = {h.node.node_id for h in naive}
    graph_ids = {h.node.node_id for h in graph}
    lines = [f"   {baseline:<{column}}{SEPARATOR}graph RAG ({method})"]
    for rank in range(max(len(naive), len(graph))):
        left = naive[rank] if rank < len(naive) else None
        right = graph[rank] if rank < len(graph) else None
        label = f"#{rank + 1}"
        lines.append(f"{label:<3}{pad(_cell(left, column, graph_ids), column)}{SEPARATOR}"
                     f"{_cell(right, column, naive_ids)}".rstrip())
        if right is not None and (how := how_found(right)):
            lines.append(f"{'':<3}{'':<{column}}{SEPARATOR}  {shorten(how, column - 2)}".rstrip())
    if naive_ids != graph_ids:
        lines.append(f"{'':<3}+ not in the other list")
    return "\n".join(lines)
