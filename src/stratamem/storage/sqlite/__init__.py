"""The embedded backend: one SQLite file in WAL mode (``backend.SQLiteBackend``) and what only SQLite needs."""
