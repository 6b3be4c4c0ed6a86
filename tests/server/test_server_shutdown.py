"""`stratamem serve` as a real process: graceful SIGTERM, and the local development token."""

from __future__ import annotations

import signal
import stat

import httpx2
from server_support import auth, cli_env, free_port, start_serve, write_config, write_until_stopped

import stratamem as sm

WRITERS = 8


def test_sigterm_finishes_in_flight_requests_and_loses_no_acknowledged_write(tmp_path):
    db, port = tmp_path / "memory.db", free_port()
    proc = start_serve(tmp_path, db, port, "--config", str(write_config(tmp_path)))
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx2.Client(base_url=url, headers=auth("alice")) as client:
            sid = client.post("/v1/sessions").json()["id"]
        writers = write_until_stopped(url, sid, "alice", WRITERS)
        proc.send_signal(signal.SIGTERM)  # while every writer has a request in flight or about to be
        writers.join()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()

    assert not writers.refused
    assert len(writers.acknowledged) >= 100
    with sm.open_store(str(db)) as store:
        stored = {m.key for m in store.export("alice")}
        assert store.verify_audit() is None
    assert set(writers.acknowledged) <= stored  # every acknowledged write survived the shutdown


def test_without_config_a_private_development_token_is_created(tmp_path):
    db, port = tmp_path / "memory.db", free_port()
    env = cli_env(tmp_path)
    proc = start_serve(tmp_path, db, port, env=env)
    try:
        token_file = tmp_path / "home" / "server-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.post("/v1/sessions").status_code == 401
            created = client.post("/v1/sessions", headers={"Authorization": f"Bearer {token}"})
            assert created.status_code == 201 and created.json()["agent_id"] == "main"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert str(token_file) in proc.stderr.read() and token not in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
