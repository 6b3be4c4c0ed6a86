"""Writers never starve PostgreSQL readers: a search takes no lock a write transaction holds.

A read runs in its own read-only snapshot and appends its audit event afterwards (grouped with other
appends, ``storage/audit_group``); only that append queues, and a write holds the audit head only for
its last statement (``sm_save``). The SQLite side is ``tests/test_concurrent_readers.py``.
"""

from __future__ import annotations

import threading

from pg_support import open_pg, superuser

LIVENESS_S = 60


def test_a_search_completes_while_a_long_write_transaction_is_open():
    """PostgreSQL readers take no lock a writer holds: a search answers from the last committed state."""
    store = open_pg()
    s = store.session("a")
    s.save("old", "committed harbour text")
    schema = store.backend.config.schema
    with superuser() as writer:
        writer.execute("BEGIN")
        writer.execute(f"UPDATE {schema}.memories SET content = 'uncommitted' WHERE key = 'old'")
        writer.execute(f"LOCK TABLE {schema}.postings IN ROW EXCLUSIVE MODE")
        done: list = []
        reader = threading.Thread(target=lambda: done.append(s.search("harbour")[0].memory.content))
        reader.start()
        reader.join(LIVENESS_S)
        finished_during_write = not reader.is_alive()
        writer.execute("ROLLBACK")
        reader.join()
    assert finished_during_write and done == ["committed harbour text"]
    assert store.verify_audit() is None
    store.close()
