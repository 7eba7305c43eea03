"""History tables partitioned by month on PostgreSQL (docs/scaling.md "Partitioned history"): the conversion of a
plain table in place, the partitions made ahead, and the drop of whole months that retention no longer keeps.

A partitioned table is range-partitioned on a timestamp column: one partition per calendar month (UTC), named
`<table>_<YYYYMM>`, and, on a converted install, the former table as the one partition of everything before the
first month (`<table>_before_<YYYYMM>`). There is no DEFAULT partition: a row always has a month made ahead for it,
and a default one would be scanned under a lock every time a month is added. On SQLite nothing here applies: the
tables stay plain, and `is_partitioned` says so."""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

# Months made ahead of the current one. A daily run keeps them there, so two months of failed runs still leave
# every row a partition.
AHEAD_MONTHS = 3
# DDL that needs the table's lock (a new or dropped partition) waits at most this long for it, so that it never
# queues the writers behind a long read; a run that could not get it tries again at the next.
LOCK_TIMEOUT = "5s"


@dataclass(frozen=True)
class Partition:
    name: str
    # None: unbounded (MINVALUE / MAXVALUE).
    lower: datetime | None
    upper: datetime | None

    def covers(self, moment: datetime) -> bool:
        return (self.lower is None or self.lower <= moment) and (self.upper is None or moment < self.upper)


def month_start(moment: datetime, *, add: int = 0) -> datetime:
    """The first instant (UTC) of the month of `moment`, `add` months later."""
    months = moment.astimezone(UTC).year * 12 + moment.astimezone(UTC).month - 1 + add
    return datetime(months // 12, months % 12 + 1, 1, tzinfo=UTC)


def is_partitioned(table: str) -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(%s)", [table])
        row = cursor.fetchone()
    return bool(row and row[0])


_BOUND = re.compile(r"FOR VALUES FROM \((.+)\) TO \((.+)\)")


def _bound(text: str) -> datetime | None:
    return None if text in ("MINVALUE", "MAXVALUE") else datetime.fromisoformat(text.strip("'"))


def _literal(moment: datetime) -> str:
    # DDL takes no parameters; a datetime of ours written as a timestamptz literal.
    return f"'{moment.isoformat()}'::timestamptz"


def partitions(table: str) -> list[Partition]:
    """The partitions of `table`, oldest first (none for a plain table, and none on SQLite)."""
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT child.relname, pg_get_expr(child.relpartbound, child.oid) FROM pg_inherits "
            "JOIN pg_class child ON child.oid = pg_inherits.inhrelid WHERE pg_inherits.inhparent = to_regclass(%s)",
            [table],
        )
        rows = cursor.fetchall()
    found = []
    for name, bound in rows:
        lower, upper = _BOUND.match(bound).groups()
        found.append(Partition(name, _bound(lower), _bound(upper)))
    return sorted(found, key=lambda p: (p.lower is not None, p.lower))


def partitions_ensure(*, table: str, now: datetime, ahead: int = AHEAD_MONTHS) -> list[str]:
    """Make the partitions of the month of `now` and the `ahead` months after it that no partition covers yet;
    returns the names made. Idempotent: run daily by beat and at the conversion."""
    existing = partitions(table)
    made = []
    for add in range(ahead + 1):
        lower, upper = month_start(now, add=add), month_start(now, add=add + 1)
        if any(p.covers(lower) for p in existing):
            continue
        name = f"{table}_{lower:%Y%m}"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF {table} FOR VALUES FROM ({_literal(lower)}) "
                f"TO ({_literal(upper)})"
            )
        made.append(name)
    return made


def partitions_before(*, table: str, cutoff: datetime) -> list[Partition]:
    """The partitions of `table` whose every row is older than `cutoff`: what retention drops whole."""
    return [p for p in partitions(table) if p.upper is not None and p.upper <= cutoff]


def partitions_drop_before(*, table: str, cutoff: datetime, unless: str | None = None) -> int:
    """Retention of a partitioned table: drop every partition that lies wholly before `cutoff`; returns the rows
    they held. The rows of the month the cutoff falls in are left to the rule's batched deletion, and so are those
    of a partition holding a row that matches `unless` (SQL of the table's columns: rows the rule keeps whatever
    their age, such as emails still to be sent), which is then deleted row by row, `unless`'s rows excepted."""
    dropped = 0
    for partition in partitions_before(table=table, cutoff=cutoff):
        if unless is not None and _holds(partition, unless):
            continue
        dropped += partition_drop(partition)
    return dropped


def _holds(partition: Partition, condition: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {partition.name} WHERE {condition})")  # noqa: S608 - ours
        return cursor.fetchone()[0]


def partition_drop(partition: Partition) -> int:
    """Drop one partition, which nothing writes into any more (it lies before the retention cutoff); returns its
    rows. The count is read first, outside the drop's transaction, which only holds the table's lock for as long
    as removing a table from the catalog takes."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {partition.name}")  # noqa: S608 - a partition's own name
        (rows,) = cursor.fetchone()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute(f"DROP TABLE {partition.name}")
    return rows


def partition_in_place(*, table: str, column: str, now: datetime, log=print) -> None:
    """Turn the plain `table` into one partitioned by month on `column`, the existing table becoming the partition
    of everything before next month: no row is copied, and writes go on but for a moment's lock.

    1. a unique index on (id, `column`) is built CONCURRENTLY (a partitioned table's primary key must hold its
       partition key);
    2. a CHECK (`column` < bound) is added NOT VALID and then VALIDATEd, a scan that lets writes go on;
    3. in one short transaction the table is renamed, its primary key becomes (id, `column`) on that index, a
       partitioned table is made under the old name with the same columns, indexes and foreign keys, and the old
       table is attached as its partition: the CHECK proves the rows fit, so nothing is scanned, and its indexes
       and foreign keys are taken as the partitioned table's own;
    4. the months from the bound on are made (`partitions_ensure`).
    Each step can be run again after a failure. Must run outside a transaction (`atomic = False` migrations)."""
    # A day of margin: the CHECK binds new rows from step 2 on, so the bound must stay ahead of the clock meanwhile.
    bound = month_start(now + timedelta(days=1), add=1)
    legacy = f"{table}_before_{bound:%Y%m}"
    unique, check = f"{table}_id_{column}_uniq", f"{table}_{column}_before"
    with connection.cursor() as cursor:
        _drop_if_invalid(cursor, unique)
        log(f"building the unique index ({table}.id, {column}) concurrently")
        cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {unique} ON {table} (id, {column})")
        cursor.execute("SELECT 1 FROM pg_constraint WHERE conname = %s AND conrelid = %s::regclass", [check, table])
        if cursor.fetchone() is None:
            cursor.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {check} CHECK ({column} < {_literal(bound)}) NOT VALID")
            cursor.execute("SET lock_timeout = DEFAULT")
        log(f"validating {column} < {bound:%Y-%m-%d} on {table}")
        cursor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {check}")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute(
            "SELECT index.relname, pg_get_indexdef(index.oid) FROM pg_index JOIN pg_class index "
            "ON index.oid = pg_index.indexrelid WHERE pg_index.indrelid = %s::regclass "
            "AND NOT pg_index.indisprimary AND index.relname <> %s",
            [table, unique],
        )
        indexes = cursor.fetchall()
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
            "AND contype = 'f'",
            [table],
        )
        foreign_keys = cursor.fetchall()
        cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'", [table])
        (primary_key,) = cursor.fetchone()
        cursor.execute(f"ALTER TABLE {table} RENAME TO {legacy}")
        cursor.execute(
            f"ALTER TABLE {legacy} DROP CONSTRAINT {primary_key}, "
            f"ADD CONSTRAINT {legacy}_pkey PRIMARY KEY USING INDEX {unique}"
        )
        cursor.execute(f"CREATE TABLE {table} (LIKE {legacy}) PARTITION BY RANGE ({column})")
        cursor.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id, {column})")
        for name, definition in indexes:
            cursor.execute(f"ALTER INDEX {name} RENAME TO {f'{legacy}_{name}'[:63]}")
            cursor.execute(definition.replace(f" ON public.{table} ", f" ON {table} ", 1))
        for name, definition in foreign_keys:
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
        cursor.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {legacy} FOR VALUES FROM (MINVALUE) TO ({_literal(bound)})"
        )
        cursor.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {check}")
    partitions_ensure(table=table, now=now)


def index_create_online(*, table: str, name: str, definition: str) -> None:
    """Build the index `name` on `table`, `definition` being what follows `ON <table>` ("(a, b) WHERE ..."), while
    writes go on, on PostgreSQL: CONCURRENTLY on a plain table. A partitioned table cannot build one
    CONCURRENTLY, so its index is made on the parent alone (invalid until complete), built CONCURRENTLY on each
    partition and attached, which makes it valid. Each step can be run again after a failure. Must run outside a
    transaction (`atomic = False` migrations)."""
    with connection.cursor() as cursor:
        if not is_partitioned(table):
            _drop_if_invalid(cursor, name)
            cursor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} {definition}")
            return
        cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON ONLY {table} {definition}")
        for partition in partitions(table):
            child = f"{partition.name}_{name}"[:63]
            _drop_if_invalid(cursor, child)
            cursor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {child} ON {partition.name} {definition}")
            cursor.execute(f"ALTER INDEX {name} ATTACH PARTITION {child}")


def _drop_if_invalid(cursor, index: str) -> None:
    # A concurrent build that failed leaves an invalid index, which IF NOT EXISTS would take as built.
    cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [index])
    row = cursor.fetchone()
    if row and not row[0]:
        cursor.execute(f"DROP INDEX CONCURRENTLY {index}")
