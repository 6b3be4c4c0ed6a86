"""Group commit for audit events: concurrent appends share one transaction, one commit.

Every tool call appends several events (the policy's decisions, the read's own
event, the ``tool.call`` record), each in a transaction of its own that must
commit before the call returns. The audit chain is linear, so those
transactions take turns (the SQLite write lock, PostgreSQL's audit head row)
and under many concurrent clients a server spends its time handing that turn
around and, with a durable PostgreSQL, waiting for one WAL flush per event.

Here a thread that wants to append either becomes the leader (nobody is
writing) and writes every event queued so far in one transaction, or waits
for the leader that is writing; whatever queued meanwhile goes in the next
transaction. Each caller still gets its own event back only after the
transaction holding it committed. When a group's transaction fails, each of
its events is written again alone, so a failure reaches only the callers whose
own event cannot be written (a hostile caller's event never fails another
session's call). Alone, a thread
writes its one event straight away, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from ...audit import AuditDraft
from ...models import AuditEvent

Writer = Callable[[Sequence[tuple[AuditDraft, datetime]]], list[AuditEvent]]
MAX_GROUP = 256  # events in one transaction at most; the rest wait for the next


class _Slot:
    __slots__ = ("draft", "error", "event", "now")

    def __init__(self, draft: AuditDraft, now: datetime) -> None:
        self.draft, self.now = draft, now
        self.event: AuditEvent | None = None
        self.error: BaseException | None = None


class GroupAppender:
    """Appends events through ``write`` (one transaction for a list of events, in order)."""

    def __init__(self, write: Writer) -> None:
        self._write = write
        self._cond = threading.Condition()
        self._queue: list[_Slot] = []
        self._writing = False

    def append(self, draft: AuditDraft, now: datetime) -> AuditEvent:
        slot = _Slot(draft, now)
        with self._cond:
            self._queue.append(slot)
        while True:
            with self._cond:
                while self._writing and slot.event is None and slot.error is None:
                    self._cond.wait()
                if slot.event is not None or slot.error is not None:
                    break
                # Leader: this thread writes what is queued, oldest first (its own event among it, or next).
                self._writing = True
                group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            try:
                events = self._write([(s.draft, s.now) for s in group])
                for s, event in zip(group, events, strict=True):
                    s.event = event
            except BaseException as exc:  # noqa: BLE001 - handed to the callers (re-raised there)
                if len(group) == 1:
                    group[0].error = exc
                else:  # one caller's event must not fail another's call: each alone, as without grouping
                    for s in group:
                        try:
                            s.event = self._write([(s.draft, s.now)])[0]
                        except BaseException as own:  # noqa: BLE001 - re-raised to this caller only
                            s.error = own
            finally:
                with self._cond:
                    self._writing = False
                    self._cond.notify_all()
        if slot.error is not None:
            raise slot.error
        assert slot.event is not None
        return slot.event
