"""Run a command (`make test`: the suite) on the production path when it is at hand, and say which on one line.

1. A DATABASE_URL from the environment or `.env` always wins, SQLite included.
2. Otherwise PostgreSQL on 127.0.0.1:5432 (user postgres, no password), when it answers: the suite then covers the
   PostgreSQL paths (the fast upsert, the prepared statements) that SQLite skips. Redis on 127.0.0.1:6379, when it
   answers, becomes cache and broker too (databases 1 and 2, as in `.ci/run`), unless either is configured.
3. Otherwise the embedded defaults: SQLite, local-memory cache, filesystem broker.

Usage: python .ci/test_services.py COMMAND [ARGS...]
"""

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import environ
import psycopg

HOST = "127.0.0.1"
POSTGRESQL_PORT, REDIS_PORT = 5432, 6379
DATABASE_URL = f"postgres://postgres@{HOST}:{POSTGRESQL_PORT}/test"
CACHE_URL, BROKER_URL = f"redis://{HOST}:{REDIS_PORT}/1", f"redis://{HOST}:{REDIS_PORT}/2"


def postgresql_answers() -> bool:
    try:
        psycopg.connect(f"postgres://postgres@{HOST}:{POSTGRESQL_PORT}/postgres", connect_timeout=2).close()
    except psycopg.Error:
        return False
    return True


def redis_answers() -> bool:
    try:
        with socket.create_connection((HOST, REDIS_PORT), timeout=2) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def where(url: str) -> str:
    """A database URL without its credentials."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


def choose() -> str:
    # The settings read `.env` too (without overriding the environment): a database configured there is explicit.
    environ.Env.read_env(Path(__file__).resolve().parents[1] / ".env", overwrite=False)
    if os.environ.get("DATABASE_URL"):
        return f"DATABASE_URL from the environment ({where(os.environ['DATABASE_URL'])})"
    if not postgresql_answers():
        return f"SQLite (no PostgreSQL at {HOST}:{POSTGRESQL_PORT})"
    os.environ["DATABASE_URL"] = DATABASE_URL
    if os.environ.get("CACHE_URL") or os.environ.get("CELERY_BROKER_URL"):
        return f"PostgreSQL at {HOST}:{POSTGRESQL_PORT}, cache and broker as configured"
    if not redis_answers():
        return f"PostgreSQL at {HOST}:{POSTGRESQL_PORT}, no Redis at {HOST}:{REDIS_PORT} (local-memory cache, filesystem broker)"
    os.environ["CACHE_URL"], os.environ["CELERY_BROKER_URL"] = CACHE_URL, BROKER_URL
    return f"PostgreSQL at {HOST}:{POSTGRESQL_PORT}, Redis at {HOST}:{REDIS_PORT}"


if __name__ == "__main__":
    print(f"tests: {choose()}", flush=True)
    os.execvp(sys.argv[1], sys.argv[1:])  # noqa: S606 - the command make passes
