"""Purge on PostgreSQL: the rows leave every table, and the rewritten table and index files no longer
hold the purged bytes. (WAL segments, archives, replicas and backups keep history on the server's
own retention; see the README.)"""

from __future__ import annotations

import glob
import os
from datetime import timedelta

from pg_support import Clock, open_pg, schema_of, superuser

import stratamem as sm

MARKER = "PURGE-ME-zqxjk-7781"


def schema_files(schema: str) -> bytes:
    """Every data file of every relation (tables, TOAST, indexes) in the store's schema, after a checkpoint."""
    blob = b""
    with superuser() as conn:
        conn.execute("CHECKPOINT")
        datadir = conn.execute("SHOW data_directory").fetchone()[0]
        paths = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s OR c.oid IN (SELECT reltoastrelid FROM pg_class c2 JOIN pg_namespace n2 "
            "ON n2.oid = c2.relnamespace WHERE n2.nspname = %s)",
            (schema, schema),
        ).fetchall()
    for (path,) in paths:
        if path:
            for part in glob.glob(os.path.join(datadir, path) + "*"):
                with open(part, "rb") as f:
                    blob += f.read()
    return blob


def test_purge_removes_the_bytes_from_the_store_files():
    clock = Clock()
    store = open_pg(clock=clock)
    s = store.session("main")
    s.save("doomed", f"{MARKER} first draft", tags=[f"{MARKER}-tag"])
    s.save("doomed", f"{MARKER} second draft")
    s.save("fleeting", f"{MARKER} expiring", ttl=30)
    s.save("big", f"{MARKER} " + "padding words " * 2000)  # large enough to be TOASTed
    s.delete("big")
    s.save("kept", "an ordinary survivor")
    s.delete("doomed")
    clock.advance(60)
    schema = schema_of(store)
    assert MARKER.encode() in schema_files(schema)
    assert store.purge(before=clock.now + timedelta(seconds=1)) == 3
    blob = schema_files(schema)
    assert MARKER.encode() not in blob
    assert b"zqxjk" not in blob  # nor its stemmed term in the postings
    assert s.get("kept").content == "an ordinary survivor"
    assert [h.memory.key for h in s.search("survivor")] == ["kept"]
    assert store.verify_audit() is None
    store.close()


def test_purge_of_an_expired_higher_version_unshadows_nothing_wrongly():
    clock = Clock()
    store = open_pg(clock=clock)
    low = store.session("a")
    low.save("k", "low version")
    high = store.session("a")
    high.escalate(sm.Level.INTERNAL, "up")
    high.save("k", "high version expiring", ttl=10)
    assert high.get("k").content == "high version expiring"
    clock.advance(20)
    assert high.get("k").content == "low version"
    assert store.purge(before=clock.now) == 1
    assert high.get("k").content == "low version"
    assert [h.memory.content for h in high.search("version")] == ["low version"]
    store.close()
