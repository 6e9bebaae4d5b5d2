"""The explorer's queries (ExplorerData) and its web app (Starlette's test client), on Lite."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from llama_index_graphrag_milvus import (
    EmptyIndexError,
    GraphRAGIndex,
    InvalidInputError,
    MissingDependencyError,
)
from llama_index_graphrag_milvus.explore import ExplorerData, NotFoundError
from llama_index_graphrag_milvus.explore.app import create_app
from llama_index_graphrag_milvus.explore.data import MAX_PAGE, MAX_QUESTION_CHARS
from llama_index_graphrag_milvus.explore.server import require_web
from llama_index_graphrag_milvus.ids import entity_id
from tests.support.explain_data import DANIEL, FAMILY_WITH_HOSTILE_PASSAGES, QUESTION, SCRIPT
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus

HUB = [(f"The Hub knows person number {i}.", [("The Hub", "knows", f"Person {i}")])
       for i in range(60)]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphRAGIndex]:
    built = GraphRAGIndex.from_triplets(FAMILY_WITH_HOSTILE_PASSAGES + HUB,
                                        uri=str(tmp_path_factory.mktemp("explore") / "x.db"),
                                        embed_model=HashEmbedding(dim=64))
    yield built
    built.close()


@pytest.fixture(scope="module")
def client(index: GraphRAGIndex) -> Iterator[TestClient]:
    with TestClient(create_app(index), base_url="http://127.0.0.1:8765") as test_client:
        yield test_client


def test_the_summary_counts_the_index(index: GraphRAGIndex) -> None:
    summary = ExplorerData(index).summary()
    assert summary["counts"]["passages"] == 66
    assert summary["counts"]["relations"] == 68
    assert summary["counts"]["communities"] is None
    assert summary["hubs"][0] == {"id": entity_id("The Hub"), "name": "The Hub", "degree": 60}
    assert sum(b["entities"] for b in summary["degrees"]) == summary["counts"]["entities"]
    assert summary["degrees"][-1]["high"] >= 60
    assert "local" not in summary["methods"]  # no communities built


def test_entity_search_puts_exact_and_prefix_names_first(index: GraphRAGIndex) -> None:
    data = ExplorerData(index)
    names = [hit["name"] for hit in data.search_entities("bernoulli")]
    assert names == ["Daniel Bernoulli", "Johann Bernoulli"]  # degree 2 each, then name
    assert data.search_entities("person 1", limit=3)[0]["name"] == "Person 1"
    assert data.search_entities("<SCRIPT>")[0]["name"] == SCRIPT
    with pytest.raises(InvalidInputError, match="at most 200"):
        data.search_entities("x" * 201)


def test_a_hubs_relations_come_a_page_at_a_time(index: GraphRAGIndex) -> None:
    data = ExplorerData(index)
    hub = entity_id("The Hub")
    pages = [data.neighbourhood(hub, offset, 25) for offset in (0, 25, 50)]
    assert [len(p["relations"]) for p in pages] == [25, 25, 10]
    assert {p["total"] for p in pages} == {60}
    ids = [r["id"] for p in pages for r in p["relations"]]
    assert len(set(ids)) == 60
    first = pages[0]["relations"][0]
    assert first["subject"]["name"] == "The Hub" and first["label"] == "knows"
    assert len(first["passages"]) == 1
    with pytest.raises(InvalidInputError, match="limit"):
        data.neighbourhood(hub, 0, MAX_PAGE + 1)
    with pytest.raises(NotFoundError, match="no entity"):
        data.neighbourhood("nope", 0, 10)


def test_passages_come_with_their_triplets(index: GraphRAGIndex) -> None:
    data = ExplorerData(index)
    page = data.passages(0, 50)
    assert (page["total"], len(page["passages"])) == (66, 50)
    assert len(data.passages(50, 50)["passages"]) == 16
    [daniel] = [p for p in page["passages"] + data.passages(50, 50)["passages"]
                if p["text"] == DANIEL]
    assert ["Daniel Bernoulli", "was a child of", "Johann Bernoulli"] in daniel["triplets"]
    assert data.passage(daniel["id"])["triplets"] == daniel["triplets"]
    with pytest.raises(NotFoundError):
        data.passage("missing")


def test_questions_are_bounded(index: GraphRAGIndex) -> None:
    data = ExplorerData(index)
    answer = data.ask(QUESTION, "bridge", 3)
    assert answer["question"] == QUESTION and len(answer["passages"]) == 3
    with pytest.raises(InvalidInputError, match=f"at most {MAX_QUESTION_CHARS}"):
        data.ask("x" * (MAX_QUESTION_CHARS + 1))
    with pytest.raises(InvalidInputError, match="top_k"):
        data.ask(QUESTION, "bridge", 51)
    with pytest.raises(InvalidInputError, match="unknown method"):
        data.ask(QUESTION, "drop table")
    assert data.communities()["built"] is False


def test_the_app_answers_get_only_and_changes_nothing(index: GraphRAGIndex,
                                                      client: TestClient) -> None:
    before = {name: index.store.count(name) for name in index.store.client.list_collections()}
    hub = entity_id("The Hub")
    paths = ["/", "/assets/explorer.js", "/api/summary", "/api/entities?q=bern",
             f"/api/entity/{hub}?limit=5", "/api/passages?limit=2",
             "/api/communities", f"/api/ask?q={QUESTION}&top_k=2"]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert client.request(method, path).status_code == 405
    after = {name: index.store.count(name) for name in index.store.client.list_collections()}
    assert after == before


def test_the_app_refuses_bad_requests_clearly(client: TestClient) -> None:
    assert client.get("/api/entity/nope").status_code == 404
    assert client.get("/assets/..%2Fapp.py").status_code == 404
    assert client.get("/assets/app.py").status_code == 404
    response = client.get("/api/passages?limit=abc")
    assert response.status_code == 400 and "limit must be an integer" in response.json()["error"]
    assert client.get(f"/api/ask?q={'x' * 1001}").status_code == 400
    # a page elsewhere cannot reach it through DNS rebinding: the Host must be a loopback name
    assert client.get("/api/summary", headers={"host": "attacker.example"}).status_code == 400


def test_a_missing_web_framework_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(MissingDependencyError, match=r"\[explorer\]"):
        require_web()


def test_communities_and_local_search_once_built(tmp_path: object) -> None:
    from pathlib import Path

    from tests.support.explain_data import build

    index = build(Path(str(tmp_path)) / "communities.db")
    try:
        index.build_communities()
        data = ExplorerData(index)
        summary = data.summary()
        assert "local" in summary["methods"] and summary["counts"]["communities"] >= 1
        page = data.communities(level=0)
        assert page["built"] and page["total"] == len(page["reports"]) >= 1
        ratings = [r["rating"] for r in page["reports"]]
        assert ratings == sorted(ratings, reverse=True)
        assert all(r["entities"] and r["title"] for r in page["reports"])
        with pytest.raises(InvalidInputError, match="level"):
            data.communities(level=99)
        answer = data.ask(QUESTION, "local", 3)
        assert answer["method"] == "local" and answer["reports"]
    finally:
        index.close()


def test_errors_repeat_little_of_what_they_were_given(client: TestClient) -> None:
    huge = "x" * 60_000  # the test client refuses longer URLs
    for path in (f"/api/entity/{huge}", f"/api/passage/{huge}", f"/assets/{huge}"):
        response = client.get(path)
        assert response.status_code == 404
        assert len(response.content) < 300 and "xxxx…" in response.json()["error"]
    response = client.get(f"/api/ask?q=Euler&method={huge}")
    assert response.status_code == 400 and len(response.content) < 500


def test_local_search_without_communities_is_a_bad_request(client: TestClient) -> None:
    response = client.get(f"/api/ask?q={QUESTION}&method=local")
    assert response.status_code == 400
    assert "Run index.build_communities()" in response.json()["error"]
    assert client.head(f"/api/ask?q={QUESTION}&method=local").status_code == 400


class CountingData(ExplorerData):
    """Counts the questions it runs."""

    asked = 0

    def ask(self, *args: object, **kwargs: object) -> dict[str, object]:
        CountingData.asked += 1
        return super().ask(*args, **kwargs)


def test_head_checks_a_question_and_runs_nothing(index: GraphRAGIndex) -> None:
    with TestClient(create_app(CountingData(index)), base_url="http://127.0.0.1") as client:
        response = client.head(f"/api/ask?q={QUESTION}&top_k=2")
        assert response.status_code == 200 and CountingData.asked == 0
        assert response.headers["content-type"] == "application/json"
        assert client.head("/api/ask?q=").status_code == 400  # checked all the same
        assert client.head(f"/api/ask?q={QUESTION}&top_k=99").status_code == 400
        assert client.get(f"/api/ask?q={QUESTION}&top_k=2").status_code == 200
        assert CountingData.asked == 1


def test_a_tenant_s_explorer_follows_writes_through_its_index(tmp_path: Path) -> None:
    """Its view of the graph was computed once: after a write through the same index its
    rows pointed into the rebuilt graph (500s, and another tenant's entity names listed)."""
    from tests.retrieval.test_tenant_isolation import ACME, GLOBEX, ONLY_ACME, leaks

    index = GraphRAGIndex.from_triplets(ACME, uri=str(tmp_path / "t.db"),
                                        embed_model=HashEmbedding(dim=64))
    try:
        data = ExplorerData(index, filters=ONLY_ACME)
        before = data.summary()
        euler = data.search_entities("euler")
        assert euler
        index.insert_triplets(GLOBEX)  # the other tenant, through the same index object
        after = json.dumps([data.summary(), data.search_entities("a", limit=50),
                            data.search_entities("alice"),
                            data.neighbourhood(euler[0]["id"])])
        assert not leaks(after)
        assert data.summary()["counts"] == before["counts"]
        assert data.search_entities("euler") == euler
    finally:
        index.close()


@pytest.mark.parametrize("graph", ["memory", "milvus"])
def test_an_index_never_written_is_refused_with_what_to_do(tmp_path: Path, graph: str) -> None:
    """Every route answered 500 with a raw "collection does not exist" (memory), or
    searches did (served), and the page said "could not be read"."""
    from llama_index_graphrag_milvus.explore import serve

    with GraphRAGIndex(uri=str(tmp_path / "new.db"), embed_model=HashEmbedding(dim=64),
                       graph=graph) as index:
        with pytest.raises(EmptyIndexError, match=r"holds nothing yet .* ingest passages first"):
            ExplorerData(index)
        with pytest.raises(EmptyIndexError):
            serve(index, port=0)
        index.insert_triplets([("Euler was born in Basel.", [("Euler", "born in", "Basel")])])
        assert ExplorerData(index).summary()["counts"]["passages"] == 1
