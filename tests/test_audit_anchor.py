"""The audit chain anchored outside the store (issue 9, item 9), on every backend.

Whoever can delete audit rows can also rewrite the store's head record, and then
a cut-off tail — or the whole log — verified as intact. An anchor (sequence and
hash of the newest event, kept elsewhere, optionally HMAC-keyed) catches every
such change up to the anchored event. Tampering goes through a raw connection:
SQLite's own, or PostgreSQL's superuser (row-level security does not apply).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace

import pytest
from click.testing import CliRunner

from stratamem import StorageError, ValidationError
from stratamem.audit import GENESIS, AuditDraft, seal
from stratamem.audit_anchor import AuditAnchor, read_anchor
from stratamem.cli import cli


def _sqlite(store):
    """The SQLite backend holding the store's tables (the Markdown store's sidecar), or None on PostgreSQL."""
    backend = getattr(store.backend, "db", store.backend)
    return backend if hasattr(backend, "_conn") else None


def _raw(store, statements: list[tuple[str, tuple]]) -> None:
    """Run SQL on the store's tables behind its back ('?' placeholders)."""
    sqlite = _sqlite(store)
    if sqlite is not None:  # SQLite, file or memory, or the Markdown store's SQLite sidecar
        for sql, params in statements:
            sqlite._conn.execute(sql, params)
        return
    import pg_server
    import psycopg

    with psycopg.connect(pg_server.base_url(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{store.backend.config.schema}"')
        for sql, params in statements:
            conn.execute(sql.replace("?", "%s"), params)


def _set_head(store, seq: int, digest: str) -> list[tuple[str, tuple]]:
    """Statements that make the store's own head record say (seq, digest), as a careful attacker would."""
    if _sqlite(store) is not None:
        if seq == 0:
            return [("DELETE FROM meta WHERE name = 'audit_head'", ())]
        return [("UPDATE meta SET value = ? WHERE name = 'audit_head'", (f"{seq}:{digest}",))]
    return [("UPDATE audit_head SET seq = ?, hash = ?", (seq, digest))]


def _populated(store, saves: int = 5):
    s = store.session("main")
    for i in range(saves):
        s.save(f"k{i}", "v")
    return s


def test_anchor_of_an_intact_log_verifies_and_later_events_are_fine(store):
    s = _populated(store)
    anchor = store.audit_anchor()
    assert anchor.seq == len(store.audit_events()) and anchor.hash == store.audit_events()[-1].hash
    assert store.verify_audit(anchor) is None
    s.save("later", "v")
    assert store.verify_audit(anchor) is None


def test_tail_cut_with_its_head_is_caught_only_with_the_anchor(store):
    _populated(store)
    anchor = store.audit_anchor()
    events = store.audit_events()
    keep = events[-3]
    _raw(store, [("DELETE FROM audit WHERE seq > ?", (keep.seq,)), *_set_head(store, keep.seq, keep.hash)])
    assert store.verify_audit() is None  # the limitation the anchor exists for
    assert store.verify_audit(anchor) == keep.seq + 1


def test_whole_log_and_head_deleted_is_caught_only_with_the_anchor(store):
    _populated(store)
    anchor = store.audit_anchor()
    _raw(store, [("DELETE FROM audit", ()), *_set_head(store, 0, GENESIS)])
    assert store.verify_audit() is None
    assert store.verify_audit(anchor) == 1


def test_consistent_rewrite_is_caught_only_with_the_anchor(store):
    _populated(store)
    anchor = store.audit_anchor()
    events = store.audit_events()
    forged, prev = [], events[1].prev_hash
    for event in events[1:]:
        draft = AuditDraft(
            event.operation,
            event.session_id,
            event.agent_id,
            event.taint,
            event.keys,
            event.levels,
            event.lineage_ids,
            event.outcome,
            event.detail,
        )
        if event.seq == 2:
            draft = replace(draft, keys=("forged",))
        sealed = seal(event.seq, event.time, draft, prev)
        forged.append(sealed)
        prev = sealed.hash
    statements = [
        (
            "UPDATE audit SET keys = ?, prev_hash = ?, hash = ? WHERE seq = ?",
            (json.dumps(list(e.keys)), e.prev_hash, e.hash, e.seq),
        )
        for e in forged
    ]
    _raw(store, [*statements, *_set_head(store, forged[-1].seq, forged[-1].hash)])
    assert store.verify_audit() is None
    assert store.verify_audit(anchor) == anchor.seq


def test_head_record_deleted_alone_loses_nothing(store):
    _populated(store)
    anchor = store.audit_anchor()
    _raw(store, _set_head(store, 0, GENESIS))
    assert store.verify_audit() is None and store.verify_audit(anchor) is None


def test_edit_below_the_anchor_names_the_edited_event(store):
    _populated(store)
    anchor = store.audit_anchor()
    _raw(store, [("UPDATE audit SET operation = 'forged' WHERE seq = 3", ())])
    assert store.verify_audit() == 3 and store.verify_audit(anchor) == 3
    with pytest.raises(StorageError, match="sequence 3"):
        store.audit_anchor()  # never vouch for a damaged log


def test_keyed_anchor_cannot_be_forged_without_the_key():
    key, other = b"k" * 32, b"o" * 32
    anchor = AuditAnchor(7, "a" * 64, "2026-01-01T00:00:00+00:00")
    text = anchor.dumps(key)
    assert AuditAnchor.loads(text, key) == anchor
    assert AuditAnchor.loads(text) == anchor  # the MAC is only checked when a key is given
    lowered = json.loads(text)
    lowered["seq"] = 3  # an attacker moving the anchor below a cut
    with pytest.raises(ValidationError, match="HMAC"):
        AuditAnchor.loads(json.dumps(lowered), key)
    with pytest.raises(ValidationError, match="HMAC"):
        AuditAnchor.loads(text, other)
    with pytest.raises(ValidationError, match="HMAC"):
        AuditAnchor.loads(anchor.dumps(), key)
    for bad in [
        "",
        "[]",
        "{}",
        '{"stratamem_audit_anchor": 1, "seq": -1, "hash": "' + "a" * 64 + '"}',
        '{"stratamem_audit_anchor": 1, "seq": 1, "hash": "xyz"}',
        "[" * 100_000,
    ]:
        with pytest.raises(ValidationError):
            AuditAnchor.loads(bad)


def test_cli_anchor_and_verify(tmp_path):
    db, anchor_file, key_file = str(tmp_path / "m.db"), tmp_path / "anchor.json", tmp_path / "anchor.key"
    key_file.write_bytes(os.urandom(32))
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--db", db, *args])

    for i in range(4):
        assert run("save", f"k{i}", "v").exit_code == 0
    r = run("audit", "anchor", str(anchor_file), "--key", str(key_file))
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(os.stat(anchor_file).st_mode) == 0o600
    anchor = read_anchor(anchor_file, key_file.read_bytes())
    ok = run("--json", "audit", "verify", "--anchor", str(anchor_file), "--key", str(key_file))
    assert ok.exit_code == 0 and json.loads(ok.output) == {"intact": True, "anchor_seq": anchor.seq}
    printed = run("audit", "anchor")
    assert (
        printed.exit_code == 0 and json.loads(printed.output)["seq"] == anchor.seq
    )  # verifying appends nothing
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM audit WHERE seq >= ?", (anchor.seq - 1,))
    conn.execute("DELETE FROM meta WHERE name = 'audit_head'")
    conn.commit()
    conn.close()
    assert run("audit", "verify").exit_code == 0
    broken = run("audit", "verify", "--anchor", str(anchor_file), "--key", str(key_file))
    assert broken.exit_code == 3 and f"sequence {anchor.seq - 1}" in broken.output
    assert (
        run("audit", "anchor").exit_code == 0
    )  # the truncated chain is self-consistent; only an anchor knows
    (tmp_path / "wrong.key").write_bytes(os.urandom(32))
    forged = run("audit", "verify", "--anchor", str(anchor_file), "--key", str(tmp_path / "wrong.key"))
    assert forged.exit_code == 2 and "HMAC" in forged.output
    assert run("audit", "verify", "--anchor", str(tmp_path / "missing.json")).exit_code == 2
    assert run("audit", "verify", "--key", str(key_file)).exit_code == 2
