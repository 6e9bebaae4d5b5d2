"""Shared fixtures: Milvus Lite stores under tmp_path, a small hand-built graph."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from tests.fakes import HashEmbedding

# A small family graph: Euler's teacher is Johann Bernoulli, whose son is Daniel.
FAMILY = [
    ("Leonhard Euler was a student of Johann Bernoulli in Basel.",
     [("Leonhard Euler", "was a student of", "Johann Bernoulli"),
      ("Leonhard Euler", "was born in", "Basel")]),
    ("Daniel Bernoulli, the son of Johann Bernoulli, made contributions to fluid dynamics.",
     [("Daniel Bernoulli", "was the son of", "Johann Bernoulli"),
      ("Daniel Bernoulli", "made contributions to", "fluid dynamics")]),
    ("Jakob Bernoulli was the older brother of Johann Bernoulli and studied probability.",
     [("Jakob Bernoulli", "was the older brother of", "Johann Bernoulli"),
      ("Jakob Bernoulli", "studied", "probability")]),
    ("Fluid dynamics explains the lift of aircraft wings.",
     [("fluid dynamics", "explains", "the lift of aircraft wings")]),
]


@pytest.fixture
def embed_model() -> HashEmbedding:
    return HashEmbedding(dim=64)


@pytest.fixture
def lite_uri(tmp_path: Path) -> str:
    return str(tmp_path / "graph.db")


@pytest.fixture
def make_index(lite_uri: str, embed_model: HashEmbedding) -> Callable[..., GraphRAGIndex]:
    def make(data: list | None = None, **kwargs: object) -> GraphRAGIndex:
        kwargs.setdefault("uri", lite_uri)
        kwargs.setdefault("embed_model", embed_model)
        return GraphRAGIndex.from_triplets(FAMILY if data is None else data, **kwargs)

    return make


@pytest.fixture
def family_index(make_index: Callable[..., GraphRAGIndex]) -> GraphRAGIndex:
    return make_index()
