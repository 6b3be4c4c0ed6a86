"""Longer runs of the same properties, excluded by default: ``pytest -m slow``."""

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from test_durability import WRITER
from test_noninterference import assert_noninterference, scenario

import stratamem as sm

pytestmark = pytest.mark.slow


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_noninterference_many_examples(tmp_path, data):
    assert_noninterference("sqlite-memory", tmp_path, data)


def test_eight_writers_on_one_file(tmp_path):
    db = str(tmp_path / "stress.db")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db, f"p{k}", "300"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(8)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
    with sm.open_store(db) as store:
        for k in range(8):
            assert len(store.session(f"p{k}").list()) == 200
        assert store.verify_audit() is None
