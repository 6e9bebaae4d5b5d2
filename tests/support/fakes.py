"""Deterministic stand-ins for network models: a hashing embedding and a scripted LLM."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata

_TOKEN = re.compile(r"[a-z0-9]+")


class HashEmbedding(BaseEmbedding):
    """Bag of words hashed into ``dim`` buckets, L2-normalized: texts that share words are
    similar. Fast, deterministic, no model files."""

    dim: int = 64

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(self.dim, dtype=np.float64)
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.md5(token.encode()).digest()
            vector[int.from_bytes(digest[:4], "little") % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        if norm == 0:
            vector[0] = 1.0
            norm = 1.0
        return (vector / norm).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


class BigramEmbedding(HashEmbedding):
    """Character bigrams of each word (a single character alone) hashed into ``dim`` buckets,
    L2-normalized: for text without spaces (Japanese, Chinese), where a bag of words sees one
    word per sentence."""

    dim: int = 256

    @classmethod
    def class_name(cls) -> str:
        return "BigramEmbedding"

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(self.dim, dtype=np.float64)
        for run in re.findall(r"\w+", text.lower()):
            for gram in ([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]):
                digest = hashlib.md5(gram.encode()).digest()
                vector[int.from_bytes(digest[:4], "little") % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        return (vector / norm).tolist() if norm else [1.0] + [0.0] * (self.dim - 1)


Script = Callable[[str], str]


class ScriptedLLM(CustomLLM):
    """An LLM whose answers come from a function of the prompt (or a fixed list of answers).

    An answer that is an exception instance is raised instead of returned. Every prompt is
    recorded in ``prompts``.
    """

    _script: Script = PrivateAttr()
    _answers: list[Any] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    delay: float = 0.0
    prompts: list[str] = Field(default_factory=list)

    def __init__(self, script: Script | list[Any], delay: float = 0.0) -> None:
        super().__init__(delay=delay, prompts=[])
        if callable(script):
            self._script = script
        else:
            self._answers = list(script)
            self._script = lambda _prompt: self._answers.pop(0)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-llm", is_chat_model=False)

    def _answer(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            answer = self._script(prompt)
        if isinstance(answer, BaseException):
            raise answer
        return str(answer)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if self.delay:
            threading.Event().wait(self.delay)
        return CompletionResponse(text=self._answer(prompt))

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        if self.delay:
            await asyncio.sleep(self.delay)
        return CompletionResponse(text=self._answer(prompt))

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        text = self._answer(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()
