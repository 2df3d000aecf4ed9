"""The PostgreSQL server of the tests: ``CARDGAMES_TEST_PG`` (default: the local server, user
postgres, trust auth) names a database to connect to for administration; each test session
(each pytest-xdist worker) creates a database of its own there, dropped at the end, and each
test a schema of its own in it, so that parallel workers and tests never see each other's rows.

There is no skip when the server is missing: the tests fail (CI has one).
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import urlsplit, urlunsplit

import psycopg

ENV = "CARDGAMES_TEST_PG"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url() -> str:
    return os.environ.get(ENV, DEFAULT)


def url_with(url: str, *, dbname: str | None = None, schema: str | None = None, **params: str) -> str:
    """``url`` with another database and/or a ``search_path`` (libpq's ``options``), or more
    query parameters."""
    parts = urlsplit(url)
    path = f"/{dbname}" if dbname is not None else parts.path
    query = [q for q in parts.query.split("&") if q]
    if schema is not None:
        query.append(f"options=-csearch_path%3D{schema}")
    query += [f"{k}={v}" for k, v in params.items()]
    return urlunsplit((parts.scheme, parts.netloc, path, "&".join(query), parts.fragment))


def connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True, connect_timeout=10)


class TestDatabase:
    """A fresh database on the test server; ``schema()`` makes a fresh schema in it."""

    __test__ = False  # not a test class

    def __init__(self) -> None:
        self.admin = admin_url()
        self.name = f"cg_test_{secrets.token_hex(6)}"
        with connect(self.admin) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.url = url_with(self.admin, dbname=self.name)

    def schema(self) -> tuple[str, str]:
        """A new empty schema: its name and the URL whose search_path is it."""
        name = f"s_{secrets.token_hex(6)}"
        with connect(self.url) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return name, url_with(self.url, schema=name)

    def execute(self, sql: str, params: tuple = (), schema: str | None = None) -> list[tuple]:
        """Run one statement (in ``schema`` if given) and return its rows, if any."""
        with connect(url_with(self.url, schema=schema) if schema else self.url) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def drop(self) -> None:
        with connect(self.admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
