"""Argument checks of the public constructors, with one message style.

Each check returns the value it accepts and raises
:class:`~llama_index_graphrag_milvus.errors.InvalidInputError` (a ``ValueError``) otherwise,
with the message ``"<name> must be <what is expected>, got <the value>"`` and, where it
helps, a hint in parentheses. ``name`` is the argument as the caller wrote it, prefixed with
its owner where the argument name alone is ambiguous (``"leiden seed"``,
``"GlobalSearchQueryEngine: timeout"``).

>>> check_int("similarity_top_k", 5)
5
>>> check_int("similarity_top_k", "5")
Traceback (most recent call last):
...
llama_index_graphrag_milvus.errors.InvalidInputError: similarity_top_k must be an integer >= 1, got '5'
>>> check_number("ppr_passage_weight", 1.5, low=0, high=1)
Traceback (most recent call last):
...
llama_index_graphrag_milvus.errors.InvalidInputError: ppr_passage_weight must be a finite number in [0, 1], got 1.5
"""  # noqa: E501

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import ValidationError

from llama_index_graphrag_milvus.errors import InvalidInputError

T = TypeVar("T")


def _fail(name: str, expected: str, value: Any, hint: str = "") -> InvalidInputError:
    return InvalidInputError(f"{name} must be {expected}, got {value!r}"
                             + (f" ({hint})" if hint else ""))


def is_int(value: Any) -> bool:
    """Whether ``value`` is an ``int`` and not a ``bool``.

    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a finite ``int`` or ``float`` (not a ``bool``).

    >>> is_number(0.5), is_number(float("nan")), is_number("1")
    (True, False, False)
    """
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and -math.inf < value < math.inf)


def check_int(name: str, value: Any, minimum: int | None = 1, maximum: int | None = None,
              hint: str = "") -> int:
    """``value`` when it is an integer in ``[minimum, maximum]`` (``None``: no bound)."""
    if (not is_int(value) or (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)):
        if minimum is not None and maximum is not None:
            bounds = f" from {minimum} to {maximum}"
        else:
            bounds = _range(minimum, maximum, False, False)
        raise _fail(name, f"an integer{bounds}", value, hint)
    return int(value)


def check_optional_int(name: str, value: Any, minimum: int = 1) -> int | None:
    """``value`` when it is ``None`` or an integer ``>= minimum``.

    >>> check_optional_int("max_relations_per_passage", 0)
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: max_relations_per_passage must be None or an integer >= 1, got 0
    """  # noqa: E501
    if value is not None and (not is_int(value) or value < minimum):
        raise _fail(name, f"None or an integer >= {minimum}", value)
    return value


def _range(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return (f" in {'(' if low_open else '['}{low:g}, {high:g}"
                f"{')' if high_open else ']'}")
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, hint: str = "") -> float:
    """``value`` when it is a finite number within the bounds (``low_open``: ``> low``
    instead of ``>= low``; likewise ``high_open``)."""
    if (not is_number(value)
            or (low is not None and (value <= low if low_open else value < low))
            or (high is not None and (value >= high if high_open else value > high))):
        raise _fail(name, "a finite number" + _range(low, high, low_open, high_open), value,
                    hint)
    return value


def check_bool(name: str, value: Any) -> bool:
    """``value`` when it is ``True`` or ``False``.

    >>> check_bool("match_words", "yes")
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: match_words must be True or False, got 'yes'
    """  # noqa: E501
    if not isinstance(value, bool):
        raise _fail(name, "True or False", value, "")
    return value


def check_optional_number(name: str, value: Any, low: float | None = None,
                          high: float | None = None, low_open: bool = False,
                          hint: str = "") -> float | None:
    """``value`` when it is ``None`` or a finite number within the bounds.

    >>> check_optional_number("timeout", 0, low=0, low_open=True, hint="seconds")
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: timeout must be None or a finite number > 0, got 0 (seconds)
    """  # noqa: E501
    if value is None:
        return None
    try:
        return check_number(name, value, low, high, low_open, False)
    except InvalidInputError:
        raise _fail(name, "None or a finite number" + _range(low, high, low_open, False),
                    value, hint) from None


def check_choice(name: str, value: Any, choices: Sequence[T], alternative: str = "") -> T:
    """``value`` when it is one of ``choices`` (``alternative`` names what else the caller
    accepts, checked before).

    >>> check_choice("passage_search", "gpu", ("auto", "memory", "milvus"))
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: passage_search must be one of auto, memory, milvus, got 'gpu'
    """  # noqa: E501
    if not any(isinstance(value, type(choice)) and value == choice for choice in choices):
        others = f" or {alternative}" if alternative else ""
        raise _fail(name, f"one of {', '.join(map(str, choices))}{others}", value)
    return value


def check_instance(name: str, value: Any, kind: type | tuple[type, ...], what: str,
                   optional: bool = False) -> Any:
    """``value`` when it is a ``kind`` (or ``None`` with ``optional``); the message names
    ``what`` is expected and the type that came.

    >>> check_instance("llm", "gpt-4o", int, "an LLM", optional=True)
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: llm must be an LLM or None, got str
    """
    if (value is None and optional) or isinstance(value, kind):
        return value
    raise InvalidInputError(f"{name} must be {what}{' or None' if optional else ''}, got "
                            f"{type(value).__name__}")


@contextmanager
def pydantic_arguments(owner: str, hint: str = "") -> Iterator[None]:
    """Around the construction of a pydantic model (a LlamaIndex component): a rejected
    field becomes an :class:`InvalidInputError` (chained to pydantic's ``ValidationError``)
    naming each field, what it must be and what came, then ``hint``.

    >>> from llama_index.core.bridge.pydantic import BaseModel, Field
    >>> class Settings(BaseModel):
    ...     workers: int = Field(default=4, gt=0)
    >>> with pydantic_arguments("Settings", "workers is how many threads run."):
    ...     Settings(workers=0)
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: Settings arguments rejected: workers: Input should be greater than 0, got 0. workers is how many threads run.
    """  # noqa: E501
    try:
        yield
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        raise InvalidInputError(f"{owner} arguments rejected: {problems}"
                                + (f" {hint}" if hint else "")) from exc


def _problem(error: Any) -> str:
    """One pydantic error as ``"field: what it must be, got value."``."""
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "value_error":  # our own validators: their message says it all
        message = str(error["msg"]).removeprefix("Value error, ").rstrip(".")
        return f"{where}: {message}."
    return f"{where}: {error['msg']}, got {error.get('input')!r:.200}."


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (no lone surrogates such as ``"\\ud800"``).

    >>> is_utf8("Ōsaka"), is_utf8("bad \\ud800")
    (True, False)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
