"""The bridge choice in scripts without spaces or capitals: Japanese and Chinese passages
(user triplets, a character-bigram embedding) and Korean names with particles. The question's
own entity is recognised as named ("オイラー" names "レオンハルト・オイラー"), so it is not a
bridge and its words leave the second query; people are taken as named, not concepts."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.extraction.kinds import infer_kind
from llama_index_graphrag_milvus.words import (
    content_words,
    is_named,
    name_spans,
    name_units,
    without_name,
)
from tests.support.fakes import BigramEmbedding
from tests.support.markers import LITE_ONLY

JAPANESE: dict[str, Any] = {
    "passages": [
        ("レオンハルト・オイラーはバーゼルでヨハン・ベルヌーイに師事した。",
         [("レオンハルト・オイラー", "の師は", "ヨハン・ベルヌーイ"),
          ("レオンハルト・オイラー", "の出身地は", "バーゼル")]),
        ("ダニエル・ベルヌーイはヨハン・ベルヌーイの息子で、流体力学に貢献した。",
         [("ダニエル・ベルヌーイ", "の父は", "ヨハン・ベルヌーイ"),
          ("ダニエル・ベルヌーイ", "が貢献した分野は", "流体力学")]),
        ("ヤコブ・ベルヌーイはヨハン・ベルヌーイの兄で、確率論を研究した。",
         [("ヤコブ・ベルヌーイ", "の弟は", "ヨハン・ベルヌーイ"),
          ("ヤコブ・ベルヌーイ", "が研究した分野は", "確率論")]),
        ("流体力学は航空機の翼の揚力を説明する。",
         [("流体力学", "が説明するのは", "航空機の翼の揚力")]),
    ],
    "question": "オイラーの先生の息子は何に貢献しましたか？",
    "asked": "レオンハルト・オイラー", "short": "オイラー",
    "teacher": "ヨハン・ベルヌーイ", "answer": "ダニエル・ベルヌーイはヨハン",
}
CHINESE: dict[str, Any] = {
    "passages": [
        ("莱昂哈德·欧拉在巴塞尔师从约翰·伯努利。",
         [("莱昂哈德·欧拉", "的老师是", "约翰·伯努利"),
          ("莱昂哈德·欧拉", "出生于", "巴塞尔")]),
        ("丹尼尔·伯努利是约翰·伯努利的儿子，对流体力学有贡献。",
         [("丹尼尔·伯努利", "的父亲是", "约翰·伯努利"),
          ("丹尼尔·伯努利", "贡献于", "流体力学")]),
        ("雅各布·伯努利是约翰·伯努利的哥哥，研究概率论。",
         [("雅各布·伯努利", "的弟弟是", "约翰·伯努利"),
          ("雅各布·伯努利", "研究", "概率论")]),
        ("流体力学解释了飞机机翼的升力。",
         [("流体力学", "解释了", "飞机机翼的升力")]),
    ],
    "question": "欧拉的老师的儿子有什么贡献？",
    "asked": "莱昂哈德·欧拉", "short": "欧拉",
    "teacher": "约翰·伯努利", "answer": "丹尼尔·伯努利是约翰",
}

GERMAN: dict[str, Any] = {  # a teacher whose name holds the question's "von" and "der"
    "passages": [
        ("Anna Schmidt studierte in Wien bei Walther von der Vogelweide.",
         [("Anna Schmidt", "studierte bei", "Walther von der Vogelweide"),
          ("Anna Schmidt", "studierte in", "Wien")]),
        ("Maria Vogelweide ist die Tochter von Walther von der Vogelweide und gewann die "
         "Goldene Rose.",
         [("Maria Vogelweide", "ist die Tochter von", "Walther von der Vogelweide"),
          ("Maria Vogelweide", "gewann", "Goldene Rose")]),
        ("Karl Weber ist der Bruder von Walther von der Vogelweide und schrieb über Optik.",
         [("Karl Weber", "ist der Bruder von", "Walther von der Vogelweide"),
          ("Karl Weber", "schrieb über", "Optik")]),
        ("Die Goldene Rose ist ein Preis der Stadt Wien.",
         [("Goldene Rose", "ist ein Preis der", "Wien")]),
    ],
    "question": "Welchen Preis der Stadt gewann die Tochter des Lehrers von Anna Schmidt?",
    "asked": "Anna Schmidt", "short": "Anna Schmidt",
    "teacher": "Walther von der Vogelweide", "answer": "Maria Vogelweide ist die Tochter",
}


HINDI: dict[str, Any] = {  # vowel signs and viramas inside every word
    "passages": [
        ("राहुल शर्मा ने दिल्ली में अमित वर्मा से शिक्षा ली।",
         [("राहुल शर्मा", "के शिक्षक", "अमित वर्मा"),
          ("राहुल शर्मा", "का जन्मस्थान", "दिल्ली")]),
        ("सुनील वर्मा अमित वर्मा के पुत्र हैं और उन्होंने रसायन विज्ञान में योगदान दिया।",
         [("सुनील वर्मा", "के पिता", "अमित वर्मा"),
          ("सुनील वर्मा", "ने योगदान दिया", "रसायन विज्ञान")]),
        ("अजय वर्मा अमित वर्मा के भाई हैं और उन्होंने गणित पढ़ा।",
         [("अजय वर्मा", "के भाई", "अमित वर्मा"),
          ("अजय वर्मा", "ने पढ़ा", "गणित")]),
        ("रसायन विज्ञान पदार्थों का अध्ययन है।",
         [("रसायन विज्ञान", "का अध्ययन", "पदार्थ")]),
    ],
    "question": "राहुल शर्मा के शिक्षक के पुत्र ने किसमें योगदान दिया?",
    "asked": "राहुल शर्मा", "short": "राहुल शर्मा",
    "teacher": "अमित वर्मा", "answer": "सुनील वर्मा अमित",
}
THAI: dict[str, Any] = {  # no spaces between words, vowel and tone marks
    "passages": [
        ("สมชาย ใจดี เป็นลูกศิษย์ของ ปรีชา รักไทย ที่เชียงใหม่",
         [("สมชาย ใจดี", "เป็นลูกศิษย์ของ", "ปรีชา รักไทย"),
          ("สมชาย ใจดี", "เกิดที่", "เชียงใหม่")]),
        ("วิชัย รักไทย เป็นลูกชายของ ปรีชา รักไทย และมีส่วนร่วมในเคมีอินทรีย์",
         [("วิชัย รักไทย", "เป็นลูกชายของ", "ปรีชา รักไทย"),
          ("วิชัย รักไทย", "มีส่วนร่วมใน", "เคมีอินทรีย์")]),
        ("สุดา รักไทย เป็นน้องสาวของ ปรีชา รักไทย และศึกษาดาราศาสตร์",
         [("สุดา รักไทย", "เป็นน้องสาวของ", "ปรีชา รักไทย"),
          ("สุดา รักไทย", "ศึกษา", "ดาราศาสตร์")]),
        ("เคมีอินทรีย์ศึกษาสารประกอบของคาร์บอน",
         [("เคมีอินทรีย์", "ศึกษา", "สารประกอบของคาร์บอน")]),
    ],
    "question": "ลูกชายของอาจารย์ของสมชาย ใจดี มีส่วนร่วมในเรื่องอะไร",
    "asked": "สมชาย ใจดี", "short": "สมชาย ใจดี",
    "teacher": "ปรีชา รักไทย", "answer": "วิชัย รักไทย",
}


def test_words_keep_their_vowel_signs_and_marks() -> None:
    # \w alone cut these names at every vowel sign: a question "named" a name it does not
    # hold, and a second query kept orphan marks
    assert name_units("राहुल शर्मा") == ["राहुल", "शर्मा"]
    assert name_units("ทักษิณ ชินวัตร") == ["ทักษิณ", "ชินวัตร"]
    assert name_units("Ju\u0308rgen Gross") == name_units("Jürgen Gross") == ["jurgen", "gross"]
    assert not is_named("राम", content_words("राहुल शर्मा के शिक्षक कौन थे?"))
    assert not is_named("เคมีอินทรีย์", content_words(THAI["question"]))
    assert without_name(HINDI["question"], HINDI["asked"]) == \
        "के शिक्षक के पुत्र ने किसमें योगदान दिया?"
    assert without_name(THAI["question"], "สมชาย ใจดี") == \
        "ลูกชายของอาจารย์ของ มีส่วนร่วมในเรื่องอะไร"
    # a Thai name of 13 code points is 9 letters with their marks: a span of its own
    spans = name_spans("ใครเกิดที่กรุงเทพมหานคร")
    assert "กรุงเทพมหานคร" in spans and not any(unicodedata.combining(span[0])
                                                 or unicodedata.category(span[0]) == "Mn"
                                                 for span in spans)
    # Turkish: a question in capitals names "Yılmaz" (dotless ı compared as i)
    assert without_name("AHMET YILMAZ'IN öğretmeni kim?", "Ahmet Yılmaz") == "'IN öğretmeni kim?"


@pytest.mark.parametrize(("question", "name", "named"), [
    pytest.param("オイラーの先生の息子は何に貢献しましたか？", "レオンハルト・オイラー", True,
                 id="japanese"),
    pytest.param("オイラーの先生の息子は何に貢献しましたか？", "ヨハン・ベルヌーイ", False,
                 id="japanese-other"),
    pytest.param("欧拉的老师的儿子有什么贡献？", "莱昂哈德·欧拉", True, id="chinese"),
    pytest.param("欧拉的老师的儿子有什么贡献？", "约翰·伯努利", False, id="chinese-other"),
    pytest.param("오일러의 스승의 아들은 무엇에 기여했나요?", "레온하르트 오일러", True,
                 id="korean-particle"),
    pytest.param("오일러의 스승의 아들은 무엇에 기여했나요?", "요한 베르누이", False,
                 id="korean-other"),
    pytest.param("ﾍﾞﾙﾇｰｲの息子は？", "ヨハン・ベルヌーイ", True, id="half-width-kana"),
    pytest.param("ヘルヌーイの息子は？", "ヨハン・ベルヌーイ", False, id="voicing-kept"),
    pytest.param("Who taught 欧拉?", "莱昂哈德·欧拉", True, id="mixed"),
    pytest.param("What did the son of Euler's teacher make?", "Leonhard Euler", True,
                 id="english"),
    # the function words of the question's language name nothing
    pytest.param(GERMAN["question"], GERMAN["teacher"], False, id="german-von-der"),
    pytest.param("Quelle est la fable la plus connue de l'élève de Racine ?",
                 "Jean de La Fontaine", False, id="french-de-la"),
    pytest.param("Apa yang dibuat putra dari guru Euler?", "Leonhard Euler", True,
                 id="indonesian"),
])
def test_a_question_names_an_entity_by_half_its_units_in_any_script(
        question: str, name: str, named: bool) -> None:
    assert is_named(name, content_words(question)) is named


def test_the_named_entity_leaves_the_second_query() -> None:
    assert without_name(JAPANESE["question"], JAPANESE["asked"]) == \
        "の先生の息子は何に貢献しましたか?"
    assert without_name("Who taught 欧拉 in Basel?", "莱昂哈德·欧拉") == "Who taught in Basel?"
    assert without_name("Who taught Euler?", "莱昂哈德·欧拉") == "Who taught Euler?"
    assert name_units("Leonhard·欧拉") == ["leonhard", "欧拉"]


def test_names_in_scripts_without_capitals_are_named_not_concepts() -> None:
    assert [infer_kind(n) for n in ("ヨハン・ベルヌーイ", "约翰·伯努利", "요한 베르누이",
                                    "Иоганн Бернулли", "son", "сын")] == \
        ["named", "named", "named", "named", "concept", "concept"]


@LITE_ONLY
@pytest.mark.parametrize("language", [JAPANESE, CHINESE, GERMAN, HINDI, THAI],
                         ids=["japanese", "chinese", "german", "hindi", "thai"])
def test_the_bridge_is_the_teacher_and_the_second_query_drops_the_asked_name(
        milvus_uri: str, language: dict[str, Any]) -> None:
    data = [(TextNode(text=text), triplets) for text, triplets in language["passages"]]
    index = GraphRAGIndex.from_triplets(data, uri=milvus_uri,
                                        embed_model=BigramEmbedding())
    retriever = index.as_retriever(similarity_top_k=3)
    explanation = retriever.explain(language["question"])
    bridges = {b.name: b for b in explanation.bridges}
    assert language["asked"] not in bridges  # the question names it
    teacher = bridges[language["teacher"]]
    assert teacher.kind == "named" and teacher.named == language["asked"]
    assert language["short"] not in teacher.second_query
    assert teacher.second_query.endswith(language["teacher"])
    assert f"{language['short']!r} replaced by the bridge" in teacher.reading
    assert all(b.kind == "named" for b in explanation.bridges)
    # no other entity counts as named by the words of the question's language ("von der"):
    # its second query would lose them
    assert {b.named for b in explanation.bridges} <= {language["asked"], None}
    nodes = retriever.retrieve(language["question"])
    assert any(language["answer"] in n.node.get_content() for n in nodes)
    index.close()
