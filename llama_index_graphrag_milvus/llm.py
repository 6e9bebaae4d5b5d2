"""How the package calls LLMs: retries, timeouts, bounded concurrency, sync over async.

Triplet extraction, community reports, description summaries, global search and the
reranker all send many prompts or one prompt with a deadline. They share these helpers, so
each is written once and behaves the same everywhere:

- :func:`call_with_retries`: a failure is retried with exponential backoff (tenacity's, the
  retry library llama-index-core depends on), and a final failure is returned (and logged),
  never raised: one item fails, not the run;
- :func:`within` (async) and :func:`within_thread` (sync): the answer, the exception, or
  a :class:`NoAnswer` after the timeout, told apart from a ``TimeoutError`` of the client;
- :func:`gather_bounded`: at most ``limit`` jobs at a time; when one fails, or the caller
  is cancelled, the others are cancelled too;
- :func:`run_blocking` and :func:`run_with_threads`: sync entry points that run the same
  coroutine as the async ones, the LLM's sync API in worker threads.
- :func:`count_tokens` and :func:`truncate_to_tokens`: prompt budgets in LlamaIndex's
  tokenizer.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from llama_index.core.utils import get_tokenizer
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

T = TypeVar("T")

logger = logging.getLogger(__name__)

ERROR_MAX_CHARS = 500
"""Longest error description kept for a failed call (``"<ExceptionType>: <message>"``)."""

Sleep = Callable[[float], Awaitable[None]]
"""An async sleep (``asyncio.sleep``): what the retry backoff waits with."""


def describe_error(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, at most :data:`ERROR_MAX_CHARS` characters.

    >>> describe_error(TimeoutError("no answer"))
    'TimeoutError: no answer'
    """
    return f"{type(exc).__name__}: {exc}"[:ERROR_MAX_CHARS]


# ---------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class LLMAnswer:
    """What :func:`call_with_retries` got: the answer text, or the error of the last
    attempt (``text`` is then empty), and the number of calls made."""

    text: str
    error: str | None
    attempts: int


async def call_with_retries(call: Callable[[], Awaitable[str]], what: str, max_retries: int,
                            base_delay: float, sleep: Sleep | None = None,
                            log: logging.Logger = logger, timeout: float | None = None
                            ) -> LLMAnswer:
    """Call an LLM, retrying a failure ``max_retries`` times after ``base_delay`` seconds,
    then twice as long at each retry; a final failure is returned (and logged as a warning
    naming ``what``, to ``log``: the caller's logger), never raised. With ``timeout``, an
    attempt that gives no answer within that many seconds is a failure too
    (:class:`NoAnswer`, see :func:`within`).

    >>> calls = []
    >>> async def flaky() -> str:
    ...     calls.append(1)
    ...     if len(calls) < 2:
    ...         raise ConnectionError("reset")
    ...     return "ok"
    >>> async def no_wait(seconds: float) -> None: ...
    >>> asyncio.run(call_with_retries(flaky, "a test call", 3, 1.0, no_wait))
    LLMAnswer(text='ok', error=None, attempts=2)
    """
    attempts = 0

    async def attempt() -> str:
        nonlocal attempts
        attempts += 1
        if timeout is None:
            return await call()
        answer = await within(call(), timeout)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def before_sleep(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        log.info("%s failed (attempt %d of %d): %r; retrying in %.2f s", what,
                 state.attempt_number, max_retries + 1, failure, delay)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(max_retries + 1),
        wait=wait_exponential(multiplier=base_delay),  # base_delay * 2 ** (attempt - 1)
        retry=retry_if_exception_type(Exception),  # a cancellation is not retried
        sleep=sleep or asyncio.sleep,
        before_sleep=before_sleep,
        reraise=True)  # the last failure itself, not tenacity's RetryError
    try:
        return LLMAnswer(await retrying(attempt), None, attempts)
    except Exception as exc:  # an LLM failure skips one item, not the run
        log.warning("%s failed after %d attempts: %r", what, attempts, exc)
        return LLMAnswer("", describe_error(exc), attempts)


# ---------------------------------------------------------------------------- timeouts


class NoAnswer(TimeoutError):
    """Our own timeout, told apart from a ``TimeoutError`` the LLM client raises."""


async def within(call: Awaitable[T], timeout: float | None) -> T | Exception:
    """The answer of ``call``, its exception, or a :class:`NoAnswer` after ``timeout``
    seconds (the call is then cancelled; ``None`` waits as long as it takes). A
    ``BaseException`` (cancellation, ``KeyboardInterrupt``) propagates.

    >>> async def slow() -> str:
    ...     await asyncio.sleep(10)
    ...     return "late"
    >>> asyncio.run(within(slow(), 0.01))
    NoAnswer('no answer within 0.01 s')
    """
    task = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:  # the caller gave up: so does the LLM call
        task.cancel()
        raise
    if not done:  # ours, told apart from a TimeoutError the LLM raises itself
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return NoAnswer(f"no answer within {timeout} s")
    if isinstance(error := task.exception(), Exception):
        return error
    return task.result()  # re-raises a BaseException such as KeyboardInterrupt


def start_daemon(call: Callable[[], T], name: str,
                 done: Callable[[T | BaseException], None]) -> None:
    """Run ``call()`` in a new daemon thread named ``name``, with the caller's context (the
    call stays inside its instrumentation span), and give ``done`` its result or exception.
    A daemon thread: a call given up (a timeout) neither holds a pool's shutdown nor the
    process's exit (a pool's threads are joined at exit, which a hung call never allows)."""
    context = contextvars.copy_context()

    def run() -> None:
        try:
            result: T | BaseException = context.run(call)
        except BaseException as exc:  # the caller decides what a failure means
            result = exc
        done(result)

    threading.Thread(target=run, name=name, daemon=True).start()


class CallSlots(threading.BoundedSemaphore):
    """The ``slots`` of :func:`within_thread`: at most ``size`` calls at once, given up ones
    included. A copy or a pickle of its owner (a pydantic postprocessor that LlamaIndex may
    copy) gets slots of its own: a lock is neither copied nor pickled.

    >>> import copy
    >>> slots = CallSlots(2)
    >>> slots.acquire(blocking=False) and copy.deepcopy(slots).size
    2
    """

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size

    def __deepcopy__(self, memo: dict[int, Any]) -> CallSlots:
        return CallSlots(self.size)

    def __reduce__(self) -> tuple[type[CallSlots], tuple[int]]:
        return CallSlots, (self.size,)


def within_thread(call: Callable[[], T], timeout: float | None,
                  slots: threading.Semaphore | None = None) -> T | Exception:
    """The sync twin of :func:`within`: ``call()`` in a daemon thread (:func:`start_daemon`),
    its answer, its exception, or a :class:`NoAnswer` after ``timeout`` seconds (the thread
    is left to finish on its own: a blocking call cannot be cancelled). Without a timeout
    the call runs in the caller's thread. A ``BaseException`` of the call propagates.
    ``slots`` bounds the threads: each call holds one until it ends (given up or not), and
    with none free the call is not made (a :class:`NoAnswer` at once), so that an LLM that
    never answers leaves at most that many threads behind.

    >>> within_thread(lambda: "fast", 1.0)
    'fast'
    >>> within_thread(lambda: 1 / 0, 1.0)
    ZeroDivisionError('division by zero')
    """
    if timeout is None:
        try:
            return call()
        except Exception as exc:  # the caller decides what a failure means
            return exc
    if slots is not None and not slots.acquire(blocking=False):
        return NoAnswer("no answer: the earlier calls given up have not returned")
    finished = threading.Event()
    box: list[T | BaseException] = []

    def done(result: T | BaseException) -> None:
        if slots is not None:
            slots.release()
        box.append(result)
        finished.set()

    start_daemon(call, "graphrag-llm-call", done)
    # ours, told apart from a TimeoutError the call raises
    if not finished.wait(min(timeout, threading.TIMEOUT_MAX)):
        return NoAnswer(f"no answer within {timeout} s")
    result = box[0]
    if isinstance(result, BaseException) and not isinstance(result, Exception):
        raise result
    return result


# ---------------------------------------------------------------------------- concurrency


async def gather_bounded(jobs: Iterable[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Run the jobs, at most ``limit`` at a time; their results in order. When one raises
    (or the caller is cancelled) the others are cancelled before the error propagates, so
    that no LLM call outlives the run.

    >>> async def double(n: int) -> int:
    ...     return 2 * n
    >>> asyncio.run(gather_bounded([functools.partial(double, n) for n in range(4)], 2))
    [0, 2, 4, 6]
    """
    semaphore = asyncio.Semaphore(limit)

    async def bounded(job: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await job()

    tasks = [asyncio.ensure_future(bounded(job)) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    finally:  # cancelled or crashed: stop the other jobs
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_blocking(coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code: ``asyncio.run`` when no loop runs in
    this thread, else in a helper thread with a loop of its own (as core's ``asyncio_run``).

    >>> async def answer() -> int:
    ...     return 42
    >>> run_blocking(answer)
    42
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphrag-llm") as runner:
        return runner.submit(context.run, lambda: asyncio.run(coroutine())).result()


class Threads:
    """Blocking calls awaited from a coroutine, each in a daemon thread of its own (see
    :func:`run_with_threads`), at most ``workers`` at a time."""

    def __init__(self, workers: int, name: str) -> None:
        self._slots = asyncio.Semaphore(workers)
        self._name = name

    async def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` in a daemon thread, with the caller's context. When
        the caller stops waiting (a timeout, a cancellation), the thread is left to finish:
        a blocking call cannot be cancelled, and nothing waits for it; it keeps its slot
        until it ends, so that no more than ``workers`` calls ever run at once."""
        await self._slots.acquire()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def done(result: T | BaseException) -> None:
            try:
                loop.call_soon_threadsafe(self._finish, future, result)
            except RuntimeError:  # the loop has ended: nobody waits for this call
                pass

        try:
            start_daemon(functools.partial(function, *args, **kwargs), self._name, done)
        except BaseException:
            self._slots.release()
            raise
        return await future

    def _finish(self, future: asyncio.Future[T], result: T | BaseException) -> None:
        self._slots.release()
        if future.done():  # given up by its caller
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


def run_with_threads(workers: int, name: str,
                     main: Callable[[Threads], Awaitable[T]]) -> T:
    """``main`` run to completion from sync code (:func:`run_blocking`) with at most
    ``workers`` threads named ``name`` for its blocking calls at a time: the sync twin of an
    async entry point that awaits the LLM's async API, with the LLM's sync API in the
    threads instead. A call given up (a timeout) does not hold the return.

    >>> async def main(threads: Threads) -> list[int]:
    ...     return [await threads.call(len, "abc"), await threads.call(abs, -2)]
    >>> run_with_threads(2, "doctest", main)
    [3, 2]
    """
    async def run() -> T:
        return await main(Threads(workers, name))

    return run_blocking(run)


# ---------------------------------------------------------------------------- tokens


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with LlamaIndex's global tokenizer (``get_tokenizer()``:
    ``Settings.tokenizer`` when set, else tiktoken's ``cl100k_base``).

    >>> count_tokens("hello world")
    2
    """
    return len(get_tokenizer()(text))


def truncate_to_tokens(text: str, max_tokens: int,
                       count: Callable[[str], int] = count_tokens) -> str:
    """The longest prefix of ``text`` (cut at a character) of at most ``max_tokens``
    tokens; ``text`` itself when it fits. A binary search over the prefix length, so any
    tokenizer works (no decoding needed).

    >>> truncate_to_tokens("one two three four", 2)
    'one two'
    """
    if count(text) <= max_tokens:
        return text
    fits, too_long = 0, len(text)
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if count(text[:middle]) <= max_tokens:
            fits = middle
        else:
            too_long = middle
    return text[:fits]
