"""``index.as_query_engine``: engine arguments go to ``RetrieverQueryEngine.from_args`` (as
core's indexes do), retriever arguments to the retriever; a streamed answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.llms import CompletionResponse, CompletionResponseGen

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank, InvalidInputError
from llama_index_graphrag_milvus.metadata import RERANK_KEY
from tests.support.fakes import ScriptedLLM

QUESTION = "What did the son of Euler's teacher contribute?"
ANSWER = "Daniel Bernoulli made contributions to fluid dynamics."


def answer(prompt: str) -> str:
    if "useful_relationships" in prompt:  # the reranker: the first candidate relation
        return json.dumps({"useful_relationships": ["[1]"]})
    if "named_entities" in prompt:  # query NER
        return json.dumps({"named_entities": ["Euler"]})
    return ANSWER  # the response synthesizer


class WordStreamingLLM(ScriptedLLM):
    """A scripted LLM that streams its answers word by word."""

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any
                        ) -> CompletionResponseGen:
        words = self._answer(prompt).split(" ")

        def gen() -> CompletionResponseGen:
            text = ""
            for position, word in enumerate(words):
                delta = word if position == 0 else " " + word
                text += delta
                yield CompletionResponse(text=text, delta=delta)

        return gen()


def test_a_streamed_answer(shared_family_index: GraphRAGIndex) -> None:
    llm = WordStreamingLLM(answer)
    engine = shared_family_index.as_query_engine(llm=llm, streaming=True, top_n=1,
                                                 similarity_top_k=3)
    response = engine.query(QUESTION)
    assert isinstance(response, StreamingResponse)
    tokens = list(response.response_gen)
    assert len(tokens) == len(ANSWER.split(" ")) > 1  # streamed, not one block
    assert "".join(tokens) == ANSWER
    assert len(response.source_nodes) == 1  # the default reranker's top_n
    assert RERANK_KEY in response.source_nodes[0].node.metadata
    assert any("useful_relationships" in p for p in llm.prompts)


def test_engine_and_retriever_arguments_go_where_they_belong(
        shared_family_index: GraphRAGIndex) -> None:
    llm = ScriptedLLM(answer)
    engine = shared_family_index.as_query_engine(
        llm=llm, response_mode="simple_summarize", node_postprocessors=[],  # no reranker
        passage_scoring="passage", hops=2, similarity_top_k=3)
    retriever: Any = engine.retriever
    assert retriever.describe()["passage_scoring"] == "passage"
    assert retriever.describe()["hops"] == 2
    assert type(engine._response_synthesizer).__name__ == "SimpleSummarize"
    response = engine.query(QUESTION)
    assert isinstance(response, Response) and response.response == ANSWER
    assert len(response.source_nodes) == 3
    assert not any("useful_relationships" in p for p in llm.prompts)  # no rerank
    assert any("named_entities" in p for p in llm.prompts)  # NER with the engine's LLM
    reranked = shared_family_index.as_query_engine(
        llm=llm, node_postprocessors=[GraphRelationRerank(llm=llm, top_n=2)])
    assert len(reranked.query(QUESTION).source_nodes) == 2


@pytest.mark.parametrize("engine", ["query", "chat"])
def test_a_callback_manager_reaches_the_retriever_engine_and_synthesizer(
        shared_family_index: GraphRAGIndex, engine: str) -> None:
    """As ``callback_manager`` given to core's engines: the engine's query (or the chat's
    LLM call) is traced as well as the retrieval (it reached the retriever only)."""
    from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler

    debug = LlamaDebugHandler()
    manager = CallbackManager([debug])
    llm = ScriptedLLM(answer)
    if engine == "query":
        built: Any = shared_family_index.as_query_engine(llm=llm, callback_manager=manager)
        built.query(QUESTION)
    else:
        built = shared_family_index.as_chat_engine(llm=llm, callback_manager=manager)
        built.chat(QUESTION)
    assert built.callback_manager is manager
    traced = {event.event_type for event in debug.get_events()}
    assert CBEventType.RETRIEVE in traced
    assert engine == "chat" or CBEventType.QUERY in traced, traced


@pytest.mark.parametrize("mode", ["no_text", "context_only"])
def test_response_modes_without_an_answer_need_no_other_llm(
        shared_family_index: GraphRAGIndex, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """LlamaIndex's factory builds them without the engine's llm, so they looked for
    ``Settings.llm`` (OpenAI's without a key here: "Could not load OpenAI model")."""
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_llm", None)  # unresolved: OpenAI's, which fails here
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = ScriptedLLM(answer)
    engine = shared_family_index.as_query_engine(llm=llm, response_mode=mode, top_n=2)
    response = engine.query(QUESTION)
    assert len(response.source_nodes) == 2  # the reranker's top_n, with the engine's llm
    assert any("useful_relationships" in p for p in llm.prompts)
    assert ANSWER not in str(response.response)  # no answer written


def test_an_argument_nobody_takes_is_refused(shared_family_index: GraphRAGIndex) -> None:
    with pytest.raises(InvalidInputError, match=r"unexpected arguments \['streeming'\]"):
        shared_family_index.as_query_engine(llm=ScriptedLLM(answer), streeming=True)
