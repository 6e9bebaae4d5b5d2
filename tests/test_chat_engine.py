"""``index.as_chat_engine``: core's chat engines on the graph retriever, a follow-up question
rewritten to stand alone before the graph retrieves it, arguments where they belong."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
    ContextChatEngine,
)
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalStartEvent
from llama_index.core.memory import ChatMemoryBuffer

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.metadata import RERANK_KEY
from tests.support.fakes import ScriptedLLM

FIRST = "Who taught Leonhard Euler?"
FOLLOW_UP = "And what did his son contribute?"
STANDALONE = "What did the son of Johann Bernoulli contribute?"
ANSWER = "Daniel Bernoulli made contributions to fluid dynamics."


def answer(prompt: str) -> str:
    if "standalone question" in prompt.lower():  # the condense step
        return STANDALONE
    if "useful_relationships" in prompt:  # the reranker: the first candidate relation
        return json.dumps({"useful_relationships": ["[1]"]})
    if "named_entities" in prompt:  # query NER
        return json.dumps({"named_entities": []})
    return ANSWER


class _Questions(BaseEventHandler):
    """The questions retrievers are given, in order (core's retrieval events)."""

    questions: list[str] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "_Questions"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, RetrievalStartEvent):
            query = event.str_or_query_bundle
            self.questions.append(query if isinstance(query, str) else query.query_str)


@pytest.fixture
def asked() -> Iterator[list[str]]:
    root = get_dispatcher()
    handler = _Questions(questions=[])
    root.add_event_handler(handler)
    try:
        yield handler.questions
    finally:
        root.event_handlers.remove(handler)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_follow_up_is_rewritten_then_retrieved_on_the_graph(
        shared_family_index: GraphRAGIndex, use_async: bool, asked: list[str]) -> None:
    llm = ScriptedLLM(answer)
    chat = shared_family_index.as_chat_engine(llm=llm, top_n=2, similarity_top_k=5)
    assert isinstance(chat, CondensePlusContextChatEngine)
    for message in (FIRST, FOLLOW_UP):
        reply = await chat.achat(message) if use_async else chat.chat(message)
    assert str(reply) == ANSWER
    # the follow-up, with the history, was rewritten; the graph was asked the rewrite
    condense = [p for p in llm.prompts if "standalone question" in p.lower()][-1]
    assert FIRST in condense and FOLLOW_UP in condense
    assert asked[-1] == STANDALONE
    assert len(reply.source_nodes) == 2  # the default reranker's top_n
    assert all(RERANK_KEY in n.node.metadata for n in reply.source_nodes)
    assert [m.content for m in chat.chat_history][-2:] == [FOLLOW_UP, ANSWER]


def test_the_other_chat_modes(shared_family_index: GraphRAGIndex, asked: list[str]) -> None:
    llm = ScriptedLLM(answer)
    context = shared_family_index.as_chat_engine("context", llm=llm, node_postprocessors=[],
                                                 similarity_top_k=3)
    assert isinstance(context, ContextChatEngine)
    reply = context.chat(FIRST)
    assert str(reply) == ANSWER and len(reply.source_nodes) == 3  # no reranker
    assert asked == [FIRST]  # retrieved as it is: no rewriting
    condensed = shared_family_index.as_chat_engine(
        "condense_question", llm=llm, memory=ChatMemoryBuffer.from_defaults(),
        response_mode="simple_summarize", top_n=1)
    assert isinstance(condensed, CondenseQuestionChatEngine)
    condensed.chat(FIRST)
    reply = condensed.chat(FOLLOW_UP)
    assert str(reply) == ANSWER and len(reply.source_nodes) == 1
    assert asked[-1] == STANDALONE


@pytest.mark.parametrize("mode", ["condense_plus_context", "condense_question"])
@pytest.mark.parametrize("rewriting", ["", "  \n", "\ud800"])
async def test_an_unusable_rewriting_falls_back_to_the_message(
        shared_family_index: GraphRAGIndex, asked: list[str], mode: str, rewriting: str,
        caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(lambda prompt: rewriting if "standalone question" in prompt.lower()
                      else answer(prompt))
    chat = shared_family_index.as_chat_engine(mode, llm=llm)
    chat.chat(FIRST)
    reply = await chat.achat(FOLLOW_UP)
    assert str(reply) == ANSWER and asked[-1] == FOLLOW_UP
    assert "standalone question was unusable" in caplog.text


@pytest.mark.parametrize(("args", "match"), [
    ({"chat_mode": "react"}, r"chat_mode must be one of \['condense_plus_context', 'context', "
                             r"'condense_question'\], got 'react'.*QueryEngineTool"),
    ({"chat_mode": 3}, "chat_mode must be one of"),
    ({"similarity_topk": 3}, r"unexpected arguments \['similarity_topk'\].*GraphRAGRetriever"),
    ({"chat_mode": "context", "condense_prompt": "x"},
     r"unexpected arguments \['condense_prompt'\].*ContextChatEngine.from_defaults"),
    ({"chat_mode": "condense_question", "streeming": True},
     r"unexpected arguments \['streeming'\].*as_query_engine"),
    ({"chat_mode": "condense_question", "system_prompt": "Be brief."},
     r"unexpected arguments \['system_prompt'\]"),  # core refuses it, but only later
    ({"chat_mode": "context", "system_prompt": "Be brief.",
      "prefix_messages": [ChatMessage(role="system", content="Be kind.")]},
     "system_prompt or prefix_messages, not both"),
], ids=["agent-mode", "not-a-mode", "retriever-typo", "other-mode's-argument", "engine-typo",
        "core-refuses", "core-refuses-the-pair"])
def test_bad_arguments_are_refused_naming_who_takes_what(
        shared_family_index: GraphRAGIndex, args: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        shared_family_index.as_chat_engine(llm=ScriptedLLM(answer), **args)
