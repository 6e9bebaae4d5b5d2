"""Query and chat engines on a graph index, built as LlamaIndex's own indexes build theirs:
what :meth:`GraphRAGIndex.as_query_engine` and :meth:`GraphRAGIndex.as_chat_engine` return.

Each engine is the graph retriever, :class:`~llama_index_graphrag_milvus.rerank.
GraphRelationRerank` (the default postprocessor) and one of core's engines. The keyword
arguments go where they belong: those of :class:`GraphRAGRetriever` to the retriever, the
others to the engine's factory; an argument neither takes is refused in one clear error.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
    ContextChatEngine,
)
from llama_index.core.chat_engine.types import BaseChatEngine, ChatMode
from llama_index.core.llms.llm import LLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode
from llama_index.core.response_synthesizers.context_only import ContextOnly
from llama_index.core.response_synthesizers.no_text import NoText

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.rerank import GraphRelationRerank
from llama_index_graphrag_milvus.retrieval import GraphRAGRetriever
from llama_index_graphrag_milvus.retrieval.methods import KEYWORD_SETTINGS
from llama_index_graphrag_milvus.validation import check_choice, is_utf8

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.index import GraphRAGIndex

logger = logging.getLogger(__name__)


def _parameters(factory: Callable[..., Any], *besides: str) -> frozenset[str]:
    return frozenset(name for name, parameter in inspect.signature(factory).parameters.items()
                     if name not in besides and parameter.kind is not parameter.VAR_KEYWORD)


RETRIEVER_ARGUMENTS = _parameters(GraphRAGRetriever.__init__, "self", "index", "llm") \
    | frozenset(KEYWORD_SETTINGS)
"""What ``GraphRAGRetriever`` takes besides the index and the LLM (the deprecated keyword
settings of the methods included)."""
QUERY_ENGINE_ARGUMENTS = _parameters(RetrieverQueryEngine.from_args, "retriever", "llm")
"""What ``RetrieverQueryEngine.from_args`` takes besides the retriever and the LLM."""

def _standalone(question: Any, latest_message: str) -> str:
    """The condensed question, or the user's own message when the LLM's rewriting is
    blank or not text UTF-8 can encode (retrieving it would fail on the user's behalf)."""
    if isinstance(question, str) and question.strip() and is_utf8(question):
        return question
    logger.warning("chat engine: the LLM's standalone question was unusable (%.80r); the "
                   "message is retrieved as it is", question)
    return latest_message


class _StandaloneQuestion:
    """The condense steps of core's chat engines (their second argument is the message),
    with a blank rewriting falling back to the message (:func:`_standalone`)."""

    def _condense_question(self, chat_history: list[ChatMessage], message: str) -> str:
        condensed = cast(Any, super())._condense_question(chat_history, message)
        return _standalone(condensed, message)

    async def _acondense_question(self, chat_history: list[ChatMessage], message: str) -> str:
        condensed = await cast(Any, super())._acondense_question(chat_history, message)
        return _standalone(condensed, message)


class GraphCondensePlusContextChatEngine(_StandaloneQuestion, CondensePlusContextChatEngine):
    """Core's ``CondensePlusContextChatEngine``, a blank rewriting falling back to the
    message."""


class GraphCondenseQuestionChatEngine(_StandaloneQuestion, CondenseQuestionChatEngine):
    """Core's ``CondenseQuestionChatEngine``, a blank rewriting falling back to the
    message."""


CHAT_ENGINES: Mapping[str, Callable[..., BaseChatEngine]] = {
    ChatMode.CONDENSE_PLUS_CONTEXT.value: GraphCondensePlusContextChatEngine.from_defaults,
    ChatMode.CONTEXT.value: ContextChatEngine.from_defaults,
    ChatMode.CONDENSE_QUESTION.value: GraphCondenseQuestionChatEngine.from_defaults,
}
"""The chat modes a graph index offers (core's that read a retriever or a query engine),
the first the default: the follow-up question rewritten to stand alone, then retrieved."""

_WITHOUT_ANSWER: dict[str, type[NoText] | type[ContextOnly]] = {
    ResponseMode.NO_TEXT: NoText, ResponseMode.CONTEXT_ONLY: ContextOnly}
"""The response modes that write no answer (``ResponseMode`` is a ``str`` enum: the names
match too)."""


_EXAMPLES = {"GraphRAGRetriever": "passage_scoring, similarity_top_k, filters",
             "RetrieverQueryEngine.from_args": "streaming, response_mode, node_postprocessors",
             "as_query_engine": "similarity_top_k, filters, response_mode"}
"""The arguments an error names first, for each taker (else the first few by name)."""


SHARED_ARGUMENTS = frozenset({"callback_manager"})
"""The arguments every component that takes them gets (the retriever and the engine trace to
the callback manager; core's ``RetrieverQueryEngine.from_args`` does not give it to the
response synthesizer, whose events follow ``Settings.callback_manager`` as with core's own
engines); any other goes to the first."""


def _split(kwargs: Mapping[str, Any], owner: str, takers: Mapping[str, frozenset[str]]
           ) -> dict[str, dict[str, Any]]:
    """``kwargs`` by the first of ``takers`` that takes each (by all of them for
    :data:`SHARED_ARGUMENTS`); one that none takes is refused, naming who takes what."""
    unknown = sorted(set(kwargs).difference(*takers.values()))
    if unknown:
        raise InvalidInputError(
            f"{owner} got unexpected arguments {unknown}: it takes those of "
            + " and of ".join(f"{name} ({_EXAMPLES.get(name) or ', '.join(sorted(names)[:3])}"
                              "...)" for name, names in takers.items()) + ".")
    split: dict[str, dict[str, Any]] = {name: {} for name in takers}
    for key, value in kwargs.items():
        takes = [name for name, names in takers.items() if key in names]
        for name in takes if key in SHARED_ARGUMENTS else takes[:1]:
            split[name][key] = value
    return split


def query_engine(index: GraphRAGIndex, llm: LLM, top_n: int, kwargs: Mapping[str, Any]
                 ) -> RetrieverQueryEngine:
    """:meth:`GraphRAGIndex.as_query_engine` (see there)."""
    split = _split(kwargs, "as_query_engine", {
        "GraphRAGRetriever": RETRIEVER_ARGUMENTS,
        "RetrieverQueryEngine.from_args": QUERY_ENGINE_ARGUMENTS})
    retriever = index.as_retriever(llm=llm, **split["GraphRAGRetriever"])
    engine = split["RetrieverQueryEngine.from_args"]
    engine.setdefault("node_postprocessors", [GraphRelationRerank(llm=llm, top_n=top_n)])
    mode = engine.get("response_mode")
    if mode is not None:  # core's factory raises a bare ValueError
        check_choice("response_mode", mode, [member.value for member in ResponseMode])
    if "response_synthesizer" not in engine and mode in _WITHOUT_ANSWER:
        # LlamaIndex's factory builds these without the llm, so they looked for
        # Settings.llm (OpenAI's, unless set) although they never call one
        engine["response_synthesizer"] = _WITHOUT_ANSWER[mode](
            llm=llm, streaming=bool(engine.get("streaming", False)))
    return RetrieverQueryEngine.from_args(retriever, llm=llm, **engine)


def chat_engine(index: GraphRAGIndex, chat_mode: str, llm: LLM, top_n: int,
                kwargs: Mapping[str, Any]) -> BaseChatEngine:
    """:meth:`GraphRAGIndex.as_chat_engine` (see there)."""
    mode = chat_mode.value if isinstance(chat_mode, ChatMode) else chat_mode
    factory = CHAT_ENGINES.get(mode) if isinstance(mode, str) else None
    if factory is None:
        raise InvalidInputError(
            f"chat_mode must be one of {list(CHAT_ENGINES)}, got {chat_mode!r}; for an "
            "agent (react, openai, best), give it index.as_query_engine() as a "
            "QueryEngineTool.")
    name = factory.__qualname__
    if mode == ChatMode.CONDENSE_QUESTION.value:  # a query engine, not a retriever
        split = _split(kwargs, "as_chat_engine", {  # core refuses the two it lists, late
            name: _parameters(factory, "query_engine", "llm", "system_prompt",
                              "prefix_messages"),
            "as_query_engine": RETRIEVER_ARGUMENTS | QUERY_ENGINE_ARGUMENTS})
        return _traced(factory(query_engine(index, llm, top_n, split["as_query_engine"]),
                               llm=llm, **split[name]), kwargs)
    split = _split(kwargs, "as_chat_engine", {
        "GraphRAGRetriever": RETRIEVER_ARGUMENTS,
        name: _parameters(factory, "retriever", "llm")})
    engine = split[name]
    if engine.get("system_prompt") is not None and engine.get("prefix_messages") is not None:
        raise InvalidInputError(  # core refuses the pair, late and as a plain ValueError
            "as_chat_engine takes system_prompt or prefix_messages, not both: put the "
            "system message first in prefix_messages, or give system_prompt alone.")
    engine.setdefault("node_postprocessors", [GraphRelationRerank(llm=llm, top_n=top_n)])
    return _traced(factory(index.as_retriever(llm=llm, **split["GraphRAGRetriever"]), llm=llm,
                           **engine), kwargs)


def _traced(engine: BaseChatEngine, kwargs: Mapping[str, Any]) -> BaseChatEngine:
    """``engine`` with the ``callback_manager`` of ``kwargs`` (core's chat factories take
    none, or take it and ignore it)."""
    if kwargs.get("callback_manager") is not None:
        engine.callback_manager = kwargs["callback_manager"]  # type: ignore[attr-defined]
    return engine
