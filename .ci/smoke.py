"""Smoke test of the installed package (the built wheel, runtime dependencies only).

Run from outside the checkout, in a virtual environment where the wheel was installed with no
extras: proves that the runtime dependencies suffice (no torch, no spaCy, no pcst) and that
the public API works end to end on Milvus Lite with an embedding defined here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import tempfile
from pathlib import Path

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM

import llama_index_graphrag_milvus as package
from llama_index_graphrag_milvus import GraphRAGIndex, GraphRAGRetriever, GraphRelationRerank


class WordHashEmbedding(BaseEmbedding):
    """Words hashed into 64 buckets, L2-normalized: texts that share words are similar."""

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * 64
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        norm = sum(x * x for x in vector) ** 0.5 or 1.0
        return [x / norm for x in vector]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


DATA = [
    ("Leonhard Euler was a student of Johann Bernoulli in Basel.",
     [("Leonhard Euler", "was a student of", "Johann Bernoulli")]),
    ("Daniel Bernoulli, the son of Johann Bernoulli, worked on fluid dynamics.",
     [("Daniel Bernoulli", "was the son of", "Johann Bernoulli"),
      ("Daniel Bernoulli", "worked on", "fluid dynamics")]),
    ("Jakob Bernoulli studied probability.", [("Jakob Bernoulli", "studied", "probability")]),
]


def main() -> None:
    location = Path(package.__file__).resolve()
    assert "site-packages" in location.parts, f"not the installed wheel: {location}"
    for name in package.__all__:
        assert hasattr(package, name), f"{name} is in __all__ but not importable"
    for optional in ("torch", "spacy", "pcst_fast"):
        assert importlib.util.find_spec(optional) is None, f"{optional} came with no extras"
    with tempfile.TemporaryDirectory() as folder:
        uri = str(Path(folder) / "smoke.db")
        with GraphRAGIndex.from_triplets(DATA, uri=uri, embed_model=WordHashEmbedding()) as index:
            retriever = index.as_retriever(similarity_top_k=2)
            assert isinstance(retriever, GraphRAGRetriever)
            texts = [n.node.get_content() for n in retriever.retrieve(
                "What did the son of Euler's teacher work on?")]
            assert any("Daniel" in t for t in texts), texts
            naive = index.as_naive_retriever(similarity_top_k=1).retrieve("probability")
            assert "Jakob" in naive[0].node.get_content()
            # MockLLM echoes the prompt: a malformed rerank answer, so the retriever's order
            question = "Who was Euler's teacher?"
            reranked = GraphRelationRerank(llm=MockLLM(), top_n=1).postprocess_nodes(
                retriever.retrieve(question), query_str=question)
            assert len(reranked) == 1
        with GraphRAGIndex(uri=uri, embed_model=WordHashEmbedding()) as reopened:
            assert reopened.graph.num_relations == 4
    print(f"smoke test passed: {package.__name__} {package.__version__} from {location.parent}")


if __name__ == "__main__":
    main()
    sys.exit(0)
