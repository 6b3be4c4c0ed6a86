"""The PostgreSQL backend (``backend.PostgresBackend``; extra ``postgres``) and what only PostgreSQL needs."""
