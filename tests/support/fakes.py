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


HANG_SECONDS = 30.0
"""The longest a :class:`HangingLLM` call hangs: a test whose timeout did not work fails
after this, instead of hanging the suite."""


class HangingLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` that gives no answer to a prompt holding ``hang_on``: the
    sync call blocks until :meth:`release` (at most :data:`HANG_SECONDS`), the async one
    until its caller cancels it. ``hung`` counts those calls, ``finished`` the sync ones
    that returned (late, with an empty list)."""

    hang_on: str = ""
    hung: int = 0
    finished: int = 0
    _released: threading.Event = PrivateAttr(default_factory=threading.Event)

    def __init__(self, script: Script | list[Any], hang_on: str) -> None:
        super().__init__(script)
        self.hang_on = hang_on

    def release(self) -> None:
        """Let the blocked sync calls return."""
        self._released.set()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if self.hang_on not in prompt:
            return super().complete(prompt, formatted, **kwargs)
        with self._lock:
            self.hung += 1
        self._released.wait(HANG_SECONDS)
        with self._lock:
            self.finished += 1
        return CompletionResponse(text="[]")

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        if self.hang_on not in prompt:
            return await super().acomplete(prompt, formatted, **kwargs)
        self.hung += 1
        await asyncio.wait_for(asyncio.Event().wait(), HANG_SECONDS)
        return CompletionResponse(text="[]")
