"""A scripted LLM for the benchmarks: answers after ``delay`` seconds and counts the calls in
flight, so that a benchmark measures the concurrency of the code that calls it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM


class SleepyLLM(CustomLLM):
    """Waits ``delay`` seconds per call (``asyncio.sleep`` in ``acomplete``), then answers
    with :meth:`answer`; ``calls`` and ``peak`` (the most calls in flight at once) count."""

    delay: float = 0.0
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _active: int = PrivateAttr(default=0)
    _peak: int = PrivateAttr(default=0)
    _calls: int = PrivateAttr(default=0)

    @property
    def calls(self) -> int:
        """The calls made so far."""
        return self._calls

    @property
    def peak(self) -> int:
        """The most calls that were in flight at once."""
        return self._peak

    def answer(self, prompt: str) -> str:
        """The answer to ``prompt``; subclasses say what it is."""
        raise NotImplementedError

    def _enter(self) -> None:
        with self._lock:
            self._calls += 1
            self._active += 1
            self._peak = max(self._peak, self._active)

    def _leave(self, prompt: str) -> CompletionResponse:
        with self._lock:
            self._active -= 1
        return CompletionResponse(text=self.answer(prompt))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self._enter()
        time.sleep(self.delay)
        return self._leave(prompt)

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        self._enter()
        await asyncio.sleep(self.delay)
        return self._leave(prompt)

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError(f"{type(self).__name__} does not stream")
