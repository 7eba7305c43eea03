"""Reads of the contacts app. Aggregations over contact data (fields, values) run in the database: one SQL
statement per vendor, since JSON functions differ between PostgreSQL (production) and SQLite (development)."""

import json
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, connections, router
from django.db.models import Count, QuerySet
from django.utils import timezone

from accounts.models import Project
from contacts.models import Contact, Event
from contacts.services import SUBSCRIBED_EVENT, UNSUBSCRIBED_EVENT, normalize_email
from core.batches import keyset
from core.errors import NotFound
from core.time import iso

# The types a field is reported with: what JSON says, plus `date` for ISO date and date-time strings.
FIELD_TYPES = ("string", "number", "boolean", "date", "object", "array")
STANDARD_FIELDS = {"email": "string", "subscribed": "boolean", "createdAt": "date", "updatedAt": "date"}
_STANDARD_COLUMNS = {"email": "email", "subscribed": "subscribed", "createdAt": "created_at", "updatedAt": "updated_at"}

_PG_FIELDS = r"""
SELECT e.key,
       CASE WHEN jsonb_typeof(e.value) = 'string' AND (e.value #>> '{}')
                 ~ '^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$' THEN 'date'
            ELSE jsonb_typeof(e.value) END,
       count(*)
FROM contacts_contact c CROSS JOIN LATERAL jsonb_each(c.data) e
WHERE c.project_id = %s AND jsonb_typeof(e.value) <> 'null'
GROUP BY 1, 2
"""
_SQLITE_FIELDS = """
SELECT j.key,
       CASE WHEN j.type = 'text' AND (j.value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
                                       OR j.value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]*')
                 THEN 'date'
            WHEN j.type IN ('integer', 'real') THEN 'number'
            WHEN j.type IN ('true', 'false') THEN 'boolean'
            WHEN j.type = 'text' THEN 'string'
            ELSE j.type END,
       count(*)
FROM contacts_contact c, json_each(c.data) j
WHERE c.project_id = %s AND j.type <> 'null'
GROUP BY 1, 2
"""
_PG_VALUES = """
SELECT (c.data -> %s)::text, count(*) AS n FROM contacts_contact c
WHERE c.project_id = %s AND c.data ? %s AND jsonb_typeof(c.data -> %s) <> 'null'
GROUP BY 1
"""
_SQLITE_VALUES = """
SELECT CASE j.type WHEN 'text' THEN json_quote(j.value) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                   ELSE CAST(j.value AS TEXT) END,
       count(*) AS n
FROM contacts_contact c, json_each(c.data) j
WHERE c.project_id = %s AND j.key = %s AND j.type <> 'null'
GROUP BY 1
"""


def _project_param(project: Project):
    return Contact._meta.get_field("project").get_db_prep_value(project.id, connection)


def _is_postgres() -> bool:
    return connection.vendor == "postgresql"


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


# Contacts ---------------------------------------------------------------------------------------------------------


def contact_list(*, project: Project, search: str | None = None, subscribed: bool | None = None) -> QuerySet:
    queryset = Contact.objects.filter(project=project)
    if search:
        # Emails are stored lower-cased, so a plain LIKE on the lower-cased term is the case-insensitive match,
        # and it is what the pg_trgm index on email serves (ILIKE/UPPER() would not use it).
        queryset = queryset.filter(email__contains=search.strip().lower())
    if subscribed is not None:
        queryset = queryset.filter(subscribed=subscribed)
    return queryset


@dataclass(frozen=True)
class ContactLookup:
    found: list[Contact]
    not_found: list[str]


def contact_get(*, project: Project, contact_id: uuid.UUID | None = None, email: str = "") -> Contact:
    """The project's contact with id `contact_id`, or else with the address `email` (in any case); 404
    `CONTACT_NOT_FOUND` naming what was asked for."""
    contacts = Contact.objects.filter(project=project)
    found = contacts.filter(pk=contact_id) if contact_id else contacts.filter(email=normalize_email(email))
    contact = found.first()
    if contact is None:
        raise NotFound("Contact", contact_id or email)
    return contact


def contacts_lookup(*, project: Project, emails: list[str]) -> ContactLookup:
    """Which of the emails are the project's contacts, each email once, in the order given."""
    emails = list(dict.fromkeys(emails))
    rows = Contact.objects.filter(project=project, email__in=emails).only("id", "email")
    by_email = {contact.email: contact for contact in rows}
    return ContactLookup(
        found=[by_email[email] for email in emails if email in by_email],
        not_found=[email for email in emails if email not in by_email],
    )


def split_field(field: str) -> tuple[str | None, str | None]:
    """`(standard, None)` for email/subscribed/createdAt/updatedAt, `(None, key)` for `data.<key>` or a bare key."""
    if field in STANDARD_FIELDS:
        return field, None
    key = field[5:] if field.startswith("data.") else field
    return None, key or None


def contact_fields(*, project: Project) -> list[dict]:
    """Standard fields at coverage 100, then `data.<key>` per top-level key with its most frequent type and the
    share of contacts having a non-null value; sorted by field."""
    total = Contact.objects.filter(project=project).count()
    fields = [{"field": name, "type": kind, "coverage": 100} for name, kind in STANDARD_FIELDS.items()]
    if total:
        with connection.cursor() as cursor:
            cursor.execute(_PG_FIELDS if _is_postgres() else _SQLITE_FIELDS, [_project_param(project)])
            rows = cursor.fetchall()
        by_key: dict[str, dict[str, int]] = {}
        for key, kind, count in rows:
            by_key.setdefault(key, {})[kind] = count
        for key, kinds in by_key.items():
            kind = max(sorted(kinds), key=lambda k: kinds[k])
            fields.append(
                {"field": f"data.{key}", "type": kind, "coverage": round_half_up(100 * sum(kinds.values()) / total)}
            )
    return sorted(fields, key=lambda item: item["field"])


_PG_DATA_KEYS = (
    "SELECT DISTINCT k FROM contacts_contact c CROSS JOIN LATERAL jsonb_object_keys(c.data) k WHERE c.id IN ({})"
)
_SQLITE_DATA_KEYS = "SELECT DISTINCT j.key FROM contacts_contact c, json_each(c.data) j WHERE c.id IN ({})"
EXPORT_COLUMNS = ("email", "subscribed", "createdAt", "updatedAt")


def contact_data_keys(*, contacts: QuerySet) -> list[str]:
    """The top-level data keys any of `contacts` has, sorted: one statement that reads only the keys, in the
    database (no contact crosses to Python), so an export knows its columns before it streams a row."""
    sql, params = contacts.order_by().values("pk").query.sql_with_params()
    # On the database the queryset reads from: the replica, for an export in `replica_reads()`.
    with connections[contacts.db].cursor() as cursor:
        cursor.execute((_PG_DATA_KEYS if _is_postgres() else _SQLITE_DATA_KEYS).format(sql), params)
        return sorted(key for (key,) in cursor.fetchall())


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def contacts_export_rows(*, contacts: QuerySet, keys: list[str], batch_size: int = 2000) -> Iterator[list[str]]:
    """The CSV rows of `contacts`: `email, subscribed, createdAt, updatedAt`, then one cell per data key of `keys`
    (empty when a contact lacks it; objects and arrays as JSON), in email order. Read `batch_size` contacts at a
    time after the last email seen (the (project, email) unique index), so memory stays flat at any size; booleans
    and numbers are written as the CSV import reads them back."""
    rows = contacts.values_list("email", "subscribed", "created_at", "updated_at", "data")
    for email, subscribed, created_at, updated_at, data in keyset(rows, key="email", batch_size=batch_size):
        yield [email, _cell(subscribed), iso(created_at), iso(updated_at), *(_cell(data.get(key)) for key in keys)]


def contact_field_values(*, project: Project, field: str, limit: int) -> tuple[list[dict], int]:
    """The most frequent values of a field (most frequent first) and the number of distinct values."""
    standard, key = split_field(field)
    if standard is not None:
        column = _STANDARD_COLUMNS[standard]
        grouped = Contact.objects.filter(project=project).values(column).annotate(n=Count("id")).order_by()
        distinct = grouped.count()
        rows = grouped.order_by("-n", column)[:limit]
        values = [{"value": row[column], "count": row["n"]} for row in rows]
        if standard in ("createdAt", "updatedAt"):
            values = [{"value": iso(v["value"]), "count": v["count"]} for v in values]
        return values, distinct
    sql, params = _values_sql(project, key)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({sql}) t", params)  # noqa: S608 - constant SQL
        distinct = cursor.fetchone()[0]
        cursor.execute(f"{sql} ORDER BY 2 DESC, 1 LIMIT %s", [*params, limit])
        rows = cursor.fetchall()
    return [{"value": json.loads(value), "count": count} for value, count in rows], distinct


def _values_sql(project: Project, key: str) -> tuple[str, list]:
    if _is_postgres():
        return _PG_VALUES, [key, _project_param(project), key, key]
    return _SQLITE_VALUES, [_project_param(project), key]


def contact_field_count(*, project: Project, field: str) -> int:
    """How many contacts have a non-null value for the field."""
    standard, key = split_field(field)
    if standard is not None:
        return Contact.objects.filter(project=project).count()
    sql, params = _values_sql(project, key)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(sum(t.n), 0) FROM ({sql}) t", params)  # noqa: S608 - constant SQL
        return int(cursor.fetchone()[0])


# Events -------------------------------------------------------------------------------------------------------


def event_list(*, project: Project, name: str | None = None, contact_id=None) -> QuerySet:
    queryset = Event.objects.filter(project=project)
    if name:
        queryset = queryset.filter(name=name)
    if contact_id is not None:
        queryset = queryset.filter(contact_id=contact_id)
    return queryset


def contact_subscribed_since(*, contact: Contact) -> datetime | None:
    """When the contact's subscription took its present state: its last `contact.subscribed` or
    `contact.unsubscribed` event, if one agrees with it (a contact created with its state has none). Read over the
    contact's lifetime from the (contact, created_at, id) index, newest first."""
    change = (
        Event.objects.filter(
            contact=contact,
            name__in=[SUBSCRIBED_EVENT, UNSUBSCRIBED_EVENT],
            created_at__gte=contact.created_at,
            created_at__lte=timezone.now(),
        )
        .order_by("-created_at", "-id")
        .values_list("name", "created_at")
        .first()
    )
    if change is None or (change[0] == SUBSCRIBED_EVENT) != contact.subscribed:
        return None
    return change[1]


def event_stats(*, project: Project, days: int) -> list[dict]:
    """Per event name over the last `days` days, most frequent first: `{name, count, unique_contacts}`."""
    since = timezone.now() - timedelta(days=days)
    return list(
        Event.objects.filter(project=project, created_at__gte=since)
        .values("name")
        .annotate(count=Count("id"), unique_contacts=Count("contact_id", distinct=True))
        .order_by("-count", "name")
    )


# A loose index scan of the (project, name, ...) index: each step asks for the first name after the last one found,
# one probe per partition (the same on SQLite's plain table), so the cost follows the number of names, not of events.
# The first step is a scalar subquery like the next ones, since SQLite takes no ORDER BY/LIMIT on one arm of a UNION.
_EVENT_NAMES = f"""
WITH RECURSIVE names(name) AS (
    SELECT (SELECT name FROM {Event._meta.db_table} WHERE project_id = %(project)s ORDER BY name LIMIT 1)
    UNION ALL
    SELECT (SELECT e.name FROM {Event._meta.db_table} e WHERE e.project_id = %(project)s AND e.name > names.name
            ORDER BY e.name LIMIT 1)
    FROM names WHERE names.name IS NOT NULL
)
SELECT name FROM names WHERE name IS NOT NULL ORDER BY name
"""  # noqa: S608 - constant SQL


def event_names(*, project: Project) -> list[str]:
    """The distinct names of the project's events, sorted: a loose index scan (`_EVENT_NAMES`) rather than a
    DISTINCT over every event of the project's history. On the database the router reads events from: the replica,
    inside `replica_reads()`."""
    database = connections[router.db_for_read(Event)]
    project_id = Event._meta.get_field("project").get_db_prep_value(project.id, database)
    with database.cursor() as cursor:
        cursor.execute(_EVENT_NAMES, {"project": project_id})
        return [name for (name,) in cursor.fetchall()]


def event_name_counts(*, project: Project, name: str) -> tuple[int, int]:
    """Events of `name` and their distinct contacts over all of history, from the (project, name, created_at,
    contact) index alone: COUNT(*) rather than COUNT(id), which would read each row for its id."""
    counts = Event.objects.filter(project=project, name=name).aggregate(
        total=Count("*"), unique=Count("contact_id", distinct=True)
    )
    return counts["total"], counts["unique"]
