"""The client raises, for every error code the server's contract names, our class with that same code."""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import httpx
import pytest
from server_support import server, server_config, server_store, token  # noqa: F401

import stratamem as sm
from stratamem.client import decode
from stratamem.client.calls import health
from stratamem.server.openapi import SCHEMAS
from stratamem.turn.errors import TurnStateError

CODES = SCHEMAS["Error"]["properties"]["error"]["properties"]["code"]["enum"]


@pytest.mark.parametrize("code", CODES)
def test_every_documented_code_keeps_its_code(code):
    answer = httpx.Response(400, json={"error": {"code": code, "message": "m"}})
    with pytest.raises(sm.StratamemError) as raised:
        decode(health(), answer)
    assert raised.value.code == code and raised.value.message == "m"


def test_ending_a_turn_twice_is_turn_state(server):
    with sm.Client(server.url, token("alice")) as client:
        sid = client.create_session()["id"]
        tid = client.begin_turn(sid, "hello")["turn_id"]
        client.end_turn(sid, tid, "bye")
        with pytest.raises(TurnStateError) as raised:
            client.end_turn(sid, tid, "again")
    assert raised.value.code == "TURN_STATE"
