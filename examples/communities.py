"""Communities, local search and global search (Microsoft GraphRAG) on Milvus Lite.

Builds the graph of a benchmark's passages from its pre-extracted triplets (for example
../shared/benchmarks/musique_train100; the first --limit passages), computes the Leiden
communities, writes a report per community, and then:

(a) prints the communities per level and the best-rated reports;
(b) asks a multi-hop question with local search: passages, the reports of the question's
    communities and the entity and relation tables, in one token budget;
(c) asks a question about the whole corpus with global search: map over batches of reports,
    reduce into one answer.

Without OPENAI_API_KEY everything runs offline: MiniLM embeddings, extractive reports (no
LLM) and, for global search, a scripted stand-in LLM that answers each map batch with the
titles of its best-rated reports and the reduce step with those points: the number of LLM
calls (batches + 1) and the flow are real, the prose is not. With OPENAI_API_KEY set,
gpt-4o-mini writes the reports and the answers.

Without a dataset path it uses the Bernoulli family of examples/bernoulli.py.

Run:  python examples/communities.py [DATASET_DIR] [--limit 300] [--uri ./communities.db]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)

from llama_index_graphrag_milvus import GraphRAGIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bernoulli import DATASET, QUESTION, local_embedding, openai_llm

GLOBAL_QUESTION = "What are the main themes and groups of people in these documents?"


class OfflineAnalyst(CustomLLM):
    """A scripted stand-in for global search without an API key: a map prompt is answered
    with one point per report in the batch (its title, scored by its rating), a reduce
    prompt with the points it was given. No text is generated."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="offline-analyst")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any
                 ) -> CompletionResponse:
        if "----Analyst" in prompt:  # reduce: list the best points it received
            points = re.findall(r"----Analyst \d+----\nImportance Score: [\d.]+\n(.+)", prompt)
            lines = "\n".join(f"- {p}" for p in points[:5])
            return CompletionResponse(text=f"The collection's main groups:\n{lines}")
        titles = re.findall(r"Title: (.+)\nRating: ([\d.]+)", prompt)
        points = [{"description": f"{title} [Data: Reports]", "score": float(r) * 10}
                  for title, r in titles]
        return CompletionResponse(text=json.dumps({"points": points}))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any
                        ) -> CompletionResponseGen:
        response = self.complete(prompt)
        yield response


def load_passages(folder: Path | None, limit: int) -> list[tuple[str, list[Any]]]:
    """``(text, triplets)`` of the first ``limit`` passages of a benchmark folder (its
    corpus.jsonl and triplets.jsonl), or the Bernoulli family."""
    if folder is None:
        return [(text, list(triplets)) for text, triplets in DATASET]
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open()][:limit]
    triplets: dict[str, list[Any]] = {}
    for line in (folder / "triplets.jsonl").open():
        row = json.loads(line)
        triplets[str(row["id"])] = row["triplets"]
    return [(f"{p['title']}: {p['text']}", triplets.get(str(p["id"]), [])) for p in corpus]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, nargs="?", default=None)
    parser.add_argument("--limit", type=int, default=300, help="passages of the dataset")
    parser.add_argument("--uri", default="./communities.db")
    args = parser.parse_args()
    shutil.rmtree(args.uri, ignore_errors=True)
    llm = openai_llm()
    print("LLM:", llm.metadata.model_name if llm else
          "none (OPENAI_API_KEY not set): extractive reports, scripted global search")
    data = load_passages(args.dataset, args.limit)
    with GraphRAGIndex.from_triplets(data, uri=args.uri, embed_model=local_embedding()
                                     ) as index:
        stats = index.build_communities(llm=llm)
        print(f"\n(a) {stats.communities} communities, per level {list(stats.per_level)}, "
              f"modularity {list(stats.modularity)}, {stats.kind} reports "
              f"({stats.seconds['leiden']:.2f} s Leiden)")
        for report in sorted(index.community_reports(0), key=lambda r: -r.rating)[:3]:
            print(f"    [{report.rating:4.1f}] {report.title}")

        question = QUESTION if args.dataset is None else GLOBAL_QUESTION
        print(f"\n(b) local search: {question}")
        for hit in index.as_local_retriever(similarity_top_k=3).retrieve(question):
            kind = hit.node.metadata["graphrag_context"]
            text = " | ".join(line for line in hit.node.get_content().splitlines() if line)
            print(f"    {kind:9s} {text[:100]}")

        print(f"\n(c) global search: {GLOBAL_QUESTION}")
        engine = index.as_global_query_engine(llm=llm or OfflineAnalyst(), level=0)
        response = engine.query(GLOBAL_QUESTION)
        print("   ", str(response).replace("\n", "\n    "))
        meta = response.metadata or {}
        print(f"    ({meta.get('batches')} map batches + 1 reduce = {meta.get('map_calls', 0) + 1}"
              f" LLM calls, {meta.get('seconds', 0):.2f} s)")


if __name__ == "__main__":
    main()
