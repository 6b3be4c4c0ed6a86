"""Longer runs of the same properties, excluded by default: ``pytest -m slow``."""

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings

import stratamem as sm
from test_durability import WRITER
from test_noninterference import World, scenario
from conftest import fresh_store

pytestmark = pytest.mark.slow


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario())
def test_noninterference_many_examples(tmp_path, data):
    taint, steps, queries = data
    plain = World(fresh_store("sqlite-memory", tmp_path), taint)
    noisy = World(fresh_store("sqlite-memory", tmp_path), taint)
    try:
        for where, op in steps:
            noisy.apply(op)
            if where == "visible":
                plain.apply(op)
        assert plain.observe(queries) == noisy.observe(queries)
    finally:
        plain.store.close()
        noisy.store.close()


def test_eight_writers_on_one_file(tmp_path):
    db = str(tmp_path / "stress.db")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db, f"p{k}", "300"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(8)]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
    with sm.open_store(db) as store:
        for k in range(8):
            assert len(store.session(f"p{k}").list()) == 200
        assert store.verify_audit() is None
