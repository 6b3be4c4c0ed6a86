"""The SQL each schema version applies never changes once shipped: a store at any version upgrades as before.

``pg_migrations_snapshot.json`` holds every version's statements as they were when the migrations were
gathered into ``storage/postgres/migrations.py``. A new version is appended to the snapshot; an existing
version's text may not change (stores already ran it, and new stores must end in the same state).
Needs psycopg (the statements are built next to the backend), not a server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("psycopg")

from stratamem.storage.postgres import migrations, schema

SNAPSHOT = Path(__file__).with_name("pg_migrations_snapshot.json")


def test_every_shipped_version_applies_exactly_the_sql_it_shipped_with():
    shipped = {version: statements for version, statements in json.loads(SNAPSHOT.read_text("utf-8"))}
    current = {step.version: step.statements for step in migrations.MIGRATIONS}
    for version, statements in shipped.items():
        assert version in current, f"version {version} is gone"
        assert current[version] == statements, f"version {version}'s SQL changed"


def test_versions_are_one_ordered_list_of_named_steps():
    versions = [step.version for step in migrations.MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))
    names = [step.name for step in migrations.MIGRATIONS]
    assert len(set(names)) == len(names) and all(names)
    assert versions[-1] == migrations.LATEST
    assert schema.MIGRATIONS is migrations.MIGRATIONS and schema.LATEST == migrations.LATEST


def test_the_live_save_functions_are_the_ones_the_latest_versions_install():
    from stratamem.storage.postgres import save

    installed = [sql for step in migrations.MIGRATIONS for sql in step.statements]
    for live in (save.SM_SAVE, save.SM_SAVE_ONE, save.REFRESH_SHADOWABLE):
        assert live in installed
    assert schema.has_migration("sm_save_one")
