"""Data models for a graph served by Milvus, measured side by side before choosing one.

The served graph needs one operation above all: *the relations of some entities, the most
similar to the question first* (each hop of the k-hop pool, the relations of the entities a
question names). Three ways to store adjacency so that Milvus answers it, on one synthetic
power-law graph (:mod:`.synthetic`) written to bare collections:

- ``filtered search``: relations carry ``subject_id`` / ``object_id`` (scalar-indexed on a
  server); one vector search filtered to ``subject_id in [...] or object_id in [...]``
  returns the ``limit`` most similar. One request; a hub's cost does not grow with its
  degree on the server (the filter is an index lookup, the search an index search).
- ``filtered query``: the same filter as a query, the vectors fetched and scored in the
  process (up to ``--query-cap`` rows: a hub's relations beyond are never seen).
- ``adjacency rows``: every entity row holds the ids of its relations (an ``ARRAY`` field,
  at most 4,096 elements in Milvus, so a hub's list is cut there); a read by primary key of
  the entity rows, then of the relation rows with their vectors, scored in the process. Two
  requests, and a second path for hubs.

For each, entities of three kinds (one small entity, the largest hub, eight entities drawn
as a question's seeds are: by degree) and p50 / p95 over ``--queries`` random query vectors,
with how many of the true ``limit`` most similar relations each option returned (recall).

Run (a few minutes; ``--embedded-server`` for the server, nothing for Lite)::

    python -m benchmarks.graph_options --relations 300000 \\
        --embedded-server /tmp/milvus-options --out bench_out/graph_options
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import DataType, MilvusClient

from benchmarks import command_parser
from benchmarks.scale import Percentiles, milvus_target
from benchmarks.synthetic import SyntheticGraph, generate, unit_vectors

ARRAY_CAPACITY = 4096
"""Milvus' largest ``max_capacity`` of an ``ARRAY`` field."""
Fetch = Callable[[np.ndarray, list[int]], list[int]]
"""An option: (query vector, entity numbers) -> relation numbers, most similar first."""


def write(client: MilvusClient, graph: SyntheticGraph, server: bool,
          batch_size: int = 5_000) -> float:
    """The relation and entity collections; seconds until written and indexed."""
    start = time.perf_counter()
    for name in ("opt_relations", "opt_entities"):
        if client.has_collection(name):
            client.drop_collection(name)
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("subject_id", DataType.INT64)
    schema.add_field("object_id", DataType.INT64)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=graph.dim)
    index = client.prepare_index_params()
    index.add_index("embedding", index_type="HNSW", metric_type="IP",
                    params={"M": 8, "efConstruction": 64})
    if server:
        index.add_index("subject_id")
        index.add_index("object_id")
    client.create_collection("opt_relations", schema=schema, index_params=index)
    rng = np.random.default_rng(graph.seed + 1)
    for first in range(0, graph.num_relations, batch_size):
        last = min(first + batch_size, graph.num_relations)
        vectors = unit_vectors(rng, last - first, graph.dim)
        client.insert("opt_relations", [
            {"id": i, "subject_id": int(graph.subjects[i]), "object_id": int(graph.objects[i]),
             "embedding": vectors[i - first].tolist()} for i in range(first, last)])
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("relation_ids", DataType.ARRAY, element_type=DataType.INT64,
                     max_capacity=ARRAY_CAPACITY)
    schema.add_field("stub", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index("stub", index_type="FLAT", metric_type="L2")
    client.create_collection("opt_entities", schema=schema, index_params=index)
    ends = np.concatenate([graph.subjects, graph.objects])
    relations = np.concatenate([np.arange(graph.num_relations)] * 2)
    order = np.argsort(ends, kind="stable")
    bounds = np.searchsorted(ends[order], np.arange(graph.num_entities + 1))
    for first in range(0, graph.num_entities, batch_size):
        last = min(first + batch_size, graph.num_entities)
        client.insert("opt_entities", [
            {"id": e, "stub": [0.0, 0.0],
             "relation_ids": relations[order[bounds[e]:bounds[e + 1]]][:ARRAY_CAPACITY].tolist()}
            for e in range(first, last)])
    for name in ("opt_relations", "opt_entities"):
        client.flush(name)
        client.load_collection(name)
    return time.perf_counter() - start


def options(client: MilvusClient, limit: int, query_cap: int, efs: tuple[int, ...] = ()
            ) -> dict[str, tuple[Fetch, int]]:
    """Each option's fetch and its Milvus requests per call; ``efs``: the filtered search
    again with each HNSW ``ef`` (the search's candidate list; Milvus's default is the
    limit)."""

    def where(entities: list[int]) -> str:
        listed = ", ".join(map(str, entities))
        return f"subject_id in [{listed}] or object_id in [{listed}]"

    def top(rows: list[dict[str, Any]], vector: np.ndarray) -> list[int]:
        if not rows:
            return []
        matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        best = np.argsort(-(matrix @ vector), kind="stable")[:limit]
        return [int(rows[i]["id"]) for i in best]

    def filtered_search(vector: np.ndarray, entities: list[int], ef: int | None = None
                        ) -> list[int]:
        params: dict[str, Any] = {"metric_type": "IP"}  # as the package searches
        if ef is not None:
            params["params"] = {"ef": ef}
        hits = client.search("opt_relations", [vector.tolist()], filter=where(entities),
                             limit=limit, output_fields=["id"], search_params=params)
        return [int(hit["id"]) for hit in hits[0]]

    def filtered_query(vector: np.ndarray, entities: list[int]) -> list[int]:
        rows = client.query("opt_relations", filter=where(entities),
                            output_fields=["id", "embedding"], limit=query_cap)
        return top(rows, vector)

    def adjacency_rows(vector: np.ndarray, entities: list[int]) -> list[int]:
        rows = client.get("opt_entities", ids=entities, output_fields=["relation_ids"])
        ids = sorted({int(i) for row in rows for i in row["relation_ids"]})
        return top(client.get("opt_relations", ids=ids, output_fields=["id", "embedding"])
                   if ids else [], vector)

    found: dict[str, tuple[Fetch, int]] = {
        "filtered search": (filtered_search, 1), "filtered query": (filtered_query, 1),
        "adjacency rows": (adjacency_rows, 2)}
    for ef in efs:
        def search_ef(vector: np.ndarray, entities: list[int], ef: int = ef) -> list[int]:
            return filtered_search(vector, entities, ef)

        found[f"filtered search ef={ef}"] = (search_ef, 1)
    return found


def measure(client: MilvusClient, graph: SyntheticGraph, queries: int, limit: int,
            query_cap: int, seed: int = 5, efs: tuple[int, ...] = (),
            only: tuple[str, ...] = ()) -> dict[str, Any]:
    """Each option (those named in ``only`` when given) for each kind of entity set:
    p50 / p95, requests, recall."""
    rng = np.random.default_rng(seed)
    degrees = graph.entity_degrees()
    small = int(np.flatnonzero((degrees >= 3) & (degrees <= 10))[0])
    hub = graph.hubs(1)[0]
    weights = degrees / degrees.sum()
    seed_sets = {"small entity": lambda: [small], "largest hub": lambda: [hub],
                 "8 seeds": lambda: sorted({int(e) for e in rng.choice(
                     graph.num_entities, 8, replace=False, p=weights)})}
    vectors = unit_vectors(rng, queries, graph.dim)
    relation_vectors = unit_vectors(np.random.default_rng(graph.seed + 1), graph.num_relations,
                                    graph.dim) if graph.num_relations <= 2_000_000 else None
    fetches = {name: fetch for name, fetch in options(client, limit, query_cap, efs).items()
               if not only or name in only}
    result: dict[str, Any] = {"degrees": {"small entity": int(degrees[small]),
                                          "largest hub": int(degrees[hub])}}
    for kind, draw in seed_sets.items():
        entity_sets = [draw() for _ in range(queries)]
        row: dict[str, Any] = {}
        for name, (fetch, requests) in fetches.items():
            fetch(vectors[0], entity_sets[0])  # warm
            seconds, recalls = [], []
            for vector, entities in zip(vectors, entity_sets, strict=True):
                start = time.perf_counter()
                got = fetch(vector, entities)
                seconds.append(time.perf_counter() - start)
                if relation_vectors is not None:
                    recalls.append(recall(graph, relation_vectors, vector, entities, got, limit))
            row[name] = {**Percentiles.of(seconds).__dict__, "requests": requests,
                         "recall": round(float(np.mean(recalls)), 3) if recalls else None}
        result[kind] = row
        print(kind, json.dumps(row), flush=True)
    return result


def recall(graph: SyntheticGraph, relation_vectors: np.ndarray, vector: np.ndarray,
           entities: list[int], got: list[int], limit: int) -> float:
    """Share of the exact ``limit`` most similar relations of ``entities`` in ``got``."""
    mask = np.isin(graph.subjects, entities) | np.isin(graph.objects, entities)
    members = np.flatnonzero(mask)
    exact = members[np.argsort(-(relation_vectors[members] @ vector), kind="stable")[:limit]]
    return len(set(exact.tolist()) & set(got)) / max(1, len(exact))


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("benchmarks.graph_options", __doc__)
    parser.add_argument("--relations", type=int, default=300_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=200,
                        help="relations wanted per call (per_hop_max_relations)")
    parser.add_argument("--query-cap", type=int, default=16_384,
                        help="rows a filtered query may return (Milvus' query limit)")
    parser.add_argument("--uri", help="a Milvus server or Lite file (default: Lite in a tmp dir)")
    parser.add_argument("--embedded-server", metavar="DIR",
                        help="start the embedded Milvus server with its data in DIR (wiped)")
    parser.add_argument("--ef", type=int, nargs="*", default=[],
                        help="also the filtered search with these HNSW ef values")
    parser.add_argument("--only", nargs="*", default=[],
                        help="measure only these options (names as in the report)")
    parser.add_argument("--out", type=Path, default=Path("bench_out/graph_options"))
    args = parser.parse_args(argv)
    graph = generate(args.relations, dim=args.dim)
    with tempfile.TemporaryDirectory() as tmp, \
            milvus_target(args.uri, args.embedded_server, Path(tmp)) as (target, kind):
        client = MilvusClient(target)
        print(f"{kind}: writing {args.relations:,} relations", flush=True)
        build_s = write(client, graph, server=kind != "lite")
        report = {"config": {**{k: v for k, v in vars(args).items() if k != "out"},
                             "milvus": kind, "build_s": round(build_s, 1)},
                  **measure(client, graph, args.queries, args.limit, args.query_cap,
                            efs=tuple(args.ef), only=tuple(args.only))}
        client.close()
        if kind == "lite":  # stop its Lite server before the folder goes: it may still write
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(os.path.abspath(target))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "lite" if kind == "lite" else "server"
    (args.out / f"graph_options_{name}.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
