"""One entity whatever Unicode form its name is written in (decomposed, full-width, half-width
kana, Turkish capitals), and an analyzer Milvus Lite cannot run refused before anything is
created. Milvus Lite."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.ids import entity_id
from tests.support.fakes import BigramEmbedding

pytestmark = pytest.mark.milvus


@pytest.mark.parametrize(("written", "usual"), [
    (unicodedata.normalize("NFD", "Jürgen Groß"), "Jürgen Groß"),  # a file saved on macOS
    ("Ｅｕｌｅｒ", "Euler"),
    ("ｵｲﾗｰ", "オイラー"),
    (unicodedata.normalize("NFD", "한국"), "한국"),  # Hangul jamo
    ("İstanbul", "istanbul"),
    ("ISTANBUL", "İstanbul"),
    ("YILMAZ", "Yılmaz"),  # capitals cannot tell dotless ı from i
])
def test_a_name_in_another_unicode_form_is_the_same_entity(written: str, usual: str) -> None:
    assert entity_id(written) == entity_id(usual)


def test_passages_naming_one_entity_in_two_forms_share_it(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "Jürgen Groß")
    data = [("Jürgen Groß lehrte Anna Weber.", [("Jürgen Groß", "lehrte", "Anna Weber")]),
            (f"{nfd} lebte in Basel.", [(nfd, "lebte in", "Basel")])]
    with GraphRAGIndex.from_triplets(data, uri=str(tmp_path / "graph.db"),
                                     embed_model=BigramEmbedding()) as index:
        names = sorted(index.entity_table.names[row] for row in range(len(index.entity_table)))
        assert len(names) == 3  # Jürgen Groß once, Anna Weber, Basel
        graph = index.graph
        row = graph.entity_ids.lookup([entity_id("Jürgen Groß")])
        assert row.size == 1 and graph.entity_degrees[row[0]] == 2


def test_an_analyzer_milvus_lite_cannot_run_is_refused_before_anything_is_made(
        tmp_path: Path) -> None:
    uri = str(tmp_path / "graph.db")
    with pytest.raises(InvalidInputError, match=r"Milvus Lite cannot run the analyzer "
                                                r"\{'type': 'english'\}.*a Milvus server"):
        GraphRAGIndex(uri=uri, embed_model=BigramEmbedding(),
                      full_text_analyzer={"type": "english"})
    with GraphRAGIndex(uri=uri, embed_model=BigramEmbedding(),
                       full_text_analyzer={"tokenizer": "jieba"}) as index:  # the file is free
        index.insert_triplets([("欧拉的老师是约翰·伯努利。",
                                [("欧拉", "的老师是", "约翰·伯努利")])])
        assert index.store.full_text_analyzer == {"tokenizer": "jieba"}
