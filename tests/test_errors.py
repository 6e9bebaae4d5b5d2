"""The error tree of errors.py: the drawing in its docstring matches the classes, and the
Milvus failures a caller may retry are told apart from the others."""

from __future__ import annotations

import inspect
import re
import socket

import grpc
import pytest
from pymilvus import MilvusException

from llama_index_graphrag_milvus import GraphRAGError, GraphRAGIndex, MilvusStoreError, errors
from llama_index_graphrag_milvus.errors import MilvusUnavailableError
from llama_index_graphrag_milvus.milvus.schema import (
    SHARED_CONNECTIONS,
    fresh_connections,
    milvus_errors,
)
from tests.support.fakes import HashEmbedding

_NODE = re.compile(r"^ *(?:[│ ]   )*(?:[├└]── )?([A-Za-z_.]+)")


def drawn_tree() -> dict[str, str | None]:
    """Each class of the docstring's tree and the class drawn as its parent."""
    doc = errors.__doc__ or ""
    lines = doc.split("::", 1)[1].strip("\n").split("\n\n", 1)[0].splitlines()
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = _NODE.match(line)
        assert match, line
        name = match.group(1).rsplit(".", 1)[-1]
        column = match.start(1)
        while stack and stack[-1][0] >= column:
            stack.pop()
        assert name not in parents, f"{name} is drawn twice"
        parents[name] = stack[-1][1] if stack else None
        stack.append((column, name))
    return parents


def test_the_docstring_draws_every_error_class_under_its_base() -> None:
    classes = {cls.__name__: cls for _, cls in inspect.getmembers(errors, inspect.isclass)
               if issubclass(cls, GraphRAGError)}
    parents = drawn_tree()
    assert set(parents) == set(classes)
    for name, parent in parents.items():
        package_bases = [base for base in classes[name].__bases__
                         if issubclass(base, GraphRAGError)]
        assert [base.__name__ for base in package_bases] == ([parent] if parent else [])


class RpcError(grpc.RpcError):
    """A gRPC error as grpc raises it: an ``RpcError`` with a ``code()``."""

    def __init__(self, status: grpc.StatusCode) -> None:
        super().__init__(status.name)
        self.status = status

    def code(self) -> grpc.StatusCode:
        return self.status


RETRYABLE = {
    "connect failed": MilvusException(
        code=2, message="Fail connecting to server on 127.0.0.1:19530, illegal connection "
                        "params or server unavailable"),
    "collection not loaded": MilvusException(
        code=101, message="failed to query: collection not loaded[collection=47]"),
    "retries ran out": MilvusException(
        code=grpc.StatusCode.UNAVAILABLE,
        message="[query] Retry run out of 75 retry times, message=connection refused"),
    "client timeout": MilvusException(message="[search] Retry timeout: 3.0s"),
    "deadline": RpcError(grpc.StatusCode.DEADLINE_EXCEEDED),
    "unavailable": RpcError(grpc.StatusCode.UNAVAILABLE),
}
PERMANENT = {
    "collection not found": MilvusException(
        code=100, message="collection not found[database=default][collection=x]"),
    "lite path": MilvusException(code=1, message="Open local milvus failed, dir: /x not exists"),
    "bad request": RpcError(grpc.StatusCode.INVALID_ARGUMENT),
}


@pytest.mark.parametrize("error", RETRYABLE.values(), ids=RETRYABLE.keys())
def test_a_failure_a_retry_may_cure_is_a_milvus_unavailable_error(error: Exception) -> None:
    with pytest.raises(MilvusUnavailableError,
                       match=r"^Milvus failed to read graphrag_passages: .* may succeed if "
                             r"retried") as info, milvus_errors("read graphrag_passages"):
        raise error
    assert info.value.__cause__ is error


@pytest.mark.parametrize("error", PERMANENT.values(), ids=PERMANENT.keys())
def test_a_permanent_failure_is_a_milvus_store_error_only(error: Exception) -> None:
    with pytest.raises(MilvusStoreError, match=r"^Milvus failed to read graphrag_passages: ") \
            as info, milvus_errors("read graphrag_passages"):
        raise error
    assert not isinstance(info.value, MilvusUnavailableError)
    assert info.value.__cause__ is error


@pytest.mark.milvus  # a pymilvus client, refused: no server needed
def test_a_server_address_nobody_listens_on_is_unavailable() -> None:
    with socket.socket() as probe:  # a free port: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(MilvusUnavailableError,
                       match=rf"failed to connect to 'http://127.0.0.1:{port}': .*Fail "
                             r"connecting to server"):
        GraphRAGIndex(uri=f"http://127.0.0.1:{port}", embed_model=HashEmbedding(dim=64),
                      milvus_client_kwargs={"timeout": 1.0})


def test_clients_connect_on_their_own_and_the_callers_grpc_options_win() -> None:
    kwargs = {"timeout": 5, "grpc_options": {"grpc.keepalive_time_ms": 1000,
                                             "grpc.use_local_subchannel_pool": 0}}
    own = {"dedicated": True} if SHARED_CONNECTIONS else {}
    assert fresh_connections(kwargs) == {
        **own, "timeout": 5, "grpc_options": {"grpc.use_local_subchannel_pool": 0,
                                              "grpc.keepalive_time_ms": 1000}}
    assert fresh_connections({})["grpc_options"] == {"grpc.use_local_subchannel_pool": 1}
    assert fresh_connections({"dedicated": False}).get("dedicated", False) is False
