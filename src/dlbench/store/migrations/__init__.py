"""Alembic migrations of the dlbench database; `dlbench.store.db.migrate` runs them when a store is opened."""
