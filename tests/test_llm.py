"""llm.call_with_retries (tenacity underneath): what the extraction, report and description
tests rely on, checked on the function itself."""

from __future__ import annotations

import asyncio
import logging

import pytest

from llama_index_graphrag_milvus.llm import LLMAnswer, call_with_retries


class Sleeps:
    """An async sleep that returns at once and records the delays asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def test_retries_double_the_delay_and_a_final_failure_is_returned(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    async def down() -> str:
        calls.append(1)
        raise ConnectionError(f"reset {len(calls)}")

    sleeps = Sleeps()
    with caplog.at_level(logging.INFO):
        answer = await call_with_retries(down, "a test call", 3, 0.25, sleeps)
    assert answer == LLMAnswer("", "ConnectionError: reset 4", 4)
    assert sleeps.delays == [0.25, 0.5, 1.0]
    assert [r.getMessage() for r in caplog.records] == [
        "a test call failed (attempt 1 of 4): ConnectionError('reset 1'); retrying in 0.25 s",
        "a test call failed (attempt 2 of 4): ConnectionError('reset 2'); retrying in 0.50 s",
        "a test call failed (attempt 3 of 4): ConnectionError('reset 3'); retrying in 1.00 s",
        "a test call failed after 4 attempts: ConnectionError('reset 4')"]


async def test_a_cancelled_call_is_not_retried_and_the_cancellation_propagates() -> None:
    calls: list[int] = []

    async def cancelled() -> str:
        calls.append(1)
        raise asyncio.CancelledError

    sleeps = Sleeps()
    with pytest.raises(asyncio.CancelledError):
        await call_with_retries(cancelled, "a cancelled call", 3, 1.0, sleeps)
    assert (calls, sleeps.delays) == ([1], [])
