"""A session's taint survives the process that raised it (a SQLite file reopened by another process)."""

import subprocess
import sys

import stratamem as sm
from stratamem import Level


def test_taint_persists_across_process_restart(tmp_path):
    db = tmp_path / "m.db"
    code = (
        "import stratamem as sm, sys\n"
        "s = sm.open_store(sys.argv[1]).session('main')\n"
        "s.escalate('CONFIDENTIAL', 'restart test')\n"
        "print(s.id)\n"
    )
    session_id = subprocess.run(
        [sys.executable, "-c", code, str(db)], check=True, capture_output=True, text=True
    ).stdout.strip()
    with sm.open_store(str(db)) as store:
        resumed = store.session("main", session_id=session_id)
        assert resumed.taint is Level.CONFIDENTIAL
        assert [e.reason for e in resumed.taint_history] == ["restart test"]
