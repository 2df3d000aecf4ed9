"""Fixtures of the store tests: a PostgreSQL database per test session, a schema per test."""

from __future__ import annotations

import pytest

from .pg import TestDatabase


@pytest.fixture(scope="session")
def pg_database():
    db = TestDatabase()  # fails (no skip) when the server is not there
    try:
        yield db
    finally:
        db.drop()


@pytest.fixture
def pg_schema(pg_database) -> tuple[str, str]:
    """A fresh, empty schema of the session's database: (name, URL with that search_path)."""
    return pg_database.schema()


@pytest.fixture
def pg_url(pg_schema) -> str:
    return pg_schema[1]
