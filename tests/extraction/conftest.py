"""The spaCy extractor the extraction tests share."""

from __future__ import annotations

import pytest

from llama_index_graphrag_milvus import SpacyTripletExtractor


@pytest.fixture(scope="module")
def extractor() -> SpacyTripletExtractor:
    """The default extractor (loads en_core_web_sm by name). Do not change its fields."""
    return SpacyTripletExtractor()
