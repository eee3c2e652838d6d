"""One file per schema revision, oldest first (alembic skips this file)."""
