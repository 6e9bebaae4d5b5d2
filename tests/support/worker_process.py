"""A stateless query worker for tests/milvus/test_workers.py: one process with the graph served by
Milvus, answering JSON commands on stdin, one per line, with one JSON line on stdout.

Commands: ``{"insert": [text, [[s, p, o], ...]]}`` ingests a passage; ``{"query": text}``
answers the default retriever's passages and whether the process holds anything whole.
"""

from __future__ import annotations

import json
import sys

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.index_cache import COPIES, GRAPH_MODE
from tests.support.fakes import HashEmbedding


def main(uri: str, prefix: str) -> None:
    index = GraphRAGIndex(uri=uri, collection_prefix=prefix, embed_model=HashEmbedding(dim=64),
                          graph="milvus", consistency_level="Strong")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if "insert" in command:
            text, triplets = command["insert"]
            stats = index.insert_triplets([(text, [tuple(t) for t in triplets])])
            answer: dict[str, object] = {"relations": stats.relations}
        else:
            nodes = index.as_retriever(similarity_top_k=5).retrieve(command["query"])
            answer = {"passages": [n.node.get_content() for n in nodes],
                      "held": [name for name in COPIES
                               if name != GRAPH_MODE and index.cache.peek(name) is not None]}
        print(json.dumps(answer), flush=True)
    index.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
