"""Statements that PostgreSQL should plan once per connection.

ORM queries run as unnamed statements and are planned for their own values every time: a plan made without the
values (a generic plan) cannot use the trigram index for `email LIKE %s`, nor tell a project of ten contacts from
one of a million. A few fixed statements run on every request and have one right plan whatever the values (an upsert
on a unique key): planning them again each time cost more than running them (0.45 ms of the 0.75 ms of the
/v1/track upsert). Those are prepared here and run on their generic plan (settings: `plan_cache_mode`).
"""

import psycopg
from django.db import connection


def execute_prepared(cursor, sql: str, params) -> None:
    """Execute `sql` on a Django cursor as a prepared statement where the connection supports it (PostgreSQL with
    server-side binding), plainly elsewhere. Errors are Django's, as from `cursor.execute`."""
    raw = cursor.cursor
    if connection.vendor != "postgresql" or isinstance(raw, psycopg.ClientCursor):
        cursor.execute(sql, params)
        return
    with connection.wrap_database_errors:
        raw.execute(sql, params, prepare=True)
