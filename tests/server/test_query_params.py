"""One rule for query strings on every route: an unknown parameter, a repeated one, a non-integer or an
out-of-range count is VALIDATION_ERROR (400) naming the parameter, never clamped or ignored; the OpenAPI
document states the same parameters and ranges the routes read."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import pytest
from server_support import auth, server, server_config, server_store  # noqa: F401
from starlette.datastructures import QueryParams

from stratamem.errors import ValidationError
from stratamem.server import console, rest, rest_turns
from stratamem.server.query_params import Count, Text, read_query

ROUTE_QUERIES = {**rest.QUERIES, **rest_turns.QUERIES, **console.QUERIES}


def test_the_openapi_document_states_what_every_route_reads(server):
    with server.client() as c:
        doc = c.get("/openapi.json").json()
    for path, spec in ROUTE_QUERIES.items():
        op = doc["paths"][path]["get"]
        documented = {p["name"]: p["schema"] for p in op.get("parameters", []) if p["in"] == "query"}
        assert set(documented) == set(spec), path
        for name, param in spec.items():
            schema = documented[name]
            if isinstance(param, Count):
                assert (schema.get("minimum"), schema.get("maximum")) == (param.low, param.high), (path, name)
                assert schema.get("default") == param.default, (path, name)
            elif param.choices:
                assert schema.get("enum") == list(param.choices), (path, name)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("limit=abc", "limit"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=-1", "limit"),
        ("limit=1.5", "limit"),
        ("limit=%EF%BC%91", "limit"),  # a full-width digit
        ("q=coffee", "'q'"),
        ("limit=5&limit=6", "limit"),
    ],
)
def test_rest_listing_refuses_bad_parameters_naming_them(server, query, named):
    with server.client("alice") as c:
        sid = c.post("/v1/sessions").json()["id"]
        answer = c.get(f"/v1/sessions/{sid}/memories?{query}")
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and named in error["message"]


@pytest.mark.parametrize(
    "path_query",
    [
        "/search?q=coffee",
        "/search?max_results=0",
        "/search?max_results=101",
        "/search?max_results=ten",
        "?verbose=1",
        "/transcript?limit=0",
        "/transcript?limit=1001",
        "/transcript?start=-1",
        "/transcript?begin=3",
    ],
)
def test_every_session_route_refuses_bad_parameters(server, path_query):
    with server.client("alice") as c:
        sid = c.post("/v1/sessions").json()["id"]
        answer = c.get(f"/v1/sessions/{sid}{path_query}")
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == "VALIDATION_ERROR"


def test_good_parameters_still_answer(server):
    with server.client("alice") as c:
        sid = c.post("/v1/sessions").json()["id"]
        assert (
            c.post(f"/v1/sessions/{sid}/memories", json={"key": "k", "content": "coffee"}).status_code == 200
        )
        assert c.get(f"/v1/sessions/{sid}/memories?limit=200").status_code == 200
        found = c.get(f"/v1/sessions/{sid}/search?query=coffee&max_results=100").json()
        assert [r["key"] for r in found["results"]] == ["k"]
        assert c.get(f"/v1/sessions/{sid}/transcript?start=0&limit=1000").status_code == 200
        assert c.get("/v1/audit?limit=1000&after=0").status_code == 200
        refused = c.get("/v1/audit?limit=1001")
        assert refused.status_code == 400 and "limit" in refused.json()["error"]["message"]
        assert c.get("/v1/tools?dialect=anthropic").status_code == 200
        assert c.get("/v1/tools?dialect=gemini").status_code == 400


def test_console_routes_refuse_bad_parameters(server):
    with server.client() as c:
        opened = c.post("/v1/console/open", json={"clearance": "RESTRICTED"}, headers=auth("ops")).json()
        headers = {**auth("ops"), "X-Stratamem-Console": opened["console"]}
        assert c.get("/v1/console/sessions?limit=200", headers=headers).status_code == 200
        for query in ("/sessions?limit=500", "/sessions?limt=5", "/audit?before=x", "/agents?limit=0"):
            answer = c.get(f"/v1/console{query}", headers=headers)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == "VALIDATION_ERROR", query


def test_the_reader_itself():
    spec = {"limit": Count(1, 200, 50), "tag": Text(8), "mode": Text(choices=("a", "b"))}
    assert read_query(QueryParams(""), spec) == {"limit": 50, "tag": None, "mode": None}
    assert read_query(QueryParams("limit=7&tag=x&mode=b"), spec) == {"limit": 7, "tag": "x", "mode": "b"}
    for bad, named in (("tag=123456789", "tag"), ("mode=c", "mode"), ("limit=", "limit"), ("x=1", "'x'")):
        with pytest.raises(ValidationError, match=named):
            read_query(QueryParams(bad), spec)
