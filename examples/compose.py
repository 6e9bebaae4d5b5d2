"""Composition: the graph retriever with LlamaIndex core's fusion, BM25, a router and a rerank.

The Bernoulli data of examples/bernoulli.py, on Milvus Lite, offline by default:

(a) graph + naive RAG fused by reciprocal rank (core's QueryFusionRetriever);
(b) graph + BM25 (llama-index-retrievers-bm25) over the same stored passages, and all three;
(c) a RouterRetriever whose embedding selector sends a multi-hop question to the graph
    retriever and a direct lookup to naive RAG;
(d) GraphRelationRerank after the fusion, in a RetrieverQueryEngine.

Offline, core needs an explicit LLM where it would otherwise resolve Settings.llm (OpenAI,
which raises without OPENAI_API_KEY): QueryFusionRetriever and RouterRetriever take
llm=MockLLM(), which they never call here (one query, an embedding selector). Without
OPENAI_API_KEY the rerank has no usable LLM and keeps the fused order (its documented
fallback, with a warning); with it, OpenAI picks the relations and writes the answer.

Run:  python examples/compose.py [--uri ./compose.db]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever, RouterRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.selectors import EmbeddingSingleSelector
from llama_index.core.tools import RetrieverTool
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bernoulli import DATASET, QUESTION, first_line, local_embedding, openai_llm

LOOKUP = "Where was Leonhard Euler born?"
TOP_K = 2  # per retriever: naive RAG's top 2 misses Daniel Bernoulli, the graph's does not
GRAPH_DESCRIPTION = ("Multi-hop questions about relations between people or things, such as "
                     "the son of someone's teacher or the birthplace of someone's brother")
NAIVE_DESCRIPTION = ("Direct factual lookups about one named person or thing, such as where "
                     "someone was born or what something is")


def fuse(retrievers: list[BaseRetriever], top_k: int = 4) -> QueryFusionRetriever:
    """Reciprocal rank fusion with core's QueryFusionRetriever, offline.

    - num_queries=1: no query generation, so the LLM is never called; llm=MockLLM() still
      has to be given, else the constructor resolves Settings.llm (OpenAI: a ValueError
      without OPENAI_API_KEY).
    - The graph retriever goes LAST: the fusion merges a passage found by several
      retrievers by its node hash (the package's passages hash equal whichever retriever
      returns them) and keeps the node of the last list, so the graph's node, which carries
      the relations GraphRelationRerank reads, is the one kept.
    - use_async=False runs the retrievers one after another in this thread.
    """
    return QueryFusionRetriever(retrievers, llm=MockLLM(), mode="reciprocal_rerank",
                                num_queries=1, use_async=False, similarity_top_k=top_k)


def stored_passages(index: GraphRAGIndex) -> list[BaseNode]:
    """Every passage of the index, read from its passage collection (a MilvusVectorStore).

    BM25 must index these nodes, not the input texts: a stored passage has its own id and
    metadata (its triplets), hence its own hash, and a node built from the raw text would be
    listed a second time by the fusion. One Milvus query returns at most 16,384 rows.
    """
    everything = MetadataFilters(filters=[MetadataFilter(key="id", operator="!=", value="")])
    return index.store.passages.get_nodes(filters=everything)


def names(hits: list[NodeWithScore], scores: bool = False) -> str:
    if scores:
        return ", ".join(f"{first_line(h)} {h.score:.4f}" for h in hits)
    return ", ".join(first_line(h) for h in hits)


def which(hits: list[NodeWithScore]) -> str:
    """Which retriever a router used: the graph's passages carry graphrag_found_by."""
    return "graph" if hits and "graphrag_found_by" in hits[0].node.metadata else "naive"


def show_fusions(graph: BaseRetriever, naive: BaseRetriever, bm25: BaseRetriever) -> None:
    print(f"(a) graph + naive RAG, reciprocal rank fusion (top {TOP_K} each):")
    print(f"  naive: {names(naive.retrieve(QUESTION))}")
    print(f"  graph: {names(graph.retrieve(QUESTION))}")
    print(f"  fused: {names(fuse([naive, graph]).retrieve(QUESTION), scores=True)}")
    print(f"\n(b) graph + BM25 over the stored passages (top {TOP_K} each):")
    print(f"  bm25:  {names(bm25.retrieve(QUESTION))}")
    print(f"  fused: {names(fuse([bm25, graph]).retrieve(QUESTION), scores=True)}")
    print("  naive + BM25 + graph: "
          f"{names(fuse([naive, bm25, graph]).retrieve(QUESTION), scores=True)}")


def show_router(index: GraphRAGIndex, graph: BaseRetriever, naive: BaseRetriever) -> None:
    router = RouterRetriever(
        selector=EmbeddingSingleSelector.from_defaults(embed_model=index.embed_model),
        retriever_tools=[
            RetrieverTool.from_defaults(graph, name="graph", description=GRAPH_DESCRIPTION),
            RetrieverTool.from_defaults(naive, name="naive", description=NAIVE_DESCRIPTION),
        ],
        llm=MockLLM(),  # never called with an embedding selector; stops Settings.llm
    )
    print("\n(c) RouterRetriever, embedding selector (no LLM):")
    for question in (QUESTION, LOOKUP):
        hits = router.retrieve(question)
        print(f'  "{question}" -> {which(hits)}: {names(hits)}')


def show_rerank(fusion: BaseRetriever, llm: Any) -> None:
    if llm is not None:
        print("\n(d) GraphRelationRerank after naive + BM25 + graph fusion (OpenAI picks the "
              "relations):")
        rerank = GraphRelationRerank(llm=llm, top_n=2)
        engine = RetrieverQueryEngine.from_args(fusion, node_postprocessors=[rerank], llm=llm)
        response = engine.query(QUESTION)
        print(f"  top 2: {names(response.source_nodes)}")
        print(f"  answer: {response}")
        return
    # No usable LLM: MockLLM echoes the prompt, which the rerank strips, so it finds no choice,
    # keeps the fused order, cut to top_n, and logs a warning.
    print("\n(d) GraphRelationRerank after naive + BM25 + graph fusion, no LLM: the fused "
          "order is kept")
    offline = MockLLM()
    rerank = GraphRelationRerank(llm=offline, top_n=2)
    engine = RetrieverQueryEngine.from_args(fusion, node_postprocessors=[rerank], llm=offline)
    hits = engine.retrieve(QueryBundle(QUESTION))  # retrieval + rerank, no answer synthesis
    print(f"  top 2: {names(hits)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", default="./compose.db", help="Milvus Lite path or server URL")
    parser.add_argument("--keep", action="store_true", help="reuse an existing store")
    args = parser.parse_args()
    if not args.keep and "://" not in args.uri:
        shutil.rmtree(args.uri, ignore_errors=True)

    llm = openai_llm()
    print("LLM:", "OpenAI gpt-4o-mini (rerank, answer)" if llm else
          "none (OPENAI_API_KEY not set): offline run")
    with GraphRAGIndex.from_triplets(DATASET, uri=args.uri,
                                     embed_model=local_embedding()) as index:
        print(f"Stored {len(DATASET)} passages at {args.uri}\n\nQuestion: {QUESTION}\n")
        graph = index.as_retriever(similarity_top_k=TOP_K)
        naive = index.as_naive_retriever(similarity_top_k=TOP_K)
        from llama_index.retrievers.bm25 import BM25Retriever  # llama-index-retrievers-bm25

        bm25 = BM25Retriever.from_defaults(nodes=stored_passages(index),
                                           similarity_top_k=TOP_K)
        show_fusions(graph, naive, bm25)
        show_router(index, graph, naive)
        show_rerank(fuse([naive, bm25, graph]), llm)


if __name__ == "__main__":
    main()
