"""Purge on PostgreSQL never queues behind a reader for long (issue 9, item 12).

VACUUM FULL needs an exclusive lock; while it waits for one, every other
statement on the tables queues behind it. A reader holding a lock on the
memories table used to make purge (and so the whole store) wait as long as the
reader lived. Now each attempt waits at most a short lock timeout, purge
reports that the bytes remain, and the next purge — even with nothing new to
purge — finishes the erasure.
"""

from __future__ import annotations

import threading
import warnings

from pg_support import Clock, open_pg, schema_of, superuser
from test_pg_purge import MARKER, schema_files

BOUND_S = 120  # far above the designed few seconds: only "returns while the reader lives" is tested


def test_purge_returns_while_a_reader_holds_the_table_and_the_next_purge_erases():
    clock = Clock()
    store = open_pg(clock=clock)
    s = store.session("main")
    s.save("doomed", f"{MARKER} content")
    s.save("kept", "ordinary")
    s.delete("doomed")
    clock.advance(60)
    schema = schema_of(store)
    reader = superuser()
    reader.autocommit = False
    reader.execute(f'SELECT count(*) FROM "{schema}".memories').fetchone()  # holds its lock until it ends
    box: dict = {}

    def purge() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            box["result"] = store.purge(before=clock.now)
        box["warnings"] = caught

    thread = threading.Thread(target=purge, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), "purge waited for the reader"
    result = box["result"]
    assert result == 1 and result.erased is False and "run purge again" in result.remaining
    assert any(issubclass(w.category, RuntimeWarning) for w in box["warnings"])
    assert s.get("doomed") is None and s.get("kept").content == "ordinary"
    reader.rollback()
    reader.close()
    again = store.purge(before=clock.now)
    assert again == 0 and again.erased is True
    assert MARKER.encode() not in schema_files(schema)
    assert store.purge(before=clock.now).erased  # nothing left to do: no VACUUM needed
    store.close()
