"""Statements that PostgreSQL should plan once per connection, and the per-request reads and writes built on them.

ORM queries run as unnamed statements and are planned for their own values every time: a plan made without the
values (a generic plan) cannot use the trigram index for `email LIKE %s`, nor tell a project of ten contacts from
one of a million. A few fixed statements run on every request and have one right plan whatever the values (a lookup
or an upsert on a unique key, an insert): planning them again each time cost more than running them (0.45 ms of the
0.75 ms of the /v1/track upsert), and building them through the ORM cost more again in Python (a third of a
/v1/send request went to compiling three small queries). Those are prepared here; after five runs PostgreSQL
keeps their generic plan (settings: `plan_cache_mode=auto`).
"""

import dataclasses
import datetime
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field, Model


def execute_prepared(cursor, sql: str, params) -> None:
    """Execute `sql` on a Django cursor as a prepared statement where the connection supports it (PostgreSQL with
    server-side binding), plainly elsewhere. Errors are Django's, as from `cursor.execute`."""
    raw = cursor.cursor
    if cursor.db.vendor != "postgresql" or isinstance(raw, psycopg.ClientCursor):
        cursor.execute(sql, params)
        return
    with cursor.db.wrap_database_errors:
        raw.execute(sql, params, prepare=True)


def fetchone_prepared(sql: str, params):
    """Run `sql` as a prepared statement on the default connection and return its first row (None without one).

    On PostgreSQL with server-side binding, each connection keeps one cursor for these statements: a Django cursor
    costs 110k instructions per statement over a reused psycopg cursor, 7 % of a /v1/send. It is the same connection
    and transaction, and errors are Django's. A connection that logs its queries (DEBUG, a test counting them) or has
    execute wrappers gets a Django cursor, so that they see the statement."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql" or connection.queries_logged or connection.execute_wrappers:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    connection.close_if_health_check_failed()
    if connection.connection is None:
        connection.ensure_connection()
    cursor = connection.__dict__.get("_prepared_cursor")
    if cursor is None or cursor.connection is not connection.connection:
        cursor = connection.__dict__["_prepared_cursor"] = connection.connection.cursor()
    with connection.wrap_database_errors:
        if isinstance(cursor, psycopg.ClientCursor):
            cursor.execute(sql, params)
        else:
            cursor.execute(sql, params, prepare=True)
        return cursor.fetchone()


def locked(queryset, *, skip_locked: bool = False) -> list:
    """The rows of `queryset` under their row locks (FOR UPDATE on PostgreSQL), in its order, with what it joins
    (`select_related`) as committed once the locks are held. Call inside a transaction.

    One statement locks, a second reads: PostgreSQL re-reads a locked row that another transaction changed while
    this one waited for it, but not the rows joined to it, so a row read with its lock could come with the row its
    foreign key pointed to before, or with none (a LEFT JOIN that no longer matches)."""
    ids = list(queryset.select_for_update(skip_locked=skip_locked, of=("self",)).values_list("pk", flat=True))
    if not ids:
        return []
    return list(queryset.filter(pk__in=ids))


def close_if_stuck() -> None:
    """Close the default connection when it cannot run a statement now; Django opens a new one for the next.

    An exception raised by a signal handler (Celery's soft time limit) while psycopg waits for a result leaves that
    statement in flight outside a transaction, and every statement after it fails; inside one, leaving the atomic
    block has rolled it back. Call where such an exception is handled with more statements to run."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.connection is not None and not connection.in_atomic_block and not connection.is_usable():
        connection.close()


def _placeholders(count: int) -> str:
    return ", ".join(["%s"] * count)


def select_prepared(model: type[Model], fields: Sequence[str], **filters) -> list:
    """Instances of `model` with only `fields` loaded (the others deferred, read on first access), selected by
    equality filters (`name=value`, or `name__in=[values]`) joined by AND. Values are adapted and converted as the
    ORM does."""
    connection = connections[DEFAULT_DB_ALIAS]
    wanted = set(fields)
    chosen: list[Field] = [field for field in model._meta.concrete_fields if field.name in wanted]
    conditions, params = [], []
    for key, value in filters.items():
        name, _, lookup = key.partition("__")
        field = model._meta.get_field(name)
        values = list(value) if lookup == "in" else [value]
        params.extend(field.get_db_prep_value(item, connection) for item in values)
        conditions.append(
            f"{field.column} IN ({_placeholders(len(values))})" if lookup == "in" else f"{field.column} = %s"
        )
    table = model._meta.db_table
    sql = f"SELECT {', '.join(field.column for field in chosen)} FROM {table} WHERE {' AND '.join(conditions)}"  # noqa: S608 - names from the model
    with connection.cursor() as cursor:
        execute_prepared(cursor, sql, params)
        rows = cursor.fetchall()
    return instances_from_rows(model, chosen, rows)


def instances_from_rows(model: type[Model], fields: Sequence[Field], rows) -> list:
    """Instances of `model` from database rows holding the columns of `fields` in that order (the others deferred),
    converted as the ORM does; without the ORM's per-row machinery, a fraction of a raw query's cost."""
    connection = connections[DEFAULT_DB_ALIAS]
    table = model._meta.db_table
    columns = [field.get_col(table) for field in fields]
    converters = [
        (index, converter, column)
        for index, column in enumerate(columns)
        for converter in connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    ]
    attnames = [field.attname for field in fields]
    instances = []
    for row in rows:
        values = list(row)
        for index, converter, column in converters:
            values[index] = converter(values[index], column, connection)
        instances.append(model.from_db(connection.alias, attnames, values))
    return instances


def _json_value(value):
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, datetime.date):  # and datetimes, with their microseconds and offset
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} has no JSON form for insert_prepared")


@cache
def _insert_plan(model: type[Model], vendor: str) -> tuple[list[Field], str, bool]:
    """A model's fields, its INSERT's column list and whether its rows can travel as JSON (built once: quoting
    the thirty-odd column names of an email row cost more than the rest of the Python of its insert)."""
    connection = connections[DEFAULT_DB_ALIAS]
    fields = model._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    as_json = vendor == "postgresql" and not any(getattr(field, "encoder", None) for field in fields)
    return fields, columns, as_json


@cache
def _attnames(model: type[Model]) -> tuple[list[tuple[str, Callable]], frozenset]:
    # Each field with the function that makes its default (what `get_default` calls, without the call around it).
    fields = [(field.attname, field._get_default) for field in model._meta.concrete_fields]
    return fields, frozenset(name for name, _ in fields)


def new_instance(model: type[Model], **values) -> Model:
    """A new instance from attribute values (`project_id`, not `project`), every other field at its default. Built
    positionally: Django's keyword construction walks every field for its keywords, four times the cost for a row as
    wide as an email's."""
    fields, names = _attnames(model)
    if not values.keys() <= names:
        raise TypeError(f"{model.__name__} has no field(s) {sorted(values.keys() - names)}")
    return model(*[values[name] if name in values else default() for name, default in fields])


# A value of one of these types is what the field's get_prep_value would return anyway: taken as it is, the rest
# goes through the field (an email row's 35 fields through get_prep_value cost as much as building the row).
_AS_STORED = {
    "CharField": (str,),
    "TextField": (str,),
    "EmailField": (str,),
    "UUIDField": (uuid.UUID,),
    "BooleanField": (bool,),
    "IntegerField": (int,),
    "PositiveIntegerField": (int,),
    "PositiveSmallIntegerField": (int,),
    "SmallIntegerField": (int,),
    "BigIntegerField": (int,),
    "BigAutoField": (int,),
    "JSONField": (dict, list, str, int, float, bool),
    "DateTimeField": (datetime.datetime,),  # aware ones (a naive one goes through the field, which warns)
}


@cache
def _row_plan(model: type[Model]) -> list[tuple[str, str, Field, tuple]]:
    """Per concrete field: its column, its attribute, the field, and the types its value is taken as it is in (None
    too; no type for a field whose pre_save computes the value, such as auto_now)."""
    plan = []
    for field in model._meta.concrete_fields:
        target = field.target_field if field.is_relation else field
        auto = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        kinds = () if auto else (type(None), *_AS_STORED.get(target.get_internal_type(), ()))
        plan.append((field.column, field.attname, field, kinds))
    return plan


def _row(obj: Model, plan: list) -> dict:
    """The row of a new instance, column -> the value its field would store."""
    values, row = obj.__dict__, {}
    for column, attname, field, kinds in plan:
        value = values[attname]
        kind = type(value)
        if kind in kinds and (kind is not datetime.datetime or value.tzinfo is not None):
            row[column] = value
        else:
            row[column] = field.get_prep_value(field.pre_save(obj, True))
    return row


def json_rows_insert(objs: Sequence[Model], param: str = "%s") -> tuple[str, str]:
    """PostgreSQL's INSERT of new instances of one model (primary keys set by the caller) as one JSON array expanded
    by `jsonb_populate_recordset`, and that array. The statement (its parameter written `param`) ends with its
    SELECT, so a caller can add a WHERE clause or run it as a data-modifying CTE of a larger statement; call
    `mark_saved` once it ran."""
    connection = connections[DEFAULT_DB_ALIAS]
    model = type(objs[0])
    _, columns, as_json = _insert_plan(model, connection.vendor)
    if not as_json:
        raise ValueError(f"{model.__name__} rows cannot travel as JSON on {connection.vendor}")
    table = connection.ops.quote_name(model._meta.db_table)
    plan = _row_plan(model)
    rows = [_row(obj, plan) for obj in objs]
    rows_sql = f"jsonb_populate_recordset(NULL::{table}, {param}::jsonb)"
    sql = f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {rows_sql}"  # noqa: S608 - names from the model
    return sql, json.dumps(rows, default=_json_value)


@dataclass
class GuardedWrite:
    """One statement of data-modifying CTEs in which every part applies only when the guard CTE has a row: an owner
    writes the guard (the contact of a send, only if it is still the version read) and the owners of the rows that
    depend on it add theirs (`insert`, `then`), each keeping its own SQL, and the whole is one round trip with no
    transaction. `run` says whether it applied; only then are the inserted instances marked saved and the parts'
    `written` callbacks called."""

    ctes: str  # "WITH a AS (...), ..., <guard> AS (...)"
    params: dict
    guard: str
    saved: list = dataclasses.field(default_factory=list)
    written: list[Callable[[], None]] = dataclasses.field(default_factory=list)
    parts: int = 0

    def insert(self, objs: Sequence[Model]) -> None:
        """Insert new instances of one model (primary keys set by the caller) when the guard applies."""
        name = f"rows_{self.parts}"
        sql, self.params[name] = json_rows_insert(objs, f"%({name})s")
        self.then(f"{sql} WHERE EXISTS (SELECT 1 FROM {self.guard})", {})  # noqa: S608 - names, not input
        self.saved.extend(objs)

    def then(self, statement: str, params: dict) -> None:
        """Add a data-modifying statement, with its named parameters, that applies only when the CTE named by
        `guard` has a row (its owner writes that condition: `usage.counter_statement(..., after=write.guard)`)."""
        self.ctes += f", part_{self.parts} AS (\n{statement}\n)"
        self.params.update(params)
        self.parts += 1

    def run(self) -> bool:
        applied = fetchone_prepared(f"{self.ctes}\nSELECT 1 FROM {self.guard}", self.params) is not None
        if applied:
            mark_saved(self.saved)
            for callback in self.written:
                callback()
        return applied


def mark_saved(objs: Sequence[Model]) -> None:
    """Mark instances that a statement of this module inserted as the ORM marks what it saves."""
    alias = connections[DEFAULT_DB_ALIAS].alias
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias


def insert_prepared(objs: Sequence[Model], *, ignore_conflicts: bool = False) -> int:
    """INSERT new instances of one model (primary keys set by the caller), as `bulk_create` would store them; with
    `ignore_conflicts`, a row that would break a unique constraint is left out (`ON CONFLICT DO NOTHING`). Returns
    how many rows were inserted.

    On PostgreSQL the rows travel as one JSON array (`json_rows_insert`): one parameter and one prepared statement
    whatever the number of rows, where adapting a parameter per column of an email row cost more than the rest of
    its insert. Elsewhere, and for JSON fields with their own encoder, one plain multi-row INSERT per batch the
    database takes."""
    if not objs:
        return 0
    connection = connections[DEFAULT_DB_ALIAS]
    model = type(objs[0])
    fields, columns, as_json = _insert_plan(model, connection.vendor)
    table = connection.ops.quote_name(model._meta.db_table)
    on_conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
    inserted = 0
    with connection.cursor() as cursor:
        if as_json:
            sql, rows = json_rows_insert(objs)
            execute_prepared(cursor, sql + on_conflict, [rows])
            inserted = cursor.rowcount
        else:
            row = f"({_placeholders(len(fields))})"
            batch = connection.ops.bulk_batch_size(fields, objs)
            for start in range(0, len(objs), batch):
                chunk = objs[start : start + batch]
                params = [
                    field.get_db_prep_save(field.pre_save(obj, True), connection) for obj in chunk for field in fields
                ]
                values = ", ".join([row] * len(chunk))
                sql = f"INSERT INTO {table} ({columns}) VALUES {values}{on_conflict}"  # noqa: S608 - model names
                execute_prepared(cursor, sql, params)
                inserted += cursor.rowcount
    mark_saved(objs)
    return inserted


def _prepared(field: Field, values: Sequence, connection) -> Sequence:
    """`values` as `field` stores them. Ids (of the field or of the row it refers to) go as they are, UUIDs or in
    text form (`core.ids.uuid7s`), and PostgreSQL checks them."""
    kind = (field.target_field if field.is_relation else field).get_internal_type()
    if kind == "UUIDField" and all(isinstance(value, str | uuid.UUID) for value in values):
        return values
    return [field.get_db_prep_save(value, connection) for value in values]


def _array(values: Sequence) -> str | list:
    """A column's values as one PostgreSQL array literal when they are text, UUIDs or NULLs (psycopg adapts a list
    element by element in Python, which cost a campaign's fan-out a tenth of its time); other types as the list."""
    elements = []
    for value in values:
        if value is None:
            elements.append("NULL")
        elif isinstance(value, uuid.UUID):
            elements.append(str(value))
        elif isinstance(value, str):
            elements.append('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            return values
    return "{" + ",".join(elements) + "}"


def insert_varied(prototype: Model, varying: dict[str, Sequence], *, ignore_conflicts: bool = False) -> int:
    """INSERT one row per position of the `varying` columns (field name -> values, all of one length), every other
    column as in `prototype`; returns how many rows were inserted (with `ignore_conflicts`, a row that would break
    a unique constraint is left out).

    For a batch whose rows differ in a few columns (a campaign's emails: id, contact, address). On PostgreSQL one
    statement whatever the number of rows: each varying column travels as one array (`unnest`), the others as one
    parameter each, and no model instance is built per row (instances and their JSON were most of the cost of a
    campaign batch's insert). Elsewhere, instances copied from the prototype through `insert_prepared`."""
    connection = connections[DEFAULT_DB_ALIAS]
    model = type(prototype)
    fields, columns, _ = _insert_plan(model, connection.vendor)
    named = {field.name: field for field in fields}
    count = len(next(iter(varying.values()), []))
    if not count:
        return 0
    if connection.vendor != "postgresql":
        base = {field.attname: field.pre_save(prototype, True) for field in fields if field.name not in varying}
        rows = [
            model(**base, **{named[name].attname: values[index] for name, values in varying.items()})
            for index in range(count)
        ]
        return insert_prepared(rows, ignore_conflicts=ignore_conflicts)
    quote = connection.ops.quote_name
    arrays = ", ".join(f"%s::{named[name].db_type(connection)}[]" for name in varying)
    aliases = ", ".join(quote(named[name].column) for name in varying)
    selected, params = [], []
    for field in fields:
        if field.name in varying:
            selected.append(f"v.{quote(field.column)}")
        else:
            selected.append(f"%s::{field.db_type(connection)}")
            params.append(field.get_db_prep_save(field.pre_save(prototype, True), connection))
    params += [_array(_prepared(named[name], values, connection)) for name, values in varying.items()]
    on_conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
    table = quote(model._meta.db_table)
    sql = (
        f"INSERT INTO {table} ({columns}) SELECT {', '.join(selected)} "  # noqa: S608 - names from the model
        f"FROM unnest({arrays}) AS v({aliases}){on_conflict}"
    )
    with connection.cursor() as cursor:
        execute_prepared(cursor, sql, params)
        return cursor.rowcount
