"""The Bernoulli family with hostile passages, for the explanation and explorer tests.

With :class:`~tests.support.fakes.HashEmbedding` (64 dimensions), "What contribution did the son of
Euler's teacher make?" finds the relation "Leonhard Euler was a student of Johann Bernoulli";
the bridge Johann Bernoulli's second query finds Daniel Bernoulli's passage first, which
naive RAG ranks 4th (it misses it at 3). The three hostile passages (and entities) resemble
the question a little, so they are returned and drawn: each would set
``window.__graphragPwned`` if the page ran it.
"""

from __future__ import annotations

from pathlib import Path

from llama_index_graphrag_milvus import GraphRAGIndex
from tests.support.fakes import HashEmbedding

QUESTION = "What contribution did the son of Euler's teacher make?"
SCRIPT = "<script>window.__graphragPwned = 1</script>"
IMAGE = '<img src=x onerror="window.__graphragPwned = 2">'
LINK = '<a href="javascript:window.__graphragPwned = 3">'
HOSTILE = (SCRIPT, IMAGE, LINK)

EULER = "Leonhard Euler was a student of Johann Bernoulli in Basel."
DANIEL = "Daniel Bernoulli, a child of Johann Bernoulli, worked on fluid dynamics."
FAMILY_WITH_HOSTILE_PASSAGES = [
    (EULER, [("Leonhard Euler", "was a student of", "Johann Bernoulli"),
             ("Leonhard Euler", "was born in", "Basel")]),
    (DANIEL, [("Daniel Bernoulli", "was a child of", "Johann Bernoulli"),
              ("Daniel Bernoulli", "worked on", "fluid dynamics")]),
    ("Fluid dynamics explains the lift of aircraft wings.",
     [("fluid dynamics", "explains", "the lift of aircraft wings")]),
    (f"{SCRIPT} Euler's teacher", [(SCRIPT, "mentions", "Euler's teacher")]),
    (f"{IMAGE} the son", [(IMAGE, "names", "the son")]),
    (f"{LINK}click</a> a contribution", [(LINK, "links to", "a contribution")]),
]


def build(path: Path | str, **kwargs: object) -> GraphRAGIndex:
    """The family with hostile passages in a Milvus Lite index at ``path``."""
    return GraphRAGIndex.from_triplets(FAMILY_WITH_HOSTILE_PASSAGES, uri=str(path),
                                       embed_model=HashEmbedding(dim=64), **kwargs)
