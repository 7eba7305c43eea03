"""Writes of the contacts app: contacts, their subscription and their events.

Every contact write goes through `data_rules` (the spec's data rules) and every subscription change through
`contact_subscription_set` / `contacts_subscription_bulk_set`, which record `contact.subscribed` or
`contact.unsubscribed`. Every event, tracked or system, is recorded by `event_record`, `events_record_bulk` or
`events_record_for_contacts`, which fire the `contacts.signals` hooks after commit.
"""

import itertools
import json
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from accounts.models import Project
from contacts.data_rules import DataChanges, data_rules
from contacts.models import Contact, Event
from contacts.signals import event_recorded, events_recorded
from core.db import execute_prepared, insert_prepared, json_rows_insert, mark_saved
from core.errors import Conflict

SUBSCRIBED_EVENT = "contact.subscribed"
UNSUBSCRIBED_EVENT = "contact.unsubscribed"
_RESERVED_EVENT = re.compile(r"^(email\..*|contact\.subscribed|contact\.unsubscribed|segment\..+\.(entry|exit))$", re.S)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def normalize_email(email: str) -> str:
    return email.strip().lower()


def event_name_is_reserved(name: str) -> bool:
    return bool(_RESERVED_EVENT.match(name))


# Events ----------------------------------------------------------------------------------------------------------


def _announce(project: Project, events: list[Event]) -> None:
    if not events or not (event_recorded.has_listeners(Event) or events_recorded.has_listeners(Event)):
        return

    def send() -> None:
        if event_recorded.has_listeners(Event):  # each event's contact is loaded for it unless already at hand
            for event in events:
                event_recorded.send(sender=Event, project=project, contact=event.contact, event=event)
        events_recorded.send(sender=Event, project=project, events=events)

    transaction.on_commit(send)


def _announce_changed(project_id, contact_id) -> None:
    from contacts.signals import contacts_changed

    if contacts_changed.has_listeners(Contact):
        transaction.on_commit(
            lambda: contacts_changed.send(sender=Contact, project_id=project_id, contact_ids=[contact_id])
        )


def event_record(*, project: Project, contact: Contact, name: str, data: dict | None = None, email_id=None) -> Event:
    """Record one event (tracked or system) and announce it after commit."""
    event = Event.objects.create(project=project, contact=contact, name=name, data=data or {}, email_id=email_id)
    _announce(project, [event])
    return event


def events_record_bulk(
    *, project: Project, items: Iterable[tuple[Contact, str, dict]], email_ids: Iterable | None = None
) -> list[Event]:
    """Record many events and announce them after commit; `items` are (contact, name, data), and `email_ids`, when
    given, the email each event is about (same order). One prepared INSERT per thousand (`core.db`): a delivery
    batch's `email.sent` events cost a tenth of what `bulk_create` took."""
    now = timezone.now()
    items = list(items)
    ids = list(email_ids) if email_ids is not None else [None] * len(items)
    events = [
        Event(project=project, contact=c, name=n, data=d or {}, email_id=e, created_at=now)
        for (c, n, d), e in zip(items, ids, strict=True)
    ]
    for start in range(0, len(events), EVENTS_CHUNK):
        insert_prepared(events[start : start + EVENTS_CHUNK])
    _announce(project, events)
    return events


# Without PostgreSQL, ids are streamed and their events written this many at a time (memory stays bounded).
EVENTS_CHUNK = 2000
# A UUIDv7 made in SQL (PostgreSQL 15 has no uuidv7()): the random v4 with its first 48 bits replaced by the Unix
# time in milliseconds and the version nibble turned from 4 into 7. Event ids are time-ordered (see `Event.id`).
_PG_UUID7 = (
    "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing "
    "substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), "
    "53, 1), 'hex')::uuid"
)
# One event per contact of a query, generated in the database.
_PG_EVENTS_FOR_CONTACTS = f"""
INSERT INTO contacts_event (id, project_id, contact_id, name, email_id, data, created_at)
SELECT {_PG_UUID7}, %s, selected.contact_id, %s, NULL, %s::jsonb, %s FROM ({{contacts}}) AS selected
RETURNING id, contact_id
"""  # noqa: S608 - constant SQL


def events_record_for_contacts(*, project: Project, contact_ids: QuerySet, name: str, data: dict) -> int:
    """Record the event `name` with `data` for every contact id `contact_ids` selects (a `values("contact_id")`
    query of this project's contacts), and announce them after commit; returns how many.

    On PostgreSQL one `INSERT ... SELECT`: 100,000 segment entry events without loading a contact or building the
    rows in Python. Elsewhere the ids are streamed and recorded through `events_record_bulk`, a chunk at a time."""
    now = timezone.now()
    if connection.vendor != "postgresql":
        recorded = 0
        ids = contact_ids.values_list("contact_id", flat=True).iterator(chunk_size=EVENTS_CHUNK)
        while chunk := list(itertools.islice(ids, EVENTS_CHUNK)):
            contacts = [contact_stub(project, contact_id) for contact_id in chunk]
            recorded += len(events_record_bulk(project=project, items=[(c, name, data) for c in contacts]))
        return recorded
    selected_sql, selected_params = contact_ids.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            _PG_EVENTS_FOR_CONTACTS.format(contacts=selected_sql),
            [project.id, name, json.dumps(data), now, *selected_params],
        )
        rows = cursor.fetchall()
    fields = ("id", "project_id", "contact_id", "name", "email_id", "data", "created_at")
    events = [
        Event.from_db(connection.alias, fields, (event_id, project.id, contact_id, name, None, data, now))
        for event_id, contact_id in rows
    ]
    _announce(project, events)
    return len(events)


def contact_stub(project: Project, contact_id) -> Contact:
    """A contact known by id only, for the events that name it (nothing else is read)."""
    contact = Contact(id=contact_id, project=project)
    contact._state.adding = False
    return contact


def events_delete_by_name(*, project: Project, name: str) -> int:
    deleted, _ = Event.objects.filter(project=project, name=name).delete()
    return deleted


# Subscription ------------------------------------------------------------------------------------------------------


def contact_subscription_set(
    *, contact: Contact, subscribed: bool | None, source: str, save: bool = True
) -> Event | None:
    """The one place a single contact's subscription changes.

    Records `contact.subscribed` / `contact.unsubscribed` when the value really changes and nothing otherwise.
    With `save=False` the caller saves the contact (together with its other changes) itself.
    """
    if subscribed is None or contact.subscribed == subscribed:
        return None
    contact.subscribed = subscribed
    if save:
        contact.updated_at = timezone.now()
        contact.save(update_fields=["subscribed", "updated_at"])
    return event_record(
        project=contact.project,
        contact=contact,
        name=SUBSCRIBED_EVENT if subscribed else UNSUBSCRIBED_EVENT,
        data={"source": source},
    )


def contacts_subscription_bulk_set(
    *, project: Project, contacts: Sequence[Contact], subscribed: bool, source: str
) -> list[Contact]:
    """Set the subscription of many contacts of `project` in one UPDATE; return those that changed, each of which
    gets its subscription event (in one INSERT)."""
    changing = [c for c in contacts if c.project_id == project.id and c.subscribed != subscribed]
    if not changing:
        return []
    now = timezone.now()
    Contact.objects.filter(project=project, id__in=[c.id for c in changing]).update(
        subscribed=subscribed, updated_at=now
    )
    name = SUBSCRIBED_EVENT if subscribed else UNSUBSCRIBED_EVENT
    for contact in changing:
        contact.subscribed, contact.updated_at = subscribed, now
    events_record_bulk(project=project, items=[(c, name, {"source": source}) for c in changing])
    return changing


# Contacts ------------------------------------------------------------------------------------------------------------


def _insert_if_absent(contact: Contact) -> bool:
    """Insert a new contact unless its email exists by now (a concurrent insert): True when inserted."""
    contact.created_at = contact.updated_at = timezone.now()
    try:
        with transaction.atomic():
            contact.save(force_insert=True)
        return True
    except IntegrityError:
        return False


# The whole upsert in one statement on PostgreSQL: lock the row if it exists, insert it if not, merge the data
# (`DataChanges.apply` as jsonb operators: drop the removed keys, then set the stored ones) and write only when it
# changed. It returns the row as it is now and what happened, or nothing when a concurrent insert of the same email
# won the race (the caller then takes the general path). One round trip instead of three on /v1/track and /v1/send.
_PG_UPSERT = """
WITH existing AS (
    SELECT id, subscribed, snoozed_until, data, created_at, updated_at FROM contacts_contact
    WHERE project_id = %(project)s AND email = %(email)s FOR UPDATE
), inserted AS (
    INSERT INTO contacts_contact (id, project_id, email, subscribed, snoozed_until, data, created_at, updated_at)
    SELECT %(id)s, %(project)s, %(email)s, %(subscribed)s, NULL, %(store)s::jsonb, %(now)s, %(now)s
    WHERE NOT EXISTS (SELECT 1 FROM existing)
    ON CONFLICT (project_id, email) DO NOTHING
    RETURNING id, subscribed, snoozed_until, data, created_at, updated_at
), updated AS (
    UPDATE contacts_contact AS c SET data = (e.data - %(remove)s::text[]) || %(store)s::jsonb, updated_at = %(now)s
    FROM existing AS e
    WHERE c.id = e.id AND (e.data - %(remove)s::text[]) || %(store)s::jsonb IS DISTINCT FROM e.data
    RETURNING c.id, c.subscribed, c.snoozed_until, c.data, c.created_at, c.updated_at
), result AS (
    SELECT 'created' AS outcome, * FROM inserted
    UNION ALL SELECT 'updated', * FROM updated
    UNION ALL SELECT 'unchanged', * FROM existing WHERE NOT EXISTS (SELECT 1 FROM updated)
)
"""
# /v1/track records its event in the same statement (no event when the upsert lost a race and returned nothing).
_PG_UPSERT_EVENT = """, event AS (
    INSERT INTO contacts_event (id, project_id, contact_id, name, email_id, data, created_at)
    SELECT %(event_id)s, %(project)s, id, %(event_name)s, NULL, %(event_data)s::jsonb, %(now)s FROM result
)
"""
_PG_UPSERT_SQL = {
    False: _PG_UPSERT + "SELECT * FROM result",  # noqa: S608 - constant SQL
    True: _PG_UPSERT + _PG_UPSERT_EVENT + "SELECT * FROM result",  # noqa: S608
}
_CONTACT_FIELDS = ("id", "project_id", "email", "subscribed", "snoozed_until", "data", "created_at", "updated_at")


def _pg_upsert(
    project: Project, email: str, changes: DataChanges, subscribed: bool, event: Event | None = None
) -> tuple[Contact, str] | None:
    """Run `_PG_UPSERT` (with `event` inserted too when given) and announce a created or changed contact; returns
    the contact and "created" / "updated" / "unchanged", or None when a concurrent insert won the race."""
    params = {
        "project": project.id,
        "email": email,
        "id": uuid.uuid4(),
        "subscribed": subscribed,
        "store": json.dumps(changes.store),
        "remove": sorted(changes.remove),
        "now": event.created_at if event else timezone.now(),
    }
    if event is not None:
        params.update(event_id=event.id, event_name=event.name, event_data=json.dumps(event.data))
    with connection.cursor() as cursor:
        execute_prepared(cursor, _PG_UPSERT_SQL[event is not None], params)
        row = cursor.fetchone()
    if row is None:
        return None
    outcome, *values = row
    contact_id, *rest = values
    contact = Contact.from_db(connection.alias, _CONTACT_FIELDS, (contact_id, project.id, email, *rest))
    if isinstance(contact.data, str):
        contact.data = json.loads(contact.data)
    contact.project = project
    if outcome != "unchanged":
        _announce_changed(project.id, contact.id)
    return contact, outcome


@dataclass
class UpsertResult:
    contact: Contact
    created: bool
    changed: bool
    # The request's data variables (persistent and `persistent: false` values), for templates and event data.
    variables: dict


def contact_upsert(
    *,
    project: Project,
    email: str,
    subscribed: bool | None = None,
    data: dict | None = None,
    new_subscribed: bool = True,
    source: str,
) -> UpsertResult:
    """Create the contact of `email` or update it, applying the data rules; the one upsert of every path.

    1. Lock the existing row (concurrent upserts of one contact merge their data one after the other).
    2. Missing: insert with `subscribed` (or `new_subscribed`: true for POST /contacts and /v1/track, false for
       /v1/send); a concurrent insert of the same email is caught and the upsert continues as an update.
    3. Existing: merge the data, change the subscription through `contact_subscription_set`, save only what changed.

    On PostgreSQL steps 1-3 (except a subscription change) are one statement, `_PG_UPSERT`.
    """
    email = normalize_email(email)
    changes = data_rules(data)
    if connection.vendor == "postgresql":
        upserted = _pg_upsert(project, email, changes, new_subscribed if subscribed is None else subscribed)
        if upserted is not None:
            contact, outcome = upserted
            created = outcome == "created"
            resubscribed = not created and contact_subscription_set(
                contact=contact, subscribed=subscribed, source=source
            )
            return UpsertResult(
                contact=contact,
                created=created,
                changed=outcome != "unchanged" or bool(resubscribed),
                variables=changes.variables,
            )
    contact = Contact.objects.select_for_update().filter(project=project, email=email).first()
    if contact is None:
        contact = Contact(
            project=project,
            email=email,
            subscribed=new_subscribed if subscribed is None else subscribed,
            data=changes.apply({}),
        )
        if _insert_if_absent(contact):
            _announce_changed(project.id, contact.id)
            return UpsertResult(contact=contact, created=True, changed=True, variables=changes.variables)
        # Inserted concurrently by another request since our SELECT: continue as an update of that row.
        contact = Contact.objects.select_for_update().get(project=project, email=email)
    contact.project = project
    fields = []
    new_data = changes.apply(contact.data)
    if new_data != contact.data:
        contact.data = new_data
        fields.append("data")
    if contact_subscription_set(contact=contact, subscribed=subscribed, source=source, save=False):
        fields.append("subscribed")
    if fields:
        contact.updated_at = timezone.now()
        contact.save(update_fields=[*fields, "updated_at"])
    if "data" in fields:
        _announce_changed(project.id, contact.id)
    return UpsertResult(contact=contact, created=False, changed=bool(fields), variables=changes.variables)


# A single contact's upsert in two statements and no transaction, for a write that depends on what the contact
# holds (the email /v1/send renders with its data): read the row, let the caller build that write, then apply both
# in one statement that writes only if the row is still the version read (`xmin`) or still absent. BEGIN and
# COMMIT were two of the send's four PostgreSQL round trips.
_PG_READ = (
    "SELECT id, subscribed, snoozed_until, data, created_at, updated_at, xmin::text FROM contacts_contact "
    "WHERE project_id = %s AND email = %s"
)
_PG_GUARDED_UPSERT = """
WITH existing AS (
    SELECT id FROM contacts_contact
    WHERE project_id = %(project)s AND email = %(email)s AND xmin::text = %(version)s::text FOR UPDATE
), inserted AS (
    INSERT INTO contacts_contact (id, project_id, email, subscribed, snoozed_until, data, created_at, updated_at)
    SELECT %(id)s, %(project)s, %(email)s, %(subscribed)s, NULL, %(data)s::jsonb, %(now)s, %(now)s
    WHERE %(version)s::text IS NULL
    ON CONFLICT (project_id, email) DO NOTHING
    RETURNING id
), updated AS (
    UPDATE contacts_contact AS c SET data = %(data)s::jsonb, updated_at = %(now)s
    FROM existing AS e WHERE c.id = e.id AND %(changed)s
), result AS (
    SELECT id FROM inserted UNION ALL SELECT id FROM existing
), dependent AS (
    {dependent} WHERE EXISTS (SELECT 1 FROM result)
)
SELECT id FROM result
"""


@dataclass
class PendingUpsert:
    """A contact's upsert decided from a read (`contact_upsert_read`), written by `contact_upsert_write`."""

    # The contact as it will be once written: its id (new or stored), subscription and merged data.
    contact: Contact
    outcome: str  # "created", "updated" or "unchanged"
    variables: dict  # as `UpsertResult.variables`
    version: str | None  # the row version read; None when there was no row


def guarded_upsert_supported() -> bool:
    return connection.vendor == "postgresql"


def contact_upsert_read(
    *, project: Project, email: str, data: dict | None, new_subscribed: bool = True
) -> PendingUpsert:
    """The first half of `contact_upsert` without a subscription change (PostgreSQL only): read the contact and
    apply the data rules to what it holds, writing nothing."""
    email = normalize_email(email)
    changes = data_rules(data)
    with connection.cursor() as cursor:
        execute_prepared(cursor, _PG_READ, [project.id, email])
        row = cursor.fetchone()
    now = timezone.now()
    if row is None:
        contact = Contact(
            id=uuid.uuid4(), project=project, email=email, subscribed=new_subscribed, data=changes.apply({})
        )
        contact.created_at = contact.updated_at = now
        return PendingUpsert(contact=contact, outcome="created", variables=changes.variables, version=None)
    contact_id, subscribed, snoozed_until, stored, created_at, updated_at, version = row
    stored = json.loads(stored) if isinstance(stored, str) else stored
    merged = changes.apply(stored)
    contact = Contact.from_db(
        connection.alias,
        _CONTACT_FIELDS,
        (contact_id, project.id, email, subscribed, snoozed_until, merged, created_at, updated_at),
    )
    contact.project = project
    outcome = "unchanged" if merged == stored else "updated"
    if outcome == "updated":
        contact.updated_at = now
    return PendingUpsert(contact=contact, outcome=outcome, variables=changes.variables, version=version)


def contact_upsert_write(pending: PendingUpsert, *, dependent: Sequence[Model]) -> bool:
    """Write `pending` and insert the `dependent` rows (new instances of one model, which may refer to the contact)
    in one statement, only if the contact is still as read; False, with nothing written, when it changed, was
    deleted or was created meanwhile (the caller then takes `contact_upsert` in a transaction)."""
    contact = pending.contact
    dependent_sql, rows = json_rows_insert(dependent, "%(rows)s")
    params = {
        "project": contact.project_id,
        "email": contact.email,
        "version": pending.version,
        "id": contact.id,
        "subscribed": contact.subscribed,
        "data": json.dumps(contact.data),
        "now": contact.updated_at,
        "changed": pending.outcome == "updated",
        "rows": rows,
    }
    with connection.cursor() as cursor:
        execute_prepared(cursor, _PG_GUARDED_UPSERT.format(dependent=dependent_sql), params)
        written = cursor.fetchone() is not None
    if not written:
        return False
    mark_saved([contact, *dependent])
    if pending.outcome != "unchanged":
        _announce_changed(contact.project_id, contact.id)
    return True


def contact_update(
    *, contact: Contact, email: str | None = UNSET, subscribed: bool | None = None, data: dict | None = UNSET
) -> Contact:
    """PATCH semantics: `email` (409 when another contact of the project has it), `subscribed` (events on change),
    `data` patched by the data rules, or cleared entirely by `data: null`."""
    fields = []
    if email is not UNSET and email is not None:
        email = normalize_email(email)
        if email != contact.email:
            if Contact.objects.filter(project_id=contact.project_id, email=email).exclude(pk=contact.pk).exists():
                raise Conflict(f'A contact with email "{email}" already exists', details={"field": "email"})
            contact.email = email
            fields.append("email")
    if data is not UNSET:
        new_data = {} if data is None else data_rules(data).apply(contact.data)
        if new_data != contact.data:
            contact.data = new_data
            fields.append("data")
    if contact_subscription_set(contact=contact, subscribed=subscribed, source="api", save=False):
        fields.append("subscribed")
    if fields:
        contact.updated_at = timezone.now()
        try:
            with transaction.atomic():
                contact.save(update_fields=[*fields, "updated_at"])
        except IntegrityError:
            raise Conflict(
                f'A contact with email "{contact.email}" already exists', details={"field": "email"}
            ) from None
    if "data" in fields or "email" in fields:
        _announce_changed(contact.project_id, contact.id)
    return contact


def contact_delete(*, contact: Contact) -> None:
    """Delete the contact; its events go with it (database cascade through the ORM's fast delete)."""
    contact.delete()


def contacts_delete_bulk(*, project: Project, contact_ids: Iterable) -> list:
    """Delete the contacts of `project` among `contact_ids` (others are ignored); return the ids deleted."""
    ids = list(Contact.objects.filter(project=project, id__in=list(contact_ids)).values_list("id", flat=True))
    if ids:
        Event.objects.filter(project=project, contact_id__in=ids).delete()
        Contact.objects.filter(project=project, id__in=ids).delete()
    return ids


def contact_field_delete(*, project: Project, key: str) -> int:
    """Remove the data key from every contact of the project in one UPDATE; return how many contacts had it."""
    now = timezone.now()
    project_id = Contact._meta.get_field("project").get_db_prep_value(project.id, connection)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "UPDATE contacts_contact SET data = data - %s, updated_at = %s WHERE project_id = %s AND data ? %s",
                [key, now, project_id, key],
            )
            return cursor.rowcount
        if '"' not in key:
            path = f'$."{key}"'
            cursor.execute(
                "UPDATE contacts_contact SET data = json_remove(data, %s), updated_at = %s "
                "WHERE project_id = %s AND json_type(data, %s) IS NOT NULL",
                [path, now, project_id, path],
            )
            return cursor.rowcount
    # SQLite cannot address a key containing a double quote in a JSON path: do it row by row (development only).
    changed = [c for c in Contact.objects.filter(project=project) if key in c.data]
    for contact in changed:
        del contact.data[key]
        contact.updated_at = now
    Contact.objects.bulk_update(changed, ["data", "updated_at"], batch_size=500)
    return len(changed)


# Tracking -------------------------------------------------------------------------------------------------------------


@dataclass
class TrackResult:
    contact: Contact
    event: Event
    created: bool


def event_track(
    *, project: Project, email: str, name: str, subscribed: bool | None = None, data: dict | None = None
) -> TrackResult:
    """`/v1/track` and `/events/track`: upsert the contact (new ones subscribed unless told otherwise), apply the
    data rules, record the event with both persistent and per-request values. The caller has validated `name`."""
    if connection.vendor == "postgresql" and subscribed is None:
        # The common call: one statement, no transaction around it.
        changes = data_rules(data)
        event = Event(project=project, name=name, data=changes.variables, created_at=timezone.now())
        upserted = _pg_upsert(project, normalize_email(email), changes, True, event)
        if upserted is not None:
            contact, outcome = upserted
            event.contact = contact
            _announce(project, [event])
            return TrackResult(contact=contact, event=event, created=outcome == "created")
    with transaction.atomic():
        upsert = contact_upsert(
            project=project, email=email, subscribed=subscribed, data=data, new_subscribed=True, source="track"
        )
        event = event_record(project=project, contact=upsert.contact, name=name, data=upsert.variables)
    return TrackResult(contact=upsert.contact, event=event, created=upsert.created)
