"""One passage through the spaCy extractor, as the extraction tests read it."""

from __future__ import annotations

from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus import SpacyTripletExtractor
from llama_index_graphrag_milvus.metadata import ENTITY_KINDS_KEY, TRIPLETS_KEY


def extract(extractor: SpacyTripletExtractor, text: str, title: str | None = None
            ) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """The triplets and entity kinds the extractor gives one passage (``title`` as its
    ``metadata["title"]`` when given)."""
    node = TextNode(text=text, metadata={} if title is None else {"title": title})
    extractor([node])
    return [tuple(t) for t in node.metadata[TRIPLETS_KEY]], node.metadata[ENTITY_KINDS_KEY]
