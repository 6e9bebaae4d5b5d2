"""Spies on a Milvus client: what the code under test asked, counted through to Milvus."""

from __future__ import annotations

from typing import Any

import pytest
from pymilvus import MilvusClient


def count_query_rows(client: MilvusClient, monkeypatch: pytest.MonkeyPatch,
                     method: str = "query", unless: str | None = None) -> list[int]:
    """The number of rows of each ``client.query`` (or another reading ``method``, such
    as ``"get"``) from now on (the calls go through); ``unless``: a query whose filter
    holds it is not counted."""
    rows_read: list[int] = []
    read = getattr(client, method)

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = read(*args, **kwargs)
        if unless is None or unless not in str(kwargs.get("filter", "")):
            rows_read.append(len(rows))
        return rows

    monkeypatch.setattr(client, method, counted)
    return rows_read
