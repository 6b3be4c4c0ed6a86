"""PostgreSQL's audit head row, deleted behind the store's back, fails closed (issue 9, item 9).

Every append locks that one row to keep the chain linear; without it an append
used to crash with a TypeError. Now it is a clear storage error, and nothing
already logged is lost (the anchor still verifies).
"""

from __future__ import annotations

import pytest
from pg_support import open_pg, schema_of, superuser

from stratamem import StorageError


def test_head_row_deleted_fails_closed_with_a_storage_error():
    store = open_pg()
    s = store.session("main")
    s.save("k", "v")
    anchor = store.audit_anchor()
    with superuser() as conn:
        conn.execute(f'DELETE FROM "{schema_of(store)}".audit_head')
    with pytest.raises(StorageError, match="head record is missing"):
        s.save("k2", "v")
    assert store.verify_audit(anchor) is None
    store.close()
