"""The turn API never serves a deleted or purged memory in a prompt, whichever process removed it.

Each ``GET .../turns/{id}/prompt`` recalls anew (nothing rendered is kept
between requests), so a delete over REST, a delete run by a tool worker
(``serve --workers``) and ``stratamem purge`` from another process all reach
the next prompt.
"""
# ruff: noqa: F811  (fixtures imported from server_support are test arguments)

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

from server_support import auth, live_server, server_config, server_store, write_config  # noqa: F401

from stratamem.server.config import load_config
from stratamem.server.tool_workers import ToolWorkers, WorkerSettings


def _prompt_after_delete(live, db: str) -> None:
    with live.client("alice") as rest:
        sid = rest.post("/v1/sessions").json()["id"]
        saved = rest.post(
            f"/v1/sessions/{sid}/memories", json={"key": "door-code", "content": "door code 4711"}
        )
        assert saved.status_code in (200, 201), saved.text
        begun = rest.post(f"/v1/sessions/{sid}/turns", json={"user_message": "what is the door code?"})
        assert "4711" in begun.text
        prompt = f"/v1/sessions/{sid}/turns/{begun.json()['turn_id']}/prompt"
        assert "4711" in rest.get(prompt).text
        assert rest.delete(f"/v1/sessions/{sid}/memories/door-code").status_code == 200
        assert "4711" not in rest.get(prompt).text
        later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
        purge = [sys.executable, "-m", "stratamem", "--db", db, "purge", "--before", later]
        done = subprocess.run(purge, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        answer = rest.get(prompt)
        assert answer.status_code == 200 and "4711" not in answer.text


def test_a_deleted_and_purged_memory_leaves_the_served_prompt(server_store, server_config, tmp_path):
    with live_server(server_store, server_config) as live:
        _prompt_after_delete(live, str(tmp_path / "memory.db"))


def test_with_tool_workers_too(server_store, tmp_path):
    config_path = write_config(tmp_path)
    config = load_config(config_path)
    db = str(tmp_path / "memory.db")
    settings = WorkerSettings(db, {}, tuple(config.principals), config.policy, config.profile)
    workers = ToolWorkers(settings, 2)
    try:
        with live_server(server_store, config_path, workers) as live:
            _prompt_after_delete(live, db)
    finally:
        workers.close()
